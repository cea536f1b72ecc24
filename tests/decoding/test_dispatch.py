"""The decoder dispatcher (:mod:`bayesrank.decoding.dispatch`): every route (separable,
dense, the catalogue-scale fast paths, distinct, masks) returns a list whose value
under the part's own tables is the best one found by brute force over every list."""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import numpy as np
import pytest

from bayesrank.decoding.dispatch import decode_tables, use_fast
from bayesrank.model.links import get_link
from bayesrank.policies.bonus import UCBParams, UCBTables
from bayesrank.policies.tables import LinearTables

K, L, D = 6, 3, 3


def _brute(first, pairs, mask, distinct):
    best = -np.inf
    for lst in itertools.product(np.flatnonzero(mask), repeat=L):
        if distinct and len(set(lst)) < L:
            continue
        v = first[lst[0]] + sum(pairs[l - 1, lst[l - 1], lst[l]] for l in range(1, L))
        best = max(best, v)
    return best


def _part(kind, rng):
    items = jnp.asarray(rng.normal(size=(K, D)))
    w = rng.normal(size=L)
    theta = jnp.asarray(rng.normal(size=(L, D)))
    if kind == "bonus":
        X = rng.normal(size=(L, 8, D))
        chol = np.linalg.cholesky(np.eye(D) + np.einsum("lnp,lnq->lpq", X, X))
        params = UCBParams(theta, jnp.asarray(rng.uniform(0.5, 2.0, L)),
                           jnp.asarray(chol))
        return UCBTables(w, get_link("logistic")), params, items
    link = "identity" if kind == "separable" else "logistic"
    return LinearTables(w, get_link(link)), theta, items


@pytest.mark.parametrize("distinct", [False, True])
@pytest.mark.parametrize("method", ["dense", "fast"])
@pytest.mark.parametrize("kind", ["separable", "monotone", "bonus"])
@pytest.mark.parametrize("seed", [0, 1])
def test_every_route_finds_the_best_list(kind, method, distinct, seed):
    rng = np.random.default_rng(seed)
    part, params, items = _part(kind, rng)
    v0 = jnp.asarray(rng.normal(size=D))
    mask = rng.random(K) < 0.8
    mask[:L] = True
    rest = part.rest(params, items)
    first = part.first(params, items, rest, v0)
    lst, value = decode_tables(part, first, rest, jnp.asarray(mask), distinct=distinct,
                               method=method)
    lst = np.asarray(lst)
    f, pairs = np.asarray(first), np.asarray(part.dense(rest))
    best = _brute(f, pairs, mask, distinct)
    assert mask[lst].all()
    if distinct:
        assert len(set(lst.tolist())) == L
    got = f[lst[0]] + sum(pairs[l - 1, lst[l - 1], lst[l]] for l in range(1, L))
    np.testing.assert_allclose(got, best, rtol=1e-5)
    np.testing.assert_allclose(float(value), best, rtol=1e-5)


def test_use_fast_routes_by_kind_size_and_method():
    mono = LinearTables(np.zeros(L), get_link("logistic"))
    sep = LinearTables(np.zeros(L), get_link("identity"))
    assert not use_fast(mono, 100) and use_fast(mono, 10**6)
    assert use_fast(mono, 10, "fast") and not use_fast(mono, 10**6, "dense")
    assert not use_fast(sep, 10**6, "fast")  # the separable path is O(L K) already
    with pytest.raises(ValueError, match="method: expected one of"):
        use_fast(mono, 10, "quick")


