"""The maths the posterior families share (bayesrank/posteriors/*.py at the top):
the update arguments' checks every model starts with, the refitting models' ring
buffers, a scale's hyperprior density, and the part holder behind GaussianLinear and
LaplaceGLM (``isinstance`` holds for every public class and form)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest

import bayesrank as br
from bayesrank.posteriors.base import ScaleHolder, update_args
from bayesrank.posteriors.buffers import append_rows, valid_update
from bayesrank.posteriors.hyperprior import hyper_grid, log_density


@pytest.mark.parametrize("x, y, valid, name", [
    (np.ones((2, 4)), np.ones(3), None, "x"),
    (np.ones((3, 4, 1)), np.ones(3), None, "x"),
    (np.ones((3, 3)), np.ones(2), None, "y"),
    (np.ones((3, 3)), np.ones((3, 1)), None, "y"),
    (np.ones((3, 3)), np.ones(3), np.ones(2, bool), "valid"),
])
def test_update_args_refuse_bad_shapes_naming_the_argument(x, y, valid, name):
    with pytest.raises(ValueError, match=f"^{name}: expected"):
        update_args(x, y, valid, 3, 3, jnp.float32)


def test_update_args_cast_and_default_valid():
    x, y, valid = update_args(np.ones((3, 2), int), [1, 2, 3], None, 3, 2, jnp.float32)
    assert x.dtype == jnp.float32 and y.dtype == jnp.float32
    assert valid.dtype == bool and valid.tolist() == [True] * 3
    _, _, valid = update_args(np.ones((3, 2)), np.ones(3), [1, 0, 1], 3, 2, jnp.float32)
    assert valid.tolist() == [True, False, True]


class _Buffers(tuple):
    """A stand-in state with the buffers' fields."""

    def __new__(cls, x, y, n):
        return super().__new__(cls, (x, y, n))

    x = property(lambda self: self[0])
    y = property(lambda self: self[1])
    n = property(lambda self: self[2])


def test_ring_buffers_write_over_the_oldest_row_like_numpy():
    rng = np.random.default_rng(0)
    L, n_max, p = 3, 4, 2
    state = _Buffers(jnp.zeros((L, n_max, p)), jnp.zeros((L, n_max)),
                     jnp.zeros(L, jnp.int32))
    X, Y = np.zeros((L, n_max, p)), np.zeros((L, n_max))
    counts = np.zeros(L, int)
    for t in range(11):
        x, y = rng.normal(size=(L, p)), rng.normal(size=L)
        valid = rng.random(L) < 0.7
        xs, ys, vs = valid_update(state, x, y, valid)
        state = _Buffers(*append_rows(state, xs, ys, vs))
        for l in np.flatnonzero(valid):  # the reference: slot n mod n_max
            X[l, counts[l] % n_max], Y[l, counts[l] % n_max] = x[l], y[l]
            counts[l] += 1
    np.testing.assert_allclose(np.asarray(state.x), X, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(state.y), Y, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(state.n), counts)


@pytest.mark.parametrize("prior", [None, dist.HalfNormal(2.0), dist.Gamma(2.0, 3.0)])
def test_hyperprior_log_density_is_the_distributions(prior):
    t = np.array([1e-3, 0.1, 1.0, 7.0])
    ref = dist.HalfCauchy(1.0) if prior is None else prior
    np.testing.assert_allclose(log_density(prior, t), np.asarray(ref.log_prob(t)),
                               rtol=1e-5)


def test_hyper_grid_weights_integrate_the_density_in_log_g():
    """The grid's weights are density x g on nodes uniform in log g, normalised: the
    midpoint rule of the hyperprior's mass (HalfCauchy(1): its median, 1, halves it)."""
    log_g, logw = hyper_grid(None)
    w = np.exp(logw)
    assert np.isclose(w.sum(), 1.0)
    assert np.all(np.diff(log_g) > 0) and np.allclose(np.diff(log_g), log_g[1] - log_g[0])
    assert abs(w[log_g < 0].sum() - 0.5) < 0.01


FORMS = {
    "GaussianLinear()": lambda: br.GaussianLinear(),
    "GaussianLinear(fixed)": lambda: br.GaussianLinear(prior_scale=1.0, noise_scale=0.5),
    "GaussianLinear(prior learnt)": lambda: br.GaussianLinear(noise_scale=0.5),
    "GaussianLinear(hyperprior)": lambda: br.GaussianLinear(
        prior_scale=dist.HalfNormal(1.0)),
    "LaplaceGLM()": lambda: br.LaplaceGLM(),
    "LaplaceGLM(fixed)": lambda: br.LaplaceGLM("probit", prior_scale=2.0),
    "LaplaceGLM(identity)": lambda: br.LaplaceGLM("identity"),
    "LaplaceGLM(identity, fixed)": lambda: br.LaplaceGLM("identity", prior_scale=1.0),
    "LaplaceGLM(exp, hyperprior)": lambda: br.LaplaceGLM(
        "exp", prior_scale=dist.HalfNormal(0.5)),
}


@pytest.mark.parametrize("form", list(FORMS))
def test_each_constructor_is_the_class_it_names(form):
    model = FORMS[form]()
    cls = br.GaussianLinear if form.startswith("Gaussian") else br.LaplaceGLM
    assert type(model) is cls and isinstance(model, cls)
    assert isinstance(model, ScaleHolder) and not isinstance(model.scale_model, cls)
    assert repr(model).startswith(cls.__name__ + "(")
    back = cls.from_config(model.config())
    assert type(back) is cls and back.config() == model.config()
    state = model.init(L=2, p=3)
    assert model.mean(state).shape == (2, 3)
