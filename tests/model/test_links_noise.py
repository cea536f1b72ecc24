"""Links (mean, derivative, range, lookup) and noise families (mean, variance)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from bayesrank.model import noise
from bayesrank.model.links import LINKS, get_link, resolve_links

Z = np.linspace(-4.0, 4.0, 41)


@pytest.mark.parametrize(
    "name,ref",
    [
        ("identity", lambda z: z),
        ("logistic", lambda z: 1.0 / (1.0 + np.exp(-z))),
        ("probit", stats.norm.cdf),
        ("exp", np.exp),
    ],
)
def test_link_mean_derivative_and_range(name, ref):
    link = get_link(name)
    np.testing.assert_allclose(link.mean(Z), ref(Z), rtol=1e-12, atol=1e-15)
    grad = jax.vmap(jax.grad(lambda z: link.mean(z)))(jnp.asarray(Z))
    np.testing.assert_allclose(link.deriv(Z), grad, rtol=1e-10, atol=1e-15)
    lo, hi = link.range
    vals = np.asarray(link.mean(Z))
    assert np.all((vals >= lo) & (vals <= hi))


def test_custom_callable_link_gets_its_derivative():
    link = get_link(lambda z: jnp.tanh(z))
    assert link.name == "custom"
    np.testing.assert_allclose(
        link.deriv(jnp.asarray(Z)), 1 - np.tanh(Z) ** 2, rtol=1e-10
    )


def test_unknown_link_lists_valid_names():
    with pytest.raises(ValueError) as err:
        get_link("softmax")
    for name in LINKS:
        assert repr(name) in str(err.value)
    assert "link" in str(err.value)


def test_link_of_wrong_type_raises_type_error():
    with pytest.raises(TypeError, match="link"):
        get_link(3)


def test_resolve_links():
    assert [lk.name for lk in resolve_links("exp", 3)] == ["exp"] * 3
    assert [lk.name for lk in resolve_links(["exp", "probit"], 2)] == ["exp", "probit"]
    with pytest.raises(ValueError, match="L=3"):
        resolve_links(["exp", "probit"], 3)
    with pytest.raises(ValueError, match=r"link\[1\]"):
        resolve_links(["exp", "nope"], 2)


N = 20000


def sample_moments_ok(x, mean, var):
    """Sample mean and variance within 5 standard errors of the targets."""
    n = x.shape[0]
    m, v = x.mean(), x.var(ddof=1)
    se_mean = np.sqrt(var / n)
    se_var = np.sqrt(max(np.mean((x - m) ** 4) - v**2, 1e-300) / n)
    assert abs(m - mean) < 5 * se_mean, (m, mean, se_mean)
    assert abs(v - var) < 5 * se_var, (v, var, se_var)


@pytest.mark.parametrize(
    "family,mu,var",
    [
        (noise.Gaussian(1.0), 0.3, 1.0),
        (noise.Gaussian(2.5), -1.0, 6.25),
        (noise.Laplace(0.5, 1.0), 0.7, 1.0 + 2 * 0.25),
        (noise.Laplace(2.0, 0.0), 0.0, 8.0),
        (noise.Bernoulli(), 0.3, 0.21),
        (noise.Bernoulli(), 0.95, 0.95 * 0.05),
        (noise.Poisson(), 3.5, 3.5),
        (noise.Poisson(), 0.2, 0.2),
    ],
)
def test_noise_mean_and_variance(family, mu, var):
    means = jnp.full(N, mu)
    x = np.asarray(family.sample(jax.random.key(11), means))
    assert x.shape == (N,)
    sample_moments_ok(x, mu, var)
    np.testing.assert_allclose(family.variance(means)[:3], var, rtol=1e-12)


def test_noise_support():
    key = jax.random.key(0)
    b = np.asarray(noise.Bernoulli().sample(key, jnp.full(100, 0.5)))
    assert set(np.unique(b)) <= {0.0, 1.0}
    p = np.asarray(noise.Poisson().sample(key, jnp.full(100, 2.0)))
    assert np.all(p >= 0) and np.all(p == np.round(p))


def test_common_random_numbers_and_integer_means():
    key = jax.random.key(3)
    g = noise.Gaussian(1.0)
    a = np.asarray(g.sample(key, jnp.zeros(5)))
    b = np.asarray(g.sample(key, jnp.ones(5)))
    np.testing.assert_allclose(b - a, 1.0)  # same key, same variates
    c = g.sample(key, jnp.zeros(5, dtype=jnp.int32))  # integer means are promoted
    assert jnp.issubdtype(c.dtype, jnp.floating)


@pytest.mark.parametrize(
    "family,link,ok",
    [
        (noise.Bernoulli(), "identity", False),
        (noise.Bernoulli(), "exp", False),
        (noise.Bernoulli(), "logistic", True),
        (noise.Bernoulli(), "probit", True),
        (noise.Poisson(), "identity", False),
        (noise.Poisson(), "exp", True),
        (noise.Gaussian(), "logistic", True),
    ],
)
def test_noise_link_compatibility(family, link, ok):
    if ok:
        family.check_link(get_link(link))
    else:
        with pytest.raises(ValueError, match="noise"):
            family.check_link(get_link(link))


@pytest.mark.parametrize(
    "make,err,match",
    [
        (lambda: noise.Gaussian(-1.0), ValueError, "Gaussian.sd"),
        (lambda: noise.Gaussian(float("nan")), ValueError, "Gaussian.sd"),
        (lambda: noise.Gaussian("a"), TypeError, "Gaussian.sd"),
        (lambda: noise.Laplace(-0.1), ValueError, "Laplace.eps"),
        (lambda: noise.Laplace(0.1, float("inf")), ValueError, "Laplace.sd"),
    ],
)
def test_noise_rejects_bad_scales(make, err, match):
    with pytest.raises(err, match=match):
        make()
