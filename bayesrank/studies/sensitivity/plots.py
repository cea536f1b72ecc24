"""Figures and tables of a sweep's results (the Dataset of :func:`run_sweep`).

* :func:`plot_regret_heatmap`: mean final cumulative regret over two prior axes;
* :func:`plot_regret_curves`: mean cumulative regret per cell with a quantile band;
* :func:`diagnostics_table`: one row per cell and checkpoint (worst R-hat, ESS, MCSE,
  divergences, power-scaling sensitivity and its diagnosis);
* :func:`plot_psense`: prior and likelihood sensitivity per cell over checkpoints
  (median over positions and coordinates), with ArviZ's 0.05 threshold.

The psense flag follows ``arviz.psense_summary``, whose documented default threshold
is 0.05 and whose diagnosis is made per variable coordinate: "potential prior-data
conflict" when the prior and the likelihood sensitivity *of the same coordinate*
are both >= 0.05, "potential strong prior / weak likelihood" when only the prior's is.
A cell is flagged when more than half of its coordinates (positions x theta
coordinates x diagnosed runs, :data:`FLAG_SHARE`) carry a flag: a bandit never
explores some directions, where the prior rightly dominates, and the largest of 20-40
finite-sample estimates exceeds 0.05 by chance, so the maximum over coordinates flags
almost every prior (11 of the 14 cells of ``examples/sweep.toml``, the default N(0, 1)
included) while the majority rule flags the confidently narrow ones.

Matplotlib is imported inside the functions (``Agg`` works headless).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "FLAG_SHARE",
    "coordinate_diagnosis",
    "diagnostics_table",
    "heatmap_axes",
    "plot_psense",
    "plot_regret_curves",
    "plot_regret_heatmap",
]

#: A cell is flagged when more than this share of its coordinates are flagged.
FLAG_SHARE = 0.5

CONFLICT = "potential prior-data conflict"
STRONG_PRIOR = "potential strong prior / weak likelihood"

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

    Example:
        >>> import tempfile
        >>> from bayesrank.studies import sensitivity as sens
        >>> spec = sens.parse_config({
        ...     "sweep": {"T": 10, "runs": 2, "checkpoints": [10], "draws": 20,
        ...               "chains": 2},
        ...     "env": {"K": 4, "L": 2, "d": 2},
        ...     "priors": {"weak": {"scale": [1.0, 10.0]}}})
        >>> out = tempfile.TemporaryDirectory()
        >>> ds = sens.run_sweep(spec, out.name, progress=False)
        >>> fig = sens.plot_regret_heatmap(ds)
        >>> len(fig.axes) >= 1
        True
        >>> out.cleanup()
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

    One panel per prior block (small multiples, shared axes); within a panel the
    cells follow a colour map. With ``ax`` given, everything is drawn into it
    (colour maps per block, line style per block).

    Returns:
        The matplotlib Figure.

    Example:
        >>> import tempfile
        >>> from bayesrank.studies import sensitivity as sens
        >>> spec = sens.parse_config({
        ...     "sweep": {"T": 10, "runs": 2, "checkpoints": [10], "draws": 20,
        ...               "chains": 2},
        ...     "env": {"K": 4, "L": 2, "d": 2},
        ...     "priors": {"weak": {"scale": [1.0, 10.0]}}})
        >>> out = tempfile.TemporaryDirectory()
        >>> ds = sens.run_sweep(spec, out.name, progress=False)
        >>> fig = sens.plot_regret_curves(ds)
        >>> len(fig.axes[0].lines) >= 2                       # one curve per cell
        True
        >>> out.cleanup()
    """
    import matplotlib.pyplot as plt

    names = _values(ds, "prior").tolist()
    blocks = list(dict.fromkeys(names))
    if ax is None:
        ncol = min(2, len(blocks))
        nrow = (len(blocks) + ncol - 1) // ncol
        fig, axs = plt.subplots(
            nrow, ncol, figsize=(6.0 * ncol, 3.6 * nrow), sharex=True, sharey=True,
            squeeze=False,
        )
        axes = {b: axs.flat[i] for i, b in enumerate(blocks)}
        for extra in list(axs.flat)[len(blocks):]:
            extra.set_visible(False)
    else:
        fig = ax.figure
        axes = {b: ax for b in blocks}
    rounds = ds["round"].values
    labels = _values(ds, "label")
    styles = _cell_styles(ds)
    q = ds["cum_regret_quantile"]
    qs = ds["quantile"].values if "quantile" in ds.coords else None
    band = (
        f"band: {100 * qs[0]:g}-{100 * qs[-1]:g} % quantiles over "
        f"{ds.sizes['run']} runs"
        if qs is not None and len(qs) >= 2
        else None
    )
    for c in range(ds.sizes["cell"]):
        a = axes[names[c]]
        label = labels[c].split(": ", 1)[-1] if len(axes) > 1 else labels[c]
        st = styles[c]
        a.plot(
            rounds, ds["cum_regret_mean"].values[c], label=label, color=st["color"],
            linestyle=st["linestyle"],
        )
        if q.sizes["quantile"] >= 2:
            a.fill_between(
                rounds, q.values[c, 0], q.values[c, -1], color=st["color"], alpha=0.12
            )
    single = len({id(a) for a in axes.values()}) == 1
    for b, a in {id(a): (b, a) for b, a in axes.items()}.values():
        a.set_xlabel("round")
        a.set_ylabel("cumulative pseudo-regret")
        a.set_title("Regret per prior" if single else f"prior block {b!r}")
        a.legend(fontsize=7, loc="upper left", title=band, title_fontsize=7)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def coordinate_diagnosis(prior, likelihood, threshold: float = 0.05) -> np.ndarray:
    """``arviz.psense_summary``'s diagnosis, coordinate by coordinate.

    Args:
        prior, likelihood: arrays of the same shape, the power-scaling sensitivities
            of each coordinate.
        threshold: ArviZ's default is 0.05.

    Returns:
        An object array of the same shape: "potential prior-data conflict",
        "potential strong prior / weak likelihood" or "✓".
    """
    p, lk = np.asarray(prior, float), np.asarray(likelihood, float)
    if p.shape != lk.shape:
        raise ValueError(
            f"likelihood: expected the prior's shape {p.shape}, got {lk.shape}"
        )
    out = np.full(p.shape, "✓", dtype=object)
    out[(p >= threshold) & (lk < threshold)] = STRONG_PRIOR
    out[(p >= threshold) & (lk >= threshold)] = CONFLICT
    return out


