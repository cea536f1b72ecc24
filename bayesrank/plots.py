"""Publication-quality plots of simulation results (matplotlib).

One colour per algorithm everywhere (:data:`COLORS`), regret curves with a band,
cumulative regret against the theorems' bounds, and markdown timing tables.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "COLORS",
    "color_for",
    "regret_curves",
    "save",
    "tightness",
    "timing_table",
    "trailing_mean",
]

COLORS = {
    "RankTS": "#d62728",
    "RankUCB": "#6a3d9a",
    "GenRankUCB": "#1f77b4",
    "genRankUCB": "#1f77b4",
    "WindowRankUCB": "#2ca02c",
    "Baseline": "#7f7f7f",
    "RankedBaseline": "#7f7f7f",
    "RankTS (w=0)": "#ff7f0e",
    "RankTS-NUTS": "#8c564b",
}
_FALLBACK = ["#17becf", "#bcbd22", "#e377c2", "#8c564b", "#ff7f0e", "#9467bd"]


def color_for(name: str) -> str:
    """The colour of an algorithm (stable across figures)."""
    if name in COLORS:
        return COLORS[name]
    return _FALLBACK[sum(map(ord, name)) % len(_FALLBACK)]


def trailing_mean(r, window: int):
    """Mean over the last ``window`` rounds (fewer at the start), along the last axis.

    Raises:
        ValueError: if ``window`` is not a positive integer.
    """
    if (
        isinstance(window, bool)
        or not isinstance(window, (int, np.integer))
        or window < 1
    ):
        raise ValueError(f"window: expected a positive integer, got {window!r}")
    c = np.cumsum(r, axis=-1)
    out = c.copy()
    out[..., window:] = c[..., window:] - c[..., :-window]
    n = np.minimum(np.arange(1, r.shape[-1] + 1), window)
    return out / n


def _style(ax, xlabel, ylabel, title):
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3, linewidth=0.6)
    ax.spines[["top", "right"]].set_visible(False)


def regret_curves(
    ds,
    *,
    ax=None,
    cumulative: bool = False,
    band: str = "quantile",
    window: int = 1,
    title: str | None = None,
    log_y: bool = False,
):
    """Mean regret per round over runs, with a band, one line per policy.

    Args:
        ds: the Dataset from :func:`bayesrank.simulate`.
        cumulative: plot cumulative regret instead of per-round regret.
        band: "quantile" (10 %-90 % of runs), "se" (mean +- 2 standard errors) or None.
        window: moving-average window over rounds (per-round curves only).

    Returns:
        The matplotlib Figure.
    """
    import matplotlib.pyplot as plt

    if band not in ("quantile", "se", None):
        raise ValueError(f"band: expected 'quantile', 'se' or None, got {band!r}")
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.0), constrained_layout=True)
    else:
        fig = ax.figure
    rounds = ds["round"].values + 1
    for name in ds["policy"].values:
        r = ds["regret"].sel(policy=name).values  # (runs, T)
        if cumulative:
            r = np.cumsum(r, axis=1)
        elif window > 1:
            r = trailing_mean(r, window)
        mean = r.mean(axis=0)
        c = color_for(str(name))
        ax.plot(rounds, mean, color=c, label=str(name), linewidth=1.6)
        if band == "quantile" and r.shape[0] > 1:
            lo, hi = np.quantile(r, [0.1, 0.9], axis=0)
            ax.fill_between(rounds, lo, hi, color=c, alpha=0.15, linewidth=0)
        elif band == "se" and r.shape[0] > 1:
            se = r.std(axis=0, ddof=1) / np.sqrt(r.shape[0])
            ax.fill_between(
                rounds, mean - 2 * se, mean + 2 * se, color=c, alpha=0.2, linewidth=0
            )
    if log_y:
        ax.set_yscale("log")
    _style(
        ax,
        "round",
        "cumulative pseudo-regret" if cumulative else "pseudo-regret per round",
        title,
    )
    ax.legend(frameon=False)
    return fig


def tightness(ds, bounds: dict, *, policy: str | None = None, ax=None, title=None):
    """Cumulative regret of policies against theorem bounds over rounds.

    Args:
        bounds: ``{label: (T,) array}`` bound values at rounds 1..T (see
            :mod:`bayesrank.bounds`).
        policy: restrict to one policy (default: all in ``ds``).
    """
    import matplotlib.pyplot as plt

    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.0), constrained_layout=True)
    else:
        fig = ax.figure
    sub = ds if policy is None else ds.sel(policy=[policy])
    regret_curves(sub, ax=ax, cumulative=True, band="quantile")
    rounds = ds["round"].values + 1
    for i, (label, values) in enumerate(bounds.items()):
        ax.plot(
            rounds,
            np.asarray(values),
            linestyle="--",
            color="k",
            alpha=max(0.2, 0.8 - 0.2 * i),
            label=label,
            linewidth=1.2,
        )
    ax.set_yscale("log")
    _style(ax, "round", "cumulative regret", title)
    ax.legend(frameon=False)
    return fig


def timing_table(rows: list[dict], columns: list[str]) -> str:
    """A markdown table from a list of dicts."""
    head = "| " + " | ".join(columns) + " |"
    sep = "|" + "|".join("---" for _ in columns) + "|"
    body = []
    for row in rows:
        cells = []
        for c in columns:
            v = row.get(c, "")
            cells.append(f"{v:.4g}" if isinstance(v, float) else str(v))
        body.append("| " + " | ".join(cells) + " |")
    return "\n".join([head, sep, *body])


def save(fig, path, dpi: int = 150) -> None:
    """Save a figure as PNG and close it."""
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=dpi)
    plt.close(fig)
