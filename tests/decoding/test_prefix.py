"""The compiled UCB backward pass (:mod:`bayesrank.decoding.prefix`) against a plain
NumPy dense backward DP written from the definition, on random instances: early
(wide bonus) and late (narrow bonus), ties, masks, negative w, past the top_k head."""

from __future__ import annotations

import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesrank.decoding import prefix
from bayesrank.decoding.prefix import ucb_backward_prefix


def _dense_backward(A, B, Ua, Ub, c, mask):
    """H_l(i) = max_j [H_{l+1}(j) + A_j + B_i + c ||Ua_j + Ub_i||], masked, by K x K."""
    Lm1, K = A.shape
    H = np.zeros(K)
    tables = []
    for l in range(Lm1 - 1, -1, -1):
        V = np.where(mask, H, -np.inf)
        norm = np.linalg.norm(Ua[l].T[None, :, :] + Ub[l].T[:, None, :], axis=2)
        S = V[None, :] + A[l][None, :] + B[l][:, None] + c[l] * norm  # (i, j)
        tables.append((l, S))
        H = np.where(mask, S.max(axis=1), -np.inf)
    return H, dict(tables)


def _policy_factors(K, n_obs):
    """RankUCB's own (A, B, Ua, Ub, c) on a paper instance after n_obs random lists."""
    import bayesrank as br

    env = br.RankingEnv.paper(seed=0, K=K, L=4, d=10)
    pol = br.RankUCB(items=env.items, w=env.w, seed=0)
    rng = np.random.default_rng(1)
    lists = rng.integers(0, K, size=(n_obs, 4))
    pol.update(lists, np.asarray(env.sample(jax.random.key(1), lists)))
    pol.select()
    tabs = pol.core.tables
    rest = tabs.rest(pol._last.params, pol.state.items)
    return tuple(np.asarray(x, np.float64) for x in tabs.factors(rest)) + (np.ones(K, bool),)


def _instance(case, K, Lm1=3, q=4):
    if case.startswith("policy"):
        return _policy_factors(K, 20 if case == "policy-early" else 5000)
    rng = np.random.default_rng(zlib.crc32(f"{case}-{K}".encode()))
    A, B = rng.normal(size=(2, Lm1, K))
    Z = rng.normal(size=(Lm1, q, K)) / np.sqrt(q)
    w = {"neg_w": -0.8}.get(case, 0.7)
    Ua, Ub = Z, w * Z  # RankUCB: the two halves are the same whitened items
    c = np.full(Lm1, {"early": 8.0, "late": 0.05, "zero": 0.0}.get(case, 1.0))
    if case == "early":  # as after 20 lists: the bonus dwarfs the next item's spread
        A, Ua, Ub = 0.2 * A, 0.2 * Z, Z
    if case == "ties":  # many equal values and equal vectors
        A, B = np.round(A), np.round(B)
        Ua = np.round(2 * Ua) / 2
        Ub = np.round(2 * Ub) / 2
    mask = np.ones(K, bool) if case != "mask" else rng.random(K) < 0.6
    return A, B, Ua, Ub, c, mask


CASES = ["early", "late", "neg_w", "ties", "mask", "zero", "policy-early", "policy-late"]


@pytest.mark.parametrize("K", [7, 300, 700])
@pytest.mark.parametrize("case", CASES)
def test_backward_equals_the_dense_dp(case, K):
    """Values to go equal the dense DP's (1e-10 relative, float64); each pointer
    attains its row's maximum (ties may pick another maximiser). K = 700 runs past
    the 256-item head of the order."""
    A, B, Ua, Ub, c, mask = _instance(case, K)
    to_go, ptr, evals = jax.jit(ucb_backward_prefix)(A, B, Ua, Ub, c, mask)
    H, tables = _dense_backward(A, B, Ua, Ub, c, mask)
    to_go, ptr = np.asarray(to_go), np.asarray(ptr)
    assert np.array_equal(np.isfinite(to_go), mask)
    np.testing.assert_allclose(to_go[mask], H[mask], rtol=1e-10, atol=1e-10)
    for l, S in tables.items():
        rows = np.flatnonzero(mask)
        np.testing.assert_allclose(S[rows, ptr[l, rows]], S[rows].max(axis=1),
                                   rtol=1e-10, atol=1e-10)
        assert mask[ptr[l, rows]].all()
    assert np.all(np.asarray(evals) > 0)


def test_late_rounds_score_a_small_part_of_the_pairs_and_early_ones_pass_the_head():
    """RankUCB's own scores after 5,000 lists (a narrow bonus) take under 10 % of
    the dense pair scores; after 20 lists (a wide one) some step needs the order past
    its top_k head: more than K x HEAD pair scores."""
    K = 700
    late = _instance("policy-late", K)
    early = _instance("policy-early", K)
    ev_late = np.asarray(ucb_backward_prefix(*late)[2])
    ev_early = np.asarray(ucb_backward_prefix(*early)[2])
    assert ev_late.sum() < 0.1 * 3 * K * K  # of the dense DP's (L-1) K^2
    assert ev_early.max() > K * prefix.HEAD


