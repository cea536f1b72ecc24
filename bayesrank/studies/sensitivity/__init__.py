"""Prior-sensitivity study of RankTS (the paper's Appendix D leaves it out of scope).

Declare a grid of priors (location shift, scale, correlation, misspecified noise scale,
heavy tails through NumPyro distributions) and of environments in a TOML file; run
RankTS in every cell over several seeds; collect regret, the round after which the
optimal list is played, ArviZ diagnostics (R-hat, ESS, MCSE, divergences) and
power-scaling sensitivity (``arviz.psense``) at checkpoints; store everything as a
resumable NetCDF sweep; plot and report.

Example:
    >>> from bayesrank.studies import sensitivity as sens
    >>> spec = sens.parse_config({"sweep": {"T": 100, "runs": 2},
    ...                           "priors": {"weak": {"scale": [1.0, 10.0]}}})
    >>> len(spec.cells)
    2
    >>> ds = sens.run_sweep(spec, "out", progress=False)       # doctest: +SKIP
    >>> sens.write_report(ds, "out")                            # doctest: +SKIP
"""

from bayesrank.studies.sensitivity.cli import run_sweep_cli
from bayesrank.studies.sensitivity.config import (
    SweepSettings,
    SweepSpec,
    load_config,
    parse_config,
)
from bayesrank.studies.sensitivity.executors import (
    DaskExecutor,
    LocalExecutor,
    make_executor,
)
from bayesrank.studies.sensitivity.grid import (
    PRIOR_FAMILIES,
    Cell,
    EnvSpec,
    PriorSpec,
    build_model,
)
from bayesrank.studies.sensitivity.plots import (
    diagnostics_table,
    plot_psense,
    plot_regret_curves,
    plot_regret_heatmap,
)
from bayesrank.studies.sensitivity.report import summary_table, write_report
from bayesrank.studies.sensitivity.diagnostics import (
    PSENSE_THRESHOLD,
    posterior_diagnostics,
    settle_round,
)
from bayesrank.studies.sensitivity.results import SweepStore
from bayesrank.studies.sensitivity.run import run_sweep

__all__ = [
    "PRIOR_FAMILIES",
    "PSENSE_THRESHOLD",
    "Cell",
    "DaskExecutor",
    "EnvSpec",
    "LocalExecutor",
    "PriorSpec",
    "SweepSettings",
    "SweepSpec",
    "SweepStore",
    "build_model",
    "diagnostics_table",
    "load_config",
    "make_executor",
    "parse_config",
    "plot_psense",
    "plot_regret_curves",
    "plot_regret_heatmap",
    "posterior_diagnostics",
    "run_sweep",
    "run_sweep_cli",
    "settle_round",
    "summary_table",
    "write_report",
]
