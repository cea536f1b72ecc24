"""policy.fit(log) equals replaying update() row by row (float64, conjugate to 1e-8)."""

from __future__ import annotations

import jax
import numpy as np
import numpyro.distributions as dist
import pytest

import bayesrank as br
from bayesrank import ope


@pytest.fixture(scope="module")
def env():
    return br.RankingEnv.paper(seed=4, K=10, L=3, d=4, w_max=3.0)


def _log(env, n=60, seed=0):
    rng = np.random.default_rng(seed)
    lists = rng.integers(0, env.K, size=(n, env.L))
    rewards = np.stack([np.asarray(env.sample(jax.random.key(seed * 1000 + t), lists[t]))
                        for t in range(n)])
    rewards[rng.random(rewards.shape) < 0.2] = np.nan  # partial feedback
    v0 = rng.normal(size=(n, env.d))
    return ope.as_log(lists=lists, rewards=rewards, v0=v0, K=env.K)


MAKERS = {
    "RankTS": lambda e: br.RankTS(items=e.items, w=e.w, seed=0),
    "RankTS latent w": lambda e: br.RankTS(items=e.items, L=e.L, w=dist.Normal(0., 3.),
                                           seed=0),
    "RankUCB": lambda e: br.RankUCB(items=e.items, w=e.w),
    "GenRankUCB": lambda e: br.GenRankUCB(e.items, e.L),
    "GenRankTS": lambda e: br.GenRankTS(e.items, e.L, seed=0),
    "Baseline": lambda e: br.RankedBaseline(e.items, e.L),
}


@pytest.mark.parametrize("name", list(MAKERS))
def test_fit_equals_sequential_updates(env, name):
    log = _log(env)
    a, b = MAKERS[name](env), MAKERS[name](env)
    a.fit(log)
    for t in range(log.sizes["round"]):
        b.update(log["lists"].values[t], log["rewards"].values[t], v0=log["v0"].values[t])
    la = [np.asarray(x) for x in jax.tree_util.tree_leaves(a.state)
          if not jax.dtypes.issubdtype(np.asarray(x).dtype, jax.dtypes.prng_key)]
    lb = [np.asarray(x) for x in jax.tree_util.tree_leaves(b.state)
          if not jax.dtypes.issubdtype(np.asarray(x).dtype, jax.dtypes.prng_key)]
    for x, y in zip(la, lb):
        np.testing.assert_allclose(x, y, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(a.posterior_mean(), b.posterior_mean(), rtol=1e-8,
                               atol=1e-10)


def test_a_bad_log_is_refused_and_nothing_changes(env):
    pol = MAKERS["RankTS"](env)
    before = [np.asarray(x).copy() for x in jax.tree_util.tree_leaves(pol.state.model)]
    log = _log(env)
    bad = log.copy()
    bad["lists"] = bad["lists"] + env.K  # items out of range
    with pytest.raises(ValueError, match="lists"):
        pol.fit(bad)
    short = ope.as_log(lists=np.zeros((3, env.L + 1), int), rewards=np.zeros((3, env.L + 1)),
                       v0=np.zeros(env.d), K=env.K)
    with pytest.raises(ValueError, match="lists"):
        pol.fit(short)
    for x, y in zip(before, jax.tree_util.tree_leaves(pol.state.model)):
        np.testing.assert_array_equal(x, np.asarray(y))
