"""The functional core of every policy, composed from parts.

    core = compose(model, features, estimate, tables, items, L=..., distinct=...)
    state = core.init()
    state, sel = core.select(key, state, ctx)              # sel.items (L,)
    state = core.update(state, lists, rewards, ctx)        # lists (L,), rewards (L,)
    state, sel = core.select_batch(key, state, ctxs)       # ctxs batched: (B, ...)

All four are pure JAX functions over NamedTuples of arrays, so a run is a
``lax.scan`` of select/update and many runs a ``vmap`` (:func:`bayesrank.simulate`).
``ctx`` is the request's :class:`~bayesrank.policies.parts.context.Context` (its v0 and
mask). A NaN reward means "position not observed": that position's model skips the
impression, the others learn from it.

The parts, each written once:

* ``features``: ``(items, lists, v0) -> (L, p)`` (:mod:`~bayesrank.policies.parts.features`);
* ``estimate``: a Thompson draw or a point estimate with a width (:mod:`~bayesrank.policies.parts.estimate`);
* ``tables``: scores of a kind fixed at trace time (:mod:`~bayesrank.policies.parts.tables`, :mod:`~bayesrank.policies.parts.bonus`);
* the decoder: :func:`bayesrank.decoding.dispatch.decode_tables`, which reads only
  the part's static spec (``tables.spec(distinct)``) and its arrays
  (``tables.decodable(...)``, a NamedTuple of :mod:`bayesrank.decoding.spec`).

The item vectors live in the state (capacity ``Kc`` rows, ``active`` marks the real
ones), so items can be added at run time without rebuilding the core.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._static import Part
from bayesrank.decoding.backward import pick
from bayesrank.decoding.dispatch import backward, decode_tables
from bayesrank.policies.parts.context import Context

__all__ = ["PolicyCore", "PolicyState", "Selection", "compose", "with_items"]


class PolicyState(NamedTuple):
    """Everything a policy's next step needs.

    Example:
        >>> import bayesrank as br
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> state = br.RankTS(items=env.items, w=env.w).core.init()   # a PolicyState
        >>> state.items.shape, state.active.shape, state.model.n.tolist()
        ((10, 10), (10,), [0.0, 0.0, 0.0, 0.0])
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


class PolicyCore(Part):
    """Pure functions of a policy (see the module docstring), over its parts.

    A core is a JAX pytree (:class:`bayesrank._static.Part`): its arrays (the initial
    item vectors, the dependency weights inside its tables and features) are leaves
    and the rest is static, so a core passed as an *argument* to a jitted function
    compiles once per configuration (:mod:`bayesrank.policies.runtime.program`).

    Example:
        >>> import jax, bayesrank as br
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> core = br.RankTS(items=env.items, w=env.w).core          # a PolicyCore
        >>> ctx = br.policies.Context(v0=env.v0, mask=jax.numpy.ones(10, bool))
        >>> state, sel = jax.jit(core.select)(jax.random.key(0), core.init(), ctx)
        >>> rewards = env.sample(jax.random.key(1), sel.items)
        >>> state = jax.jit(core.update)(state, sel.items, rewards, ctx)
        >>> state.model.n.tolist()
        [1.0, 1.0, 1.0, 1.0]
    """

    def __init__(self, model, features, estimate, tables, items, *, L, p, distinct):
        self.model, self.features, self.estimate = model, features, estimate
        self.tables = tables  # the tables part (rebuilds scores from Selection.params)
        self.items0 = jnp.asarray(items)
        self.L, self.p, self.distinct = int(L), int(p), bool(distinct)

    def init(self) -> PolicyState:
        """The state before any impression."""
        return PolicyState(
            self.model.init(self.L, self.p),
            self.estimate.init(self.L, self.p),
            self.items0,
            jnp.ones(self.items0.shape[0], bool),
        )

    def _decode(self, params, state, ctx):
        tables, mask = self.tables, ctx.mask & state.active
        spec = tables.spec(self.distinct)
        if tables.kind == "window":
            tabs = tables.window(params, state.items, ctx.v0)
            return decode_tables(spec, None, tables.decodable(tabs), mask)
        rest = tables.rest(params, state.items)
        first = tables.first(params, state.items, rest, ctx.v0)
        return decode_tables(spec, first, tables.decodable(rest), mask)

    def select(self, key, state, ctx) -> tuple[PolicyState, Selection]:
        """One request: ``(state, Selection)``; the list is ``Selection.items``."""
        params, mstate = self.estimate(key, state.model, state.est)
        chosen, value = self._decode(params, state, ctx)
        return state._replace(model=mstate), Selection(chosen, value, params)

    def update(self, state, lists, rewards, ctx) -> PolicyState:
        """Learn from one shown list (L,) and its rewards (L,) (NaN: not observed)."""
        rewards = jnp.asarray(rewards)
        valid = jnp.isfinite(rewards)
        y = jnp.where(valid, rewards, jnp.zeros_like(rewards))
        x = self.features(state.items, lists, ctx.v0)
        return state._replace(
            model=self.model.update(state.model, x, y, valid),
            est=self.estimate.update(state.est, x, valid),
        )

    def select_batch(self, key, state, ctxs) -> tuple[PolicyState, Selection]:
        """B requests: ctxs.v0 (B, d), ctxs.mask (B, Kc) or (Kc,) for a shared mask."""
        tables, estimate = self.tables, self.estimate
        shared_mask = ctxs.mask.ndim == 1
        ctx_axes = Context(0, None if shared_mask else 0)
        if estimate.random:
            # One independent draw per request (MCMC chains are not advanced: every
            # request's draw starts from the current chain state).
            params = estimate.batch(key, state.model, state.est, ctxs.v0.shape[0])

            def one(p, ctx):
                chosen, value = self._decode(p, state, ctx)
                return Selection(chosen, value, p)

            return state, jax.vmap(one, in_axes=(0, ctx_axes))(params, ctxs)
        if tables.kind == "window" or self.distinct:
            keys = jax.random.split(key, ctxs.v0.shape[0])
            sel = jax.vmap(self.select, in_axes=(0, None, ctx_axes))(keys, state, ctxs)
            return state, sel[1]
        params, mstate = estimate(key, state.model, state.est)
        rest = tables.rest(params, state.items)
        firsts = jax.vmap(lambda v0: tables.first(params, state.items, rest, v0))(
            ctxs.v0
        )
        spec, tabs = tables.spec(), tables.decodable(rest)
        if shared_mask:
            mask = ctxs.mask & state.active
            bw = backward(spec, tabs, mask)
            chosen, value = jax.vmap(lambda f: pick(f, bw, mask))(firsts)
        else:

            def one(f, m):
                m = m & state.active
                return pick(f, backward(spec, tabs, m), m)

            chosen, value = jax.vmap(one)(firsts, ctxs.mask)
        return state._replace(model=mstate), Selection(chosen, value, params)

    def scores(self, params, items, v0):
        """The tables of an estimate: ``(first, pairs)``, or the window tables."""
        tabs = self.tables
        if tabs.kind == "window":
            return tabs.window(params, items, v0)
        rest = tabs.rest(params, items)
        return tabs.first(params, items, rest, v0), tabs.dense(rest)


