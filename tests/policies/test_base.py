"""The friendly class (:mod:`bayesrank.policies.base`) over a policy's core: an
update applied inside the next select is the core's own update, and select hands
back only the state it changed. The reference is the jitted functional core."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_policies_core import _policies

import bayesrank as br


@pytest.fixture(scope="module")
def env():
    return br.RankingEnv.paper(seed=3, K=6, L=3, d=3, w_max=3.0)


def _same_or_tied(pol, got, want):
    """The lists are equal, or (the same state scored by two compiled programs, whose
    roundings may differ by an ulp) exactly tied under the policy's own tables: their
    values agree to 1e-12 of the tables' scale. A list worse by more fails."""
    if np.array_equal(got, want):
        return
    try:
        first, pairs = (np.asarray(x, np.float64) for x in pol.scores())
    except (AttributeError, NotImplementedError, ValueError):
        np.testing.assert_array_equal(got, want)
        return

    def value(lst):
        return first[lst[0]] + sum(pairs[l - 1, lst[l - 1], lst[l]] for l in range(1, len(lst)))

    scale = max(np.abs(first).max(), np.abs(pairs).max(), 1.0)
    assert abs(value(got) - value(want)) <= 1e-12 * scale, (got, want)


@pytest.mark.parametrize("name", ["ts", "ucb_logistic", "gen", "window_s3", "base_ts"])
def test_an_update_applied_at_the_next_select_is_the_cores_update(env, name):
    """A single-list update runs inside the next select's compiled call, yet the
    state read at any time, and the lists selected, are those of the core's own
    update then select. The caller's arrays are copied: changing them after update
    changes nothing, and a refused update leaves the accepted one in place."""
    pol, twin = _policies(env)[name](), _policies(env)[name]()
    select, update = jax.jit(twin.core.select), jax.jit(twin.core.update)
    state, key = twin.core.init(), jax.random.key(twin.seed)
    ctx = pol.context()
    rng = np.random.default_rng(4)
    for t in range(8):
        state, sel = select(jax.random.fold_in(key, t), state, ctx)
        a = np.array(pol.select())  # a writable copy
        _same_or_tied(pol, a, np.asarray(sel.items))
        r = rng.normal(size=env.L)
        if t % 2:  # a list other than the one just selected
            a = rng.integers(0, env.K, env.L)
        # copies: jnp.asarray may share the NumPy buffer, which the loop then reuses
        state = update(state, jnp.array(a, jnp.int32), jnp.array(r), ctx)
        pol.update(a, r)
        if t == 3:  # two updates before the next select: applied in order
            b = rng.integers(0, env.K, env.L)
            state = update(state, jnp.array(b, jnp.int32), jnp.array(-r), ctx)
            pol.update(b, -r)
        a[:] = 0  # the caller reuses their arrays
        r[:] = 1e3
        with pytest.raises(ValueError, match="rewards: expected finite"):
            pol.update(a, np.full(env.L, np.inf))
        if t == 5:  # read while an update waits: the core's state
            for x, y in zip(jax.tree_util.tree_leaves(pol.state),
                            jax.tree_util.tree_leaves(state)):
                np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    for x, y in zip(jax.tree_util.tree_leaves(pol.state), jax.tree_util.tree_leaves(state)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    assert len(pol.history()[0]) == 9


def test_select_returns_only_the_state_it_changed(env):
    """The class's compiled select does not hand back (copies of) unchanged state:
    the item vectors stay the very same array across select and update."""
    pol = _policies(env)["ts"]()
    items = pol.state.items
    for _ in range(3):
        pol.update(pol.select(), np.zeros(env.L))
    pol.select()
    assert pol.state.items is items
