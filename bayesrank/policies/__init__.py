"""Policies composed from parts: features, estimate, tables and one decoder.

:mod:`.core` assembles a functional core (pure init/select/update/select_batch over a
NamedTuple state, the request's :class:`~.context.Context` passed explicitly);
:mod:`.base` is the friendly class on top. RankTS, GenRankTS, RankUCB, GenRankUCB,
WindowRankUCB and RankedBaseline are short constructors over the parts; the online-LTR
click-model baselines (CascadeKLUCB, CascadeLinTS, CascadeLinUCB, PBMUCB, TopRank) are
:class:`~.click_base.ClickCore` cores under the same class.
"""

from bayesrank.policies.base import Policy
from bayesrank.policies.baseline import RankedBaseline
from bayesrank.policies.bonus import BonusRest, UCBParams
from bayesrank.policies.cascade_klucb import CascadeKLUCB
from bayesrank.policies.cascade_lin import CascadeLinTS, CascadeLinUCB
from bayesrank.policies.context import Context
from bayesrank.policies.core import PolicyCore, PolicyState, Selection, compose
from bayesrank.policies.estimate import Optimistic, Thompson
from bayesrank.policies.gen_ts import GenRankTS
from bayesrank.policies.gen_ucb import GenRankUCB
from bayesrank.policies.pbm_ucb import PBMUCB
from bayesrank.policies.toprank import TopRank
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
