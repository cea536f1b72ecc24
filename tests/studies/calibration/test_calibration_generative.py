"""The simulated truth: prior moments, likelihoods, the design's features."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesrank.model import scores
from bayesrank.posteriors import BayesGLM, GaussianLinear, GaussianLinearUnknownNoise
from bayesrank.simulation.env import RankingEnv
from bayesrank.studies.calibration.generative import (
    Design,
    design_arrays,
    design_features,
    gaussian_generative,
    generative_for,
    glm_generative,
    nig_generative,
)

KEYS = jax.random.split(jax.random.key(0), 20000)


def _prior_draws(gen, L=1, p=2):
    return jax.vmap(lambda k: gen.prior(k, L, p))(KEYS)


def test_gaussian_prior_has_the_stated_mean_and_covariance():
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    th = np.asarray(_prior_draws(gaussian_generative(1.5, cov))["theta"][:, 0])
    np.testing.assert_allclose(th.mean(0), [1.5, 1.5], atol=0.05)
    np.testing.assert_allclose(np.cov(th.T), cov, atol=0.08)


def test_nig_prior_variance_matches_closed_form():
    # Var(theta_j) = E[s^2] * scale^2 = b0 / (a0 - 1) * scale^2 = 2 / 3 * 4
    d = _prior_draws(nig_generative(0.0, 2.0, a0=4.0, b0=2.0))
    th = np.asarray(d["theta"][:, 0])
    np.testing.assert_allclose(th.var(0), [8 / 3] * 2, rtol=0.06)
    np.testing.assert_allclose(np.mean(np.asarray(d["sigma"]) ** 2), 2 / 3, rtol=0.04)


@pytest.mark.parametrize("link", ["logistic", "probit", "exp", "identity"])
def test_glm_rewards_have_the_link_mean(link):
    gen = glm_generative(link, prior_scale=1.0)
    params = {"theta": jnp.array([[0.3, -0.2]])}
    x = jnp.broadcast_to(jnp.array([1.0, 1.0]), (20000, 1, 2))
    y = np.asarray(gen.rewards(jax.random.key(1), params, x))
    mean = {"logistic": 1 / (1 + np.exp(-0.1)), "probit": 0.5398278,
            "exp": np.exp(0.1), "identity": 0.1}[link]
    assert abs(y.mean() - mean) < 0.03


def test_generative_for_reads_each_model_family():
    assert "InvGamma" in generative_for(GaussianLinearUnknownNoise()).description
    assert "N(<theta, x>, 0.5^2)" in generative_for(
        GaussianLinear(prior_scale=1.0, noise_scale=0.5)).description
    learnt = generative_for(GaussianLinear(noise_scale=0.5)).description
    assert "g ~ HalfCauchy(1), s = 0.5 (known)" in learnt
    assert "Bernoulli" in generative_for(BayesGLM(link="logistic", n_max=5)).description


def test_generative_for_refuses_a_custom_prior():
    import numpyro.distributions as dist

    with pytest.raises(TypeError, match="model"):
        generative_for(BayesGLM(link="logistic", prior=dist.Laplace(0.0, 1.0), n_max=5))
    with pytest.raises(TypeError, match="model"):
        generative_for(object())


def test_bad_link_is_rejected():
    with pytest.raises(ValueError, match="link"):
        glm_generative("cubic")


def test_design_features_are_the_env_features_of_the_lists():
    design = Design(K=7, L=3, d=4, w_max=2.0, seed=3)
    env = RankingEnv.paper(seed=3, K=7, L=3, d=4, w_max=2.0)
    items, W, v0 = design_arrays(design)
    np.testing.assert_allclose(items, env.items)
    key = jax.random.key(5)
    x = design_features(key, 6, design)
    lists = jax.random.randint(key, (6, 3), 0, 7)
    np.testing.assert_allclose(x, env.features(lists))
    np.testing.assert_allclose(
        x, scores.list_features(env.items, env.W, env.v0, lists))