def test_vmap_equals_one_by_one():
    """Under vmap the windows' conds run both branches; the result is the same."""
    insts = [_instance(case, 120) for case in ("early", "late", "mask")]
    stacked = [jnp.stack([jnp.asarray(x[k]) for x in insts]) for k in range(6)]
    to_go, ptr, _ = jax.jit(jax.vmap(ucb_backward_prefix))(*stacked)
    single = jax.jit(ucb_backward_prefix)  # one program for the three instances
    for r, inst in enumerate(insts):
        one, optr, _ = single(*inst)
        np.testing.assert_allclose(to_go[r], one, rtol=1e-12)
        np.testing.assert_array_equal(ptr[r], optr)


def test_windows_cover_the_order_once():
    """The static windows tile [0, K) without gaps or overlaps, doubling from 16."""
    for K in (1, 16, 17, 300, 100_000):
        wins = prefix.windows(K)
        starts = [s for s, _ in wins]
        assert starts[0] == 0 and sum(n for _, n in wins) == K
        assert all(s + n == t for (s, n), t in zip(wins, starts[1:] + [K]))
        assert all(n <= max(prefix.WINDOW0, s) for s, n in wins)


def test_exact_whatever_order_top_k_gives_tied_values(monkeypatch):
    """Every j tied in u at the head's boundary (all K of them here: unit vectors
    whose means are exactly 0, so the shift is 0; no estimate part): the tail must
    not skip j's that the head left out, whichever tied j's ``lax.top_k`` keeps. A
    top_k that keeps the highest indices of a tie (still a valid top-k) leaves out
    j = 0 and j = 1, the only best j's of rows 0 and 1."""
    K = 300
    e = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    Z = e[np.r_[0, 1, np.tile([2, 3], K)][:K]].T  # (1, 0), (-1, 0), then (0, +-1)
    Ua, Ub = Z[None], 0.5 * Z[None]  # row i is best followed by j = i for i < 2
    A = B = np.zeros((1, K))
    c, mask = np.ones(1), np.ones(K, bool)
    top_k = jax.lax.top_k

    def ties_from_the_top(u, k):
        vals, idx = top_k(u[::-1], k)
        return vals, u.shape[0] - 1 - idx

    monkeypatch.setattr(jax.lax, "top_k", ties_from_the_top)
    to_go, ptr, _ = jax.jit(lambda *a: ucb_backward_prefix(*a))(A, B, Ua, Ub, c, mask)
    H, _ = _dense_backward(A, B, Ua, Ub, c, mask)
    np.testing.assert_allclose(np.asarray(to_go), H, rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(ptr)[0, :2], [0, 1])


@pytest.mark.parametrize("K", [1, 7, 300, 3000])
def test_compact_equals_nonzero(K):
    """``_compact`` lists the True entries in ascending order, then zeros, and counts
    them: as NumPy's ``flatnonzero`` (random masks, none and all True)."""
    rng = np.random.default_rng(K)
    for live in (rng.random(K) < 0.3, np.zeros(K, bool), np.ones(K, bool)):
        idx, n = jax.jit(prefix._compact)(jnp.asarray(live))
        want = np.flatnonzero(live)
        assert int(n) == want.size
        np.testing.assert_array_equal(np.asarray(idx), np.r_[want, np.zeros(K - want.size)])


@pytest.mark.parametrize("K", [300, 3000])
def test_order_puts_the_head_first_then_u_descending(K):
    """``_order`` is a permutation: the head's j's first, then the other j's by u
    descending up to one quantisation step of u's finite range, -inf last."""
    rng = np.random.default_rng(K)
    u = rng.normal(size=K) * 10.0 ** rng.integers(-3, 4, size=K)
    u[rng.random(K) < 0.1] = -np.inf
    u[:5] = u[5]  # ties
    head = rng.choice(K, 40, replace=False)
    order = np.asarray(jax.jit(prefix._order)(jnp.asarray(u), jnp.asarray(head)))
    np.testing.assert_array_equal(np.sort(order), np.arange(K))
    assert set(order[:40]) == set(head)
    rest = u[order[40:]]
    fin = np.isfinite(u)
    step = (u[fin].max() - u[fin].min()) / ((1 << (31 - (K - 1).bit_length())) - 3)
    assert np.all(np.diff(rest[np.isfinite(rest)]) <= step)
    assert not np.isfinite(rest[np.isfinite(rest).sum():]).any()


@pytest.mark.parametrize("case", ["early", "mask", "ties"])
def test_exact_whatever_the_order(case, monkeypatch):
    """Each window tests the exact maximum of its u's, so any head and any order of
    the rest give the dense DP's values: here a random head and random orders."""
    A, B, Ua, Ub, c, mask = _instance(case, 700)
    rng = np.random.default_rng(0)

    def head(u, n):
        return jnp.asarray(rng.permutation(u.shape[0])[:n], jnp.int32)

    def order(u, head):
        rest = np.setdiff1d(np.arange(u.shape[0]), np.asarray(head))
        return jnp.asarray(np.r_[np.asarray(head), rng.permutation(rest)], jnp.int32)

    monkeypatch.setattr(prefix, "_head", head)
    monkeypatch.setattr(prefix, "_order",
                        lambda u, h: jax.pure_callback(
                            lambda u, h: np.asarray(order(u, h)),
                            jax.ShapeDtypeStruct(u.shape, jnp.int32), u, h))
    to_go, _, _ = jax.jit(lambda *a: ucb_backward_prefix(*a))(A, B, Ua, Ub, c, mask)
    H, _ = _dense_backward(A, B, Ua, Ub, c, mask)
    np.testing.assert_allclose(np.asarray(to_go)[mask], H[mask], rtol=1e-10, atol=1e-10)
