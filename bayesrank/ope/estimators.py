"""Off-policy estimators of a target ranking policy's value from a log.

This module is the face of four beside it (each name importable from here as
before): :mod:`.ips` the array estimators (the IPS family and ``pair_dr``),
:mod:`.registry` the estimators known by name (:data:`ESTIMATORS`),
:mod:`.reward_model` the reward model of the model-based ones, and
:mod:`.evaluation` :func:`evaluate`, which runs them on a log.

The generic estimators take arrays: rewards (n, L), the target's probabilities of
the logged list's events and the logger's (the pscore variables of the log). Each
event model gives one inverse-propensity (IPS) estimator:

==============  ===================================  ==================================
estimator       weight of r^l                        unbiased when
==============  ===================================  ==================================
list_ips        pi(list) / p(list), every l          always (given support)
position_ips    pi(a^l at l) / p(a^l at l)           r^l depends on a^l only (w = 0)
cascade_ips     pi(a^1..a^l) / p(a^1..a^l)           r^l depends on the prefix
pair_ips        pi(a^{l-1}, a^l) / p(a^{l-1}, a^l)   r^l depends on (a^{l-1}, a^l)
==============  ===================================  ==================================

(at l = 0, pair_ips uses the marginal of a^1.) The reward model of
:class:`bayesrank.RankingEnv` is pairwise, so pair_ips is unbiased there with far
smaller weights than list_ips; position_ips is biased when w != 0.

Two more use a reward model fitted on the log (:func:`fit_reward_model`):
``dm``, the direct method, and ``pair_dr``, pair IPS with the model as control
variate (doubly robust: unbiased when the propensities are exact, whatever the
model's error; lower variance when the model is good).

NaN rewards (positions not observed) contribute 0 to the IPS estimators: they then
estimate the value of the observed rewards only. ``dm`` and ``pair_dr`` skip them
(missing at random).
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
