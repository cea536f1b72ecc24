"""The tridiagonal route of the learnt-scale conjugate draw (:mod:`bayesrank.posteriors.
scale_grid`) against references written without it: the n x n marginal likelihood of
the rewards, NumPy's inverse of ``S + c I``, and the weights a grid index is drawn from."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bayesrank as br
from bayesrank.posteriors.hyperprior import grid_draw, grid_index
from bayesrank.posteriors.conjugate.scale_grid import (
    tridiagonal,
    tridiagonal_draw,
    tridiagonal_loglik,
    tridiagonal_quad,
)


def _data(n, p, seed=0, m0=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + m0 * X.sum(1) + 0.7 * rng.normal(size=n)
    return X, y


def _marginal(X, y, m0, log_g, noise):
    """log p(y | g) from the n x n Gaussian (known noise) or its Jeffreys integral."""
    n = len(y)
    r = y - X @ np.full(X.shape[1], m0)
    out = []
    for lg in log_g:
        M = np.eye(n) + np.exp(2 * lg) * X @ X.T
        _, logdet = np.linalg.slogdet(M)
        quad = r @ np.linalg.solve(M, r)
        out.append(-0.5 * logdet - (0.5 * quad / noise**2 if noise else 0.5 * n * np.log(quad)))
    return np.array(out)


@pytest.mark.parametrize("n,p", [(12, 1), (12, 4), (3, 6)])  # (3, 6): rank deficient
@pytest.mark.parametrize("noise", [None, 1.5])
@pytest.mark.parametrize("m0", [0.0, 0.4])
def test_loglik_equals_the_marginal_likelihood(n, p, noise, m0):
    X, y = _data(n, p, m0=m0)
    log_g = np.linspace(-4.0, 4.0, 9)
    tri = tridiagonal(jnp.asarray(X.T @ X), jnp.asarray(X.T @ y), float(y @ y),
                      jnp.full(p, m0), 1.0 if noise is None else noise)
    _, got = tridiagonal_loglik(tri, float(n), jnp.asarray(log_g), noise is None)
    ref = _marginal(X, y, m0, log_g, noise)
    # equal up to a constant in g
    np.testing.assert_allclose(np.asarray(got) - got[0], ref - ref[0], atol=1e-9)


@pytest.mark.parametrize("n,p,c", [(12, 1, 0.5), (12, 5, 0.3), (2, 5, 1e-6)])
def test_draw_has_mean_and_covariance_of_the_inverse(n, p, c):
    X, y = _data(n, p)
    S = X.T @ X
    tri = tridiagonal(jnp.asarray(S), jnp.asarray(X.T @ y), float(y @ y), jnp.zeros(p))
    s = 1.7
    eps = jnp.concatenate([jnp.zeros((1, p)), jnp.eye(p)])  # the map eps -> zeta
    zeta = np.asarray(tridiagonal_draw(tri, jnp.asarray(c), jnp.asarray(s), eps))
    P = S + c * np.eye(p)
    np.testing.assert_allclose(zeta[0], np.linalg.solve(P, X.T @ y), rtol=1e-7)
    quad = float(tridiagonal_quad(tri, jnp.asarray(c)))
    assert quad == pytest.approx((X.T @ y) @ np.linalg.solve(P, X.T @ y), rel=1e-7)
    M = (zeta[1:] - zeta[0]).T  # columns: the spread of each unit eps
    np.testing.assert_allclose(M @ M.T, s * s * np.linalg.inv(P), rtol=1e-7,
                               atol=1e-9 * s * s / c)


def test_float32_draws_stay_finite_where_one_over_g2_is_tiny():
    """GenRankTS's first rounds (p = 2d = 10; a list shown twice adds no new
    direction, so S stays singular): g's grid reaches 6e5 (1/g^2 = 3e-12), below
    float32's rounding of S, where a Cholesky of S + I/g^2 meets negative pivots
    (before the tridiagonal route: every draw NaN at rounds 23, 29, 33, 35, 36)."""
    env = br.RankingEnv.paper(seed=0, K=100, L=4, d=5, w_max=10.0)
    pol = br.GenRankTS(env.items, L=4, v0=env.v0, model=br.GaussianLinear(), seed=0)
    model = pol.core.model
    bad = []
    for t in range(40):
        theta = np.asarray(model.draw_batch(jax.random.key(t), pol.state.model, 200))
        bad.append(int((~np.isfinite(theta)).any(axis=tuple(range(1, theta.ndim))).sum()))
        items = pol.select()
        pol.update(items, env.sample(jax.random.key(100 + t), items))
    assert sum(bad) == 0, bad


def test_grid_index_draws_each_node_with_its_weight():
    w = np.array([0.0, 0.1, 0.25, 0.05, 0.6, 0.0])
    logw = jnp.log(jnp.asarray(w))
    k = np.asarray(grid_index(jax.random.key(3), logw, (200_000,)))
    freq = np.bincount(k, minlength=len(w)) / k.size
    sd = np.sqrt(w * (1 - w) / k.size)
    assert np.all(np.abs(freq - w) <= 5 * sd + 1e-12), freq
    # batched weights: one index per row
    rows = jnp.log(jnp.asarray([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))
    assert np.asarray(grid_index(jax.random.key(0), rows, (50,))).tolist() == [[0, 2]] * 50


def test_grid_draw_spreads_each_node_over_its_cell():
    """log g draws: each cell [node - h/2, node + h/2) holds its node's weight, and
    within a cell the draws are uniform (the piecewise-constant density)."""
    log_g = jnp.linspace(-1.0, 1.0, 5)  # h = 0.5
    w = np.array([0.1, 0.2, 0.4, 0.3, 0.0])
    draws = np.asarray(grid_draw(jax.random.key(1), log_g, jnp.log(jnp.asarray(w)),
                                 (100_000,)))
    h = 0.5
    cell = np.floor((draws - (-1.0 - h / 2)) / h).astype(int)
    freq = np.bincount(cell, minlength=5)[:5] / draws.size
    assert np.all(np.abs(freq - w) <= 5 * np.sqrt(w * (1 - w) / draws.size) + 1e-12)
    offset = draws - np.asarray(log_g)[np.clip(cell, 0, 4)]  # in [-h/2, h/2)
    assert offset.min() >= -h / 2 and offset.max() < h / 2
    # uniform within the cells: the offsets' deciles
    q = np.quantile(offset, np.linspace(0.1, 0.9, 9))
    np.testing.assert_allclose(q, np.linspace(-0.2, 0.2, 9), atol=0.01)
    # one node (a fixed scale): exactly the node
    node = jnp.asarray([0.3])
    one = grid_draw(jax.random.key(0), node, jnp.zeros((2, 1)), (7,))
    assert np.all(np.asarray(one) == np.asarray(node)[0])
