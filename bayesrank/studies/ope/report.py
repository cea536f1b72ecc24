"""Markdown report of the OPE study (:mod:`bayesrank.studies.ope.study`): findings,
per-cell tables, the Thompson-sampling and Open Bandit Dataset sections. Every number
is computed from the results (statistics in :mod:`bayesrank.studies.ope.summary`).

Example:
    >>> from bayesrank.studies.ope import report as ope_report
    >>> ope_report._cell_name({"K": 20, "L": 3, "w_max": 0.0, "logger": "uniform"})
    'K = 20, L = 3, w = 0, uniform'
"""

from __future__ import annotations

import json

import numpy as np

from bayesrank.studies.ope.config import FULL, QUICK, estimator_variants
from bayesrank.studies.ope.summary import (
    figures,
    fmt,
    fmt_cov,
    summarise,
    ts_summarise,
)

__all__ = ["figures", "findings", "fmt", "report", "summarise", "ts_summarise"]


# ----------------------------------------------------------------------- report
def _changes_from_full(cfg: dict) -> dict:
    """The settings of ``cfg`` that differ from the full scale (``seed`` aside)."""
    full = FULL._asdict()
    core = {k: (tuple(v) if isinstance(v, list) else v) for k, v in cfg.items()
            if k != "seed" and k in full}
    if core == QUICK._asdict():
        return {}
    return {k: v for k, v in core.items() if v != full[k]}


def _scale(cfg: dict) -> str:
    core = {
        k: (tuple(v) if isinstance(v, list) else v)
        for k, v in cfg.items()
        if k != "seed"
    }
    for label, ref in (("full scale", FULL), ("--quick", QUICK)):
        if core == ref._asdict():
            return label
    return "custom configuration"


def _cells(res):
    for K in res["K"].values:
        for L in res["L"].values:
            for w in res["w_max"].values:
                for g in res["logger"].values:
                    yield {"K": K, "L": L, "w_max": w, "logger": g}


def _cell_name(c) -> str:
    w = "w = 0" if c["w_max"] == 0 else f"w_max = {c['w_max']:g}"
    return f"K = {c['K']}, L = {c['L']}, {w}, {c['logger']}"


def _mean(x) -> str:
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    return fmt(float(x.mean())) if x.size else "n/a"


def _identical(res) -> list[tuple[str, str]]:
    """Estimator pairs whose estimates are equal (to 1e-9) in every log they share."""
    est = res["estimate"]
    names = [str(e) for e in res["estimator"].values]
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            x, y = est.sel(estimator=a).values, est.sel(estimator=b).values
            ok = np.isfinite(x) & np.isfinite(y)
            if ok.any() and np.allclose(x[ok], y[ok], rtol=1e-9, atol=1e-12):
                out.append((a, b))
    return out


