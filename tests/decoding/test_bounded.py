"""Exact bound-and-prune decoders for UCB scores without K x K tables.

Reference: the dense DP of :mod:`bayesrank.decoding.dense` / :mod:`bayesrank.decoding.backward` on
tables built here in plain NumPy (direct per-pair norms), and brute force at K <= 8.
"""

import itertools
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import special

import bayesrank as br
from bayesrank.decoding import dispatch as decoder
from bayesrank.decoding.api import best_list
from bayesrank.decoding.backward import backward_dense
from bayesrank.decoding.bounded import ucb_backward, ucb_backward_in_jit, ucb_decode
from bayesrank.decoding.spec import BonusTables, DecodeSpec
from bayesrank.model.links import get_link

F = {"identity": lambda z: z, "logistic": special.expit, "exp": np.exp}
RTOL = 1e-9  # the policies' dense tables use the Gram form of the norm too


def dense_tables(A, B, Ua, Ub, c, link):
    """[l, i, j] = f(A_j + B_i + c ||Ua_j + Ub_i||), per-pair norms in NumPy."""
    out = []
    for l in range(A.shape[0]):
        diff = Ua[l].T[None, :, :] + Ub[l].T[:, None, :]  # (K_prev, K_next, q)
        nrm = np.sqrt(np.sum(diff * diff, axis=-1))
        out.append(F[link](A[l][None, :] + B[l][:, None] + c[l] * nrm))
    return np.stack(out)


def rank_ucb_instance(rng, K, L, *, n_obs, ties=False, neg_w=False, d=4):
    """RankUCB's pieces after n_obs random observations: early (small n_obs, wide
    bonus) or late (large n_obs, narrow bonus)."""
    items = rng.normal(size=(K, d)) / np.sqrt(d)
    if ties:
        items = np.round(items * 2) / 2
    w = rng.uniform(-2, 2, size=L)
    if neg_w:
        w = -np.abs(w)
    theta = rng.normal(size=(L, d))
    X = rng.normal(size=(L, n_obs, d))
    Vm = np.eye(d) + np.einsum("lnd,lne->lde", X, X)
    C = np.linalg.cholesky(Vm)
    Z = np.stack([np.linalg.solve(C[l], items.T) for l in range(L)])  # (L, d, K)
    width = np.full(L, 1.0 + np.sqrt(np.log(1 + n_obs)))
    proj = theta @ items.T
    first = proj[0] + width[0] * np.linalg.norm(Z[0], axis=0)
    return (first, proj[1:], w[1:, None] * proj[1:], Z[1:], w[1:, None, None] * Z[1:],
            width[1:])


def list_value(first, pairs, items):
    return first[items[0]] + sum(
        pairs[l - 1, items[l - 1], items[l]] for l in range(1, len(items))
    )


@pytest.mark.parametrize("link", list(F))
def test_brute_force_small(link):
    rng = np.random.default_rng(0)
    for t in range(20):
        K, L = int(rng.integers(1, 9)), int(rng.integers(2, 4))
        first, A, B, Ua, Ub, c = rank_ucb_instance(
            rng, K, L, n_obs=int(rng.choice([0, 3, 300])), ties=t % 3 == 0,
            neg_w=t % 2 == 0)
        first = F[link](first)
        mask = rng.random(K) < 0.7
        mask[rng.integers(K)] = True
        pairs = dense_tables(A, B, Ua, Ub, c, link)
        ok = np.flatnonzero(mask)
        ref = max(list_value(first, pairs, lst) for lst in itertools.product(ok, repeat=L))
        items, value, info = ucb_decode(first, A, B, Ua, Ub, c, link, mask=mask)
        assert np.isclose(value, ref, rtol=RTOL, atol=1e-12)
        assert np.isclose(list_value(first, pairs, items), ref, rtol=RTOL, atol=1e-12)
        assert mask[items].all()


@pytest.mark.parametrize("link", ["identity", "logistic"])
@pytest.mark.parametrize(
    "case", ["early", "late", "ties", "neg_w", "masked", "generic"]
)
def test_equals_dense_dp(link, case):
    # a fixed seed per case (``hash`` of a str changes from one process to the next)
    rng = np.random.default_rng(zlib.crc32(f"{link}-{case}".encode()))
    K, L = (1200 if case == "late" else 500), 4
    if case == "generic":  # unrelated Ua, Ub (GenRankUCB-like), q = 6
        first, A, B = rng.normal(size=K), rng.normal(size=(L - 1, K)), rng.normal(size=(L - 1, K))
        Ua, Ub = rng.normal(size=(L - 1, 6, K)) * 0.3, rng.normal(size=(L - 1, 6, K)) * 0.3
        c = np.array([0.5, 2.0, 0.0])
    else:
        first, A, B, Ua, Ub, c = rank_ucb_instance(
            rng, K, L, n_obs=3 if case == "early" else 2000, ties=case == "ties",
            neg_w=case == "neg_w")
    first = F[link](first)
    mask = rng.random(K) < 0.3 if case == "masked" else np.ones(K, bool)
    pairs = dense_tables(A, B, Ua, Ub, c, link)
    _, ref = best_list(first, pairs, mask=mask)
    items, value, info = ucb_decode(first, A, B, Ua, Ub, c, link, mask=mask)
    assert np.isclose(value, float(ref), rtol=RTOL)
    assert np.isclose(list_value(first, pairs, items), float(ref), rtol=RTOL)
    assert mask[items].all()
    to_go, ptr, evals = ucb_backward(A, B, Ua, Ub, c, link, mask=mask)
    bw = backward_dense(jnp.asarray(pairs), jnp.asarray(mask))
    np.testing.assert_allclose(to_go[mask], np.asarray(bw.to_go)[mask], rtol=RTOL)
    assert mask[ptr[:, mask]].all()
    assert evals.shape == (L - 1,) and evals.min() >= 0
    if case == "late" and link == "identity":
        # the bounds prune: far fewer exact pairs than the K^2 per step of the dense DP
        assert evals.sum() < 0.1 * (L - 1) * K * K


