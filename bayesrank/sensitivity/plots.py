"""Figures and tables of a sweep's results (the Dataset of :func:`run_sweep`).

* :func:`plot_regret_heatmap`: mean final cumulative regret over two prior axes;
* :func:`plot_regret_curves`: mean cumulative regret per cell with a quantile band;
* :func:`diagnostics_table`: one row per cell and checkpoint (worst R-hat, ESS, MCSE,
  divergences, power-scaling sensitivity and its diagnosis);
* :func:`plot_psense`: prior and likelihood sensitivity per cell over checkpoints, with
  the 0.05 threshold.

Matplotlib is imported inside the functions (``Agg`` works headless).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "diagnostics_table",
    "heatmap_axes",
    "plot_psense",
    "plot_regret_curves",
    "plot_regret_heatmap",
]

PRIOR_AXES = (
    "location",
    "scale",
    "correlation",
    "noise_scale",
    "df",
    "a0",
    "b0",
    "env_seed",
    "env_noise_sd",
    "env_K",
    "env_d",
)


def _values(ds, name) -> np.ndarray:
    v = ds[name].values
    return np.broadcast_to(v, (ds.sizes["cell"],)) if v.ndim == 0 else v


def heatmap_axes(ds) -> tuple[str, str | None]:
    """The two coordinates that vary most across cells (by number of values)."""
    counts = []
    for name in PRIOR_AXES:
        if name in ds.coords:
            counts.append((len(np.unique(_values(ds, name))), name))
    counts = sorted((c for c in counts if c[0] > 1), key=lambda c: -c[0])
    if not counts:
        return "prior", None
    x = counts[0][1]
    y = counts[1][1] if len(counts) > 1 else "prior"
    return x, y


def plot_regret_heatmap(
    ds,
    x: str | None = None,
    y: str | None = None,
    path=None,
    ax=None,
    prior: str | None = None,
):
    """Heatmap of the mean final cumulative regret over two cell coordinates.

    Cells sharing (x, y) values are averaged (over runs and over the other axes).

    Args:
        ds: the sweep Dataset.
        x, y: coordinate names (default: :func:`heatmap_axes`); ``"prior"`` uses the
            prior block names.
        path: write a PNG there; ax: draw into this matplotlib Axes.
        prior: the prior block to show; default the block with the most cells when
            no axis is given, else every cell.

    Returns:
        The matplotlib Figure.
    """
    import matplotlib.pyplot as plt

    names = _values(ds, "prior")
    if prior is None and x is None and y is None:
        blocks, counts = np.unique(names, return_counts=True)
        prior = str(blocks[np.argmax(counts)])
    if prior is not None:
        if prior not in set(names.tolist()):
            raise ValueError(f"prior: no prior block named {prior!r} in the sweep")
        ds = ds.isel(cell=np.flatnonzero(names == prior))
    dx, dy = heatmap_axes(ds)
    x = x or dx
    y = y or dy or "prior"
    for name in (x, y):
        if name not in ds.coords:
            raise ValueError(f"x/y: {name!r} is not a coordinate of the sweep")
    xv, yv = _values(ds, x), _values(ds, y)
    final = ds["final_regret"].mean("run").values
    xs, ys = (
        list(dict.fromkeys(sorted(xv, key=str))),
        list(dict.fromkeys(sorted(yv, key=str))),
    )
    if all(isinstance(v, (int, float, np.number)) for v in xs):
        xs = sorted(xs)
    if all(isinstance(v, (int, float, np.number)) for v in ys):
        ys = sorted(ys)
    grid = np.full((len(ys), len(xs)), np.nan)
    for i, yy in enumerate(ys):
        for j, xx in enumerate(xs):
            sel = (xv == xx) & (yv == yy)
            if sel.any():
                grid[i, j] = final[sel].mean()
    if ax is None:
        fig, ax = plt.subplots(figsize=(1.2 * len(xs) + 3, 0.8 * len(ys) + 2))
    else:
        fig = ax.figure
    im = ax.imshow(grid, cmap="viridis", aspect="auto", origin="lower")
    ax.set_xticks(
        range(len(xs)), [f"{v:g}" if not isinstance(v, str) else v for v in xs]
    )
    ax.set_yticks(
        range(len(ys)), [f"{v:g}" if not isinstance(v, str) else v for v in ys]
    )
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    for i in range(len(ys)):
        for j in range(len(xs)):
            if np.isfinite(grid[i, j]):
                ax.text(
                    j,
                    i,
                    f"{grid[i, j]:.0f}",
                    ha="center",
                    va="center",
                    color="white",
                    fontsize=8,
                )
    fig.colorbar(im, ax=ax, label=f"cumulative regret after T={ds.sizes['round']}")
    ax.set_title(
        "RankTS regret over the prior grid"
        + (f" (prior block {prior!r})" if prior is not None else "")
    )
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def plot_regret_curves(ds, path=None, ax=None):
    """Mean cumulative regret of every cell with its outer quantile band.

    Returns:
        The matplotlib Figure.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 5))
    else:
        fig = ax.figure
    rounds = ds["round"].values
    labels = _values(ds, "label")
    q = ds["cum_regret_quantile"]
    for c in range(ds.sizes["cell"]):
        (line,) = ax.plot(rounds, ds["cum_regret_mean"].values[c], label=labels[c])
        if q.sizes["quantile"] >= 2:
            ax.fill_between(
                rounds,
                q.values[c, 0],
                q.values[c, -1],
                color=line.get_color(),
                alpha=0.15,
            )
    ax.set_xlabel("round")
    ax.set_ylabel("cumulative pseudo-regret")
    ax.set_title("Regret per prior (band: outer quantiles over runs)")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def diagnostics_table(ds, threshold: float | None = None):
    """One row per (cell, checkpoint): worst diagnostics over positions, coordinates
    and diagnosed runs.

    Columns: cell, label, checkpoint, rhat_max, ess_bulk_min, ess_tail_min,
    mcse_mean_max, divergences, psense_prior_max, psense_likelihood_max, diagnosis
    (as in ``arviz.psense_summary``: "potential prior-data conflict" when both
    sensitivities exceed the threshold, "potential strong prior / weak likelihood"
    when only the prior's does, "✓" otherwise).

    Returns:
        pandas.DataFrame.
    """
    import pandas as pd

    thr = float(
        ds.attrs.get("psense_threshold", 0.05) if threshold is None else threshold
    )
    red = ["diag_run", "position", "theta_dim"]
    stats = {
        "rhat_max": ds["rhat"].max(red),
        "ess_bulk_min": ds["ess_bulk"].min(red),
        "ess_tail_min": ds["ess_tail"].min(red),
        "mcse_mean_max": ds["mcse_mean"].max(red),
        "divergences": ds["divergences"].sum(["diag_run", "position"]),
        "psense_prior_max": ds["psense_prior"].max(red),
        "psense_likelihood_max": ds["psense_likelihood"].max(red),
    }
    labels = _values(ds, "label")
    rows = []
    for c in range(ds.sizes["cell"]):
        for k, cp in enumerate(ds["checkpoint"].values):
            row = {"cell": c, "label": labels[c], "checkpoint": int(cp)}
            for name, da in stats.items():
                row[name] = da.values[c, k].item()
            prior_hi = row["psense_prior_max"] >= thr
            like_hi = row["psense_likelihood_max"] >= thr
            row["diagnosis"] = (
                "potential prior-data conflict"
                if prior_hi and like_hi
                else "potential strong prior / weak likelihood"
                if prior_hi
                else "✓"
            )
            rows.append(row)
    return pd.DataFrame(rows)


