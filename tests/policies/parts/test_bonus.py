"""Optimistic tables (:mod:`bayesrank.policies.parts.bonus`): the bonuses built by the Gram
trick equal per-pair (per-tuple) norms ``||x||_{V^-1}`` computed with NumPy's inverse."""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import numpy as np

from bayesrank.model import scores
from bayesrank.model.links import get_link
from bayesrank.policies.parts.bonus import (
    GenUCBTables,
    UCBParams,
    WindowUCBTables,
    gram_bonus_sq,
)

IDENTITY = get_link("identity")


def _random_chol(rng, L, p, n=15, lam=1.0):
    """Cholesky factors of lam I + sum x x^T for random x, and the matrices."""
    X = rng.normal(size=(L, n, p))
    V = lam * np.eye(p) + np.einsum("lnp,lnq->lpq", X, X)
    return np.linalg.cholesky(V), V


def gen_bonus_sq(chol, items, v0):
    """Squared V~^-1 norms of GenRankUCB's features, through its tables part."""
    L, p = chol.shape[0], chol.shape[-1]
    params = UCBParams(jnp.zeros((L, p)), jnp.ones(L), chol)
    part = GenUCBTables(IDENTITY)
    rest = part.rest(params, items)
    return part.first(params, items, rest, v0) ** 2, part.dense(rest) ** 2



def test_gram_trick_bonuses_equal_per_pair_norms():
    rng = np.random.default_rng(3)
    K, L, d = 6, 4, 5
    items, w, v0 = rng.normal(size=(K, d)), rng.normal(size=L), rng.normal(size=d)
    C, V = _random_chol(rng, L, d)
    first, pairs = gram_bonus_sq(
        jnp.asarray(C), jnp.asarray(items), jnp.asarray(w), jnp.asarray(v0)
    )
    Vinv = np.linalg.inv(V)
    ref_first = np.array([(x := items[j] + w[0] * v0) @ Vinv[0] @ x for j in range(K)])
    np.testing.assert_allclose(first, ref_first, rtol=1e-10)
    for l, i, j in itertools.product(range(1, L), range(K), range(K)):
        x = items[j] + w[l] * items[i]
        assert np.isclose(pairs[l - 1, i, j], x @ Vinv[l] @ x, rtol=1e-10)


def test_gen_bonuses_equal_per_pair_norms():
    rng = np.random.default_rng(4)
    K, L, d = 5, 3, 3
    items, v0 = rng.normal(size=(K, d)), rng.normal(size=d)
    C, V = _random_chol(rng, L, 2 * d)
    first, pairs = gen_bonus_sq(jnp.asarray(C), jnp.asarray(items), jnp.asarray(v0))
    Vinv = np.linalg.inv(V)
    for j in range(K):
        x = np.r_[items[j], v0]
        assert np.isclose(first[j], x @ Vinv[0] @ x, rtol=1e-10)
        for l, i in itertools.product(range(1, L), range(K)):
            x = np.r_[items[j], items[i]]
            assert np.isclose(pairs[l - 1, i, j], x @ Vinv[l] @ x, rtol=1e-10)


def test_window_bonuses_equal_per_tuple_norms():
    rng = np.random.default_rng(5)
    K, L, d, S = 4, 4, 3, 3
    items, v0 = rng.normal(size=(K, d)), rng.normal(size=d)
    W = rng.normal(size=(L, S - 1))
    C, V = _random_chol(rng, L, d)
    params = UCBParams(jnp.zeros((L, d)), jnp.ones(L), jnp.asarray(C))
    tables = WindowUCBTables(W, IDENTITY).window(
        params, jnp.asarray(items), jnp.asarray(v0)
    )
    Vinv = np.linalg.inv(V)
    for lst in itertools.product(range(K), repeat=L):
        x = np.asarray(
            scores.list_features(
                jnp.asarray(items), jnp.asarray(W), jnp.asarray(v0), jnp.asarray(lst)
            )
        )
        for l in range(L):
            idx = lst[max(0, l - (S - 1)) : l + 1]
            assert np.isclose(tables[l][idx], np.sqrt(x[l] @ Vinv[l] @ x[l]), rtol=1e-9)
