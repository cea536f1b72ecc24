"""The bandit loop above the policies: the environment (:class:`RankingEnv`, Eq. 1's
rewards and the exact best list), the one round loop (:func:`play`) and vectorised
simulation (:func:`simulate`: scan over rounds, vmap over runs)."""

from bayesrank.simulation.env import RankingEnv
from bayesrank.simulation.play import play
from bayesrank.simulation.simulate import noise_key, policy_seed, simulate

__all__ = ["RankingEnv", "noise_key", "play", "policy_seed", "simulate"]
