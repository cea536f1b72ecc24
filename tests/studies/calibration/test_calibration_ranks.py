"""Rank statistics: against NumPy brute force, ties, thinning, PIT values."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesrank.studies.calibration.ranks import pit_from_ranks, rank_of, thin


def test_rank_equals_brute_force_count_without_ties():
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(50, 3, 4))
    ref = rng.normal(size=(3, 4))
    got = np.asarray(rank_of(jax.random.key(0), ref, draws))
    want = np.zeros((3, 4), int)
    for m in range(50):
        want += draws[m] < ref
    np.testing.assert_array_equal(got, want)


def test_ties_are_broken_uniformly():
    # a chain stuck on the reference value: the rank must be uniform on 0..M
    M = 4
    draws = jnp.zeros((M, 1))
    keys = jax.random.split(jax.random.key(1), 5000)
    r = np.asarray(jax.vmap(lambda k: rank_of(k, jnp.zeros(1), draws))(keys)).ravel()
    counts = np.bincount(r, minlength=M + 1)
    assert r.min() == 0 and r.max() == M
    # each of 5 values has probability 0.2: 1000 +- 4 sd (sd = 28)
    assert np.all(np.abs(counts - 1000) < 120), counts


def test_rank_shape_mismatch_names_draws():
    with pytest.raises(ValueError, match="draws"):
        rank_of(jax.random.key(0), jnp.zeros(3), jnp.zeros((5, 4)))


def test_thin_keeps_the_last_draw_and_skips_warmup():
    x = jnp.arange(20)
    np.testing.assert_array_equal(thin(x, 3, skip=5), [7, 10, 13, 16, 19])
    np.testing.assert_array_equal(thin(x, 1, skip=18), [18, 19])
    with pytest.raises(ValueError, match="every"):
        thin(x, 0)


def test_pit_values_are_uniform_for_uniform_ranks():
    rng = np.random.default_rng(3)
    ranks = rng.integers(0, 10, size=(20000, 1))  # uniform on 0..9, M = 9
    u = pit_from_ranks(ranks, 9, seed=1).ravel()
    assert 0 < u.min() and u.max() < 1
    hist = np.histogram(u, bins=20, range=(0, 1))[0]
    assert np.all(np.abs(hist - 1000) < 130), hist  # 1000 +- 4 sd


@pytest.mark.parametrize("ranks", [[[-1]], [[10]]])
def test_pit_rejects_ranks_outside_0_to_M(ranks):
    with pytest.raises(ValueError, match="ranks"):
        pit_from_ranks(np.array(ranks), 9)
