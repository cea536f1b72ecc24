"""RankUCB against references, and the UCB family together (regret, jit and vmap,
saving, bad input); each policy's own checks are in its module's test file."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bayesrank as br
from bayesrank import theorems
from bayesrank.model.links import get_link
from bayesrank.policies.baseline import RankedBaseline
from bayesrank.policies.parts.bonus import UCBParams, UCBTables
from bayesrank.policies.parts.context import Context
from bayesrank.policies.parts.features import pair_features
from bayesrank.policies.gen_ucb import GenRankUCB
from bayesrank.policies.ts import RankTS
from bayesrank.policies.ucb import RankUCB
from bayesrank.policies.window_ucb import WindowRankUCB
from bayesrank.simulation.env import RankingEnv

ALPHA = 1.0 + np.sqrt(np.log(2 / 0.1) / 2)  # the authors' constant width, delta=0.1
IDENTITY = get_link("identity")


def ucb_pair_scores(params, items, w, v0, links):
    """RankUCB's tables ``(first (K,), pairs (L-1, K, K))`` through its tables part."""
    part = UCBTables(w, links[0])
    rest = part.rest(params, items)
    return part.first(params, items, rest, v0), part.dense(rest)


def _random_chol(rng, L, p, n=15, lam=1.0):
    """Cholesky factors of lam I + sum x x^T for random x, and the matrices."""
    X = rng.normal(size=(L, n, p))
    V = lam * np.eye(p) + np.einsum("lnp,lnq->lpq", X, X)
    return np.linalg.cholesky(V), V


def _run(core, env, T, key, best):
    """One run as a lax.scan; returns the per-round pseudo-regret (T,) and the state."""

    def body(state, t):
        ks, kr = jax.random.split(jax.random.fold_in(key, t))
        ctx = Context(env.v0, jnp.ones(env.K, bool))
        state, sel = core.select(ks, state, ctx)
        r = env.sample(kr, sel.items)
        regret = best - env.expected_reward(sel.items)
        return core.update(state, sel.items, r, ctx), regret

    state, reg = jax.lax.scan(body, core.init(), jnp.arange(T))
    return reg, state


def _simulate(policy, env, T, runs, seed=0):
    best = float(env.best_value)
    f = jax.jit(jax.vmap(lambda k: _run(policy.core, env, T, k, best)))
    reg, state = f(jax.random.split(jax.random.key(seed), runs))
    return np.asarray(reg), state


