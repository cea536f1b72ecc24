"""Off-policy evaluation of ranking policies from logged lists.

The log format
--------------
A log is an :class:`xarray.Dataset` with dims ("round", "position", "dim"):

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
===================  ==================  ============================================

Propensities lie in (0, 1]. The attribute ``K`` (the number of items) is set when
known. :func:`as_log` builds a checked log from arrays and :func:`check_log` checks
one read back (e.g. from NetCDF); both raise ValueError/TypeError whose message
starts with the variable's name. :func:`collect` makes a log by running a logger
(:class:`UniformLogger`, :class:`EpsilonGreedyLogger`) in a
:class:`bayesrank.RankingEnv`; :func:`evaluate` estimates a target policy's value.
"""

from bayesrank.ope.estimators import (
    ESTIMATORS,
    Estimate,
    cascade_ips,
    evaluate,
    list_ips,
    pair_ips,
    position_ips,
    target_probabilities,
    true_value,
)
from bayesrank.ope.log import as_log, check_log
from bayesrank.ope.loggers import EpsilonGreedyLogger, UniformLogger, collect

__all__ = [
    "ESTIMATORS",
    "EpsilonGreedyLogger",
    "Estimate",
    "UniformLogger",
    "as_log",
    "cascade_ips",
    "check_log",
    "collect",
    "evaluate",
    "list_ips",
    "pair_ips",
    "position_ips",
    "target_probabilities",
    "true_value",
]
