"""GenRankUCB (:mod:`bayesrank.policies.gen_ucb`): the learnt dependency weights
approach the true ones."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank.model.noise import Gaussian
from bayesrank.policies.gen_ucb import GenRankUCB
from bayesrank.simulation.env import RankingEnv


def test_gen_w_hat_approaches_true_w():
    rng = np.random.default_rng(6)
    K, L, d = 12, 3, 4
    items = rng.normal(size=(K, d))
    theta = rng.normal(size=(L, d))
    w = np.array([0.0, 1.5, -0.8])
    env = RankingEnv(items, theta, w, link="identity", noise=Gaussian(0.5))
    gen = GenRankUCB(items, L=L, alpha=1.0)
    errors = []
    for n in (30, 2000):
        lists = rng.integers(0, K, size=(n, L))
        gen.update(lists, np.asarray(env.sample(jax.random.key(n), jnp.asarray(lists))))
        errors.append(np.abs(gen.w_hat[1:] - w[1:]).max())
    # Position 1 has only (v_j, v0) with v0 = 0: its w is not identifiable.
    assert errors[1] < 0.05
    assert errors[1] < errors[0]
    np.testing.assert_allclose(gen.phi_hat()[1:, :d], theta[1:], atol=0.05)
