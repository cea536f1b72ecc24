"""Exact decoders for monotone point-estimate scores without K x K tables.

Reference: the dense DP of :mod:`bayesrank.decoding.dense` / :mod:`bayesrank.decoding.backward` on
tables built here in plain NumPy, and brute force over all K^L lists at K <= 8.
"""

import itertools
import zlib

import jax.numpy as jnp
import numpy as np
import pytest
from scipy import special

import bayesrank as br
from bayesrank.decoding import dispatch as decoder
from bayesrank.decoding.api import best_list
from bayesrank.decoding.backward import backward_dense
from bayesrank.decoding.front import exp_step, front_step, pareto_front
from bayesrank.decoding.monotone import (
    monotone_backward,
    monotone_backward_in_jit,
    monotone_decode,
)
from bayesrank.decoding.spec import DecodeSpec, MonotoneTables
from bayesrank.model.links import get_link
from bayesrank.posteriors import GaussianLinear

F = {"identity": lambda z: z, "logistic": special.expit, "probit": special.ndtr,
     "exp": np.exp}
LINKS = tuple(F)


def dense_tables(A, B, link):
    return F[link](A[:, None, :] + B[:, :, None])  # [l, i, j]


def instance(rng, K, L, *, ties=False, neg_w=False, scale=1.0):
    """first (K,), A, B (L-1, K) of a point estimate theta on random items."""
    d = 4
    items = rng.normal(size=(K, d))
    if ties:
        items = np.round(items)  # many equal projections
    theta = rng.normal(size=(L, d)) * scale
    w = rng.uniform(-3, 3, size=L)
    if neg_w:
        w = -np.abs(w)
    proj = theta @ items.T
    return proj[0], proj[1:], w[1:, None] * proj[1:]


def brute_force(first, pairs, mask):
    K, L = first.shape[0], pairs.shape[0] + 1
    ok = np.flatnonzero(mask)
    best = -np.inf
    for lst in itertools.product(ok, repeat=L):
        v = first[lst[0]] + sum(pairs[l - 1, lst[l - 1], lst[l]] for l in range(1, L))
        best = max(best, v)
    return best


def list_value(first, pairs, items):
    return first[items[0]] + sum(
        pairs[l - 1, items[l - 1], items[l]] for l in range(1, len(items))
    )


@pytest.mark.parametrize("link", LINKS)
def test_brute_force_small(link):
    rng = np.random.default_rng(0)
    for t in range(25):
        K, L = int(rng.integers(1, 9)), int(rng.integers(2, 4))
        first, A, B = instance(rng, K, L, ties=t % 3 == 0, neg_w=t % 2 == 0)
        first = F[link](first)
        mask = rng.random(K) < 0.7
        mask[rng.integers(K)] = True
        items, value, info = monotone_decode(first, A, B, link, mask=mask)
        pairs = dense_tables(A, B, link)
        ref = brute_force(first, pairs, mask)
        assert np.isclose(value, ref, rtol=1e-12, atol=1e-12)
        assert np.isclose(list_value(first, pairs, items), ref, rtol=1e-12, atol=1e-12)
        assert mask[items].all()
        assert info.front.shape == (L - 1,)


@pytest.mark.parametrize("link", LINKS)
@pytest.mark.parametrize("case", ["plain", "ties", "neg_w", "masked", "flat"])
def test_equals_dense_dp(link, case):
    # a fixed seed per case (``hash`` of a str changes from one process to the next)
    rng = np.random.default_rng(zlib.crc32(f"{link}-{case}".encode()))
    K, L = 2000 if case == "plain" else 600, 4
    first, A, B = instance(
        rng, K, L, ties=case == "ties", neg_w=case == "neg_w",
        scale=0.01 if case == "flat" else 1.0,
    )
    first = F[link](first)
    mask = rng.random(K) < 0.3 if case == "masked" else np.ones(K, bool)
    pairs = dense_tables(A, B, link)
    ref_items, ref_value = best_list(first, pairs, mask=mask)
    items, value, info = monotone_decode(first, A, B, link, mask=mask)
    assert np.isclose(value, float(ref_value), rtol=1e-12, atol=1e-12)
    assert np.isclose(list_value(first, pairs, items), value, rtol=1e-12, atol=1e-12)
    assert mask[items].all()
    # Backward form: the value-to-go of every available item equals the dense one.
    to_go, ptr, sizes = monotone_backward(A, B, link, mask=mask)
    bw = backward_dense(jnp.asarray(pairs), jnp.asarray(mask))
    np.testing.assert_allclose(to_go[mask], np.asarray(bw.to_go)[mask], rtol=1e-12,
                               atol=1e-12)
    assert ptr.dtype == np.int32 and mask[ptr[:, mask]].all()
    if link != "identity" and case != "flat":
        assert sizes.max() < K // 10  # only the front is scanned


