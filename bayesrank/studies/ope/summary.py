"""Per-cell statistics and figures of the OPE study
(:mod:`bayesrank.studies.ope.study`): bias, RMSE, coverage; RMSE and coverage plots.

Example:
    >>> import numpy as np
    >>> from bayesrank.studies.ope import summary as ope_summary
    >>> ope_summary.fmt(0.012345), ope_summary.fmt(1234.5), ope_summary.fmt(np.nan)
    ('0.0123', '1.23e+03', 'n/a')
"""

from __future__ import annotations

import numpy as np

__all__ = ["COLOURS", "figures", "fmt", "fmt_cov", "summarise", "ts_summarise"]

#: colours of the known estimators (others get a fallback colour)
COLOURS = {
    "list_ips": "#7f7f7f",
    "position_ips": "#d62728",
    "cascade_ips": "#2ca02c",
    "pair_ips": "#1f77b4",
    "dm": "#9467bd",
    "pair_dr": "#ff7f0e",
}
_FALLBACK = ["#8c564b", "#e377c2", "#bcbd22", "#17becf"]


def fmt(x: float) -> str:
    """Three significant digits ('n/a' for NaN)."""
    return "n/a" if not np.isfinite(x) else f"{x:.3g}"


def fmt_cov(x: float) -> str:
    """A coverage with two decimals ('n/a' for NaN)."""
    return "n/a" if not np.isfinite(x) else f"{x:.2f}"


def _stats(est, lo, hi, se, truth, axis):
    """Bias, its Monte Carlo stderr, RMSE, coverage, mean stderr, sd over ``axis``."""
    err = est - truth
    k = est.shape[axis]
    sd = est.std(axis=axis, ddof=1)
    return {
        "mean_estimate": est.mean(axis=axis),
        "bias": err.mean(axis=axis),
        "bias_se": sd / np.sqrt(k),
        "rmse": np.sqrt((err**2).mean(axis=axis)),
        "coverage": np.where(  # NaN where the estimator was not run
            np.isnan(est).any(axis=axis),
            np.nan,
            ((lo <= truth) & (truth <= hi)).mean(axis=axis),
        ),
        "mean_stderr": se.mean(axis=axis),
        "sd": sd,
    }


def summarise(res):
    """Per-cell bias, bias_se, rmse, coverage, mean_stderr, sd, mean_estimate over
    (K, L, w_max, logger, n, estimator): ``xarray.Dataset``."""
    import xarray as xr

    dims = ("K", "L", "w_max", "logger", "n", "log", "estimator")
    g = {
        v: res[v].transpose(*dims).values
        for v in ("estimate", "stderr", "ci_low", "ci_high")
    }
    truth = res["truth"].transpose("K", "L", "w_max").values
    truth = truth[:, :, :, None, None, None, None]
    s = _stats(g["estimate"], g["ci_low"], g["ci_high"], g["stderr"], truth, axis=5)
    out_dims = dims[:5] + dims[6:]
    return xr.Dataset(
        {k: (out_dims, v) for k, v in s.items()}, coords={d: res[d] for d in out_dims}
    )


def ts_summarise(res):
    """The same statistics for the Thompson-sampling section, over (ts_w_max,
    ts_logger, estimator), plus ``mean_mc_stderr``."""
    import xarray as xr

    dims = ("ts_w_max", "ts_logger", "ts_log", "estimator")
    g = {
        v: res[f"ts_{v}"].transpose(*dims).values
        for v in ("estimate", "stderr", "ci_low", "ci_high", "mc_stderr")
    }
    truth = res["ts_truth"].values[:, None, None, None]
    s = _stats(g["estimate"], g["ci_low"], g["ci_high"], g["stderr"], truth, axis=2)
    s["mean_mc_stderr"] = g["mc_stderr"].mean(axis=2)
    out_dims = ("ts_w_max", "ts_logger", "estimator")
    return xr.Dataset(
        {k: (out_dims, v) for k, v in s.items()}, coords={d: res[d] for d in out_dims}
    )


# ---------------------------------------------------------------------- figures
def _colour(label: str, names: list[str]) -> str:
    base = label.removesuffix("_sn")
    if base in COLOURS:
        return COLOURS[base]
    return _FALLBACK[names.index(base) % len(_FALLBACK)]


def _grid(res, ylabel: str, draw, path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    rows = [(K, L) for K in res["K"].values for L in res["L"].values]
    cols = [(w, g) for w in res["w_max"].values for g in res["logger"].values]
    fig, axes = plt.subplots(
        len(rows),
        len(cols),
        figsize=(2.9 * len(cols) + 0.4, 2.4 * len(rows) + 0.9),
        sharex=True,
        squeeze=False,
        constrained_layout=True,
    )
    for i, (K, L) in enumerate(rows):
        for j, (w, g) in enumerate(cols):
            ax = axes[i, j]
            draw(ax, {"K": K, "L": L, "w_max": w, "logger": g})
            ax.set_xscale("log")
            ax.grid(alpha=0.3, linewidth=0.6)
            ax.spines[["top", "right"]].set_visible(False)
            wl = "w = 0" if w == 0 else f"w_max = {w:g}"
            ax.set_title(f"K={K}, L={L}, {wl}\n{g} logger", fontsize=8)
            if j == 0:
                ax.set_ylabel(ylabel, fontsize=8)
            if i == len(rows) - 1:
                ax.set_xlabel("rounds per log n", fontsize=8)
            ax.tick_params(labelsize=7)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="outside lower center",
        ncol=min(6, len(labels)),
        frameon=False,
        fontsize=8,
    )
    fig.suptitle(title, fontsize=10)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def figures(res, out) -> None:
    """Write ``rmse.png`` (RMSE against n, log-log) and ``coverage.png`` (95 %
    interval coverage against n) to the folder ``out``: one panel per
    (K, L) row and (w_max, logger) column, one line per estimator (dashed:
    self-normalised)."""
    from pathlib import Path

    out = Path(out)
    s = summarise(res)
    labels = [str(e) for e in s["estimator"].values]
    names = list(dict.fromkeys(lab.removesuffix("_sn") for lab in labels))
    n = s["n"].values
    logs = res.sizes["log"]

    def lines(var):
        def draw(ax, sel):
            for lab in labels:
                y = s[var].sel(**sel, estimator=lab).values
                ax.plot(
                    n,
                    y,
                    color=_colour(lab, names),
                    linestyle="--" if lab.endswith("_sn") else "-",
                    marker="o",
                    markersize=3,
                    linewidth=1.3,
                    label=lab,
                )
            if var == "rmse":
                ax.set_yscale("log")
            else:
                half = 1.959964 * np.sqrt(0.95 * 0.05 / logs)
                ax.axhline(0.95, color="k", linewidth=0.8)
                ax.axhspan(
                    0.95 - half, min(1.0, 0.95 + half), color="k", alpha=0.08, lw=0
                )
                ax.set_ylim(-0.03, 1.03)

        return draw

    _grid(
        res,
        "RMSE",
        lines("rmse"),
        out / "rmse.png",
        f"RMSE of the value estimate over {logs} logs per cell (truth exact; "
        "dashed: self-normalised)",
    )
    _grid(
        res,
        "coverage",
        lines("coverage"),
        out / "coverage.png",
        f"Coverage of the normal 95 % interval over {logs} logs "
        "(band: binomial 95 % range around 0.95)",
    )
