"""Reward magnitude in the latent-w model (float32, the users' default): its
statistics hold ``sum r^2``, so rewards beyond :meth:`LatentW.reward_bound` (2^50 in
float32, where r^2 overflows at 1.8e19) are refused on the host naming ``rewards``,
the state unchanged; below the bound the posterior scales with the rewards."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest

import bayesrank as br
from bayesrank.posteriors import GaussianLinear, GaussianLinearUnknownNoise, LatentW
from bayesrank.posteriors.conjugate import reward_bound


def _leaves(state):
    return [np.asarray(a) for a in jax.tree_util.tree_leaves(state)]


@pytest.mark.parametrize("c", [2.0**60, 2.0**70, 1e30])
def test_default_latent_rank_ts_refuses_huge_rewards_state_unchanged(c):
    rng = np.random.default_rng(7)
    V = rng.normal(size=(10, 3))
    pol = br.RankTS(items=V, L=3, w=dist.Normal(0.0, 5.0), seed=4)
    for _ in range(5):
        pol.update(pol.select(), rng.normal(size=3) + 1.0)
    a = pol.select()
    before, t = _leaves(pol.state), pol.t
    with pytest.raises(ValueError, match="rewards"):
        pol.update(a, c * (rng.normal(size=3) + 1.0))
    after = _leaves(pol.state)
    assert pol.t == t and all(np.array_equal(x, y) for x, y in zip(before, after))
    assert np.all(np.isfinite(np.asarray(pol.posterior_mean())))
    pol.update(pol.select(), rng.normal(size=3))  # and it goes on


@pytest.mark.parametrize("c", [2.0**-60, 2.0**-20, 2.0**20, 2.0**45])
def test_latent_posterior_scales_with_the_rewards_within_the_bound(c):
    # the same 30 rounds of pair features, rewards r and c r: E[theta] scales by c
    # and E[w] is the same (the learnt scales make the posterior unit-free)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 2, 6))
    R = rng.normal(size=(30, 2)) + 1.0
    model = LatentW(GaussianLinear(), dist.Normal(0.0, 5.0))

    def fit(k):
        state = model.init(L=2, p=6)
        for x, r in zip(X, R):
            model.check_rewards(k * r)
            state = model.update(state, jnp.asarray(x), jnp.asarray(k * r))
        return state

    s1, sc = fit(1.0), fit(c)
    for leaf in _leaves(sc):
        assert np.all(np.isfinite(leaf))
    m1 = np.asarray(model.mean(s1))
    np.testing.assert_allclose(np.asarray(model.mean(sc)) / c, m1, rtol=2e-3,
                               atol=2e-3 * np.abs(m1).max())
    np.testing.assert_allclose(np.asarray(model.w_mean(sc)),
                               np.asarray(model.w_mean(s1)), rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize("base, unit", [
    (GaussianLinear(), 1.0),                                     # yy = sum r^2
    (GaussianLinearUnknownNoise(), 1.0),
    (GaussianLinear(noise_scale=0.25), 0.25),                    # learnt g, known s
    (GaussianLinear(prior_scale=1.0, noise_scale=0.25), 0.25),   # yy = sum r^2 / s^2
])
def test_latent_w_reward_bound_is_the_conjugate_one_for_squared_sums(base, unit):
    model = LatentW(base, dist.Normal(0.0, 5.0))
    bound, why = model.reward_bound()
    assert bound == reward_bound(square_unit=unit)[0]
    assert model.reward_bound("float32")[0] == unit * 2.0**50
    with pytest.raises(ValueError, match="rewards"):
        model.check_rewards(np.array([0.0, 2.0 * bound]))
    model.check_rewards(np.array([0.0, 0.5 * bound]))  # within: taken
