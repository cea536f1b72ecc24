"""The backward max-sum DP (:mod:`bayesrank.decoding.backward`) against a plain-NumPy forward
DP written here, at list lengths that take the unrolled (L - 1 <= UNROLL_MAX) and the
rolled scan."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from bayesrank.decoding.backward import (
    UNROLL_MAX,
    backward_dense,
    backward_separable,
    pick,
)


def numpy_forward_dp(first, pairs, mask):
    """Best total of first[a1] + sum_l pairs[l-2, a_{l-1}, a_l] over lists of
    unmasked items, by a forward max-plus DP in NumPy."""
    neg = np.where(mask, 0.0, -np.inf)
    val = first + neg
    for tab in pairs:
        val = (val[:, None] + tab).max(axis=0) + neg
    return val.max()


def list_value(first, pairs, items):
    return first[items[0]] + sum(pairs[l, items[l], items[l + 1]]
                                 for l in range(len(items) - 1))


@pytest.mark.parametrize("L", [3, UNROLL_MAX + 1, UNROLL_MAX + 5])
@pytest.mark.parametrize("seed", [0, 1])
def test_dense_backward_pass_finds_the_best_list(L, seed):
    rng = np.random.default_rng(seed)
    K = 7
    first, pairs = rng.normal(size=K), rng.normal(size=(L - 1, K, K))
    mask = rng.random(K) < 0.7
    mask[0] = True
    items, value = pick(jnp.asarray(first), backward_dense(jnp.asarray(pairs),
                                                           jnp.asarray(mask)),
                        jnp.asarray(mask))
    items = np.asarray(items)
    assert items.shape == (L,) and mask[items].all()
    best = numpy_forward_dp(first, pairs, mask)
    np.testing.assert_allclose(float(value), best, rtol=1e-5)
    np.testing.assert_allclose(list_value(first, pairs, items), best, rtol=1e-5)


@pytest.mark.parametrize("L", [3, UNROLL_MAX + 3])
def test_separable_backward_pass_finds_the_best_list(L):
    rng = np.random.default_rng(5)
    K = 6
    A, B, first = rng.normal(size=(L - 1, K)), rng.normal(size=(L - 1, K)), rng.normal(
        size=K)
    pairs = A[:, None, :] + B[:, :, None]  # pairs[l, i, j] = A[l, j] + B[l, i]
    mask = np.ones(K, bool)
    mask[2] = False
    items, value = pick(jnp.asarray(first), backward_separable(
        jnp.asarray(A), jnp.asarray(B), jnp.asarray(mask)), jnp.asarray(mask))
    best = numpy_forward_dp(first, pairs, mask)
    np.testing.assert_allclose(float(value), best, rtol=1e-5)
    np.testing.assert_allclose(list_value(first, pairs, np.asarray(items)), best,
                               rtol=1e-5)