def findings(res) -> list[str]:
    """The headline checks as markdown (every number computed from ``res``)."""
    s = summarise(res)
    cfg = json.loads(res.attrs["config"])
    ests = [str(e) for e in s["estimator"].values]
    nmax = int(s["n"].values.max())
    z = s["bias"] / s["bias_se"].where(s["bias_se"] > 0)
    pair_hits = res["expected_hits"].sel(event="pair", drop=True)
    list_share = res["expected_hits"].sel(event="list", drop=True) / res["n"]
    out = []
    if "position_ips" in ests:
        pos = s.sel(estimator="position_ips", n=nmax)
        lim = res["position_ips_limit"] - res["truth"]
        zero = [c for c in _cells(res) if c["w_max"] == 0]
        zs = [abs(float(z.sel(estimator="position_ips", n=nmax, **c))) for c in zero]
        out.append(
            f"**Position IPS is biased when w != 0, by the amount its exact limit "
            f"predicts** (n = {nmax:,}; the limit is E[position IPS], computed from "
            "the logger's exact pair probabilities). "
            + (
                f"With w = 0 its largest |z| over the {len(zero)} cells is "
                f"{max(zs):.1f} (unbiased).\n"
                if zero
                else "\n"
            )
        )
        out.append("| cell | bias (MC stderr) | limit - truth | coverage |")
        out.append("|---|---|---|---|")
        for c in _cells(res):
            if c["w_max"] > 0:
                out.append(
                    f"| {_cell_name(c)} | {fmt(float(pos['bias'].sel(**c)))} "
                    f"({fmt(float(pos['bias_se'].sel(**c)))}) | "
                    f"{fmt(float(lim.sel(**c)))} | "
                    f"{float(pos['coverage'].sel(**c)):.2f} |"
                )
        out.append("")
    if "pair_ips" in ests:
        zp = z.sel(estimator="pair_ips")
        ok = zp.notnull() & (abs(zp) <= 3)
        dense = pair_hits >= 10
        out.append(
            f"- **Pair IPS is unbiased within Monte Carlo error**: |z| <= 3 in "
            f"{int(ok.sum())} of {ok.size} cells (every K, L, w, logger and n), in "
            f"{int((ok & dense).sum())} of {int(dense.sum())} cells with >= 10 "
            "expected target-pair matches per log at every position. With fewer "
            "matches the estimate is heavy-tailed (most logs see no match and "
            "estimate those terms as 0), so a mean over a few logs tends to fall "
            "below the truth and the per-log stderr understates the spread."
        )
    if "pair_ips" in ests and "list_ips" in ests:
        ratio = s["rmse"].sel(estimator="pair_ips") / s["rmse"].sel(
            estimator="list_ips"
        )
        on = list_share >= 0.1
        groups = (
            ("the logger shows the target's list in >= 10 % of rounds", on),
            (
                "otherwise, >= 2 expected target-pair matches per position",
                ~on & (pair_hits >= 2),
            ),
            ("otherwise, < 2 expected matches (too sparse)", ~on & (pair_hits < 2)),
        )
        parts = []
        for label, g in groups:
            r = ratio.where(g).values
            r = r[np.isfinite(r)]
            if r.size:
                parts.append(
                    f"{label}: {int((r < 1).sum())} of {r.size} cells below 1, "
                    f"median {np.median(r):.2f} (range {r.min():.2f}-{r.max():.2f})"
                )
        out.append(
            "- **RMSE of pair IPS / RMSE of list IPS**: " + "; ".join(parts) + ". "
            "Where no log is expected to contain the target's whole list, list IPS "
            "mostly estimates 0 (RMSE about the truth itself) and, when a log does "
            "contain it, a huge value (weight 1 / P(list) up to K^L)."
        )

    fits = {v.label for v in estimator_variants() if v.model}
    model = [e for e in ests if e in fits and not e.endswith("_sn")]
    if model and "pair_ips" in ests:
        parts = []
        for e in model:
            r = (
                s["rmse"].sel(estimator=e) / s["rmse"].sel(estimator="pair_ips")
            ).values
            r = r[np.isfinite(r)]
            if r.size:
                parts.append(
                    f"{e}: RMSE / pair IPS's median {np.median(r):.2f} over {r.size} "
                    f"cells, coverage {_mean(s['coverage'].sel(estimator=e))}"
                )
        run_to = cfg.get("model_max_n", nmax)
        out.append(
            "- **The reward-model estimators** ("
            + ", ".join(model)
            + f"; run for n <= {run_to:,}): "
            + "; ".join(parts)
            + ". The reward model (ridge regression on pair features) is the true "
            "model here (identity link, pairwise dependence), so the direct method "
            "is nearly unbiased with a small variance; its interval ignores the "
            "model's error by construction."
        )
    same = _identical(res)
    if same:
        why = ""
        if any({a, b} == {"pair_dr_sn", "pair_ips_sn"} for a, b in same):
            why = (
                " For a deterministic target a row has a non-zero pair weight only "
                "where the logged pair is the target's, so q_logged = q_target there "
                "and the self-normalised DR correction cancels exactly."
            )
        out.append(
            "- **Identical in every log**: "
            + ", ".join(f"{a} = {b}" for a, b in same)
            + "."
            + why
        )
    dense = pair_hits >= 10
    out.append(
        "\n**Coverage of the normal 95 % interval**, mean over cells (every n) with "
        f">= 10 expected target-pair matches per position ({int(dense.sum())} cells) "
        f"and with fewer ({int((~dense).sum())} cells):\n"
    )
    out.append("| estimator | >= 10 matches | < 10 matches |")
    out.append("|---|---|---|")
    for e in ests:
        c = s["coverage"].sel(estimator=e)
        out.append(f"| {e} | {_mean(c.where(dense))} | {_mean(c.where(~dense))} |")
    out.append("")
    return out


def _table(s, res, c) -> list[str]:
    ns = [int(x) for x in s["n"].values]
    head = (
        "| estimator | "
        + " | ".join(f"n = {n:,}: bias (z) | RMSE | cov." for n in ns)
        + " |"
    )
    lines = [head, "|---|" + "---|---|---|" * len(ns)]
    for e in s["estimator"].values:
        cells = []
        for n in ns:
            x = s.sel(**c, n=n, estimator=e)
            se = float(x["bias_se"])
            zz = float(x["bias"]) / se if se > 0 else np.nan
            cells.append(
                f"{fmt(float(x['bias']))} ({fmt(zz)}) | {fmt(float(x['rmse']))}"
                f" | {fmt_cov(float(x['coverage']))}"
            )
        lines.append(f"| {e} | " + " | ".join(cells) + " |")
    hit = res["expected_hits"].sel(**c)
    lines.append("")
    lines.append(
        "Expected target matches per log (smallest over positions), pair / list: "
        + "; ".join(
            f"n = {n:,}: {fmt(float(hit.sel(n=n, event='pair')))} / "
            f"{fmt(float(hit.sel(n=n, event='list')))}"
            for n in ns
        )
        + "."
    )
    return lines


