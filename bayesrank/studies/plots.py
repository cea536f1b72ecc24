"""Publication-quality plots of simulation results (matplotlib).

One colour and one line style per algorithm everywhere (:data:`COLORS`,
:data:`LINESTYLES`), so curves that lie on each other stay distinguishable; regret
curves with a band (stated in the legend's title), cumulative regret against the
theorems' bounds, and markdown timing tables. :func:`coinciding` names the policies
whose curves are identical, and :func:`regret_curves` marks them in the legend.
"""

from __future__ import annotations

import numpy as np

from bayesrank._validate import check_int

__all__ = [
    "COLORS",
    "LINESTYLES",
    "band_label",
    "coinciding",
    "color_for",
    "figure_styles",
    "regret_curves",
    "save",
    "style_for",
    "tightness",
    "timing_table",
    "trailing_mean",
]

#: The colour of each algorithm, the same in every figure.
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
#: The line style and marker of each algorithm, so that curves drawn on top of each
#: other stay visible.
LINESTYLES = {
    "RankTS": ("-", None),
    "RankUCB": ((0, (6, 2)), "o"),
    "GenRankUCB": ("-.", "s"),
    "genRankUCB": ("-.", "s"),
    "WindowRankUCB": ((0, (1, 1.5)), "^"),
    "Baseline": (":", "D"),
    "RankedBaseline": (":", "D"),
    "RankTS (w=0)": ((0, (3, 1, 1, 1, 1, 1)), "v"),
    "RankTS-NUTS": ((0, (8, 2, 2, 2)), "P"),
}
_FALLBACK_STYLES = [("-", "x"), ("--", "+"), ("-.", "*"), (":", "h"),
                    ((0, (5, 1)), "p"), ((0, (2, 2)), "<"), ((0, (4, 1, 1, 1)), ">"),
                    ((0, (1, 3)), "d")]
_FALLBACK = ["#17becf", "#bcbd22", "#e377c2", "#8c564b", "#ff7f0e", "#9467bd",
             "#1f77b4", "#2ca02c", "#d62728", "#7f7f7f", "#393b79", "#637939"]


def color_for(name: str) -> str:
    """The colour of an algorithm (stable across figures).

    Example:
        >>> from bayesrank.studies.plots import color_for
        >>> color_for("RankTS"), color_for("my policy") == color_for("my policy")
        ('#d62728', True)
    """
    if name in COLORS:
        return COLORS[name]
    return _FALLBACK[sum(map(ord, name)) % len(_FALLBACK)]


def style_for(name: str) -> tuple:
    """The (line style, marker) of an algorithm (stable across figures).

    Example:
        >>> from bayesrank.studies.plots import style_for
        >>> style_for("RankTS")
        ('-', None)
    """
    if name in LINESTYLES:
        return LINESTYLES[name]
    return _FALLBACK_STYLES[sum(map(ord, name)) % len(_FALLBACK_STYLES)]


def band_label(band: str | None, runs: int) -> str | None:
    """What the shaded band of :func:`regret_curves` shows, in words.

    Example:
        >>> from bayesrank.studies.plots import band_label
        >>> band_label("se", 20)
        'shaded: mean +- 2 s.e. over 20 runs'
    """
    if band is None or runs < 2:
        return None
    if band == "quantile":
        return f"shaded: 10-90 % of {runs} runs"
    return f"shaded: mean +- 2 s.e. over {runs} runs"


def coinciding(ds, *, var: str = "regret", rtol: float = 1e-9) -> list[list[str]]:
    """Groups of policies whose ``var`` is the same in every run and round.

    With common random numbers, two policies that make the same choices have equal
    regret everywhere (for example RankUCB and the baseline when w = 0: RankUCB with
    known w = 0 *is* the baseline). Returns the groups of two or more names, in the
    order of ``ds["policy"]``.

    Example:
        >>> import numpy as np, xarray as xr
        >>> r = np.zeros((3, 2, 4)); r[2] += 1.0
        >>> ds = xr.Dataset({"regret": (("policy", "run", "round"), r)},
        ...                 coords={"policy": ["A", "B", "C"]})
        >>> coinciding(ds)
        [['A', 'B']]
    """
    names = [str(n) for n in ds["policy"].values]
    vals = {n: np.asarray(ds[var].sel(policy=n).values) for n in names}
    groups: list[list[str]] = []
    seen: set[str] = set()
    for i, a in enumerate(names):
        if a in seen:
            continue
        g = [a] + [
            b
            for b in names[i + 1 :]
            if b not in seen
            and vals[b].shape == vals[a].shape
            and np.allclose(vals[a], vals[b], rtol=rtol, atol=0.0)
        ]
        if len(g) > 1:
            groups.append(g)
            seen.update(g)
    return groups