def test_adversarial_front_is_still_exact():
    """V decreasing exactly as B increases: the whole set is the front (m = K)."""
    K = 300
    x = np.linspace(-2, 2, K)
    V, B, A = -x, x, np.linspace(-1, 1, K)
    for link in ("logistic", "exp"):
        f = F[link]
        M, arg, m = (front_step(V, A, B, f) if link == "logistic"
                     else exp_step(V, A, B))
        tot = V[:, None] + f(A[None, :] + B[:, None])
        np.testing.assert_allclose(M, tot.max(axis=0), rtol=1e-13)
        np.testing.assert_allclose(tot[arg, np.arange(K)], M, rtol=1e-13)
    assert pareto_front(V, B).size == K


def test_pareto_front_against_a_quadratic_scan():
    rng = np.random.default_rng(5)
    for _ in range(30):
        K = int(rng.integers(1, 40))
        V, B = np.round(rng.normal(size=K)), np.round(rng.normal(size=K))
        V[rng.random(K) < 0.2] = -np.inf
        got = set(pareto_front(V, B).tolist())
        ok = V > -np.inf
        want = {i for i in range(K) if ok[i] and not any(
            ok[k] and V[k] >= V[i] and B[k] >= B[i] and (V[k], B[k]) != (V[i], B[i])
            for k in range(K))}
        # of equal (V, B) points exactly one is kept
        keys = {(V[i], B[i]) for i in want}
        assert {(V[i], B[i]) for i in got} == keys and len(got) == len(keys)


@pytest.mark.parametrize("pivot_min", [0, 10**9])
def test_pareto_front_with_and_without_the_pivot_prefilter(monkeypatch, pivot_min):
    """The pivot prefilter (forced on every call, and off) keeps the exact front, ties
    and flat V included, and the same representative of equal points as the sort."""
    import bayesrank.decoding.front as dm

    monkeypatch.setattr(dm, "PIVOT_MIN", pivot_min)
    rng = np.random.default_rng(11)
    for trial in range(40):
        K = int(rng.integers(2, 300))
        V = np.round(rng.normal(size=K), 1) if trial % 4 else np.zeros(K)
        B = np.round(rng.normal(size=K), 1)
        V[rng.random(K) < 0.1] = -np.inf
        ok = V > -np.inf
        got = pareto_front(V, B)
        # reference: plain-Python dominance, keeping the smallest index of equal points
        want = [i for i in range(K) if ok[i] and not any(
            ok[k] and V[k] >= V[i] and B[k] >= B[i]
            and ((V[k], B[k]) != (V[i], B[i]) or k < i) for k in range(K))]
        assert sorted(got.tolist()) == want


@pytest.mark.parametrize("link", ["logistic", "probit"])
@pytest.mark.parametrize("case", ["random", "ties", "masked", "flat_a"])
def test_blocked_front_scan_equals_every_item_scanned(monkeypatch, link, case):
    """The block-pruned scan (forced at K = 1,500 with blocks of 16 columns) returns
    the max over *all* items (a dense NumPy reference) and the same maximisers as the
    unpruned scan of the front."""
    import bayesrank.decoding.front as dm

    rng = np.random.default_rng({"random": 0, "ties": 1, "masked": 2, "flat_a": 3}[case])
    K = 1500
    V, A, B = rng.normal(size=K), rng.normal(size=K), 2 * rng.normal(size=K)
    if case == "ties":
        V, A, B = np.round(V, 1), np.round(A, 1), np.round(B, 1)
    if case == "flat_a":
        A = np.full(K, 0.3)
    cols = np.arange(K) if case != "masked" else np.flatnonzero(rng.random(K) < 0.7)
    if case == "masked":
        V[rng.random(K) < 0.3] = -np.inf
    f = F[link]
    M0, arg0, m0 = front_step(V, A, B, f, cols)  # BLOCK = 1024: unpruned at K = 1,500
    monkeypatch.setattr(dm, "BLOCK", 16)
    M, arg, m = front_step(V, A, B, f, cols)
    assert m == m0 >= 3
    tot = V[:, None] + f(A[None, cols] + B[:, None])  # every item, every column
    np.testing.assert_array_equal(M[cols], tot.max(axis=0))
    np.testing.assert_array_equal(arg, arg0)
    np.testing.assert_array_equal(M, M0)


