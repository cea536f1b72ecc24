"""Policies composed from parts: features, estimate, tables and one decoder.

One algorithm per module at the top (:mod:`~bayesrank.policies.ts` RankTS,
:mod:`~bayesrank.policies.gen_ts` GenRankTS, :mod:`~bayesrank.policies.ucb` RankUCB,
:mod:`~bayesrank.policies.gen_ucb` GenRankUCB, :mod:`~bayesrank.policies.window_ucb`
WindowRankUCB, :mod:`~bayesrank.policies.baseline` RankedBaseline), each a short
constructor over the parts, under the friendly class of :mod:`~bayesrank.policies.base`
(``Policy``). Then three folders: :mod:`~bayesrank.policies.parts` (the functional core,
pure init/select/update/select_batch over a NamedTuple state, the request's context
passed explicitly, and the parts it holds), :mod:`~bayesrank.policies.runtime` (the
compiled programs, checks, history, inspection and files) and
:mod:`~bayesrank.policies.click` (the click-model baselines CascadeKLUCB,
CascadeLinTS, CascadeLinUCB, PBMUCB and TopRank, cores under the same class).
"""

from bayesrank.policies.base import Policy
from bayesrank.policies.baseline import RankedBaseline
from bayesrank.policies.click import (
    CascadeKLUCB,
    CascadeLinTS,
    CascadeLinUCB,
    PBMUCB,
    TopRank,
)
from bayesrank.policies.gen_ts import GenRankTS
from bayesrank.policies.gen_ucb import GenRankUCB
from bayesrank.policies.parts.bonus import BonusRest, UCBParams
from bayesrank.policies.parts.context import Context
from bayesrank.policies.parts.core import compose, PolicyCore, PolicyState, Selection
from bayesrank.policies.parts.estimate import Optimistic, Thompson
from bayesrank.policies.ts import RankTS
from bayesrank.policies.ucb import RankUCB
from bayesrank.policies.window_ucb import WindowRankUCB

__all__ = [
    "PBMUCB",
    "BonusRest",
    "CascadeKLUCB",
    "CascadeLinTS",
    "CascadeLinUCB",
    "Context",
    "GenRankTS",
    "GenRankUCB",
    "Optimistic",
    "Policy",
    "PolicyCore",
    "PolicyState",
    "RankTS",
    "RankUCB",
    "RankedBaseline",
    "Selection",
    "Thompson",
    "TopRank",
    "UCBParams",
    "WindowRankUCB",
    "compose",
]
