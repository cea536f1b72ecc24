"""Logging policies with exact propensities, and :func:`collect` to make a log.

A logger has ``K``, ``L``, ``sample(rng, v0s) -> (n, L)`` lists and
``propensities(lists, v0s) -> dict`` of the four pscore arrays of
:mod:`bayesrank.ope` (``pscore_list`` (n,), the others (n, L)).
"""

from __future__ import annotations

import numbers

import jax
import numpy as np
import xarray as xr

from bayesrank.ope.log import as_log

__all__ = ["EpsilonGreedyLogger", "UniformLogger", "collect"]


def _positive_int(x, name: str) -> int:
    if isinstance(x, bool) or not isinstance(x, numbers.Integral) or x < 1:
        raise ValueError(f"{name}: expected a positive integer, got {x!r}")
    return int(x)


def _uniform_pscores(n: int, K: int, L: int) -> dict:
    """Exact propensities of any list under the uniform logger."""
    pos = np.full((n, L), 1.0 / K)
    pair = np.full((n, L), 1.0 / K**2)
    pair[:, 0] = 1.0 / K
    cascade = np.broadcast_to(float(K) ** -np.arange(1, L + 1), (n, L)).copy()
    return {
        "pscore_list": cascade[:, -1].copy(),
        "pscore_position": pos,
        "pscore_pair": pair,
        "pscore_cascade": cascade,
    }


class UniformLogger:
    """Each position shows one of the K items uniformly, independently (repeats
    allowed): every list has probability 1/K^L.

    Args:
        K: the number of items.
        L: the list length.
    """

    def __init__(self, K: int, L: int):
        self.K = _positive_int(K, "K")
        self.L = _positive_int(L, "L")

    def sample(self, rng: np.random.Generator, v0s) -> np.ndarray:
        """(n, L) int lists for the n requests with contexts v0s (n, d)."""
        return rng.integers(0, self.K, size=(np.shape(v0s)[0], self.L))

    def propensities(self, lists, v0s=None) -> dict:
        """The exact pscore arrays of the shown lists (n, L)."""
        return _uniform_pscores(np.shape(lists)[0], self.K, self.L)

    def __repr__(self) -> str:
        return f"UniformLogger(K={self.K}, L={self.L})"


class EpsilonGreedyLogger:
    """With probability 1 - epsilon the deterministic list ``policy_lists_fn(v0)``,
    else a uniform list (:class:`UniformLogger`).

    Propensities are exact mixtures: for the shown list a and base list b,
    P(position l) = (1-eps)[a^l = b^l] + eps/K, P(pair at l) =
    (1-eps)[a^{l-1} = b^{l-1}, a^l = b^l] + eps/K^2, P(prefix to l) =
    (1-eps)[a^{1..l} = b^{1..l}] + eps/K^l, P(list) = P(prefix to L).

    Args:
        policy_lists_fn: v0 (d,) -> (L,) int list; called once per distinct v0.
        K: the number of items.
        L: the list length.
        epsilon: the exploration probability in [0, 1].
    """

    def __init__(self, policy_lists_fn, K: int, L: int, epsilon: float):
        if not callable(policy_lists_fn):
            raise TypeError("policy_lists_fn: expected a callable v0 -> (L,) list")
        self.policy_lists_fn = policy_lists_fn
        self.K = _positive_int(K, "K")
        self.L = _positive_int(L, "L")
        eps = float(epsilon)
        if not 0.0 <= eps <= 1.0:
            raise ValueError(f"epsilon: expected a probability in [0, 1], got {epsilon!r}")
        self.epsilon = eps

    def base_lists(self, v0s) -> np.ndarray:
        """(n, L) the deterministic list of each request (one call per distinct v0)."""
        v0s = np.asarray(v0s, float)
        uniq, inv = np.unique(v0s, axis=0, return_inverse=True)
        base = np.stack([np.asarray(self.policy_lists_fn(u)).reshape(-1) for u in uniq])
        if base.shape[1] != self.L or base.dtype.kind not in "iu":
            raise ValueError(
                f"policy_lists_fn: expected an ({self.L},) int list, got shape "
                f"{base.shape[1:]} and dtype {base.dtype}"
            )
        if base.min() < 0 or base.max() >= self.K:
            raise ValueError(f"policy_lists_fn: item indices must lie in [0, {self.K})")
        return base[inv.reshape(-1)]

    def sample(self, rng: np.random.Generator, v0s) -> np.ndarray:
        """(n, L) int lists for the n requests with contexts v0s (n, d)."""
        base = self.base_lists(v0s)
        explore = rng.random(base.shape[0]) < self.epsilon
        uniform = rng.integers(0, self.K, size=base.shape)
        return np.where(explore[:, None], uniform, base)

    def propensities(self, lists, v0s) -> dict:
        """The exact pscore arrays of the shown lists (n, L) in contexts v0s (n, d)."""
        lists = np.asarray(lists)
        base = self.base_lists(v0s)
        eps, K = self.epsilon, self.K
        u = _uniform_pscores(lists.shape[0], K, self.L)
        same = lists == base
        same_pair = same.copy()
        same_pair[:, 1:] &= same[:, :-1]
        same_prefix = np.logical_and.accumulate(same, axis=1)
        cascade = (1 - eps) * same_prefix + eps * u["pscore_cascade"]
        return {
            "pscore_list": cascade[:, -1].copy(),
            "pscore_position": (1 - eps) * same + eps * u["pscore_position"],
            "pscore_pair": (1 - eps) * same_pair + eps * u["pscore_pair"],
            "pscore_cascade": cascade,
        }

    def __repr__(self) -> str:
        return f"EpsilonGreedyLogger(K={self.K}, L={self.L}, epsilon={self.epsilon})"


def collect(env, logger, n: int, *, seed: int = 0) -> xr.Dataset:
    """A log of n rounds of ``logger`` in ``env``, with exact propensities.

    Every round's context is ``env.v0``; rewards are drawn with ``env.sample``.

    Args:
        env: a :class:`bayesrank.RankingEnv` (K, L, d, v0, sample).
        logger: e.g. :class:`UniformLogger` or :class:`EpsilonGreedyLogger`.
        n: the number of rounds.
        seed: seeds both the logger's choices (NumPy) and the rewards (JAX).

    Returns:
        The log Dataset of :mod:`bayesrank.ope`, with every pscore variable.
    """
    n = _positive_int(n, "n")
    if logger.K != env.K or logger.L != env.L:
        raise ValueError(
            f"logger: K={logger.K}, L={logger.L} do not match the env's "
            f"K={env.K}, L={env.L}"
        )
    v0s = np.broadcast_to(np.asarray(env.v0, float), (n, env.d))
    rng = np.random.default_rng(seed)
    lists = np.asarray(logger.sample(rng, v0s), np.int64)
    rewards = np.asarray(env.sample(jax.random.key(seed), lists), float)
    return as_log(lists, rewards, v0s, **logger.propensities(lists, v0s), K=env.K)
