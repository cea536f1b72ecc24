"""A markdown report of a sweep: summary table, figures and diagnostics."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bayesrank.studies import store
from bayesrank.studies.sensitivity import plots

__all__ = ["markdown_table", "summary_table", "write_report"]


def markdown_table(df, floatfmt: str = "{:.3g}") -> str:
    """A pandas DataFrame as a GitHub markdown table (no extra dependency)."""
    cols = list(df.columns)
    lines = [
        "| " + " | ".join(str(c) for c in cols) + " |",
        "| " + " | ".join("---" for _ in cols) + " |",
    ]
    for row in df.itertuples(index=False):
        cells = []
        for v in row:
            if isinstance(v, (float, np.floating)):
                cells.append(floatfmt.format(v))
            else:
                cells.append(str(v).replace("|", "\\|"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary_table(ds):
    """One row per cell: final cumulative regret (mean and quantiles), settle round.

    Returns:
        pandas.DataFrame with columns cell, label, regret_mean, one column per
        quantile, settled (fraction of runs that settled before T), settle_median.

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
        >>> table = sens.summary_table(ds)
        >>> len(table), list(table.columns[:3])
        (2, ['cell', 'label', 'regret_mean'])
        >>> out.cleanup()
    """
    import pandas as pd

    T = ds.sizes["round"]
    labels = np.broadcast_to(ds["label"].values, (ds.sizes["cell"],))
    rows = []
    for c in range(ds.sizes["cell"]):
        row = {
            "cell": c,
            "label": labels[c],
            "regret_mean": float(ds["cum_regret_mean"].values[c, -1]),
        }
        for k, q in enumerate(ds["quantile"].values):
            row[f"q{q:g}"] = float(ds["cum_regret_quantile"].values[c, k, -1])
        settle = ds["settle_round"].values[c]
        row["settled"] = float(np.mean(settle < T))
        row["settle_median"] = float(np.median(settle))
        rows.append(row)
    return pd.DataFrame(rows)


def write_report(ds, out) -> Path:
    """Write figures (PNG) and ``report.md`` into ``out``.

    Args:
        ds: the sweep Dataset (from :func:`run_sweep` or ``results.nc``).
        out: output folder.

    Returns:
        The path of report.md.

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
        >>> sens.write_report(ds, out.name).name
        'report.md'
        >>> out.cleanup()
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    settings = json.loads(ds.attrs.get("settings", "{}"))
    figs = {
        "regret_heatmap.png": plots.plot_regret_heatmap,
        "regret_curves.png": plots.plot_regret_curves,
        "psense.png": plots.plot_psense,
    }
    for name, fn in figs.items():
        fig = fn(ds, path=out / name)
        plt.close(fig)
    thr = float(ds.attrs.get("psense_threshold", 0.05))
    diag = plots.diagnostics_table(ds)
    summary = summary_table(ds)
    lines = [
        f"# {settings.get('name', 'Prior sensitivity')}",
        "",
        (
            f"RankTS over {ds.sizes['cell']} prior x environment cells, "
            f"T = {ds.sizes['round']} rounds, {ds.sizes['run']} runs per cell "
            "(common random numbers across cells)."
        ),
        "",
        "## Regret",
        "",
        (
            "Cumulative pseudo-regret after T rounds (mean and quantiles over runs); "
            "`settled`: fraction of runs that play only optimal lists from some "
            "round on; "
            "`settle_median`: median of that round (T: never)."
        ),
        "",
        markdown_table(summary),
        "",
        "![regret heatmap](regret_heatmap.png)",
        "",
        "![regret curves](regret_curves.png)",
        "",
        "## Posterior diagnostics",
        "",
        (
            "Worst value over diagnosed runs, positions and coordinates of theta at "
            "each "
            "checkpoint: rank-normalised R-hat, bulk/tail ESS, MCSE of the mean, "
            "divergent transitions, and power-scaling sensitivity (arviz.psense) of "
            "the "
            f"prior and the likelihood (threshold {thr:g})."
        ),
        "",
        markdown_table(diag),
        "",
        "![psense](psense.png)",
        "",
    ]
    order = summary.sort_values("regret_mean")
    lo, hi = order.iloc[0], order.iloc[-1]
    lines += [
        "## Summary",
        "",
        f"- Lowest regret: {lo['label']} ({lo['regret_mean']:.1f}).",
        f"- Highest regret: {hi['label']} ({hi['regret_mean']:.1f}).",
        (
            f"- Cells flagged by psense at the last checkpoint: "
            f"{int((diag.groupby('cell').last()['diagnosis'] != '✓').sum())} of "
            f"{ds.sizes['cell']}."
        ),
        "",
    ]
    path = out / "report.md"
    store.write_text(path, "\n".join(lines))
    return path
