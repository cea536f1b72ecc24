"""The compiled programs behind every policy object, shared between instances.

Each function here is jitted once at module level and takes the policy's
:class:`~bayesrank.policies.parts.core.PolicyCore` as its first argument. A core is a
pytree (:mod:`bayesrank._static`): its arrays are traced, its configuration (model
family and settings, link, L, d, dtype, decoder path) is static. So a second
``RankTS`` / ``RankUCB`` / latent-w ``RankTS`` of the same configuration, with another
seed, other items or another w, finds its programs compiled: its first round costs
what a steady round costs. With the persistent cache
(:func:`bayesrank.compilation_cache`) a new process finds them on disk.

    prog = bind(core)                                    # the core's programs
    state = prog.init()                                  # the state before any impression
    state, sel, t = prog.select(key, t, state, ctx)      # round t's draw: fold_in(key, t)
    state, sel, t = prog.update_select(key, t, state, ctx, pending, apply)
    state, sel = prog.select_batch(key, t, state, ctxs)
    state = prog.update(state, lists, rewards, ctx)
    state = prog.update_many(state, lists (n, L), rewards (n, L), v0s (n, d))
    tables = prog.scores(params, items, v0)
    x = prog.features(items, lists (n, L), v0s (n, d))   # (n, L, p)

``bind`` flattens the core once: each call passes its leaves and its (static,
hashable) tree structure, so the per-call cost is that of a plain jitted function.

``select`` and ``update_select`` return only the fields of the state that the step
changed (:func:`changed`; a closed-form posterior's select changes nothing), which
:func:`merge` puts back together on the host.
"""

from __future__ import annotations

import sys
from functools import partial
from typing import Any, NamedTuple

import jax

from bayesrank.policies.parts.context import Context

__all__ = ["Programs", "announce", "bind", "cache_size", "changed", "merge"]


def changed(new, old) -> tuple:
    """``new``'s fields (a NamedTuple state, traced), None for a field whose leaves
    are all ``old``'s, unchanged.

    A jitted function that returns an input unchanged still copies it; the class's
    select returns only what the step changed (for a closed-form posterior, nothing
    but the selection; the item vectors, (K, d), never) and :func:`merge` puts the
    state back together.
    """
    leaves = jax.tree_util.tree_leaves
    return tuple(
        None if all(a is b for a, b in zip(leaves(n), leaves(o))) else n
        for n, o in zip(new, old)
    )


def merge(fields: tuple, old):
    """``old`` with the fields that :func:`changed` returned."""
    if all(c is None for c in fields):
        return old
    return type(old)(*(o if c is None else c for c, o in zip(fields, old)))


def init(core):
    """The state before any impression, in one compiled call (op by op, building
    a prior's factors is dozens of small programs: slow to load from the cache)."""
    return core.init()


def select(core, key, t, state, ctx):
    """Round t's selection with the key ``fold_in(key, t)``: (changed, sel, t + 1)."""
    new, sel = core.select(jax.random.fold_in(key, t), state, ctx)
    return changed(new, state), sel, t + 1


def update_select(core, key, t, state, ctx, pending, apply):
    """A single-list update that arrived since the last select (skipped where
    ``apply`` is False), then round t's selection, in one compiled call: one
    dispatch per round, and one program to trace and load in a new process (a
    select without a pending update runs this program too)."""
    lists, rewards, v0u = pending

    def learn(s):
        new = core.update(s, lists, rewards, Context(v0u, None))
        return new.model, new.est

    model, est = jax.lax.cond(apply, learn, lambda s: (s.model, s.est), state)
    # Update, then select: XLA on CPU would otherwise interleave the two on its
    # thread pool, which is slower than running them in turn (figures:
    # docs/performance.md, "Why the code is written this way"). Items and flags pass
    # outside (never copied).
    model, est, key = jax.lax.optimization_barrier((model, est, key))
    new = state._replace(model=model, est=est)
    new, sel = core.select(jax.random.fold_in(key, t), new, ctx)
    return changed(new, state), sel, t + 1


