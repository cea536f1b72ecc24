"""Off-policy evaluation of ranking policies from logged lists.

The log format
--------------
A log is an :class:`xarray.Dataset` with dims ("round", "position", "dim") (and
"item" when it holds the item vectors):

===================  ==================  ============================================
variable             dims                meaning
===================  ==================  ============================================
lists                (round, position)   int item indices in [0, K) of the shown list
rewards              (round, position)   float reward; NaN = position not observed
v0                   (round, dim)        the request's context vector v_{a^0}
pscore_list          (round,)            logger's P(the whole list)          optional
pscore_position      (round, position)   P(a^l at position l)                optional
pscore_pair          (round, position)   P(a^{l-1} at l-1 and a^l at l);     optional
                                         at l = 0, P(a^1 at position 1)
pscore_cascade       (round, position)   P(the prefix a^1..a^l)              optional
items                (item, dim)         the item vectors v_1..v_K           optional
context              (round,             a user context: extra features of   optional
                     context_dim)        dm's and pair_dr's reward model
===================  ==================  ============================================

Propensities lie in (0, 1] and agree with each other as every logger's do, within
rounding (:func:`as_log` lists the invariants). The attribute ``K`` (the number of
items) is set when known. :func:`as_log` builds a checked log from arrays, or from a pandas DataFrame
in long format (one row per round and position, the layout :func:`to_dataframe`
returns and Parquet files hold), and :func:`check_log` checks one read back (e.g.
from NetCDF, or Parquet through :func:`read_parquet`); both raise ValueError/TypeError
whose message starts with the variable's (or the DataFrame column's) name.
:func:`from_obp` and :func:`to_obp` convert a slate log of Open Bandit Pipeline (its
``bandit_feedback`` dict) to and from this format. :func:`collect`
makes a log by running a logger (:class:`UniformLogger`,
:class:`EpsilonGreedyLogger`, :class:`SoftmaxLogger`) in a
:class:`bayesrank.RankingEnv`; :func:`evaluate` estimates a target policy's value
(or, for the IPS family, the value of a target given by its precomputed
:class:`TargetProbabilities`) with the estimators of :data:`ESTIMATORS`: the IPS
family, the direct method ``dm`` (a reward model fitted on the log,
:func:`fit_reward_model`, which needs ``items``) and the doubly robust ``pair_dr``;
:func:`position_bias` estimates the examination per position from PBM click logs
(regression EM, or intervention harvesting over two or more rankers); any object
following the :class:`Estimator` protocol (reading one
:class:`EstimatorInputs`) runs beside them.

Examples:
    >>> import numpy as np
    >>> import bayesrank as br
    >>> rng = np.random.default_rng(0)
    >>> logger = br.ope.UniformLogger(K=4, L=2)
    >>> lists = logger.sample(rng, np.zeros((500, 3)))
    >>> log = br.ope.as_log(lists, rng.normal(size=(500, 2)), np.zeros(3),
    ...                     **logger.propensities(lists), items=rng.normal(size=(4, 3)))
    >>> class Fixed:
    ...     def select_batch(self, v0):
    ...         return np.tile([0, 1], (len(v0), 1))
    >>> res = br.ope.evaluate(log, Fixed())
    >>> list(res.estimator.values) == list(br.ope.DEFAULT_ESTIMATORS)
    True
"""

from bayesrank.ope._common import Estimate
from bayesrank.ope.direct import RewardModel, dm, fit_reward_model
from bayesrank.ope.registry import DEFAULT_ESTIMATORS, ESTIMATORS, MODEL_ESTIMATORS
from bayesrank.ope.protocol import Estimator, EstimatorInputs
from bayesrank.ope.ips import cascade_dr, cascade_ips, list_ips, pair_dr, pair_ips, position_ips
from bayesrank.ope.evaluation import evaluate
from bayesrank.ope.formats.frame import to_dataframe
from bayesrank.ope.log import as_log, check_log
from bayesrank.ope.loggers import (
    EpsilonGreedyLogger,
    SoftmaxLogger,
    UniformLogger,
    collect,
)
from bayesrank.ope.formats.obp import from_obp, to_obp
from bayesrank.ope.formats.parquet import read_parquet, to_parquet
from bayesrank.ope.examination_estimate import position_bias
from bayesrank.ope.target import (
    TargetDraws,
    TargetProbabilities,
    draw_target,
    target_probabilities,
    true_value,
)

__all__ = [
    "DEFAULT_ESTIMATORS",
    "ESTIMATORS",
    "MODEL_ESTIMATORS",
    "EpsilonGreedyLogger",
    "Estimate",
    "Estimator",
    "EstimatorInputs",
    "RewardModel",
    "SoftmaxLogger",
    "TargetDraws",
    "TargetProbabilities",
    "UniformLogger",
    "as_log",
    "cascade_dr",
    "cascade_ips",
    "check_log",
    "collect",
    "dm",
    "draw_target",
    "evaluate",
    "fit_reward_model",
    "from_obp",
    "list_ips",
    "pair_dr",
    "pair_ips",
    "position_bias",
    "position_ips",
    "read_parquet",
    "target_probabilities",
    "to_dataframe",
    "to_obp",
    "to_parquet",
    "true_value",
]