def _cell_diagnosis(diag: np.ndarray, share: float) -> tuple[str, float]:
    """(diagnosis, flagged share) of one cell from its coordinates' diagnoses."""
    n = diag.size
    conflict = float(np.sum(diag == CONFLICT)) / n
    strong = float(np.sum(diag == STRONG_PRIOR)) / n
    flagged = conflict + strong
    if flagged <= share:
        return "✓", flagged
    return (CONFLICT if conflict >= strong else STRONG_PRIOR), flagged


def diagnostics_table(ds, threshold: float | None = None, share: float = FLAG_SHARE):
    """One row per (cell, checkpoint): worst diagnostics over positions, coordinates
    and diagnosed runs, and the psense diagnosis.

    Columns: cell, label, checkpoint, rhat_max, ess_bulk_min, ess_tail_min,
    mcse_mean_max, divergences, psense_prior_max, psense_likelihood_max,
    psense_prior_median, psense_flag_share (the share of coordinates that
    ``arviz.psense_summary`` would flag, see :func:`coordinate_diagnosis`) and
    diagnosis: the commoner flag when that share exceeds ``share`` (default
    :data:`FLAG_SHARE`), else "✓".

    Returns:
        pandas.DataFrame.

    Example:
        >>> import tempfile
        >>> from bayesrank.studies import sensitivity as sens
        >>> spec = sens.parse_config({
        ...     "sweep": {"T": 10, "runs": 2, "checkpoints": [10], "draws": 20,
        ...               "chains": 2},
        ...     "env": {"K": 4, "L": 2, "d": 2},
        ...     "priors": {"weak": {"scale": [1.0, 10.0]}}})
        >>> out = tempfile.TemporaryDirectory()
        >>> ds = sens.run_sweep(spec, out.name, progress=False)
        >>> table = sens.diagnostics_table(ds)
        >>> len(table), "rhat_max" in table.columns, "diagnosis" in table.columns
        (2, True, True)
        >>> out.cleanup()
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
        "psense_prior_median": ds["psense_prior"].median(red),
    }
    order = ["cell", "checkpoint", *red]
    prior = ds["psense_prior"].transpose(*order).values
    like = ds["psense_likelihood"].transpose(*order).values
    labels = _values(ds, "label")
    rows = []
    for c in range(ds.sizes["cell"]):
        for k, cp in enumerate(ds["checkpoint"].values):
            row = {"cell": c, "label": labels[c], "checkpoint": int(cp)}
            for name, da in stats.items():
                row[name] = da.values[c, k].item()
            diag = coordinate_diagnosis(prior[c, k], like[c, k], thr)
            row["diagnosis"], row["psense_flag_share"] = _cell_diagnosis(diag, share)
            rows.append(row)
    cols = [*rows[0]] if rows else []
    if cols:
        cols.remove("psense_flag_share")
        cols.insert(cols.index("diagnosis"), "psense_flag_share")
    return pd.DataFrame(rows, columns=cols or None)


def plot_psense(ds, path=None, threshold: float | None = None):
    """Power-scaling sensitivity per cell: median over positions and coordinates.

    Two panels, prior and likelihood, against the checkpoint round, with ArviZ's
    threshold line (0.05 by default); a cell whose median prior sensitivity is above
    the line has most of its coordinates flagged (see :func:`diagnostics_table`).
    Cells of one prior block share a colour map; blocks differ in line style.

    Returns:
        The matplotlib Figure.

    Example:
        >>> import tempfile
        >>> from bayesrank.studies import sensitivity as sens
        >>> spec = sens.parse_config({
        ...     "sweep": {"T": 10, "runs": 2, "checkpoints": [10], "draws": 20,
        ...               "chains": 2},
        ...     "env": {"K": 4, "L": 2, "d": 2},
        ...     "priors": {"weak": {"scale": [1.0, 10.0]}}})
        >>> out = tempfile.TemporaryDirectory()
        >>> ds = sens.run_sweep(spec, out.name, progress=False)
        >>> len(sens.plot_psense(ds).axes)                    # prior, likelihood
        2
        >>> out.cleanup()
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
    styles = _cell_styles(ds)
    for ax, var, title in zip(
        axes,
        ("psense_prior", "psense_likelihood"),
        ("prior sensitivity", "likelihood sensitivity"),
    ):
        vals = ds[var].median(red).values
        for c in range(n):
            ax.plot(cps, np.maximum(vals[c], 1e-4), label=labels[c], **styles[c])
        ax.axhline(thr, color="k", ls="--", lw=1, label=f"ArviZ threshold {thr:g}")
        ax.set_yscale("log")
        ax.set_xlabel("round (checkpoint)")
        ax.set_ylabel(f"{title} (CJS, median over\npositions and coordinates)")
        ax.set_title(f"power-scaling {title} (arviz.psense)")
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=2, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.22 * rows / (4.5 + 0.22 * rows) + 0.02, 1, 1))
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def _cell_styles(ds) -> list[dict]:
    """Per cell: a colour from its prior block's colour map, a line style and a
    marker per block, so 14 or more cells stay distinguishable."""
    import matplotlib as mpl

    blocks = list(dict.fromkeys(_values(ds, "prior").tolist()))
    maps = ["viridis", "plasma", "cividis", "cool", "winter", "autumn"]
    lines = ["-", "--", "-.", ":"]
    marks = ["o", "s", "^", "D", "v", "P"]
    names = _values(ds, "prior").tolist()
    out = []
    for c, b in enumerate(names):
        members = [i for i, x in enumerate(names) if x == b]
        j = blocks.index(b)
        cmap = mpl.colormaps[maps[j % len(maps)]]
        pos = members.index(c) / max(1, len(members) - 1) * 0.85
        out.append(
            {
                "color": cmap(pos),
                "linestyle": lines[j % len(lines)],
                "marker": marks[j % len(marks)],
            }
        )
    return out