def test_auto_takes_the_front_scan_earlier_than_the_ucb_bounds_on_cpu(monkeypatch):
    """On the CPU "auto" scans the Pareto front for the monotone kind from
    FAST_K_MONOTONE items and decodes identity-link UCB without tables from
    FAST_K_NATIVE (C kernel) or FAST_K_PREFIX (compiled search), while the host bound-and-prune of other links waits for
    FAST_K (its pruning is weak in early rounds); the thresholds are the documented
    ones."""
    import jax

    from bayesrank.decoding import dispatch as decoder
    from bayesrank.decoding import native

    mono = LinearTables(np.zeros(L), get_link("logistic"))
    ucb = UCBTables(np.zeros(L), get_link("logistic"))
    ridge_ucb = UCBTables(np.zeros(L), get_link("identity"))
    assert jax.default_backend() == "cpu"
    assert (decoder.FAST_K_MONOTONE, decoder.FAST_K_NATIVE, decoder.FAST_K_PREFIX,
            decoder.FAST_K) == (640, 256, 512, 4096)
    assert not use_fast(mono, 639) and use_fast(mono, 640)
    k = 256 if native.in_use() else 512  # the C kernel, else the compiled search
    assert decoder.identity_ucb_threshold() == k
    assert not use_fast(ridge_ucb, k - 1) and use_fast(ridge_ucb, k)
    monkeypatch.setattr(native, "USE_NATIVE", False)
    assert not use_fast(ridge_ucb, 511) and use_fast(ridge_ucb, 512)
    assert not use_fast(ucb, 1500) and not use_fast(ucb, 4095) and use_fast(ucb, 4096)
    assert not use_fast(mono, 10**6, "dense") and use_fast(ucb, 10, "fast")


def test_auto_at_640_items_selects_without_dense_tables_and_as_the_dense_dp(monkeypatch):
    """A logistic RankTS of 640 items under "auto" never builds the K x K tables and
    picks the list the dense DP picks for the same draws (same seed, same data)."""
    import bayesrank as br
    from bayesrank.decoding import dispatch as decoder

    env = br.RankingEnv.paper(seed=3, K=640, L=3, d=4, link="logistic")
    rng = np.random.default_rng(0)
    lists = rng.integers(0, env.K, size=(40, env.L))
    rewards = (rng.random((40, env.L)) < 0.5).astype(float)
    model = lambda: br.LaplaceGLM(link="logistic", prior_scale=1.0, n_max=64)  # noqa: E731
    auto = br.RankTS(model(), items=env.items, w=env.w, seed=1)
    auto.update(lists, rewards)
    calls = []
    orig = LinearTables.dense
    monkeypatch.setattr(LinearTables, "dense",
                        lambda self, r: calls.append(1) or orig(self, r))
    got = [np.asarray(auto.select()) for _ in range(3)]
    assert not calls
    monkeypatch.setattr(LinearTables, "dense", orig)
    monkeypatch.setattr(decoder, "FAST_K_MONOTONE", 10**9)
    dense = br.RankTS(model(), items=env.items, w=env.w, seed=1)
    dense.update(lists, rewards)
    want = [np.asarray(dense.select()) for _ in range(3)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_rank_ucb_at_the_threshold_runs_the_prefix_search_and_picks_the_dense_list(
        monkeypatch):
    """RankUCB (ridge model, identity link) at the identity-link threshold in use
    (the C kernel's, else the compiled search's) under "auto" never builds the K x K
    tables and picks the list of the dense DP, early (20 lists) and late."""
    import bayesrank as br
    from bayesrank.decoding import dispatch as decoder

    env = br.RankingEnv.paper(seed=2, K=decoder.identity_ucb_threshold(), L=3, d=4)
    rng = np.random.default_rng(0)
    lists = rng.integers(0, env.K, size=(400, env.L))
    rewards = rng.normal(size=(400, env.L))
    orig = UCBTables.dense
    for n in (20, 400):
        calls = []
        monkeypatch.setattr(UCBTables, "dense",
                            lambda self, r: calls.append(1) or orig(self, r))
        auto = br.RankUCB(items=env.items, w=env.w, seed=1)
        auto.update(lists[:n], rewards[:n])
        got = np.asarray(auto.select())
        assert not calls
        monkeypatch.setattr(UCBTables, "dense", orig)
        monkeypatch.setattr(decoder, "FAST_K_PREFIX", 10**9)
        monkeypatch.setattr(decoder, "FAST_K_NATIVE", 10**9)
        dense = br.RankUCB(items=env.items, w=env.w, seed=1)
        dense.update(lists[:n], rewards[:n])
        np.testing.assert_array_equal(got, np.asarray(dense.select()))
        monkeypatch.undo()
