"""CascadeKL-UCB (Kveton, Szepesvari, Wen and Ashkan 2015, "Cascading bandits",
Algorithm 1 with the KL-UCB index).

Per item e: ``T(e)`` observations and the mean click rate ``w_hat(e)``. Round t shows
the L items of largest index

    U_t(e) = max{q in [w_hat(e), 1] : T(e) KL(w_hat(e) || q) <= log t + 3 log log t}

(Bernoulli KL; where the threshold is <= 0, at t < 3, the set is {w_hat} and
U = w_hat), largest first. The cascade feedback: the positions up to and including
the first click are observed (a click at the click, no click before it); NaN
positions and those after the first click are not.

Initialisation: the paper observes every item once before round 1 (``T_0(e) = 1``,
``w_hat = w_0(e)`` for one draw ``w_0`` of all items). A policy cannot draw outside the
interaction, so an item never observed has an infinite index: unobserved items are
shown first (lower index first) until each has been observed once, which plays the
paper's initial observation inside the interaction. The round t counts the lists the
policy learnt from: the t-th list is selected with ``t = 1 + (lists learnt so far)``.

Example:
    >>> import jax, bayesrank as br
    >>> env = br.simulation.CascadeEnv.synthetic(K=8, L=3, seed=0)
    >>> policy = br.CascadeKLUCB(8, L=3)
    >>> items = policy.select()
    >>> policy.update(items, env.sample(jax.random.key(0), items))
    >>> items.tolist(), policy.t
    ([0, 1, 2], 1)
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlogy

from bayesrank.policies.click.base import (
    as_k_l,
    cascade_observed,
    ClickCore,
    ClickPolicy,
)
from bayesrank.policies.parts.keywords import keyword_only

__all__ = ["CascadeKLUCB", "KLUCBStats", "bernoulli_kl", "kl_ucb_index"]

#: Bisection steps of the KL-UCB index (the interval shrinks to 2^-60 of [0, 1]).
_STEPS = 60


class KLUCBStats(NamedTuple):
    """CascadeKL-UCB's statistics (the ``model`` of its state).

    Example:
        >>> import bayesrank as br
        >>> br.CascadeKLUCB(4, L=2).state.model.n.tolist()
        [0, 0, 0, 0]
    """

    n: Any  # (K,) int32, T(e): observations of each item
    clicks: Any  # (K,) int32, clicks of each item (w_hat = clicks / n)
    rounds: Any  # () int32, lists learnt from (round t = rounds + 1)


def bernoulli_kl(p, q):
    """KL(Bernoulli(p) || Bernoulli(q)), elementwise (0 log 0 = 0).

    Example:
        >>> round(float(bernoulli_kl(0.5, 0.25)), 6)
        0.143841
    """
    return xlogy(p, p) - xlogy(p, q) + xlogy(1 - p, 1 - p) - xlogy(1 - p, 1 - q)


def kl_ucb_index(mean, n, threshold):
    """``max{q in [mean, 1] : n KL(mean || q) <= threshold}`` elementwise, by
    bisection; ``+inf`` where ``n == 0``, ``mean`` where ``threshold <= 0``.

    Example:
        >>> import jax.numpy as jnp
        >>> u = kl_ucb_index(jnp.array([0.5, 0.5, 0.2]), jnp.array([10, 0, 4]), 1.0)
        >>> [round(float(x), 4) for x in u]
        [0.7129, inf, 0.5443]
    """
    mean = jnp.asarray(mean)
    n = jnp.asarray(n, mean.dtype)
    c = jnp.maximum(jnp.asarray(threshold, mean.dtype), 0.0)

    def body(_, lohi):
        lo, hi = lohi
        mid = 0.5 * (lo + hi)
        ok = n * bernoulli_kl(mean, mid) <= c
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid)

    lo, _ = jax.lax.fori_loop(0, _STEPS, body, (mean, jnp.ones_like(mean)))
    return jnp.where(n > 0, lo, jnp.inf)


def klucb_threshold(t):
    """``log t + 3 log log t`` (0 where it is not positive, t < 3)."""
    lt = jnp.log(jnp.maximum(t, 1.0))
    c = lt + 3.0 * jnp.log(jnp.maximum(lt, 1e-30))
    return jnp.where(t >= 3, jnp.maximum(c, 0.0), 0.0)


class KLUCBCore(ClickCore):
    """CascadeKL-UCB's functional core (see the module docstring).

    Example:
        >>> import bayesrank as br
        >>> type(br.CascadeKLUCB(4, L=2).core).__name__
        'KLUCBCore'
    """

    def init_model(self) -> KLUCBStats:
        K = self.items0.shape[0]
        z = jnp.zeros(K, jnp.int32)
        return KLUCBStats(z, z, jnp.zeros((), jnp.int32))

    def index(self, key, model, items):
        dtype = self.dtype
        n = model.n.astype(dtype)
        mean = jnp.where(n > 0, model.clicks.astype(dtype) / jnp.maximum(n, 1), 0.0)
        t = model.rounds.astype(dtype) + 1.0
        return kl_ucb_index(mean, n, klucb_threshold(t))

    def learn(self, model, items, lists, rewards):
        obs = cascade_observed(rewards)
        click = obs & (rewards > 0.5)
        return KLUCBStats(
            model.n.at[lists].add(obs.astype(jnp.int32)),
            model.clicks.at[lists].add(click.astype(jnp.int32)),
            model.rounds + 1,
        )


class CascadeKLUCB(ClickPolicy):
    """CascadeKL-UCB (Kveton et al. 2015) for the cascade model: K items, lists of L.

    Args:
        K: the number of items (no item vectors: a per-item index).
        L: the list length (L <= K; lists show distinct items).

    ``update(items, rewards)`` takes clicks 1/0 with NaN where not observed; positions
    after the first click are ignored (the cascade never examined them). See the
    module docstring for the index, the round counter and the initialisation.

    Example:
        >>> import jax, bayesrank as br
        >>> env = br.simulation.CascadeEnv.synthetic(K=10, L=3, seed=1)
        >>> policy = br.CascadeKLUCB(10, L=3)
        >>> for t in range(20):
        ...     items = policy.select()
        ...     policy.update(items, env.sample(jax.random.key(t), items))
        >>> int(policy.state.model.n.sum()) > 0
        True
    """

    @keyword_only("K", "L")
    def __init__(self, K: int, *, L: int):
        K, L = as_k_l(K, L)
        self._init_click(K, L, cascade=True)
        self._setup(KLUCBCore(self.items, L), 0)

    @classmethod
    def _rebuild(cls, cfg, args, seed):
        return cls(cfg["K"], L=cfg["L"])

    def _inconsistent(self, model):
        n, c = np.asarray(model.n), np.asarray(model.clicks)
        if np.any(c > n):
            return "the state has more clicks than observations for an item"
        return None
