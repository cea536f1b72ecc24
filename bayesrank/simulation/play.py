"""The one round loop: select, sample, update, scanned over rounds.

:func:`bayesrank.simulate`, the prior-sensitivity sweep and the in-loop calibration
all play a policy's functional core through :func:`play`; they differ only in their
hooks: how each round's keys are made, the request's context (a fixed user, or a
user drawn per round), which list is shown (the policy's, or a random one) and what
is recorded.

    state, out = play(core, env, state, T, keys=..., ctx=..., record=...)

Round t (0-based)::

    k_select, k_env, k_extra = keys(t)
    env_t, best_t, ctx_t = context(t, k_env)      # default: (env, best, ctx)
    state', sel = core.select(k_select, state, ctx_t)
    shown = choose(sel, k_extra)                  # default: sel.items
    rewards = env_t.sample(k_env, shown)
    state'' = core.update(state', shown, rewards, ctx_t)
    out[t] = record(Round(t, state, sel, shown, rewards, env_t, best_t, ctx_t))

``env`` is anything with ``sample(key, items) -> (L,)`` (a
:class:`~bayesrank.RankingEnv`, or a simulated truth). Pure: jit it, vmap it over runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["Round", "fold_in_keys", "play"]


class Round(NamedTuple):
    """What a ``record`` hook sees of one round."""

    t: Any  # () the round, from 0
    before: Any  # the policy's state before the round
    sel: Any  # the Selection (the estimate in sel.params)
    items: Any  # (L,) the list shown
    rewards: Any  # (L,) its rewards
    env: Any  # the round's environment
    best: Any  # () the round's best expected total reward (None if not given)
    ctx: Any  # the round's Context


def fold_in_keys(pkey, nkey) -> Callable:
    """The keys of :func:`bayesrank.simulate` and of the policy classes: round t
    selects with ``fold_in(pkey, t)`` and samples with ``fold_in(nkey, t)``."""

    def keys(t):
        return jax.random.fold_in(pkey, t), jax.random.fold_in(nkey, t), None

    return keys


def play(core, env, state, T: int, *, keys: Callable, ctx, record: Callable,
         best=None, context: Callable | None = None,
         choose: Callable | None = None):
    """Play ``core`` for T rounds from ``state``: ``(final state, records (T, ...))``.

    Args:
        core: a policy's :class:`~bayesrank.policies.parts.core.PolicyCore`.
        env: has ``sample(key, items) -> (L,)`` rewards.
        state: the policy's state at the start.
        T: rounds.
        keys: ``t -> (select key, environment key, extra key or None)``, e.g.
            :func:`fold_in_keys`.
        ctx: the requests' :class:`~bayesrank.policies.parts.context.Context`.
        record: ``Round -> pytree``, stacked over rounds.
        best: the best expected total reward (passed to ``record``).
        context: ``(t, environment key) -> (env, best, ctx)`` for a context that
            changes per round (e.g. a user drawn per round).
        choose: ``(Selection, extra key) -> (L,)`` the list shown instead of the
            policy's (e.g. uniformly random lists).

    Example:
        >>> import jax, jax.numpy as jnp, bayesrank as br
        >>> from bayesrank.simulation.play import fold_in_keys, play
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> policy = br.RankTS(items=env.items, w=env.w, seed=0)
        >>> keys = fold_in_keys(policy.key, jax.random.key(1))
        >>> state, regret = play(policy.core, env, policy.state, 50, keys=keys,
        ...     ctx=policy.context(), best=env.best_value,
        ...     record=lambda r: r.best - r.env.expected_reward(r.items))
        >>> regret.shape, bool((regret >= -1e-6).all())
        ((50,), True)
    """

    def step(state, t):
        k_select, k_env, k_extra = keys(t)
        env_t, best_t, ctx_t = (env, best, ctx) if context is None else context(t, k_env)
        new, sel = core.select(k_select, state, ctx_t)
        shown = sel.items if choose is None else choose(sel, k_extra)
        rewards = env_t.sample(k_env, shown)
        new = core.update(new, shown, rewards, ctx_t)
        return new, record(Round(t, state, sel, shown, rewards, env_t, best_t, ctx_t))

    return jax.lax.scan(step, state, jnp.arange(T))