def trailing_mean(r, window: int):
    """Mean over the last ``window`` rounds (fewer at the start), along the last axis.

    Raises:
        ValueError: if ``window`` is not a positive integer.

    Example:
        >>> import numpy as np
        >>> from bayesrank.studies.plots import trailing_mean
        >>> trailing_mean(np.array([1.0, 2.0, 3.0, 4.0]), 2).tolist()
        [1.0, 1.5, 2.5, 3.5]
    """
    window = check_int(window, "window", low=1)
    c = np.cumsum(r, axis=-1)
    out = c.copy()
    out[..., window:] = c[..., window:] - c[..., :-window]
    n = np.minimum(np.arange(1, r.shape[-1] + 1), window)
    return out / n


def figure_styles(names) -> dict:
    """``{name: (colour, line style, marker)}`` for the curves of one figure: the
    fixed style of each algorithm in :data:`COLORS`/:data:`LINESTYLES`, and for every
    other name a colour and a (line style, marker) that no other curve of the figure
    has (its stable choice when free, else the next free one).

    Example:
        >>> from bayesrank.studies.plots import figure_styles
        >>> st = figure_styles(["RankTS", "RankTS (known w)", "GenRankTS", "Baseline"])
        >>> len({c for c, _, _ in st.values()}) == len({(l, m) for _, l, m in st.values()}) == 4
        True
    """
    names = [str(n) for n in names]
    out, colours, styles = {}, set(), set()
    for n in names:
        if n in COLORS:
            out[n] = (COLORS[n], *style_for(n))
            colours.add(COLORS[n])
            styles.add(style_for(n))
    for n in names:
        if n in out:
            continue
        k = sum(map(ord, n))
        c = next((_FALLBACK[(k + i) % len(_FALLBACK)] for i in range(len(_FALLBACK))
                  if _FALLBACK[(k + i) % len(_FALLBACK)] not in colours), color_for(n))
        st = style_for(n) if n in LINESTYLES else next(
            (_FALLBACK_STYLES[(k + i) % len(_FALLBACK_STYLES)]
             for i in range(len(_FALLBACK_STYLES))
             if _FALLBACK_STYLES[(k + i) % len(_FALLBACK_STYLES)] not in styles),
            style_for(n))
        out[n] = (c, *st)
        colours.add(c)
        styles.add(st)
    return out


