"""The functional core of every policy, composed from parts.

    core = compose(model, features, estimate, tables, items, L=..., distinct=...)
    state = core.init()
    state, sel = core.select(key, state, ctx)              # sel.items (L,)
    state = core.update(state, lists, rewards, ctx)        # lists (L,), rewards (L,)
    state, sel = core.select_batch(key, state, ctxs)       # ctxs batched: (B, ...)

All four are pure JAX functions over NamedTuples of arrays, so a run is a
``lax.scan`` of select/update and many runs a ``vmap`` (:func:`bayesrank.simulate`).
``ctx`` is the request's :class:`~bayesrank.policies.context.Context` (its v0 and
mask). A NaN reward means "position not observed": that position's model skips the
impression, the others learn from it.

The parts, each written once:

* ``features``: ``(items, lists, v0) -> (L, p)`` (:mod:`.features`);
* ``estimate``: a Thompson draw or a point estimate with a width (:mod:`.estimate`);
* ``tables``: scores of a kind fixed at trace time (:mod:`.tables`, :mod:`.bonus`);
* the decoder: :func:`bayesrank.decoding.dispatch.decode_tables`.

The item vectors live in the state (capacity ``Kc`` rows, ``active`` marks the real
ones), so items can be added at run time without rebuilding the core.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from bayesrank.decoding.dispatch import backward, decode_tables, pick
from bayesrank.policies.context import Context

__all__ = ["PolicyCore", "PolicyState", "Selection", "compose"]


class PolicyState(NamedTuple):
    """Everything a policy's next step needs.

    Example:
        >>> import bayesrank as br
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> state = br.RankTS(items=env.items, w=env.w).core.init()   # a PolicyState
        >>> state.items.shape, state.active.shape, state.model.n.tolist()
        ((10, 10), (10,), [0, 0, 0, 0])
    """

    model: Any  # the posterior's state, batched over the L positions
    est: Any  # the estimate's own state (a Gram factor for models without one), or ()
    items: Any  # (Kc, d) item vectors; rows of inactive slots are zeros
    active: Any  # (Kc,) bool, True for the real items


class Selection(NamedTuple):
    """What ``select`` returns besides the state.

    Attributes:
        items: (L,) int32, the list to show.
        value: (), its total score under the sampled or optimistic scores.
        params: the estimate behind the scores (a Thompson draw, or UCBParams).

    Example:
        >>> import jax, bayesrank as br
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> core = br.RankTS(items=env.items, w=env.w).core
        >>> ctx = br.policies.Context(v0=env.v0, mask=jax.numpy.ones(10, bool))
        >>> state, selection = core.select(jax.random.key(0), core.init(), ctx)
        >>> selection.items.shape, selection.params.shape          # a Thompson draw
        ((4,), (4, 10))
    """

    items: Any
    value: Any
    params: Any


class PolicyCore(NamedTuple):
    """Pure functions of a policy (see the module docstring).

    Example:
        >>> import jax, bayesrank as br
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> core = br.RankTS(items=env.items, w=env.w).core          # a PolicyCore
        >>> ctx = br.policies.Context(v0=env.v0, mask=jax.numpy.ones(10, bool))
        >>> state, sel = jax.jit(core.select)(jax.random.key(0), core.init(), ctx)
        >>> rewards = env.sample(jax.random.key(1), sel.items)
        >>> state = jax.jit(core.update)(state, sel.items, rewards, ctx)
        >>> state.model.n.tolist()
        [1, 1, 1, 1]
    """

    init: Callable[[], PolicyState]
    select: Callable[[Any, PolicyState, Context], tuple[PolicyState, Selection]]
    update: Callable[[PolicyState, Any, Any, Context], PolicyState]
    select_batch: Callable[[Any, PolicyState, Context], tuple[PolicyState, Selection]]
    tables: Any  # the tables part (rebuilds scores from Selection.params)


def compose(
    model, features, estimate, tables, items, *, L: int, p: int, distinct: bool = False
) -> PolicyCore:
    """Assemble a policy's functional core from its parts.

    Args:
        model: the per-position posterior (:mod:`bayesrank.posteriors.base`).
        features: ``(items, lists, v0) -> (L, p)``.
        estimate: a :class:`~bayesrank.policies.estimate.Thompson` or
            :class:`~bayesrank.policies.estimate.Optimistic`.
        tables: a tables part (:mod:`.tables`, :mod:`.bonus`).
        items: (K, d) initial item vectors (the capacity is K; see ``add_items``).
        L: list length; p: feature dimension.
        distinct: forbid repeated items in a list.

    Returns:
        A :class:`PolicyCore`.

    Example:
        RankTS with a known w, assembled by hand (what ``br.RankTS`` does):

        >>> import jax, bayesrank as br
        >>> from bayesrank.policies import Context, Thompson, compose
        >>> from bayesrank.policies.features import window_features
        >>> from bayesrank.policies.tables import LinearTables
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> model = br.GaussianLinear()
        >>> core = compose(model, window_features(env.w[:, None]), Thompson(model),
        ...                LinearTables(env.w, model.link), env.items, L=4, p=10)
        >>> ctx = Context(v0=env.v0, mask=jax.numpy.ones(10, bool))
        >>> state, sel = core.select(jax.random.key(0), core.init(), ctx)
        >>> sel.items.shape
        (4,)
    """
    items0 = jnp.asarray(items)
    window = tables.kind == "window"

    def init():
        return PolicyState(
            model.init(L, p),
            estimate.init(L, p),
            items0,
            jnp.ones(items0.shape[0], bool),
        )

    def _decode(params, state, ctx):
        mask = ctx.mask & state.active
        if window:
            tabs = tables.window(params, state.items, ctx.v0)
            return decode_tables(tables, None, tabs, mask, distinct=distinct)
        rest = tables.rest(params, state.items)
        first = tables.first(params, state.items, rest, ctx.v0)
        return decode_tables(tables, first, rest, mask, distinct=distinct)

    def select(key, state, ctx):
        params, mstate = estimate(key, state.model, state.est)
        chosen, value = _decode(params, state, ctx)
        return state._replace(model=mstate), Selection(chosen, value, params)

    def update(state, lists, rewards, ctx):
        rewards = jnp.asarray(rewards)
        valid = jnp.isfinite(rewards)
        y = jnp.where(valid, rewards, jnp.zeros_like(rewards))
        x = features(state.items, lists, ctx.v0)
        return state._replace(
            model=model.update(state.model, x, y, valid),
            est=estimate.update(state.est, x, valid),
        )

    def select_batch(key, state, ctxs):
        """B requests: ctxs.v0 (B, d), ctxs.mask (B, Kc) or (Kc,) for a shared mask."""
        shared_mask = ctxs.mask.ndim == 1
        ctx_axes = Context(0, None if shared_mask else 0)
        if estimate.random:
            # One independent draw per request (MCMC chains are not advanced: every
            # request's draw starts from the current chain state).
            params = estimate.batch(key, state.model, state.est, ctxs.v0.shape[0])

            def one(p, ctx):
                chosen, value = _decode(p, state, ctx)
                return Selection(chosen, value, p)

            return state, jax.vmap(one, in_axes=(0, ctx_axes))(params, ctxs)
        if window or distinct:
            keys = jax.random.split(key, ctxs.v0.shape[0])
            sel = jax.vmap(select, in_axes=(0, None, ctx_axes))(keys, state, ctxs)[1]
            return state, sel
        params, mstate = estimate(key, state.model, state.est)
        rest = tables.rest(params, state.items)
        firsts = jax.vmap(lambda v0: tables.first(params, state.items, rest, v0))(
            ctxs.v0
        )
        if shared_mask:
            mask = ctxs.mask & state.active
            bw = backward(tables, rest, mask)
            chosen, value = jax.vmap(lambda f: pick(f, bw, mask))(firsts)
        else:

            def one(f, m):
                m = m & state.active
                return pick(f, backward(tables, rest, m), m)

            chosen, value = jax.vmap(one)(firsts, ctxs.mask)
        return state._replace(model=mstate), Selection(chosen, value, params)

    return PolicyCore(init, select, update, select_batch, tables)
