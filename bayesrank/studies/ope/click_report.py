"""Statistics, figure and markdown report of the click-model sub-study
(:mod:`bayesrank.studies.ope.click`). Every number is computed from the results.

Example:
    >>> from bayesrank.studies.ope import click_report
    >>> click_report.pct(0.1234), click_report.pct(float("nan"))
    ('+12.3 %', 'n/a')
"""

from __future__ import annotations

import json

import numpy as np

from bayesrank.studies.ope.summary import _colour, _stats, fmt, fmt_cov

__all__ = ["FEEDBACK_OF", "at_largest_n", "common_n", "figure", "pct", "report",
           "summarise", "which_estimator"]


def pct(x: float) -> str:
    """A relative bias as a signed percentage ('n/a' for NaN; 0 below 0.05 %)."""
    if not np.isfinite(x):
        return "n/a"
    return "0.0 %" if abs(x) < 5e-4 else f"{100 * x:+.1f} %"


def _num(x: float) -> str:
    """:func:`fmt`, with float32 rounding (below 1e-6) shown as 0."""
    return "0" if np.isfinite(x) and abs(x) < 1e-6 else fmt(x)


def summarise(res):
    """Per-cell ``bias`` (against ``click_truth``), ``bias_se``, ``rmse``,
    ``coverage``, ``mean_stderr``, ``sd``, ``mean_estimate`` and ``rel_bias`` over
    (env, logger, n, estimator): ``xarray.Dataset``."""
    import xarray as xr

    dims = ("env", "logger", "n", "log", "estimator")
    g = {v: res[v].transpose(*dims).values
         for v in ("estimate", "stderr", "ci_low", "ci_high")}
    truth = res["click_truth"].values[:, None, None, None, None]
    s = _stats(g["estimate"], g["ci_low"], g["ci_high"], g["stderr"], truth, axis=3)
    s["rel_bias"] = s["bias"] / truth[..., 0]
    out_dims = ("env", "logger", "n", "estimator")
    return xr.Dataset({k: (out_dims, v) for k, v in s.items()},
                      coords={d: res[d] for d in out_dims})


def at_largest_n(s):
    """The summary at the largest n each estimator ran at (dims env, logger,
    estimator), with ``n_used``."""
    import xarray as xr

    ran = s["bias"].notnull().all(("env", "logger"))
    n = xr.DataArray(s["n"].values, dims="n")
    n_used = n.where(ran).max("n")
    picked = s.sel(n=n_used.fillna(s["n"].values[0]).astype(int))
    return picked.drop_vars("n").assign(n_used=n_used)