def _legend(ax, title, n_entries: int) -> None:
    """Beside the plot when it would hold more than four entries (it would cover
    curves), else inside at matplotlib's best place."""
    kw = dict(frameon=False, title=title, fontsize=8, title_fontsize=8)
    if n_entries > 4:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), **kw)
    else:
        ax.legend(**kw)


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

    The legend's title says what the band and the smoothing are; policies whose
    regret is identical in every run and round (:func:`coinciding`) are labelled
    "identical to ...", and every policy has its own line style and markers, so a
    curve drawn over another stays visible.

    Returns:
        The matplotlib Figure.

    Example:
        >>> import numpy as np, xarray as xr
        >>> from bayesrank.studies.plots import regret_curves
        >>> r = np.random.default_rng(0).exponential(size=(2, 3, 50))
        >>> ds = xr.Dataset({"regret": (("policy", "run", "round"), r)},
        ...                 coords={"policy": ["RankTS", "RankUCB"],
        ...                         "round": range(50)})
        >>> fig = regret_curves(ds, window=5)
        >>> [line.get_label() for line in fig.axes[0].lines]
        ['RankTS', 'RankUCB']
    """
    import matplotlib.pyplot as plt

    if band not in ("quantile", "se", None):
        raise ValueError(f"band: expected 'quantile', 'se' or None, got {band!r}")
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.0), constrained_layout=True)
    else:
        fig = ax.figure
    rounds = ds["round"].values + 1
    same = {n: g for g in coinciding(ds) for n in g}
    styles = figure_styles(ds["policy"].values)
    # a trailing mean is drawn from the round its window is full: before it, a mean
    # over the first few rounds draws a near-vertical segment that is not the data's
    start = window - 1 if (window > 1 and not cumulative) else 0
    start = min(start, max(len(rounds) - 2, 0))
    rounds = rounds[start:]
    n_rounds = len(rounds)
    for k, name in enumerate(ds["policy"].values):
        name = str(name)
        r = ds["regret"].sel(policy=name).values  # (runs, T)
        if cumulative:
            r = np.cumsum(r, axis=1)
        elif window > 1:
            r = trailing_mean(r, window)
        r = r[:, start:]
        mean = r.mean(axis=0)
        c, ls, marker = styles[name]
        label = name
        if name in same:
            others = [o for o in same[name] if o != name]
            label = f"{name} (identical to {', '.join(others)})"
        # markers staggered per policy so coinciding curves show all of theirs
        every = max(1, n_rounds // 8)
        ax.plot(
            rounds,
            mean,
            color=c,
            label=label,
            linewidth=1.6,
            linestyle=ls,
            marker=marker,
            markevery=(min(n_rounds - 1, (k * every) // 4), every),
            markersize=5,
            markerfacecolor="none",
        )
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
    note = band_label(band, ds.sizes["run"])
    if start:
        smooth = f"curves: trailing mean over {window} rounds, from round {start + 1}"
        note = smooth if note is None else f"{note}\n{smooth}"
    _legend(ax, note, ds.sizes["policy"])
    return fig


def tightness(ds, bounds: dict, *, policy: str | None = None, ax=None, title=None):
    """Cumulative regret of policies against theorem bounds over rounds.

    Args:
        bounds: ``{label: (T,) array}`` bound values at rounds 1..T (see
            :mod:`bayesrank.theorems`).
        policy: restrict to one policy (default: all in ``ds``).

    Returns:
        The matplotlib Figure.

    Example:
        >>> import numpy as np, xarray as xr
        >>> from bayesrank.studies.plots import tightness
        >>> r = np.random.default_rng(0).exponential(size=(1, 3, 50))
        >>> ds = xr.Dataset({"regret": (("policy", "run", "round"), r)},
        ...                 coords={"policy": ["RankUCB"], "round": range(50)})
        >>> fig = tightness(ds, {"Theorem 1": 10 * np.sqrt(np.arange(1, 51))})
        >>> [line.get_label() for line in fig.axes[0].lines]
        ['RankUCB', 'Theorem 1']
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
    _style(ax, "round", "cumulative pseudo-regret", title)
    ax.legend(frameon=False, title=band_label("quantile", ds.sizes["run"]),
              fontsize=8, title_fontsize=8)
    return fig


def timing_table(rows: list[dict], columns: list[str]) -> str:
    """A markdown table from a list of dicts.

    Example:
        >>> from bayesrank.studies.plots import timing_table
        >>> rows = [{"algorithm": "RankTS", "ms": 0.51234}]
        >>> print(timing_table(rows, ["algorithm", "ms"]))
        | algorithm | ms |
        |---|---|
        | RankTS | 0.5123 |
    """
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
    """Save a figure as PNG and close it. The image is cropped to what is drawn
    (``bbox_inches="tight"``), so a title wider than its axes (beside a legend
    outside them) is not cut at the figure's edge.

    Example:
        >>> import os, tempfile, matplotlib.pyplot as plt
        >>> from bayesrank.studies.plots import save
        >>> fig, ax = plt.subplots()
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     save(fig, os.path.join(folder, "figure.png"))
        ...     os.listdir(folder)
        ['figure.png']
    """
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
