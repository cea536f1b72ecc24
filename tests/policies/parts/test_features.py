"""Feature maps (:mod:`bayesrank.policies.parts.features`) against NumPy constructions
written from the paper's definitions."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from bayesrank.policies.parts.features import item_features, pair_features, window_features


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    K, L, d = 7, 4, 3
    items, v0 = rng.normal(size=(K, d)), rng.normal(size=d)
    lists = rng.integers(0, K, size=(5, L))
    return items, v0, lists


def test_pairwise_window_features_are_v_j_plus_w_times_the_previous_item(data):
    items, v0, lists = data
    w = np.array([0.5, -1.0, 2.0, 0.25])
    x = np.asarray(window_features(w[:, None])(jnp.asarray(items), jnp.asarray(lists),
                                                jnp.asarray(v0)))
    for n, lst in enumerate(lists):
        prev = [v0] + [items[a] for a in lst[:-1]]
        for l, a in enumerate(lst):
            np.testing.assert_allclose(x[n, l], items[a] + w[l] * prev[l], rtol=1e-6)


def test_window_features_look_back_s_minus_1_items(data):
    """S = 3: x^l = v_{a^l} + W[l, 0] v_{a^{l-1}} + W[l, 1] v_{a^{l-2}}, where the
    item before position 1 is v0 and nothing lies before it."""
    items, v0, lists = data
    W = np.array([[0.5, 0.7], [-1.0, 0.3], [2.0, -0.4], [0.25, 1.5]])
    x = np.asarray(window_features(W)(jnp.asarray(items), jnp.asarray(lists),
                                      jnp.asarray(v0)))
    for n, lst in enumerate(lists):
        seq = [v0] + [items[a] for a in lst]  # seq[l + 1] is position l's item
        for l in range(len(lst)):
            ref = seq[l + 1] + W[l, 0] * seq[l]
            if l >= 1:
                ref = ref + W[l, 1] * seq[l - 1]
            np.testing.assert_allclose(x[n, l], ref, rtol=1e-6)


def test_pair_and_item_features(data):
    items, v0, lists = data
    xp = np.asarray(pair_features(jnp.asarray(items), jnp.asarray(lists), jnp.asarray(v0)))
    xi = np.asarray(item_features(jnp.asarray(items), jnp.asarray(lists), jnp.asarray(v0)))
    for n, lst in enumerate(lists):
        prev = [v0] + [items[a] for a in lst[:-1]]
        for l, a in enumerate(lst):
            np.testing.assert_allclose(xp[n, l], np.r_[items[a], prev[l]], rtol=1e-6)
            np.testing.assert_allclose(xi[n, l], items[a], rtol=1e-6)
