"""The NUTS kernel's start (numpyro_compat.build_kernel): staged as one compiled
program when every latent support is parameter-free, op by op otherwise, and equal
to NumPyro's own op-by-op computation bit for bit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import bayesrank as br
from bayesrank.posteriors.nuts.numpyro_compat import build_kernel


def _leaves(tree):
    return [np.asarray(jax.random.key_data(x))
            if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else np.asarray(x)
            for x in jax.tree.leaves(tree)]


def _start(model, staged, p=4):
    return build_kernel(
        model._masked_model, model._empty_data(p), num_warmup=model.num_warmup,
        dense_mass=model.dense_mass, target_accept_prob=model.target_accept_prob,
        max_tree_depth=model.max_tree_depth, staged=staged,
    ).hmc0


def _scaled(x, y):
    """A latent site whose support has a parameter (an interval up to 3)."""
    s = numpyro.sample("s", dist.Uniform(0.0, 3.0))
    theta = numpyro.sample("theta", dist.Normal(0.0, s).expand([x.shape[1]]).to_event(1))
    numpyro.sample("y", dist.Normal(x @ theta, 1.0), obs=y)


@pytest.mark.parametrize("link", ["logistic", "identity"])
def test_staged_start_equals_the_op_by_op_start(link):
    model = br.BayesGLM(link, n_max=30)
    assert model._param_free
    staged, eager = _leaves(_start(model, True)), _leaves(_start(model, False))
    assert len(staged) == len(eager) > 10
    for a, b in zip(staged, eager):
        np.testing.assert_array_equal(a, b)


def test_a_support_with_parameters_is_built_op_by_op():
    """Uniform(0, 3)'s interval holds values that tracing would leak into the
    kernel's transforms: that model keeps the op-by-op start and still runs."""
    model = br.NumPyroModel(_scaled, link="identity", n_max=30, num_warmup=5)
    assert not model._param_free
    state = model.init(2, 3)
    state = model.update(state, jnp.ones((2, 3)), jnp.ones(2))
    assert np.isfinite(np.asarray(model.mean(state))).all()


def _never(x, y):
    theta = numpyro.sample("theta", dist.Normal(0.0, 1.0).expand([x.shape[1]]).to_event(1))
    # log density -inf at every theta from valid parameters and a valid value (a
    # constant factor(-inf) is refused by NumPyro 0.17's argument validation first)
    numpyro.sample("never", dist.Delta(0.0), obs=1.0)
    numpyro.sample("y", dist.Normal(x @ theta, 1.0), obs=y)


def test_a_start_that_is_not_finite_raises_numpyro_s_error():
    """No valid start: the staged program's result is refused and the op-by-op path
    raises NumPyro's error, instead of a policy starting from an infinite potential."""
    model = br.NumPyroModel(_never, link="identity", n_max=30)
    assert model._param_free
    with pytest.raises(RuntimeError, match="Cannot find valid initial parameters"):
        model.init(2, 3)