def figure(res, path) -> None:
    """``bias.png``: relative bias (% of the expected clicks) of each estimator in
    each environment, one panel per logger, at the largest n it ran at; bars +-2
    Monte Carlo stderr, black ticks the exact limit of the IPS estimators."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    s = at_largest_n(summarise(res))
    envs = [str(e) for e in res["env"].values]
    labels = [str(e) for e in s["estimator"].values if not str(e).endswith("_sn")]
    names = list(dict.fromkeys(lab.removesuffix("_sn") for lab in labels))
    truth = res["click_truth"].values
    loggers = [str(g) for g in res["logger"].values]
    fig, axes = plt.subplots(len(loggers), 1, figsize=(1.6 * len(envs) + 2.2,
                             2.9 * len(loggers) + 0.8), squeeze=False,
                             constrained_layout=True)
    width = 0.8 / len(labels)
    x = np.arange(len(envs))
    for ax, g in zip(axes[:, 0], loggers):
        for i, lab in enumerate(labels):
            sel = s.sel(logger=g, estimator=lab)
            y = 100 * sel["rel_bias"].values
            err = 200 * sel["bias_se"].values / truth
            pos = x - 0.4 + (i + 0.5) * width
            n_used = int(sel["n_used"].values)
            ax.bar(pos, y, width, yerr=err, color=_colour(lab, names),
                   label=f"{lab} (n = {n_used:,})", error_kw={"lw": 0.7})
            if lab in res["ips"].values:
                lim = res["ips_limit"].sel(logger=g, ips=lab).values
                ax.plot(pos, 100 * (lim - truth) / truth, "k_", ms=9, mew=1.5)
        ax.axhline(0, color="k", lw=0.7)
        ax.set_xticks(x, envs, fontsize=8)
        ax.set_ylabel("bias, % of expected clicks", fontsize=8)
        ax.set_yscale("symlog", linthresh=2)
        ticks = [-50, -20, -10, -5, -2, 0, 2, 5, 10, 20, 50, 100]
        lo, hi = ax.get_ylim()
        ax.set_yticks([t for t in ticks if lo <= t <= hi],
                      [f"{t:+d} %" if t else "0" for t in ticks if lo <= t <= hi])
        ax.set_title(f"{g} logger", fontsize=9)
        ax.grid(axis="y", alpha=0.3, lw=0.6)
        ax.spines[["top", "right"]].set_visible(False)
    handles, labs = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labs, loc="outside lower center", ncol=3, frameon=False,
               fontsize=8)
    fig.suptitle(f"Bias of each estimator per click model ({res.sizes['log']} logs; "
                 "bars +-2 MC stderr; black: exact limit)", fontsize=9)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _row(cells) -> str:
    return "| " + " | ".join(cells) + " |"


def _envs_table(res) -> list[str]:
    descr = json.loads(res.attrs.get("envs", "{}"))
    out = ["| env | model | target (best list) | value | expected clicks | "
           "value - clicks |", "|---|---|---|---|---|---|"]
    for e in res["env"].values:
        v, c = float(res["value"].sel(env=e)), float(res["click_truth"].sel(env=e))
        out.append(_row([str(e), descr.get(str(e), ""),
                         str(res["target_list"].sel(env=e).values.tolist()),
                         f"{v:.4f}", f"{c:.4f}", _num(v - c)]))
    return out


def _limit_table(res, g) -> list[str]:
    envs = [str(e) for e in res["env"].values]
    truth = res["click_truth"]
    out = [_row(["estimator", *envs]), "|" + "---|" * (len(envs) + 1)]
    for k in res["ips"].values:
        lim = res["ips_limit"].sel(logger=g, ips=k)
        rel = (lim - truth) / truth
        out.append(_row([str(k), *(f"{_num(float((lim - truth).sel(env=e)))} "
                                   f"({pct(float(rel.sel(env=e)))})" for e in envs)]))
    return out


def _bias_table(res, p, g) -> list[str]:
    envs = [str(e) for e in res["env"].values]
    out = [_row(["estimator (n)", *envs]), "|" + "---|" * (len(envs) + 1)]
    for lab in p["estimator"].values:
        sel = p.sel(logger=g, estimator=lab)
        cells = []
        for e in envs:
            b, se = float(sel["rel_bias"].sel(env=e)), float(sel["bias_se"].sel(env=e))
            z = float(sel["bias"].sel(env=e)) / se if se > 0 else np.nan
            mark = "**" if np.isfinite(z) and abs(z) > 3 else ""
            cells.append(f"{mark}{pct(b)}{mark} (z {z:+.1f}), "
                         f"cov {fmt_cov(float(sel['coverage'].sel(env=e)))}")
        out.append(_row([f"{lab} ({int(sel['n_used']):,})", *cells]))
    return out


def _headline(res, p) -> list[str]:
    out = []
    truth = res["click_truth"]
    if "pair_ips" not in res["ips"].values:
        return out
    exact = abs(res["ips_limit"] - truth) <= 1e-6 * abs(truth) + 1e-9
    for k in res["ips"].values:
        ok = [str(e) for e in res["env"].values
              if bool(exact.sel(ips=k, env=e).all("logger"))]
        bad = [str(e) for e in res["env"].values if str(e) not in ok]
        out.append(f"- **{k}**: exactly unbiased (limit = expected clicks, both "
                   f"loggers) in {', '.join(ok) or 'no environment'}; biased in "
                   f"{', '.join(bad) or 'none'}.")
    lim = res["ips_limit"].sel(ips="pair_ips")
    for g in res["logger"].values:
        rel = (lim.sel(logger=g) - truth) / truth
        parts = []
        for e in res["env"].values:
            m = p.sel(logger=g, estimator="pair_ips", env=e)
            half = 200 * float(m["bias_se"]) / float(truth.sel(env=e))
            parts.append(f"{e} {pct(float(rel.sel(env=e)))} (measured "
                         f"{pct(float(m['rel_bias']))} +- {half:.1f} %)")
        out.append(f"- **Pair IPS, {g} logger**, exact bias as % of the expected "
                   "clicks (measured at n = "
                   f"{int(p['n_used'].sel(estimator='pair_ips')):,}, +- 2 MC "
                   "stderr): " + "; ".join(parts) + ".")
    return out


#: the feedback each environment's log declares (what a user of the log knows)
FEEDBACK_OF = {"eq1": "full", "eq1_cascade": "cascade", "pbm": "pbm", "cascade": "cascade",
               "dcm": "cascade", "dbn": "cascade"}


def _unbiased(sel) -> bool:
    """Within 2 % of the expected clicks, or within 3 Monte Carlo stderr."""
    rel, bias, se = (float(sel[v]) for v in ("rel_bias", "bias", "bias_se"))
    return bool(abs(rel) <= 0.02 or (se > 0 and abs(bias) <= 3 * se))


def common_n(s) -> int:
    """The largest n at which every estimator ran (the model-based ones stop at
    ``model_max_n``)."""
    ran = s["bias"].notnull().all(("env", "logger", "estimator")).values
    return int(s["n"].values[ran].max())


def which_estimator(res, s) -> list[tuple]:
    """Per feedback model, at :func:`~bayesrank.studies.ope.click_report.common_n`: ``(feedback, envs, [(estimator, mean
    relative RMSE)] of the estimators unbiased (within 2 % of the expected clicks or 3 Monte Carlo
    stderr) in each of its
    environments under every logger, best first)``."""
    envs = [str(e) for e in res["env"].values]
    truth = res["click_truth"]
    p = s.sel(n=common_n(s))
    out = []
    for fb in ("full", "pbm", "cascade"):
        group = [e for e in envs if FEEDBACK_OF.get(e) == fb]
        if not group:
            continue
        ok = []
        for lab in p["estimator"].values:
            cells = [p.sel(env=e, logger=g, estimator=lab) for e in group
                     for g in res["logger"].values]
            if all(np.isfinite(float(c["bias"])) and _unbiased(c) for c in cells):
                rmse = np.mean([float(c["rmse"]) / float(truth.sel(env=str(c["env"].values)))
                                for c in cells])
                ok.append((str(lab), float(rmse)))
        out.append((fb, group, sorted(ok, key=lambda t: t[1])))
    return out


def _which_table(res, s) -> list[str]:
    out = ["| feedback | environments | unbiased (mean RMSE, % of the expected clicks; "
           "best first) |", "|---|---|---|"]
    for fb, group, ok in which_estimator(res, s):
        cells = ", ".join(f"{'**' if i == 0 else ''}{lab}{'**' if i == 0 else ''} "
                          f"({100 * r:.1f})" for i, (lab, r) in enumerate(ok))
        out.append(_row([f"`{fb}`", ", ".join(group), cells or "none"]))
    return out


def _dr_against_ips(res, s) -> list[str]:
    """cascade_dr's spread over the logs and RMSE against cascade IPS's, per cell, at
    :func:`~bayesrank.studies.ope.click_report.common_n`."""
    if not {"cascade_dr", "cascade_ips"} <= set(map(str, s["estimator"].values)):
        return []
    p = s.sel(n=common_n(s))
    envs = [str(e) for e in res["env"].values]
    out = [_row(["logger", *envs]), "|" + "---|" * (len(envs) + 1)]
    for g in res["logger"].values:
        cells = []
        for e in envs:
            dr, ips = (p.sel(env=e, logger=g, estimator=k) for k in ("cascade_dr",
                                                                     "cascade_ips"))
            cells.append(f"{float(dr['sd']) / float(ips['sd']):.2f} / "
                         f"{float(dr['rmse']) / float(ips['rmse']):.2f}")
        out.append(_row([str(g), *cells]))
    return out


def _exam_table(res) -> list[str]:
    envs = [str(e) for e in res["env"].values
            if np.isfinite(res["exam_true"].sel(env=e).values).all()]
    if not envs:
        return ["No environment of this run records every position."]
    n = int(res["n"].values[-1])
    out = ["| env | logger | true examination | estimate [90 % interval] | "
           "largest error | covered |", "|---|---|---|---|---|---|"]
    for e in envs:
        true = res["exam_true"].sel(env=e).values
        for g in res["logger"].values:
            sel = res.sel(env=e, logger=g, n=n)
            est, lo, hi = (sel[v].values for v in ("exam_estimate", "exam_low",
                                                    "exam_high"))
            cells = ", ".join(f"{x:.3f} [{a:.3f}, {b:.3f}]" for x, a, b in
                              zip(est[1:], lo[1:], hi[1:]))
            cover = int(((lo[1:] <= true[1:]) & (true[1:] <= hi[1:])).sum())
            out.append(_row([e, str(g), ", ".join(f"{t:.3f}" for t in true[1:]), cells,
                             f"{np.abs(est - true).max():.3f}",
                             f"{cover} of {len(true) - 1}"]))
    return out


def report(res) -> str:
    """The sub-study's markdown report."""
    cfg = json.loads(res.attrs["config"])
    s = summarise(res)
    p = at_largest_n(s)
    loggers = json.loads(res.attrs.get("loggers", "{}"))
    minutes = res.attrs.get("seconds_total", float("nan")) / 60
    lines = [
        "# OPE under click models: which estimator is biased where?", "",
        f"Generated by `bayesrank study ope --click-models` (K = {cfg['K']}, L = "
        f"{cfg['L']}, {cfg['logs']} logs per cell, n = "
        f"{', '.join(f'{n:,}' for n in cfg['n'])}; dm, pair_dr and cascade_dr up to n = "
        f"{cfg['model_max_n']:,}; {minutes:.1f} min wall). Every environment "
        "shares the items of `RankingEnv.paper(seed="
        f"{cfg['env_seed']})` and the attraction sigmoid(<theta_c, v_j>); the "
        "target is each environment's best list of distinct items. Bias is "
        "measured against the exact expected clicks of the target's list (what "
        "the logged rewards sum to; NaN = 0); for the DCM and the DBN the "
        "environment's value is P(satisfied), which differs (last column).", "",
        *_envs_table(res), "",
        "Loggers (exact propensities; the same logged lists in every environment):",
        "", *(f"- **{k}**: {v}" for k, v in loggers.items()), "",
        "## Findings", "", *_headline(res, p), "",
        "![bias per estimator per environment](bias.png)", "",
        "## Which estimator under which feedback", "",
        "The estimators whose measured bias is within 2 % of the expected clicks or "
        "within 3 Monte Carlo stderr in every environment of that feedback under "
        f"both loggers, at n = {common_n(s):,} (where every estimator ran), by mean "
        "RMSE (first: the lowest):", "", *_which_table(res, s), "",
        "cascade_dr against cascade IPS at the same n: sd over the logs / RMSE, "
        "ratios (below 1: cascade_dr is the tighter):", "", *_dr_against_ips(res, s),
        "",
        "## Position bias estimated from the logs", "",
        "`br.ope.position_bias(log)` (regression EM, 100 bootstrap resamples) on the "
        f"first log of each cell at n = {int(res['n'].values[-1]):,}, for the "
        "environments whose log records every position (under a cascade the "
        "positions below the stop are not recorded and the estimator refuses the "
        "log). Positions 2 on (position 1 is 1 by definition); Eq. 1 is not a "
        "PBM (a click depends on the item above too), so its row shows what the "
        "misspecified model reads:", "", *_exam_table(res), "",
    ]
    for g in res["logger"].values:
        lines += [f"### {g} logger", "",
                  "Exact bias of the IPS estimators, E[estimator] - expected clicks "
                  "(% of the expected clicks), by enumerating all K^L lists:", "",
                  *_limit_table(res, g), "",
                  "Measured relative bias at the largest n each estimator ran at "
                  "(**bold**: |z| > 3, z = bias / its Monte Carlo stderr) and the "
                  "coverage of its normal 95 % interval:", "",
                  *_bias_table(res, p, g), ""]
    lines += ["## Configuration", "", "```json", json.dumps(cfg, indent=1), "```",
              "", f"Versions: `{res.attrs.get('versions', '')}`", ""]
    return "\n".join(lines)