def select_batch(core, key, t, state, ctxs):
    """Round t's lists for a batch of requests (ctxs batched)."""
    return core.select_batch(jax.random.fold_in(key, t), state, ctxs)


def update(core, state, lists, rewards, ctx):
    """One shown list (L,) and its rewards (L,)."""
    return core.update(state, lists, rewards, ctx)


def update_many(core, state, lists, rewards, v0s):
    """n shown lists in order, in one scan: lists, rewards (n, L), v0s (n, d)."""

    def body(s, row):
        it, r, v = row
        return core.update(s, it, r, Context(v, None)), None

    return jax.lax.scan(body, state, (lists, rewards, v0s))[0]


def scores(core, params, items, v0):
    """The tables an estimate scores lists with (see ``PolicyCore.scores``)."""
    return core.scores(params, items, v0)


def features(core, items, lists, v0s):
    """(n, L, p) features of shown lists (n, L) in contexts v0s (n, d)."""
    return jax.vmap(core.features, in_axes=(None, 0, 0))(items, lists, v0s)


_STEPS = (init, select, update_select, select_batch, update, update_many, scores, features)


def _on_leaves(fn):
    def run(treedef, leaves, *args):
        return fn(jax.tree_util.tree_unflatten(treedef, leaves), *args)

    run.__name__ = run.__qualname__ = fn.__name__
    return jax.jit(run, static_argnums=0)


#: One jitted program per step, keyed (by JAX) by the core's tree structure.
_JITTED = {fn.__name__: _on_leaves(fn) for fn in _STEPS}


#: Tree structures (configurations) bound so far in this process.
_SEEN: set = set()


def announce(name: str) -> None:
    """Say on stderr that a configuration compiles, so a first call that takes
    seconds does not look hung. Only where a person watches: a terminal or a Jupyter
    kernel (not in logs, tests or pipes)."""
    if "ipykernel" not in sys.modules and not (
        hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
    ):
        return
    where = jax.config.jax_compilation_cache_dir
    cache = f"; cached in {where}" if where and jax.config.jax_enable_compilation_cache else ""
    print(f"bayesrank: compiling {name}'s programs (once per configuration{cache})",
          file=sys.stderr, flush=True)


class Programs(NamedTuple):
    """A core's compiled steps (arguments after ``core`` as in the functions above);
    ``new``: the first core of its configuration bound in this process."""

    init: Any
    select: Any
    update_select: Any
    select_batch: Any
    update: Any
    update_many: Any
    scores: Any
    features: Any
    new: bool


def bind(core) -> Programs:
    """The compiled steps of ``core``, shared with every core of its configuration.

    Example:
        >>> import jax, bayesrank as br
        >>> from bayesrank.policies.runtime import program
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> a = br.RankTS(items=env.items, w=env.w, seed=0).core
        >>> b = br.RankTS(items=env.items[::-1], w=-env.w, seed=1).core
        >>> ctx = br.policies.Context(env.v0, jax.numpy.ones(10, bool))
        >>> _ = program.bind(a).select(jax.random.key(0), 0, a.init(), ctx)
        >>> n = program.cache_size("select")
        >>> _ = program.bind(b).select(jax.random.key(0), 0, b.init(), ctx)
        >>> program.cache_size("select") - n     # b compiled nothing: a's program
        0
    """
    leaves, treedef = jax.tree_util.tree_flatten(core)
    new = treedef not in _SEEN
    _SEEN.add(treedef)
    steps = (partial(_JITTED[fn.__name__], treedef, leaves) for fn in _STEPS)
    return Programs(*steps, new)


def cache_size(step: str) -> int:
    """How many programs ``step`` (e.g. ``"select"``) has compiled in this process."""
    return _JITTED[step]._cache_size()
