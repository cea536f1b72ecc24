"""Off-policy estimators of a target ranking policy's value from a log.

This module is the face of four beside it (each name importable from here as
before): :mod:`.ips` the array estimators (the IPS family, one per event model, and
``pair_dr``, pair IPS with a reward model as control variate; the table of which is
unbiased when is there), :mod:`.registry` the estimators known by name
(:data:`ESTIMATORS`, ``dm`` among them), :mod:`.reward_model` the reward model of the
model-based ones, and :mod:`.evaluation` :func:`evaluate`, which runs them on a log.
"""

from __future__ import annotations

from bayesrank.ope._common import Estimate
from bayesrank.ope.evaluation import evaluate
from bayesrank.ope.ips import cascade_ips, list_ips, pair_dr, pair_ips, position_ips
from bayesrank.ope.protocol import Estimator, EstimatorInputs
from bayesrank.ope.registry import (  # noqa: F401 (CI_METHODS, MODEL_ESTIMATORS: as before)
    CI_METHODS,
    DEFAULT_ESTIMATORS,
    ESTIMATORS,
    MODEL_ESTIMATORS,
)
from bayesrank.ope.reward_model import fit_inputs_model  # noqa: F401 (the OPE study's)
from bayesrank.ope.target import TargetProbabilities, target_probabilities, true_value

__all__ = [
    "DEFAULT_ESTIMATORS",
    "ESTIMATORS",
    "Estimate",
    "Estimator",
    "EstimatorInputs",
    "TargetProbabilities",
    "cascade_ips",
    "evaluate",
    "list_ips",
    "pair_dr",
    "pair_ips",
    "position_ips",
    "target_probabilities",
    "true_value",
]
