"""The bandit loop above the policies: the environment (:class:`RankingEnv`, Eq. 1's
rewards and the exact best list), the click-model environments (:class:`PBMEnv`,
:class:`CascadeEnv`, :class:`DCMEnv`, :class:`DBNEnv`), the one round loop
(:func:`play`) and vectorised simulation (:func:`simulate`: scan over rounds, vmap
over runs)."""

from bayesrank.simulation.click import CascadeEnv, DBNEnv, DCMEnv, PBMEnv
from bayesrank.simulation.click_base import ClickEnv
from bayesrank.simulation.env import RankingEnv
from bayesrank.simulation.play import play
from bayesrank.simulation.simulate import noise_key, policy_seed, simulate

__all__ = [
    "CascadeEnv",
    "ClickEnv",
    "DBNEnv",
    "DCMEnv",
    "PBMEnv",
    "RankingEnv",
    "noise_key",
    "play",
    "policy_seed",
    "simulate",
]