# ------------------------------------------------------------- the UCB is exact
def test_identity_ucb_is_max_over_confidence_ellipsoid():
    rng = np.random.default_rng(0)
    d = 3
    C, V = _random_chol(rng, 1, d, n=5)
    C, V = C[0], V[0]
    theta_hat = rng.normal(size=d)
    width = 1.7
    x = rng.normal(size=d)
    norm = np.sqrt(x @ np.linalg.solve(V, x))
    closed = theta_hat @ x + width * norm
    # Points on the boundary ||theta - theta_hat||_V = width: theta_hat + width C^-T u.
    u = rng.normal(size=(200_000, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    thetas = theta_hat + width * np.linalg.solve(C.T, u.T).T
    assert np.allclose(
        np.einsum("ni,ij,nj->n", thetas - theta_hat, V, thetas - theta_hat), width**2
    )
    sampled = thetas @ x
    assert sampled.max() <= closed + 1e-10
    assert closed - sampled.max() < 1e-3 * width * norm
    # The maximiser theta_hat + width V^-1 x / ||x||_{V^-1} attains it, on the boundary.
    t_star = theta_hat + width * np.linalg.solve(V, x) / norm
    assert np.isclose((t_star - theta_hat) @ V @ (t_star - theta_hat), width**2)
    assert np.isclose(t_star @ x, closed)


def test_policy_scores_equal_the_closed_form_ucb():
    rng = np.random.default_rng(1)
    K, L, d = 5, 3, 4
    items = rng.normal(size=(K, d))
    w, v0 = rng.normal(size=L), rng.normal(size=d)
    C, V = _random_chol(rng, L, d)
    theta = rng.normal(size=(L, d))
    width = np.array([0.5, 1.0, 2.0])
    params = UCBParams(jnp.asarray(theta), jnp.asarray(width), jnp.asarray(C))
    first, pairs = ucb_pair_scores(
        params, jnp.asarray(items), jnp.asarray(w), jnp.asarray(v0), (IDENTITY,) * L
    )

    def ucb(l, x):
        return theta[l] @ x + width[l] * np.sqrt(x @ np.linalg.solve(V[l], x))

    for j in range(K):
        assert np.isclose(first[j], ucb(0, items[j] + w[0] * v0))
        for l in range(1, L):
            for i in range(K):
                assert np.isclose(
                    pairs[l - 1, i, j], ucb(l, items[j] + w[l] * items[i])
                )


def test_nonlinear_link_uses_the_relaxed_width():
    rng = np.random.default_rng(2)
    K, L, d = 4, 2, 3
    items, w, v0 = rng.normal(size=(K, d)), rng.normal(size=L), np.zeros(d)
    C, _ = _random_chol(rng, L, d)
    params = UCBParams(
        jnp.asarray(rng.normal(size=(L, d))), jnp.ones(L), jnp.asarray(C)
    )
    args = (jnp.asarray(items), jnp.asarray(w), jnp.asarray(v0))
    c1, c2 = theorems.link_constants("logistic", 3.0)
    assert np.isclose(c1, 0.25 * (1 - np.tanh(1.5) ** 2)) and c2 == 1.0
    lin = ucb_pair_scores(
        params._replace(width=params.width / c1), *args, (IDENTITY,) * L
    )
    logi = ucb_pair_scores(
        params._replace(width=params.width / c1), *args, (get_link("logistic"),) * L
    )
    for a, b in zip(lin, logi):
        np.testing.assert_allclose(b, jax.nn.sigmoid(a), rtol=1e-12)
    ucb = RankUCB(model=_LogisticGaussian(), items=items, w=w, m2=1.0)
    x_max = (1 + np.abs(w).max()) * np.linalg.norm(items, axis=1).max()
    assert np.isclose(ucb.c1, theorems.link_constants("logistic", x_max)[0])


class _LogisticGaussian:
    """The ridge model under a logistic link name (enough for the width logic)."""

    def __init__(self):
        from bayesrank.posteriors import GaussianLinear

        self._m = GaussianLinear()
        self.link = get_link("logistic")
        self.init, self.update, self.mean = self._m.init, self._m.update, self._m.mean

    def check_rewards(self, y):
        self._m.check_rewards(y)


def test_incremental_logdet_equals_slogdet():
    env = RankingEnv.paper(seed=1, K=8, L=3, d=4, w_max=2.0)
    ucb = RankUCB(items=env.items, w=env.w, lam=0.5)
    gen = GenRankUCB(env.items, L=3, lam=0.5)
    for t in range(40):
        for p in (ucb, gen):
            a = p.select()
            p.update(a, np.asarray(env.sample(jax.random.key(t), a)))
    items, _ = ucb.history()
    X = np.asarray(env.features(items))  # (n, L, d)
    for l in range(3):
        V = 0.5 * np.eye(4) + X[:, l].T @ X[:, l]
        assert np.isclose(ucb.logdet()[l], np.linalg.slogdet(V)[1], rtol=1e-10)
        np.testing.assert_allclose(
            ucb.state.model.chol[l] @ ucb.state.model.chol[l].T, V, rtol=1e-10
        )
    items_g, _ = gen.history()
    Xg = np.asarray(
        pair_features(jnp.asarray(env.items), jnp.asarray(items_g), env.v0)
    )
    for l in range(3):
        V = 0.5 * np.eye(8) + Xg[:, l].T @ Xg[:, l]
        assert np.isclose(gen.logdet()[l], np.linalg.slogdet(V)[1], rtol=1e-10)
    # theta_hat is the ridge estimate V^-1 sum r x.
    _, R = ucb.history()
    V = 0.5 * np.eye(4) + X[:, 0].T @ X[:, 0]
    np.testing.assert_allclose(
        ucb.theta_hat()[0], np.linalg.solve(V, X[:, 0].T @ R[:, 0]), rtol=1e-9
    )
    # Lemma 1's width from that log det.
    ratio = ucb.logdet() - 4 * np.log(0.5)
    expect = np.sqrt(0.5) * 1.0 + np.sqrt(2 * np.log(1 / 0.1) + ratio)
    np.testing.assert_allclose(ucb.width(), expect, rtol=1e-12)


# ------------------------------------------------------------- regret (Figure 1)
@pytest.fixture(scope="module")
def paper_env():
    return RankingEnv.paper(seed=0, K=10, L=4, d=10, w_max=10.0)


def test_baseline_stays_suboptimal_and_rank_ucb_converges(paper_env):
    env, T, runs = paper_env, 1500, 3
    pols = {
        "ucb": RankUCB(items=env.items, w=env.w, alpha=ALPHA),
        "gen": GenRankUCB(env.items, L=4, alpha=ALPHA),
        "ts": RankTS(items=env.items, w=env.w),
        "base": RankedBaseline(env.items, L=4, alpha=ALPHA),
    }
    last = {k: _simulate(p, env, T, runs)[0][:, -100:].mean() for k, p in pols.items()}
    assert last["base"] > 2.0, last
    for k in ("ucb", "gen", "ts"):
        assert last[k] < 0.4, last
        assert last[k] < 0.1 * last["base"], last


def test_with_w_zero_every_policy_converges():
    env = RankingEnv.paper(seed=0, K=10, L=4, d=10, w_max=0.0)
    pols = {
        "ucb": RankUCB(items=env.items, w=env.w, alpha=ALPHA),
        "gen": GenRankUCB(env.items, L=4, alpha=ALPHA),
        "base": RankedBaseline(env.items, L=4, alpha=ALPHA),
        "base_ts": RankedBaseline(env.items, L=4, kind="ts"),
    }
    lists = np.array(list(itertools.product(range(10), repeat=4)))
    random_regret = float(np.mean(env.regret(jnp.asarray(lists))))  # ~0.89
    for k, p in pols.items():
        reg = _simulate(p, env, 1500, 3)[0]
        assert reg[:, -100:].mean() < 0.35 * random_regret, k


def test_cumulative_regret_under_theorem_1(paper_env):
    env = paper_env
    ucb = RankUCB(items=env.items, w=env.w, delta=0.1, lam=1.0, m2=1.0)  # Lemma 1
    reg, state = _simulate(ucb, env, 1000, 3, seed=1)
    c = theorems.instance_constants(env)
    assert c["m2"] <= 1.0  # the width's m2 bounds ||theta||
    t = np.arange(1, 1001)
    bound = theorems.rank_ucb_bound(
        t, L=4, d=10, lam=1.0, delta=0.1, m1=c["m1"], m2=1.0, w_max=c["w_max"]
    )
    cum = np.cumsum(reg, axis=1)
    assert np.all(cum <= bound)
    # The measured log det ratio sits under Lemma 2's deterministic bound.
    ratio = np.asarray(state.model.logdet).max(axis=1) - 10 * np.log(1.0)
    M = (1 + c["w_max"]) * c["m1"]
    assert np.all(ratio <= theorems.logdet_ratio_bound(1000, d=10, lam=1.0, M=M))
    tight = theorems.rank_ucb_bound(
        1000,
        L=4,
        d=10,
        lam=1.0,
        delta=0.1,
        m1=c["m1"],
        m2=1.0,
        w_max=c["w_max"],
        logdet_ratio=ratio.max(),
    )
    assert cum[:, -1].max() <= tight <= bound[-1]


# ------------------------------------------------------------- jit / vmap / loop
def _policies(env):
    W3 = np.c_[np.asarray(env.w), 0.3 * np.ones(env.L)]
    return {
        "rank_ucb": RankUCB(items=env.items, w=env.w),
        "rank_ucb_alpha": RankUCB(items=env.items, w=env.w, alpha=2.0, mask=_mask(env)),
        "gen": GenRankUCB(env.items, L=env.L, v0=np.ones(env.d) / 4),
        "window_s3": WindowRankUCB(items=env.items, w=W3, mask=_mask(env)),
        "base_ucb": RankedBaseline(env.items, L=env.L),
        "base_ts": RankedBaseline(env.items, L=env.L, kind="ts"),
        "ts": br.RankTS(items=env.items, w=env.w, mask=_mask(env)),
        "ts_nig": br.RankTS(
            model=br.GaussianLinearUnknownNoise(), items=env.items, w=env.w
        ),
        "ts_window_s3": br.RankTS(items=env.items, w=W3),
    }


def _mask(env):
    m = np.ones(env.K, bool)
    m[[0, 2]] = False
    return m


@pytest.mark.parametrize(
    "name",
    [
        "rank_ucb",
        "rank_ucb_alpha",
        "gen",
        "window_s3",
        "base_ucb",
        "base_ts",
        "ts",
        "ts_nig",
        "ts_window_s3",
    ],
)
def test_every_policy_runs_under_jit_and_vmap(name):
    env = RankingEnv.paper(seed=3, K=7, L=3, d=4, w_max=2.0)
    pol = _policies(env)[name]
    best = float(env.best_value)
    keys = jax.random.split(jax.random.key(0), 3)
    one = jax.jit(lambda k: _run(pol.core, env, 12, k, best))
    reg, state = jax.jit(jax.vmap(lambda k: _run(pol.core, env, 12, k, best)))(keys)
    assert reg.shape == (3, 12) and np.all(np.isfinite(reg)) and np.all(reg >= -1e-9)
    init = pol.core.init()
    for a, b in zip(jax.tree_util.tree_leaves(state), jax.tree_util.tree_leaves(init)):
        assert a.shape == (3,) + b.shape and np.all(np.isfinite(a))
    for r in range(3):  # vmap equals a Python loop over runs, for every policy
        np.testing.assert_allclose(reg[r], one(keys[r])[0], rtol=1e-9, atol=1e-12)


def test_masked_items_never_ranked_and_distinct_lists():
    env = RankingEnv.paper(seed=4, K=6, L=4, d=4, w_max=3.0)
    mask = _mask(env)
    pols = [
        RankUCB(items=env.items, w=env.w, distinct=True, mask=mask),
        GenRankUCB(env.items, L=4, distinct=True, mask=mask),
        WindowRankUCB(items=env.items, w=env.w, distinct=True, mask=mask),
        WindowRankUCB(
            items=env.items, w=np.c_[np.asarray(env.w), np.ones(4)], mask=mask
        ),
        RankedBaseline(env.items, L=4, distinct=True, mask=mask),
        RankedBaseline(env.items, L=4, kind="ts", distinct=True, mask=mask),
    ]
    for p in pols:
        for t in range(12):
            a = p.select()
            assert mask[a].all(), type(p).__name__
            if p.distinct:
                assert len(set(a.tolist())) == 4, type(p).__name__
            p.update(a, np.asarray(env.sample(jax.random.key(t), a)))


# ------------------------------------------------------------------- save / load
@pytest.mark.parametrize(
    "name", ["rank_ucb_alpha", "gen", "window_s3", "base_ucb", "base_ts"]
)
def test_save_load_resumes_identically(name, tmp_path):
    env = RankingEnv.paper(seed=5, K=7, L=3, d=4, w_max=2.0)
    p = _policies(env)[name]
    for t in range(6):
        a = p.select()
        p.update(a, np.asarray(env.sample(jax.random.key(t), a)))
    path = tmp_path / f"{name}.npz"
    p.save(path)
    q = type(p).load(path)
    assert q.t == p.t and type(q) is type(p)
    for t in range(6, 12):
        a, b = p.select(), q.select()
        assert np.array_equal(a, b)
        r = np.asarray(env.sample(jax.random.key(t), a))
        p.update(a, r)
        q.update(b, r)
    for x, y in zip(
        jax.tree_util.tree_leaves(p.state), jax.tree_util.tree_leaves(q.state)
    ):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(p.history()[0], q.history()[0])


def test_load_rejects_another_class(tmp_path):
    env = RankingEnv.paper(seed=5, K=5, L=3, d=4)
    RankUCB(items=env.items, w=env.w).save(tmp_path / "u.npz")
    with pytest.raises(ValueError, match="path"):
        GenRankUCB.load(tmp_path / "u.npz")


# -------------------------------------------------------------------- bad input
def test_bad_updates_raise_and_leave_state_unchanged():
    env = RankingEnv.paper(seed=6, K=5, L=3, d=4, w_max=2.0)
    for p in (
        RankUCB(items=env.items, w=env.w),
        GenRankUCB(env.items, L=3),
        WindowRankUCB(items=env.items, w=env.w),
        RankedBaseline(env.items, L=3, kind="ts"),
    ):
        a = p.select()
        p.update(a, np.zeros(3))
        before = [np.array(x) for x in jax.tree_util.tree_leaves(p.state)]
        bad = [
            (np.array([0, 1]), np.zeros(2), ValueError),  # wrong L
            (np.array([0, 1, 5]), np.zeros(3), ValueError),  # item out of range
            (np.array([0.0, 1.0, 2.0]), np.zeros(3), TypeError),  # float items
            (np.array([0, 1, 2]), np.zeros(2), ValueError),  # rewards shape
            (np.array([0, 1, 2]), np.array([0.0, np.inf, 1.0]), ValueError),
            (np.array([0, 1, 2]), np.array([0.0, 2j, 1.0]), TypeError),
            (np.array([0, 1, 2]), np.array(["a", "b", "c"]), TypeError),
        ]
        for items, rewards, err in bad:
            with pytest.raises(err):
                p.update(items, rewards)
        after = jax.tree_util.tree_leaves(p.state)
        for x, y in zip(before, after):
            np.testing.assert_array_equal(x, y)
        assert len(p.history()[0]) == 1


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda V, w: RankUCB(items=V, w=w, delta=1.5), "delta"),
        (lambda V, w: RankUCB(items=V, w=w, lam=0.0), "lam"),
        (lambda V, w: RankUCB(items=V, w=w, alpha=-1.0), "alpha"),
        (lambda V, w: RankUCB(items=V, w=w, alpha="big"), "alpha"),
        (lambda V, w: RankUCB(items=V, w=w, m2=np.nan), "m2"),
        (lambda V, w: RankUCB(items=V, w=np.ones((3, 2))), "WindowRankUCB"),
        (lambda V, w: RankUCB(items=V, w=w, v0=np.ones(2)), "v0"),
        (lambda V, w: RankUCB(model=object(), items=V, w=w), "model"),
        (lambda V, w: RankUCB(items=None, w=w), "items"),
        (lambda V, w: RankUCB(items=V, w=w, mask=np.zeros(5, bool)), "mask"),
        (lambda V, w: RankUCB(items=V, w=w, seed=1.5), "seed"),
        (lambda V, w: GenRankUCB(V), "L"),
        (lambda V, w: GenRankUCB(V, L=3, m3=-1.0), "m3"),
        (
            lambda V, w: WindowRankUCB(items=V, w=np.ones((3, 2)), distinct=True),
            "distinct",
        ),
        (lambda V, w: WindowRankUCB(items=V), "w"),
        (lambda V, w: RankedBaseline(V, L=3, kind="greedy"), "kind"),
        (lambda V, w: RankedBaseline(V, L=6, distinct=True), "distinct"),
    ],
)
def test_bad_arguments_raise_with_the_argument_named(make, match):
    env = RankingEnv.paper(seed=7, K=5, L=3, d=4, w_max=2.0)
    with pytest.raises((ValueError, TypeError), match=match):
        make(np.asarray(env.items), np.asarray(env.w))


def test_scores_before_select_raises():
    env = RankingEnv.paper(seed=7, K=5, L=3, d=4)
    with pytest.raises(RuntimeError, match="select"):
        RankUCB(items=env.items, w=env.w).scores()
