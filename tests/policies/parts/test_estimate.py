"""Estimates (:mod:`bayesrank.policies.parts.estimate`): a Thompson draw has the
posterior's mean and covariance; the optimistic estimate's Gram factor and width are
the paper's V = lam I + sum x x^T and Lemma 1's radius over c1, computed in NumPy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank.policies.parts.estimate import Optimistic, Thompson
from bayesrank.posteriors import GaussianLinear, LaplaceGLM


def test_thompson_draws_have_the_posteriors_mean_and_covariance():
    rng = np.random.default_rng(0)
    L, p, n = 2, 3, 30
    model = GaussianLinear(prior_scale=0.8, noise_scale=0.5)
    st = model.init(L, p)
    # correlated features of unequal scales: a posterior far from isotropic, so that
    # C^-1 z (the wrong square root) has another covariance than C^-T z
    mix = np.array([[3.0, 0.0, 0.0], [2.5, 0.4, 0.0], [1.0, 1.0, 0.1]])
    X, y = rng.normal(size=(n, L, p)) @ mix, rng.normal(size=(n, L))
    for i in range(n):
        st = model.update(st, jnp.asarray(X[i]), jnp.asarray(y[i]))
    est = Thompson(model)
    draws = np.asarray(jax.vmap(lambda k: est(k, st, ())[0])(
        jax.random.split(jax.random.key(1), 20000)))
    batch = np.asarray(est.batch(jax.random.key(2), st, (), 20000))
    for l in range(L):
        P = np.eye(p) / 0.8**2 + X[:, l].T @ X[:, l] / 0.25
        mean = np.linalg.solve(P, X[:, l].T @ y[:, l] / 0.25)
        cov = np.linalg.inv(P)
        sd = np.sqrt(np.diag(cov))
        for th in (draws[:, l], batch[:, l]):
            # 20,000 draws: the mean within 5 standard errors, the covariance 5%
            assert np.all(np.abs(th.mean(0) - mean) < 5 * sd / np.sqrt(len(th)))
            np.testing.assert_allclose(np.cov(th.T), cov, rtol=0.05,
                                       atol=0.05 * sd.max() ** 2)


def test_optimistic_keeps_the_design_gram_and_lemma_1_width():
    """For a non-identity link the estimate keeps V = lam I + sum x x^T itself (the
    Laplace Hessian is weighted by f'), and the width is Lemma 1's over c1."""
    rng = np.random.default_rng(3)
    L, p, n, lam, delta, m2, c1 = 2, 3, 25, 0.5, 0.1, 1.0, 0.2
    model = LaplaceGLM(link="logistic", prior_scale=1 / np.sqrt(lam), n_max=64)
    est = Optimistic(model, lam=lam, delta=delta, m2=m2, alpha=None, c1=c1)
    assert est.own_gram
    es = est.init(L, p)
    X = rng.normal(size=(n, L, p))
    valid = rng.random((n, L)) < 0.8
    for i in range(n):
        es = est.update(es, jnp.asarray(X[i]), jnp.asarray(valid[i]))
    mst = model.init(L, p)
    params, _ = est(jax.random.key(0), mst, es)
    for l in range(L):
        Xl = X[valid[:, l], l]
        V = lam * np.eye(p) + Xl.T @ Xl
        C = np.asarray(params.chol[l])
        np.testing.assert_allclose(C @ C.T, V, rtol=1e-5)
        ratio = np.linalg.slogdet(V)[1] - p * np.log(lam)
        width = np.sqrt(lam) * m2 + np.sqrt(2 * np.log(1 / delta) + ratio)
        np.testing.assert_allclose(float(params.width[l]), width / c1, rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(params.theta), np.asarray(model.mean(mst)))
