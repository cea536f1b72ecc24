"""Score tables (:mod:`bayesrank.policies.parts.tables`) against the paper's scores written
in NumPy: ``f(theta^l . (v_j + w_l v_i))``, with v0 before position 1."""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import numpy as np
import pytest

from bayesrank.model.links import get_link
from bayesrank.policies.parts.tables import LinearTables, WindowTables


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


@pytest.fixture
def data():
    rng = np.random.default_rng(1)
    K, L, d = 5, 3, 4
    return (rng.normal(size=(K, d)), rng.normal(size=(L, d)), rng.normal(size=L),
            rng.normal(size=d))


@pytest.mark.parametrize("link,f", [("identity", lambda z: z), ("logistic", _sigmoid)])
def test_linear_tables_are_the_papers_scores(data, link, f):
    items, theta, w, v0 = data
    part = LinearTables(w, get_link(link))
    assert part.kind == ("separable" if link == "identity" else "monotone")
    V, th = jnp.asarray(items), jnp.asarray(theta)
    rest = part.rest(th, V)
    first = np.asarray(part.first(th, V, rest, jnp.asarray(v0)))
    pairs = np.asarray(part.dense(rest))
    K, L = items.shape[0], theta.shape[0]
    np.testing.assert_allclose(first, f((items + w[0] * v0) @ theta[0]), rtol=1e-5)
    for l, i, j in itertools.product(range(1, L), range(K), range(K)):
        ref = f(theta[l] @ (items[j] + w[l] * items[i]))
        np.testing.assert_allclose(pairs[l - 1, i, j], ref, rtol=1e-5, atol=1e-6)
    A, B = (np.asarray(x) for x in part.factors(rest))  # the tables are f(A_j + B_i)
    np.testing.assert_allclose(f(A[:, None, :] + B[:, :, None]), pairs, rtol=1e-5,
                               atol=1e-6)


def test_window_tables_score_every_tuple(data):
    """S = 3: position l's table over (a^{l-2}, a^{l-1}, a^l) is
    theta^l . (v_{a^l} + W[l, 0] v_{a^{l-1}} + W[l, 1] v_{a^{l-2}})."""
    items, theta, w, v0 = data
    W = np.c_[w, 0.5 * w[::-1]]
    tabs = WindowTables(W, get_link("identity")).window(
        jnp.asarray(theta), jnp.asarray(items), jnp.asarray(v0))
    K = items.shape[0]
    np.testing.assert_allclose(np.asarray(tabs[0]), (items + W[0, 0] * v0) @ theta[0],
                               rtol=1e-5)
    for i, j in itertools.product(range(K), repeat=2):
        ref = theta[1] @ (items[j] + W[1, 0] * items[i] + W[1, 1] * v0)
        np.testing.assert_allclose(np.asarray(tabs[1])[i, j], ref, rtol=1e-5, atol=1e-6)
    for h, i, j in itertools.product(range(K), repeat=3):
        ref = theta[2] @ (items[j] + W[2, 0] * items[i] + W[2, 1] * items[h])
        np.testing.assert_allclose(np.asarray(tabs[2])[h, i, j], ref, rtol=1e-5,
                                   atol=1e-6)
