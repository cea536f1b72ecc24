"""The exact best list: one package, one dispatcher.

The weight of a path in the paper's L-layered graph (Eq. 2) equals the sum of the
per-position scores ``s_1(a^1) + sum_{l>=2} s_l(a^{l-1}, a^l)``, so the longest path is
a max-sum dynamic programme over a chain. Every method below is exact; they differ in
which score structure they exploit. :func:`best_list` is the user's entry point (dense
tables); :func:`decode_tables` is the dispatcher every policy calls, which picks the
method from a static :class:`~.spec.DecodeSpec` (the tables' kind, link, ``distinct``;
fixed at trace time) and the item count K. The tables are NamedTuples of arrays
(:mod:`~.spec`: separable, monotone, bonus, window), never objects of the policies.

============================  ======================================  ==================  ===========================================
module                        who reaches it                          cost                why it is exact
============================  ======================================  ==================  ===========================================
:mod:`~.dense`                ``best_list``; monotone/bonus kinds     O(L K^2) time,      max-sum DP over the chain (Viterbi)
                              below the fast thresholds               O(K^2) memory
:mod:`~.backward`             every pairwise policy (shared by        O(L K^2), or        the same DP run from position L back to 2;
                              requests that differ only in v0)        O(L K) separable    position 1 alone depends on v0
:mod:`~.separable`            RankTS/baseline, identity link          O(L K)              s(i, j) = A[j] + B[i]: one best predecessor
                              (Thompson draw or posterior mean)                           per layer
:mod:`~.window`               WindowRankUCB, window envs (S > 2)      O(L K^S)            the DP over the last S-1 items
:mod:`~.search`               ``distinct=True``, ``top_k=``           best-first, on      A* with the unconstrained DP's value-to-go,
                                                                      the host            an upper bound for any completion
:mod:`~.monotone`             RankTS/GLM posterior mean under a       ~O(L K log K),      dominated items (Pareto front of
                              nonlinear link, K >= 640 (CPU)          O(L K^2) worst      (value-to-go, B)) can never win; exp link:
                                                                                          convex hull trick
:mod:`~.bounded`              UCB scores, nonlinear link,             O(L K^2) worst,     triangle-inequality separable bound prunes;
                              K >= 4096                               no K x K table      onion layers visited in bound order
:mod:`~.prefix`               UCB scores, identity link, CPU, no      O(L K^2) worst,     the same bound; winners are a prefix of one
                              C kernel, K >= 512                      windows in XLA      sorted order
:mod:`~.native`               UCB scores, identity link, CPU, C       O(L K^2) worst,     the same bound; each row stops at its own
                              kernel built, K >= 256                  ~11 % of pairs      bound (fallback: :mod:`~.prefix`)
:mod:`~.graph`                tests and teaching only                 K^3 edges           networkx longest path on the explicit graph
============================  ======================================  ==================  ===========================================

Score tables come from :mod:`bayesrank.model.scores` (``<theta, v_j> + w <theta, v_i>``
through the link); input checks and masks from :mod:`~.checks`; the host DP step of
monotone links in :mod:`~.front` and the host chain driver in :mod:`~.host_chain`.
Masked items get ``-inf`` and are never ranked.
"""

from bayesrank.decoding.api import best_list
from bayesrank.decoding.dispatch import decode_tables
from bayesrank.decoding.spec import (
    BonusTables,
    DecodeSpec,
    MonotoneTables,
    SeparableTables,
    WindowScores,
)

__all__ = [
    "BonusTables",
    "DecodeSpec",
    "MonotoneTables",
    "SeparableTables",
    "WindowScores",
    "best_list",
    "decode_tables",
]
