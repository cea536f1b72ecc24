"""The bounded history (ring buffer) against a plain list, and the policy's use of it."""

import jax
import numpy as np
import pytest

import bayesrank as br
from bayesrank.policies.runtime.history import History


@pytest.mark.parametrize("capacity", [0, 1, 5, 64, 1000])
def test_ring_buffer_equals_the_tail_of_a_list(capacity):
    rng = np.random.default_rng(capacity)
    h, ref = History(L=2, d=3, capacity=capacity), []
    for n in rng.integers(0, 90, 30):
        rows = [(rng.integers(0, 9, 2), rng.normal(size=2), rng.normal(size=3))
                for _ in range(n)]
        ref += rows
        if rows:
            h.append(*(np.stack(c) for c in zip(*rows)))
    kept = ref[len(ref) - min(len(ref), capacity):] if capacity else []
    items, rewards, v0 = h.arrays()
    assert h.seen == len(ref) and len(h) == len(kept)
    if kept:
        np.testing.assert_array_equal(items, np.stack([r[0] for r in kept]))
        np.testing.assert_array_equal(rewards, np.stack([r[1] for r in kept]))
        np.testing.assert_array_equal(v0, np.stack([r[2] for r in kept]))
    h.resize(3)
    tail = kept[-3:]
    assert len(h) == len(tail) and h.seen == len(ref)
    if tail:
        np.testing.assert_array_equal(h.arrays()[0], np.stack([r[0] for r in tail]))


def test_posterior_uses_the_kept_history_and_says_so():
    """With max_history = 30 after 50 impressions, the closed-form posterior is still
    exact (it is the state's) and its data groups hold the last 30 rows."""
    env = br.RankingEnv.paper(seed=0, K=5, L=2, d=3)
    pol = br.RankTS(items=env.items, w=env.w, seed=0)
    pol.max_history = 30
    for t in range(50):
        it = pol.select()
        pol.update(it, np.asarray(env.sample(jax.random.key(t), it)))
    dt = pol.posterior(0, draws=400, chains=2)
    attrs = dt["posterior"].attrs  # make_datatree stores attrs on every group
    assert attrs["observations"] == 50
    assert attrs["observations_in_data_groups"] == 30
    assert dt["observed_data"].dataset.sizes[next(iter(dt["observed_data"].dataset.sizes))] == 30
    draws = dt["posterior"]["theta"].values.reshape(-1, 3)
    np.testing.assert_allclose(draws.mean(0), pol.posterior_mean()[0], atol=0.15)


def test_no_history_still_learns():
    env = br.RankingEnv.paper(seed=0, K=5, L=2, d=3)
    a = br.RankTS(items=env.items, w=env.w, seed=0)
    b = br.RankTS(items=env.items, w=env.w, seed=0)
    b.max_history = 0
    for t in range(20):
        x, y = a.select(), b.select()
        np.testing.assert_array_equal(x, y)
        r = np.asarray(env.sample(jax.random.key(t), x))
        a.update(x, r)
        b.update(y, r)
    assert len(b.history()[0]) == 0 and len(a.history()[0]) == 20
