"""The one-call random variates of the learnt-scale draws (bayesrank.posteriors.conjugate.variates)
against SciPy's distributions (Kolmogorov-Smirnov), the rare fallback loop included."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats as st

from bayesrank.posteriors.conjugate import variates
from bayesrank.posteriors.conjugate.variates import uniforms_normals_gamma

SHAPES = [0.5, 1.0, 3.5, 40.0, 1500.0]


def _draws(a, n=20_000, seed=0, dtype=jnp.float64):
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", dtype == jnp.float64)
    try:
        u, z, g = uniforms_normals_gamma(jax.random.key(seed), jnp.asarray(a, dtype),
                                         (n,), n_uniform=2, n_normal=3)
        assert g.dtype == dtype
        return np.asarray(u, float), np.asarray(z, float), np.asarray(g, float)
    finally:
        jax.config.update("jax_enable_x64", before)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_gamma_uniform_and_normal_variates_have_their_distributions(dtype):
    u, z, g = _draws(SHAPES, dtype=dtype)
    assert u.shape == (20_000, len(SHAPES), 2) and z.shape == (20_000, len(SHAPES), 3)
    for j, a in enumerate(SHAPES):
        assert st.kstest(g[:, j], st.gamma(a).cdf).pvalue > 1e-3, a
        assert st.kstest(u[:, j, 1], "uniform").pvalue > 1e-3
        assert st.kstest(z[:, j, 2], "norm").pvalue > 1e-3
    # independent columns: the uniforms, the normals and the gamma share no bits
    flat = np.column_stack([u[:, 0, 0], u[:, 0, 1], z[:, 0, 0], z[:, 0, 1], g[:, 0]])
    corr = np.corrcoef(flat.T) - np.eye(5)
    assert np.max(np.abs(corr)) < 4.5 / np.sqrt(20_000)
    assert np.all(u > 0) and np.all(u <= 1)


def test_the_fallback_loop_completes_the_rejected_variates(monkeypatch):
    # one candidate a variate: a few per cent are rejected and must come from the
    # loop (a sampler that stopped there would leave them at the initial 1.0)
    monkeypatch.setattr(variates, "CANDIDATES", 1)
    _, _, g = _draws([0.9, 1.0, 3.0], n=40_000, seed=3)
    for j, a in enumerate([0.9, 1.0, 3.0]):
        assert st.kstest(g[:, j], st.gamma(a).cdf).pvalue > 1e-3, a
        assert np.mean(g[:, j] == 1.0) < 1e-3


def test_invalid_shapes_give_nan_and_never_hang():
    _, _, g = _draws([0.0, -1.0, np.nan, 2.0], n=5)
    assert np.all(np.isnan(g[:, :3])) and np.all(np.isfinite(g[:, 3]))


def test_the_same_key_gives_the_same_variates_and_another_key_others():
    a = _draws([2.0], n=10, seed=1)
    b = _draws([2.0], n=10, seed=1)
    c = _draws([2.0], n=10, seed=2)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a[2], c[2])