def plot_psense(ds, path=None, threshold: float | None = None):
    """Power-scaling sensitivity (max over positions and coordinates) per cell.

    Two panels, prior and likelihood, against the checkpoint round, with the
    threshold line (0.05 by default).

    Returns:
        The matplotlib Figure.
    """
    import matplotlib.pyplot as plt

    thr = float(
        ds.attrs.get("psense_threshold", 0.05) if threshold is None else threshold
    )
    red = ["diag_run", "position", "theta_dim"]
    n = ds.sizes["cell"]
    rows = (n + 2) // 2
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5 + 0.22 * rows), sharex=True)
    cps = ds["checkpoint"].values
    labels = _values(ds, "label")
    for ax, var, title in zip(
        axes,
        ("psense_prior", "psense_likelihood"),
        ("prior sensitivity", "likelihood sensitivity"),
    ):
        vals = ds[var].max(red).values
        for c in range(ds.sizes["cell"]):
            ax.plot(cps, vals[c], marker="o", label=labels[c])
        ax.axhline(thr, color="k", ls="--", lw=1, label=f"threshold {thr:g}")
        ax.set_yscale("log")
        ax.set_xlabel("round (checkpoint)")
        ax.set_title(f"power-scaling {title} (arviz.psense)")
    axes[0].set_ylabel("max over positions and coordinates")
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=2, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.22 * rows / (4.5 + 0.22 * rows) + 0.02, 1, 1))
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
