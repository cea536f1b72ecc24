"""SBC through the posterior protocol: exact models pass, broken ones fail."""

import jax
import numpy as np
import pytest

from bayesrank.posteriors import GaussianLinear, GaussianLinearUnknownNoise
from bayesrank.studies.calibration.generative import Design, gaussian_generative
from bayesrank.studies.calibration.ranks import pit_from_ranks
from bayesrank.studies.calibration.sbc import (
    ScaledDraws,
    lag1_autocorrelation,
    run_sbc,
)
from bayesrank.studies.calibration.uniformity import uniformity_test

DESIGN = Design(K=10, L=2, d=3, w_max=1.0, seed=1)


def p_value(res):
    return uniformity_test(pit_from_ranks(res.ranks, res.M), n_null=2000).p_value


@pytest.fixture(scope="module")
def exact_gl():
    return run_sbc(jax.random.key(0), GaussianLinear(prior_scale=1.5, noise_scale=0.7),
                   design=DESIGN, n_obs=20, n_sims=300, draws=39)


def test_exact_conjugate_model_passes(exact_gl):
    assert exact_gl.ranks.shape == (300, 6)
    assert exact_gl.ranks.min() >= 0 and exact_gl.ranks.max() <= 39
    assert p_value(exact_gl) > 0.01
    assert abs(exact_gl.lag1) < 0.05  # independent draws


def test_exact_nig_model_passes():
    res = run_sbc(jax.random.key(1), GaussianLinearUnknownNoise(a0=3.0, b0=2.0),
                  design=DESIGN, n_obs=20, n_sims=300, draws=39)
    assert p_value(res) > 0.01


def test_model_told_half_the_noise_fails():
    res = run_sbc(jax.random.key(2), GaussianLinear(noise_scale=0.5),
                  generative=gaussian_generative(0.0, 1.0, 1.0), design=DESIGN,
                  n_obs=20, n_sims=300, draws=39)
    assert p_value(res) < 0.01


def test_draws_with_half_the_posterior_sd_fail():
    res = run_sbc(jax.random.key(3), ScaledDraws(GaussianLinear(), 0.5),
                  design=DESIGN, n_obs=20, n_sims=300, draws=39)
    assert p_value(res) < 0.01


def test_loop_path_equals_vmap_path():
    class Loop(ScaledDraws):
        vmappable = False

    m = GaussianLinear()
    kw = dict(design=DESIGN, n_obs=5, n_sims=4, draws=9)
    a = run_sbc(jax.random.key(4), m, **kw)
    loop = Loop(m, 1.0)
    loop.vmappable = False
    b = run_sbc(jax.random.key(4), loop, **kw)
    np.testing.assert_array_equal(a.ranks, b.ranks)
    np.testing.assert_allclose(a.theta, b.theta)


def test_lag1_of_a_random_walk_is_near_one_and_of_noise_near_zero():
    z = jax.random.normal(jax.random.key(0), (2000, 3))
    assert abs(float(lag1_autocorrelation(z))) < 0.06
    assert float(lag1_autocorrelation(np.cumsum(z, 0))) > 0.9


@pytest.mark.parametrize("kw, name", [({"n_sims": 0}, "n_sims"), ({"draws": 0}, "draws"),
                                      ({"thin_every": 0}, "thin_every"),
                                      ({"warmup": -1}, "warmup")])
def test_bad_sizes_name_the_argument(kw, name):
    with pytest.raises(ValueError, match=name):
        run_sbc(jax.random.key(0), GaussianLinear(), **kw)


def test_scaled_draws_factor_must_be_positive():
    with pytest.raises(ValueError, match="factor"):
        ScaledDraws(GaussianLinear(), 0.0)