@pytest.mark.parametrize("link", ["logistic", "exp"])
def test_distinct_equals_the_dense_search(link):
    rng = np.random.default_rng(7)
    for _ in range(5):
        K, L = 40, 4
        first, A, B = instance(rng, K, L, neg_w=True)
        first = F[link](first)
        pairs = dense_tables(A, B, link)
        _, ref = best_list(first, pairs, distinct=True)
        items, value, _ = monotone_decode(first, A, B, link, distinct=True)
        assert np.isclose(value, float(ref), rtol=1e-12)
        assert len(set(items.tolist())) == L


def test_in_jit_matches_host_and_dispatcher_fast_equals_dense():
    rng = np.random.default_rng(8)
    K, L = 500, 4
    first, A, B = instance(rng, K, L, neg_w=True)
    mask = rng.random(K) < 0.5
    lk = get_link("logistic")
    to_go, ptr, _ = monotone_backward_in_jit(jnp.asarray(A), jnp.asarray(B), lk,
                                             jnp.asarray(mask))
    host = monotone_backward(A, B, lk, mask=mask)
    np.testing.assert_array_equal(np.asarray(ptr), host[1])
    tabs = MonotoneTables(jnp.asarray(A), jnp.asarray(B))
    first = jnp.asarray(special.expit(first))
    got = decoder.decode_tables(DecodeSpec("monotone", lk, method="fast"), first, tabs,
                                jnp.asarray(mask))
    ref = decoder.decode_tables(DecodeSpec("monotone", lk, method="dense"), first, tabs,
                                jnp.asarray(mask))
    assert np.isclose(float(got[1]), float(ref[1]), rtol=1e-12)
    assert mask[np.asarray(got[0])].all()


class LogisticGaussian:
    """A Gaussian posterior scored under the logistic link (a point estimate draw)."""

    def __init__(self):
        self._m = GaussianLinear(prior_scale=1.0, noise_scale=1.0)  # has a gram
        self.link = get_link("logistic")
        for name in ("init", "update", "mean", "draw", "gram", "check_rewards"):
            setattr(self, name, getattr(self._m, name))


def test_rank_ts_logistic_above_the_threshold_never_builds_dense_tables(monkeypatch):
    """Above FAST_K the policy selects the exact best list of its own scores, and
    the dense tables are never built on that path."""
    monkeypatch.setattr(decoder, "FAST_K", 64)
    env = br.RankingEnv.paper(seed=1, K=300, L=4, d=5)
    rng = np.random.default_rng(2)
    pol = br.RankTS(model=LogisticGaussian(), items=env.items, w=env.w, seed=0)
    lists = rng.integers(0, env.K, size=(50, env.L))
    pol.update(lists, rng.normal(size=(50, env.L)))
    mask = rng.random(env.K) < 0.6
    calls = []
    orig = decoder.dense_pairs
    monkeypatch.setattr(decoder, "dense_pairs", lambda *a: calls.append(1) or orig(*a))
    for _ in range(3):
        items = pol.select(mask=mask)
        assert not calls
        assert mask[items].all()
        first, pairs = pol.scores()  # dense, for the reference only
        _, ref = best_list(np.asarray(first), np.asarray(pairs), mask=mask)
        assert np.isclose(list_value(np.asarray(first), np.asarray(pairs), items),
                          float(ref), rtol=1e-10)
        calls.clear()


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(links=("logistic",) * 5), ValueError, "links: expected one link or"),
        (dict(links=3), TypeError, "links"),
        (dict(B=np.zeros((2, 5))), ValueError, "B: expected the shape of A"),
        (dict(first=np.full(6, np.nan)), ValueError, "first: expected finite"),
        (dict(mask=np.zeros(6, bool)), ValueError, "mask"),
        (dict(mask=np.ones(6, bool), distinct=True, A=np.zeros((6, 6)),
              B=np.zeros((6, 6))), ValueError, "L"),
    ],
)
def test_bad_input(kwargs, exc, match):
    args = dict(first=np.zeros(6), A=np.zeros((3, 6)), B=np.zeros((3, 6)),
                links="logistic")
    args.update(kwargs)
    first, A, B, links = (args.pop(k) for k in ("first", "A", "B", "links"))
    with pytest.raises(exc, match=match):
        monotone_decode(first, A, B, links, **args)
