"""The PIT-ECDF band test: size, power, and agreement with ArviZ's band."""

import numpy as np
import pytest
from scipy.stats import binom

from bayesrank.studies.calibration.uniformity import (
    band,
    ecdf_gamma,
    null_gamma,
    power,
    uniformity_test,
)


def test_gamma_equals_a_brute_force_binomial_computation():
    rng = np.random.default_rng(0)
    u = rng.uniform(size=(40, 2))
    E = 10
    z = np.arange(1, E) / E
    want = []
    for j in range(2):
        tails = []
        for zi in z:
            c = np.sum(u[:, j] <= zi)
            lo = binom.cdf(c, 40, zi)
            hi = binom.sf(c - 1, 40, zi)
            tails.append(2 * min(lo, hi))
        want.append(min(1.0, min(tails)))
    np.testing.assert_allclose(ecdf_gamma(u, n_eval=E), want, rtol=1e-10)


def test_false_alarm_rate_is_at_most_the_level():
    # 300 studies of uniform values, D = 5 coordinates: about 1 % rejected at 1 %
    rng = np.random.default_rng(1)
    p = np.array([
        uniformity_test(rng.uniform(size=(100, 5)), n_null=2000, seed=3).p_value
        for _ in range(300)
    ])
    # Binomial(300, 0.01): P(X >= 9) < 0.001
    assert np.sum(p < 0.01) <= 8
    # and the test is not trivially conservative: about 5 % + at 5 % (per-model)
    assert 2 <= np.sum(p < 0.05) <= 30


def test_rejects_overconfident_and_shifted_values():
    rng = np.random.default_rng(2)
    # PIT of draws whose sd is twice the posterior's: U-shaped
    x = 2.0 * rng.standard_normal((200, 3))
    from scipy.stats import norm

    assert uniformity_test(norm.cdf(x), n_null=2000).p_value < 0.01
    assert uniformity_test(norm.cdf(rng.standard_normal((200, 3)) + 0.5),
                           n_null=2000).p_value < 0.01


def test_band_matches_arviz_simultaneous_band():
    ecdf_utils = pytest.importorskip("arviz_stats.ecdf_utils")
    N, level = 100, 0.95
    z, lo, hi = band(N, level, n_eval=N, n_null=4000, seed=5)
    rng = np.random.default_rng(11)
    prob = ecdf_utils.simulate_confidence_bands(N, 1, z, level, 4000, rng)
    lo_az, hi_az = ecdf_utils.get_pointwise_confidence_band(prob, N, z)
    # the two simulations differ only in their random numbers: one count apart
    assert np.max(np.abs(lo - lo_az)) <= 1.0 / N + 1e-12
    assert np.max(np.abs(hi - hi_az)) <= 1.0 / N + 1e-12


def test_null_distribution_is_cached_and_read_only():
    a = null_gamma(50, None, 500, 0)
    assert a is null_gamma(50, None, 500, 0)
    assert not a.flags.writeable
    assert np.all(np.diff(a) >= 0)


def test_power_is_high_for_half_sd_and_about_alpha_for_exact():
    assert power(100, 4, 49, scale=0.5, reps=20, n_null=1000) >= 0.9
    assert power(100, 4, 49, scale=1.0, reps=50, n_null=1000) <= 0.1


@pytest.mark.parametrize(
    "u, match",
    [(np.full((10, 2), 1.5), "u"), (np.zeros(10), "u"), (np.full((1, 2), 0.5), "u")],
)
def test_bad_input_names_the_argument(u, match):
    with pytest.raises(ValueError, match=match):
        uniformity_test(u)


def test_band_level_outside_0_1_is_rejected():
    with pytest.raises(ValueError, match="level"):
        band(10, 1.5)