def test_distinct_equals_the_dense_search():
    rng = np.random.default_rng(3)
    for n_obs in (3, 500):
        K, L = 40, 4
        first, A, B, Ua, Ub, c = rank_ucb_instance(rng, K, L, n_obs=n_obs, neg_w=True)
        pairs = dense_tables(A, B, Ua, Ub, c, "identity")
        _, ref = best_list(first, pairs, distinct=True)
        items, value, _ = ucb_decode(first, A, B, Ua, Ub, c, "identity", distinct=True)
        assert np.isclose(value, float(ref), rtol=RTOL)
        assert len(set(items.tolist())) == L


def test_in_jit_equals_host_and_dispatcher_fast_equals_dense():
    rng = np.random.default_rng(4)
    K, L = 400, 3
    first, A, B, Ua, Ub, c = rank_ucb_instance(rng, K, L, n_obs=50, neg_w=True)
    mask = rng.random(K) < 0.5
    lk = get_link("identity")
    args = [jnp.asarray(x) for x in (A, B, Ua, Ub, c)]
    to_go, ptr, evals = ucb_backward_in_jit(*args, lk, jnp.asarray(mask))
    host = ucb_backward(A, B, Ua, Ub, c, lk, mask=mask)
    np.testing.assert_array_equal(np.asarray(ptr), host[1])
    np.testing.assert_array_equal(np.asarray(evals), host[2])
    tabs = BonusTables(*args)
    f = jnp.asarray(first)
    got = decoder.decode_tables(DecodeSpec("bonus", lk, method="fast"), f, tabs,
                                jnp.asarray(mask))
    ref = decoder.decode_tables(DecodeSpec("bonus", lk, method="dense"), f, tabs,
                                jnp.asarray(mask))
    assert np.isclose(float(got[1]), float(ref[1]), rtol=RTOL)
    assert mask[np.asarray(got[0])].all()
    with pytest.raises(ValueError, match="method: expected one of"):
        decoder.decode_tables(DecodeSpec("bonus", lk, method="sparse"), f, tabs,
                              jnp.asarray(mask))


def make_policy(name, env):
    if name == "RankUCB":
        return br.RankUCB(items=env.items, w=env.w, seed=0)
    if name == "GLM-UCB":
        model = br.LaplaceGLM(link="logistic", prior_scale=1.0, n_max=100)
        # m2 = 0.5: with m2 = 1 the logistic slope bound here is 8e-7 (refused)
        return br.RankUCB(model=model, items=env.items, w=env.w, alpha=0.5, m2=0.5)
    return br.GenRankUCB(items=env.items, L=env.L, seed=0)


@pytest.mark.parametrize("policy", ["RankUCB", "GLM-UCB", "GenRankUCB"])
def test_policies_above_the_threshold_never_build_dense_tables(monkeypatch, policy):
    """Above FAST_K, select / select_batch pick exact best lists of the policy's own
    optimistic scores, masks apply, and the dense tables are never built."""
    monkeypatch.setattr(decoder, "FAST_K", 64)
    env = br.RankingEnv.paper(seed=2, K=250, L=3, d=4)
    rng = np.random.default_rng(5)
    pol = make_policy(policy, env)
    lists = rng.integers(0, env.K, size=(40, env.L))
    rewards = np.asarray(env.sample(jax.random.key(0), lists))
    if policy == "GLM-UCB":
        rewards = (rewards > np.median(rewards)).astype(float)
    pol.update(lists, rewards)
    calls = []
    orig = decoder.dense_pairs
    monkeypatch.setattr(decoder, "dense_pairs", lambda *a: calls.append(1) or orig(*a))
    masks = rng.random((3, env.K)) < 0.5
    v0s = np.asarray(env.items)[:3]
    batch = pol.select_batch(v0=v0s, mask=masks)
    for b in range(3):
        items = pol.select(v0=v0s[b], mask=masks[b])
        assert not calls
        assert masks[b][items].all()
        np.testing.assert_array_equal(batch[b], items)
        first, pairs = (np.asarray(x) for x in pol.scores())
        _, ref = best_list(first, pairs, mask=masks[b])
        assert np.isclose(list_value(first, pairs, items), float(ref), rtol=RTOL)
        calls.clear()


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(c=np.array([1.0, -1.0])), ValueError, "c: expected widths >= 0"),
        (dict(c=np.ones(3)), ValueError, "c: expected shape"),
        (dict(Ua=np.zeros((2, 3, 5))), ValueError, "Ua: expected shape"),
        (dict(Ub=np.zeros((2, 2, 6))), ValueError, "Ub: expected shape"),
        (dict(A=np.full((2, 6), np.inf)), ValueError, "A: expected finite"),
        (dict(Ua=np.zeros((2, 3, 6), complex)), TypeError, "Ua: expected real"),
        (dict(mask=np.zeros(6, bool)), ValueError, "mask"),
    ],
)
def test_bad_input(kwargs, exc, match):
    args = dict(first=np.zeros(6), A=np.zeros((2, 6)), B=np.zeros((2, 6)),
                Ua=np.zeros((2, 3, 6)), Ub=np.zeros((2, 3, 6)), c=np.ones(2),
                links="identity")
    args.update(kwargs)
    pos = [args.pop(k) for k in ("first", "A", "B", "Ua", "Ub", "c", "links")]
    with pytest.raises(exc, match=match):
        ucb_decode(*pos, **args)