def _ts_section(res) -> list[str]:
    if "ts_estimate" not in res:
        return []
    cfg = json.loads(res.attrs["config"])
    t = ts_summarise(res)
    out = [
        "## A random target: Thompson sampling with Monte Carlo propensities\n",
        (
            f"K = {cfg['ts_K']}, L = {cfg['ts_L']}; the target is a RankTS (known w, "
            f"conjugate Gaussian model) fitted on {cfg['ts_fit_rounds']} uniform rounds; "
            f"{cfg['ts_logs']} logs of {cfg['ts_n']:,} rounds per cell, each evaluated "
            f"by `br.ope.evaluate` with {cfg['ts_draws']:,} fresh draws of the target "
            f"per log. Truth: mean exact value of {cfg['ts_truth_draws']:,} draws.\n"
        ),
    ]
    for w in t["ts_w_max"].values:
        wl = "w = 0" if w == 0 else f"w_max = {w:g}"
        x = res.sel(ts_w_max=w)
        out.append(
            f"**{wl}**: truth {float(x['ts_truth']):.4f} (MC stderr "
            f"{fmt(float(x['ts_truth_mc_se']))}); the target drew "
            f"{int(x['ts_distinct_lists'])} distinct lists, the commonest "
            f"{100 * float(x['ts_top_share']):.0f} % of the time.\n"
        )
        out.append(
            "| logger | estimator | bias (z) | RMSE | coverage | mean stderr | "
            "mean MC stderr |"
        )
        out.append("|---|---|---|---|---|---|---|")
        for g in t["ts_logger"].values:
            for e in t["estimator"].values:
                y = t.sel(ts_w_max=w, ts_logger=g, estimator=e)
                se = float(y["bias_se"])
                zz = float(y["bias"]) / se if se > 0 else np.nan
                out.append(
                    f"| {g} | {e} | {fmt(float(y['bias']))} ({fmt(zz)}) | "
                    f"{fmt(float(y['rmse']))} | {fmt_cov(float(y['coverage']))} | "
                    f"{fmt(float(y['mean_stderr']))} | "
                    f"{fmt(float(y['mean_mc_stderr']))} |"
                )
        out.append("")
    return out


def _obd_section(res) -> list[str]:
    obd = json.loads(res.attrs.get("obd", "{}"))
    if not obd:
        return []
    out = [
        "## The Open Bandit Dataset sample\n",
        (
            "What bayesrank ships of the OBD uniform-random log (`bayesrank/datasets/obd.py`)"
            " is a summary: per position the impressions and clicks, and the logged "
            "propensity (1/K for every item at every position). Each row of the original "
            "log is one (item, position) impression; no timestamp is shared by all three "
            "positions, so rows cannot be linked into lists.\n"
        ),
        (
            "**What can be estimated: position IPS of a target with the logger's own "
            "per-position distribution** (the uniform-random policy's value, a sanity "
            "check that the estimator reproduces the on-policy click rate). Each "
            "position's term is `br.ope.position_ips` on that position's rows, rebuilt "
            "from the counts; the total's stderr combines the positions' (disjoint rows).\n"
        ),
        (
            "| campaign | K | clicks / impressions per position | position IPS (95 % CI) | "
            "self-normalised | sum of click rates |"
        ),
        "|---|---|---|---|---|---|",
    ]
    for c, x in obd.items():
        p = x["position_ips"]
        out.append(
            f"| {c} | {x['K']} | "
            + ", ".join(f"{k}/{n}" for k, n in zip(x["clicks"], x["impressions"]))
            + f" | {p['estimate']:.5f} ({p['ci'][0]:.5f} - {p['ci'][1]:.5f}) | "
            f"{x['position_ips_sn']['estimate']:.5f} | {x['naive_rate_sum']:.5f} |"
        )
    out.append("")
    first = next(iter(obd.values()))
    out.append(
        "**What cannot be estimated from the shipped sample.** A target that picks "
        "items (e.g. the best item per position by a fitted model) needs each "
        "item's clicks by position; the summary holds per-position totals only. "
        "The original 10,000 rows (in the `obp` archive, not vendored) would "
        "support position IPS for such a target, but weakly: each (item, position) "
        "cell holds on average "
        + ", ".join(f"{v:.2f}" for v in first["clicks_per_item_position"])
        + f' clicks (campaign "{next(iter(obd))}", positions 1-3), and position '
        "IPS's relative standard error for one item per position at the position's "
        "mean click rate is about sqrt(K / clicks_l) = "
        + ", ".join(f"{v:.1f}" for v in first["relative_stderr_item_target"])
        + ". List, cascade and pair IPS need the shown lists (which item preceded "
        f"which): {first['full_lists']} of {first['distinct_timestamps']:,} "
        f"timestamps are shared by all three positions ({first['shared_timestamps']} "
        "by two), so no version of this sample supports them, and position IPS is "
        "unbiased on it only if rewards do not depend on the neighbouring item "
        "(w = 0), which the sample cannot test.\n"
    )
    return out


