"""A catalogue of bad inputs to ``Policy.update`` and ``Policy.fit`` (issue 35, item 3):
a ``distinct=True`` policy never shows a list that repeats an item, and it refuses
to learn from one (``ValueError`` naming ``items``, or ``lists`` for a log), leaving
its state, round counter and history exactly as they were.

The adversarial trial found the latent-w RankTS and GenRankTS learning from such
lists; the refusal now lives in :meth:`Policy.update`, the one path of every policy.
"""

from __future__ import annotations

import jax
import numpy as np
import numpyro.distributions as dist
import pytest

import bayesrank as br

K, L = 6, 3


@pytest.fixture(scope="module")
def env():
    return br.RankingEnv.paper(seed=3, K=K, L=L, d=4, w_max=3.0)


MAKERS = {
    "RankTS": lambda e, **kw: br.RankTS(items=e.items, w=e.w, **kw),
    "RankTS latent w": lambda e, **kw: br.RankTS(items=e.items, L=L, w=dist.Normal(0, 5),
                                                 **kw),
    "GenRankTS": lambda e, **kw: br.GenRankTS(e.items, L=L, **kw),
    "RankUCB": lambda e, **kw: br.RankUCB(items=e.items, w=e.w, **kw),
    "GenRankUCB": lambda e, **kw: br.GenRankUCB(e.items, L=L, **kw),
    "WindowRankUCB": lambda e, **kw: br.WindowRankUCB(items=e.items, w=e.w, **kw),
    "RankedBaseline ucb": lambda e, **kw: br.RankedBaseline(e.items, L=L, **kw),
    "RankedBaseline ts": lambda e, **kw: br.RankedBaseline(e.items, L=L, kind="ts",
                                                           **kw),
}


def _state(pol):
    leaves = [np.asarray(x).copy() for x in jax.tree_util.tree_leaves(pol.state)
              if not jax.dtypes.issubdtype(np.asarray(x).dtype, jax.dtypes.prng_key)]
    items, rewards = pol.history()
    return leaves, pol.t, items.copy(), rewards.copy()


def _assert_unchanged(before, pol):
    after = _state(pol)
    assert len(before[0]) == len(after[0])
    for x, y in zip(before[0], after[0]):
        np.testing.assert_array_equal(x, y)
    assert before[1] == after[1]
    np.testing.assert_array_equal(before[2], after[2])
    np.testing.assert_array_equal(before[3], after[3], strict=True)


def _raises(name, fn):
    with pytest.raises(ValueError) as info:
        fn()
    assert str(info.value).startswith(f"{name}:"), str(info.value)


REPEATS = {
    "one list": np.array([1, 1, 2]),
    "one list, far apart": np.array([4, 0, 4]),
    "a batch, last row": np.array([[0, 1, 2], [3, 4, 5], [2, 5, 2]]),
    "a batch of one": np.array([[5, 5, 5]]),
}


@pytest.mark.parametrize("case", list(REPEATS))
@pytest.mark.parametrize("name", list(MAKERS))
def test_distinct_policy_refuses_to_learn_from_repeated_items(env, name, case):
    pol = MAKERS[name](env, distinct=True, seed=0)
    pol.update(np.array([0, 1, 2]), np.ones(L))  # a state and a pending update to keep
    before = _state(pol)
    items = REPEATS[case]
    _raises("items", lambda: pol.update(items, np.ones(items.shape)))
    _assert_unchanged(before, pol)
    pol.update(np.array([[3, 4, 5]]), np.ones((1, L)))  # a good list still goes in
    assert pol.history()[0].shape[0] == before[2].shape[0] + 1


@pytest.mark.parametrize("name", ["RankTS", "RankTS latent w", "GenRankTS", "RankUCB"])
def test_distinct_policy_refuses_a_log_with_repeated_items(env, name):
    pol = MAKERS[name](env, distinct=True, seed=0)
    log = br.ope.collect(env, br.ope.UniformLogger(K, L), 40, seed=0)
    assert any(len(set(row)) < L for row in log["lists"].values.tolist())
    before = _state(pol)
    _raises("lists", lambda: pol.fit(log))
    _assert_unchanged(before, pol)


@pytest.mark.parametrize("name", ["RankTS", "RankTS latent w", "GenRankTS"])
def test_policies_that_allow_repeats_still_learn_from_them(env, name):
    pol = MAKERS[name](env, seed=0)
    pol.update(np.array([1, 1, 1]), np.ones(L))
    pol.update(np.array([[2, 2, 0]]), np.ones((1, L)))
    assert pol.history()[0].tolist() == [[1, 1, 1], [2, 2, 0]]
