"""Experiments: vectorised simulation, the paper's reproduction, plots."""

from bayesrank.experiments.simulate import noise_key, policy_seed, simulate

__all__ = ["noise_key", "policy_seed", "simulate"]