def report(res) -> str:
    """The study's markdown report."""
    cfg = json.loads(res.attrs["config"])
    s = summarise(res)
    logs = res.sizes["log"]
    L = []
    add = L.append
    add("# OPE validation: do the estimators recover a known truth?\n")
    add(
        f"Generated by `bayesrank study ope` ({_scale(cfg)}; {logs} logs per cell; "
        f"{res.attrs['seconds_total'] / 60:.1f} min wall, "
        f"{res.attrs.get('cpu_seconds_total', np.nan) / 60:.1f} min CPU). "
        "Environments from "
        f"`RankingEnv.paper(seed={cfg['env_seed']}, K, L, d={cfg['d']}, w_max)` "
        "(identity link, Gaussian(1) noise, v0 = 0); the target is each "
        "environment's best list (deterministic) and its value `env.expected_reward` "
        "is exact. Loggers have exact propensities:\n"
    )
    for k, v in json.loads(res.attrs["loggers"]).items():
        add(
            f"- **{k}**: {v}"
            + (f" (epsilon = {cfg['epsilon']:g})." if "epsilon" in k else ".")
        )
    add(
        "\nEstimators: every entry of `br.ope.ESTIMATORS` (suffix `_sn`: "
        "self-normalised). Per cell: bias = mean estimate - truth (z = bias / its "
        f"Monte Carlo stderr, sd / sqrt({logs})), RMSE, and coverage = share of logs "
        "whose normal 95 % interval contains the truth.\n"
    )
    add("## Findings\n")
    L.extend(findings(res))
    add("\n![RMSE against n](rmse.png)\n")
    add("![coverage](coverage.png)\n")
    add("## Environments\n")
    add(
        "| K | L | w_max | w (positions 1..L; w_1 is inert, v0 = 0) | target (best "
        "list) | truth | position IPS limit: " + ", ".join(res["logger"].values) + " |"
    )
    add("|---|---|---|---|---|---|---|")
    for K in res["K"].values:
        for Lx in res["L"].values:
            for w in res["w_max"].values:
                c = {"K": K, "L": Lx, "w_max": w}
                ww = res["w"].sel(**c).values[:Lx]
                lim = res["position_ips_limit"].sel(**c).values
                add(
                    f"| {K} | {Lx} | {w:g} | {', '.join(f'{x:.2f}' for x in ww)} | "
                    f"{res['target_list'].sel(**c).values[:Lx].tolist()} | "
                    f"{float(res['truth'].sel(**c)):.4f} | "
                    f"{', '.join(f'{x:.4f}' for x in lim)} |"
                )
    add("")
    add("## Results per cell\n")
    add("bias (z = bias / MC stderr), RMSE and coverage of the 95 % interval.\n")
    for c in _cells(res):
        add(f"### {_cell_name(c)}\n")
        L.extend(_table(s, res, c))
        add("")
    L.extend(_ts_section(res))
    L.extend(_obd_section(res))
    add("## Open Bandit Pipeline\n")
    add(
        "No comparison with `obp`: its releases 0.5.x require Python < 3.11 (this "
        "project needs >= 3.12), and `pip download obp --no-deps` falls back to obp "
        "0.4.1 (2021), which depends on torch. The estimators' formulas are checked "
        "against independent NumPy re-implementations and enumeration in "
        "`tests/ope/` and `tests/studies/ope/test_ope_study.py`.\n"
    )
    add("## Reproduce\n")
    add("    bayesrank study ope --quick --out bayesrank-study-ope   # --quick")
    add("    bayesrank study ope --out bayesrank-study-ope           # full scale")
    changed = _changes_from_full(cfg)
    if changed:
        args = ", ".join(f"{k}={v!r}" for k, v in changed.items())
        add("\nThis report's configuration (differences from the full scale):\n")
        add("    from bayesrank.studies.ope.config import FULL")
        add("    from bayesrank.studies.ope.study import run_ope_study")
        add(f"    run_ope_study(\"bayesrank-study-ope\", cfg=FULL._replace({args}))")
    add(f"\nVersions: {res.attrs['versions']}")
    return "\n".join(L) + "\n"
