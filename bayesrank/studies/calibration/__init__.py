"""Simulation-based calibration (SBC) of the per-position posterior models.

* :mod:`.ranks` rank statistics and randomised PIT values;
* :mod:`.uniformity` the PIT-ECDF band test with a Bonferroni correction;
* :mod:`.generative` the design, and each model's prior and likelihood;
* :mod:`.sbc` SBC of any model through the posterior protocol;
* :mod:`.inloop` the draws RankTS's warm-started NUTS really uses;
* :mod:`.registry` the calibrated models; :mod:`bayesrank.studies.calibration.study` runs them;
* :mod:`bayesrank.studies.calibration.report` figures and markdown;
  :mod:`bayesrank.studies.calibration.cli` ``bayesrank calibrate``.
"""

from bayesrank.studies.calibration.generative import Design, Generative, generative_for
from bayesrank.studies.calibration.inloop import bandit_run, run_inloop
from bayesrank.studies.calibration.ranks import pit_from_ranks, rank_of
from bayesrank.studies.calibration.sbc import ScaledDraws, run_sbc
from bayesrank.studies.calibration.uniformity import uniformity_test

__all__ = [
    "Design",
    "Generative",
    "ScaledDraws",
    "bandit_run",
    "generative_for",
    "pit_from_ranks",
    "rank_of",
    "run_inloop",
    "run_sbc",
    "uniformity_test",
]
