"""The click-model study's report (Markdown) and regret-curve figure (PNG).

Example:
    >>> import numpy as np
    >>> from bayesrank.studies.click_models.report import interval
    >>> m, lo, hi = interval(np.array([1.0, 2.0, 3.0]))
    >>> m, round(lo, 3), round(hi, 3)    # mean and Student-t 95 % interval
    (2.0, -0.484, 4.484)
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from bayesrank.studies.click_models.setup import POLICIES

__all__ = ["figure", "interval", "report", "winners"]

LEVEL = 0.95


def interval(x) -> tuple[float, float, float]:
    """Mean of the finite values of x and its Student-t 95 % interval (NaN bounds
    for one value, all NaN for none)."""
    from scipy import stats

    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return (np.nan,) * 3
    m = float(x.mean())
    if x.size < 2:
        return m, np.nan, np.nan
    h = float(stats.t.ppf(0.5 + LEVEL / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size))
    return m, m - h, m + h


def _last(ds: xr.Dataset, env, policy):
    """The (run,) regret at the policy's last checkpoint (NaN-free), and its round."""
    r = ds["regret"].sel(env=env, policy=policy)
    ok = np.isfinite(r.values).any(axis=0)
    if not ok.any():
        return np.array([]), None
    k = int(np.flatnonzero(ok)[-1])
    vals = r.values[:, k]
    return vals[np.isfinite(vals)], int(ds["round"].values[k])


def winners(ds: xr.Dataset, at: int | None = None) -> dict:
    """{env: (policy of lowest mean regret at round ``at`` (default the last),
    policies whose 95 % interval overlaps the winner's)}."""
    at = int(ds["round"].values[-1]) if at is None else at
    out = {}
    for env in ds["env"].values:
        stats = {}
        for pol in ds["policy"].values:
            vals = ds["regret"].sel(env=env, policy=pol, round=at).values
            if np.isfinite(vals).sum() >= 1:
                stats[str(pol)] = interval(vals)
        if not stats:
            continue
        best = min(stats, key=lambda p: stats[p][0])
        ties = [p for p, (m, lo, _) in stats.items()
                if p != best and np.isfinite(lo) and lo <= stats[best][2]]
        out[str(env)] = (best, ties)
    return out


def _cell(vals) -> str:
    m, lo, hi = interval(vals)
    if not np.isfinite(m):
        return "n/a"
    if not np.isfinite(lo):
        return f"{m:.1f}"
    return f"{m:.1f} [{lo:.1f}, {hi:.1f}]"