def compose(
    model, features, estimate, tables, items, *, L: int, p: int, distinct: bool = False
) -> PolicyCore:
    """Assemble a policy's functional core from its parts.

    Args:
        model: the per-position posterior (:mod:`bayesrank.posteriors.base`).
        features: ``(items, lists, v0) -> (L, p)``.
        estimate: a :class:`~bayesrank.policies.parts.estimate.Thompson` or
            :class:`~bayesrank.policies.parts.estimate.Optimistic`.
        tables: a tables part (:mod:`~bayesrank.policies.parts.tables`, :mod:`~bayesrank.policies.parts.bonus`).
        items: (K, d) initial item vectors (the capacity is K; see ``add_items``).
        L: list length; p: feature dimension.
        distinct: forbid repeated items in a list.

    Returns:
        A :class:`PolicyCore`.

    Example:
        RankTS with a known w, assembled by hand (what ``br.RankTS`` does):

        >>> import jax, bayesrank as br
        >>> from bayesrank.policies import Context, Thompson, compose
        >>> from bayesrank.policies.parts.features import window_features
        >>> from bayesrank.policies.parts.tables import LinearTables
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> model = br.GaussianLinear()
        >>> core = compose(model, window_features(env.w[:, None]), Thompson(model),
        ...                LinearTables(env.w, model.link), env.items, L=4, p=10)
        >>> ctx = Context(v0=env.v0, mask=jax.numpy.ones(10, bool))
        >>> state, sel = core.select(jax.random.key(0), core.init(), ctx)
        >>> sel.items.shape
        (4,)
    """
    return PolicyCore(model, features, estimate, tables, items, L=L, p=p,
                      distinct=distinct)


def with_items(state: PolicyState, K: int, V) -> PolicyState:
    """The state with the item vectors V (m, d) in slots K..K+m, marked active (on
    the host; the capacity doubles when they do not fit, so a core recompiles only
    when it grows). Learnt parameters are untouched (theta is per position).

    Example:
        >>> import bayesrank as br, numpy as np
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> state = br.RankTS(items=env.items, w=env.w).core.init()
        >>> new = with_items(state, 10, np.ones((1, 10)))
        >>> new.items.shape, int(new.active.sum())
        ((20, 10), 11)
    """
    d = V.shape[1]
    K_new = K + V.shape[0]
    Kc = state.items.shape[0]
    items = np.asarray(state.items)
    active = np.asarray(state.active)
    if K_new > Kc:
        cap = max(K_new, 2 * Kc)
        items = np.concatenate([items, np.zeros((cap - Kc, d), items.dtype)])
        active = np.concatenate([active, np.zeros(cap - Kc, bool)])
    items[K:K_new] = V
    active[K:K_new] = True
    return state._replace(
        items=jnp.asarray(items, state.items.dtype), active=jnp.asarray(active)
    )