def report(ds: xr.Dataset) -> str:
    """The study as Markdown: set-up, regret tables with 95 % intervals, winners,
    the policies that could not run and why."""
    cfg = json.loads(ds.attrs["config"])
    skipped = json.loads(ds.attrs["skipped"])
    pols = json.loads(ds.attrs["policies"])
    envs = [str(e) for e in ds["env"].values]
    T = int(ds["round"].values[-1])
    lines = [
        f"# Click-model study (K = {cfg['K']}, d = {cfg['d']}, L = {cfg['L']}, "
        f"T = {cfg['T']}, {cfg['runs']} runs, seed {cfg['seed']})", "",
        "Cumulative pseudo-regret at round T: mean over runs and its Student-t "
        "95 % interval. Every policy plays run r of an environment with the same "
        "environment keys (common random numbers). Lists hold distinct items.", "",
        "| policy | " + " | ".join(envs) + " |", "|---|" + "---|" * len(envs)]
    short = []
    for pol in ds["policy"].values:
        cells = []
        for env in envs:
            if str(pol) in skipped.get(env, {}):
                cells.append("skipped")
                continue
            vals, at = _last(ds, env, pol)
            if at is not None and at < T:
                short.append(str(pol))
                cells.append("n/a")
                continue
            cells.append(_cell(vals))
        lines.append(f"| {pol} | " + " | ".join(cells) + " |")
    lines += ["", "Lowest mean regret at round T (and the policies whose interval "
              "overlaps it):", ""]
    for env, (best, ties) in winners(ds, T).items():
        lines.append(f"* {env}: **{best}**" + (f" (overlapping: {', '.join(ties)})"
                                              if ties else ""))
    for pol in dict.fromkeys(short):
        at, n = cfg["nuts_T"], cfg["nuts_runs"]
        lines += ["", f"{pol} ran {at} rounds and {n} run(s) (it is not vmapped over "
                  f"runs and its warm NUTS costs far more per round). Regret at round "
                  f"{at}, every policy:", "",
                  "| policy | " + " | ".join(envs) + " |", "|---|" + "---|" * len(envs)]
        for p in ds["policy"].values:
            cells = ["skipped" if str(p) in skipped.get(env, {}) else
                     _cell(ds["regret"].sel(env=env, policy=p, round=at).values)
                     for env in envs]
            lines.append(f"| {p} | " + " | ".join(cells) + " |")
    reasons = {(p, why): [] for e in envs for p, why in skipped.get(e, {}).items()}
    for e in envs:
        for p, why in skipped.get(e, {}).items():
            reasons[(p, why)].append(e)
    if reasons:
        lines += ["", "Skipped:", ""]
        lines += [f"* {p} on {', '.join(es)}: {why}." for (p, why), es in reasons.items()]
    lines += ["", "Policies:", ""] + [f"* {p}: {d}" for p, d in pols.items()]
    lines += ["", "Best list's value per environment: " + ", ".join(
        f"{e} {float(ds['best_value'].sel(env=e)):.4f}" for e in envs) + "."]
    if "seconds" in ds:
        tot = float(np.nansum(ds["seconds"].values))
        wall = ds.attrs.get("seconds_total")
        took = f"; the study took {float(wall):.0f} s" if wall is not None else ""
        lines += ["", f"The policies' wall times add up to {tot:.0f} s (compilation "
                  f"included; policies played side by side overlap{took}; not a "
                  "benchmark)."]
    return "\n".join(lines) + "\n"


def figure(ds: xr.Dataset, path) -> None:
    """Cumulative regret against rounds (log scale), one panel per environment: the
    mean over runs and its 95 % interval as a band (3 runs or more) (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = list(ds["env"].values)
    cols = min(3, len(envs))
    rows = -(-len(envs) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.6 * rows),
                             squeeze=False)
    x = ds["round"].values
    policies = [str(p) for p in ds["policy"].values]
    colors = dict(zip(policies, [f"C{i}" for i in range(10)] + ["k", "0.55"] * 50))
    handles = {}
    for k, env in enumerate(envs):
        ax = axes.flat[k]
        for pol in policies:
            r = ds["regret"].sel(env=env, policy=pol).values  # (run, round)
            r = r[np.isfinite(r).any(axis=1)]  # the runs it played
            ok = np.isfinite(r).all(axis=0) if r.size else np.zeros(len(x), bool)
            if not ok.any():
                continue
            r = r[:, ok]
            stats = np.array([interval(c) for c in r.T])
            entry = POLICIES.get(pol)
            ls = entry.linestyle if entry is not None else "-"
            (handles[pol],) = ax.plot(x[ok], stats[:, 0], color=colors[pol], ls=ls,
                                      lw=1.4, label=pol)
            if r.shape[0] > 2:  # 2 runs: the t interval (1 df) is too wide to draw
                ax.fill_between(x[ok], stats[:, 1], stats[:, 2], color=colors[pol],
                                alpha=0.15, lw=0)
        ax.set(title=str(env), xlabel="round", yscale="log",
               ylabel="cumulative regret (log scale)")
    for ax in list(axes.flat)[len(envs):]:
        ax.axis("off")
    labels = [p for p in policies if p in handles]
    fig.legend([handles[p] for p in labels], labels, loc="lower center",
               ncol=min(6, len(labels)), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
