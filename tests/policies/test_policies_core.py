"""The composed policy core: per-request context, batches, masks, core = class.

References are independent of the code under test: brute force over every list at
small K, the forward DP of :func:`bayesrank.best_list` at K = 50, and a closed-form
ridge solve in NumPy.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bayesrank as br
from bayesrank.model.links import get_link
from bayesrank.policies.parts.context import Context
from bayesrank.posteriors.conjugate import GaussianLinear


class LogisticGaussian(GaussianLinear):
    """GaussianLinear's posterior scored through the logistic link (monotone tables)."""

    link = get_link("logistic")


def _policies(env, **opts):
    """Every policy kind, with the options ``opts`` (distinct, mask)."""
    V, w, L = env.items, np.asarray(env.w), env.L
    W3 = np.c_[w, 0.4 * np.ones(L)]
    out = {
        "ts": lambda: br.RankTS(items=V, w=w, seed=1, **opts),
        "ts_logistic": lambda: br.RankTS(model=LogisticGaussian(), items=V, w=w, seed=1,
                                         **opts),
        "ucb": lambda: br.RankUCB(items=V, w=w, alpha=1.5, **opts),
        "ucb_lemma1": lambda: br.RankUCB(items=V, w=w, **opts),
        "ucb_logistic": lambda: br.RankUCB(V, model=LogisticGaussian(), w=w, **opts),
        "gen": lambda: br.GenRankUCB(V, L=L, alpha=1.5, **opts),
        "window_s2": lambda: br.WindowRankUCB(items=V, w=w[:, None], alpha=1.5,
                                              **opts),
        "base_ucb": lambda: br.RankedBaseline(V, L=L, alpha=1.5, **opts),
        "base_ts": lambda: br.RankedBaseline(V, L=L, kind="ts", seed=2, **opts),
    }
    if not opts.get("distinct"):
        out["ts_window_s3"] = lambda: br.RankTS(items=V, w=W3, seed=1, **opts)
        out["window_s3"] = lambda: br.WindowRankUCB(items=V, w=W3, alpha=1.5, **opts)
    return out


NAMES = list(_policies(br.RankingEnv.paper(seed=0, K=4, L=3, d=3)))
UCB_NAMES = [n for n in NAMES if not n.startswith("ts") and n != "base_ts"]


@pytest.fixture(scope="module")
def env():
    return br.RankingEnv.paper(seed=3, K=6, L=3, d=3, w_max=3.0)


def _train(pol, env, rng, T=12):
    """Play T rounds with random users (v0 = random unit vectors)."""
    for t in range(T):
        v = rng.normal(size=env.d)
        a = pol.select(v0=v)
        pol.update(a, np.asarray(env.with_v0(v).sample(jax.random.key(t), a)), v0=v)


def _list_value(tables, lst, window):
    """Total score of one list under (first, pairs) or window tables."""
    if not window:
        first, pairs = tables
        return float(first[lst[0]]) + sum(
            float(pairs[l - 1, lst[l - 1], lst[l]]) for l in range(1, len(lst))
        )
    S = tables[-1].ndim if len(tables) > 1 else 1
    total = 0.0
    for l, t in enumerate(tables):
        idx = tuple(lst[max(0, l - (S - 1)) : l + 1])
        total += float(t[idx])
    return total


def _brute_best(tables, K, L, mask, distinct, window):
    best = -np.inf
    for lst in itertools.product(np.flatnonzero(mask), repeat=L):
        if distinct and len(set(lst)) < L:
            continue
        best = max(best, _list_value(tables, lst, window))
    return best


@pytest.mark.parametrize("distinct", [False, True])
@pytest.mark.parametrize("name", NAMES)
def test_select_is_the_best_list_of_its_own_scores(env, name, distinct):
    """Per-request v0 and mask: the chosen list attains the brute-force optimum of
    the scores the policy reports, never shows a masked item, and respects
    distinct."""
    makers = _policies(env, distinct=distinct)
    if name not in makers:
        pytest.skip("distinct is not offered for windows of S > 2")
    pol = makers[name]()
    rng = np.random.default_rng(5)
    _train(pol, env, rng)
    window = pol.core.tables.kind == "window"
    for _ in range(4):
        v = rng.normal(size=env.d) * 2
        mask = rng.random(env.K) < 0.7
        mask[rng.choice(env.K, env.L, replace=False)] = True
        items = pol.select(v0=v, mask=mask)
        assert mask[items].all()
        if distinct:
            assert len(set(items.tolist())) == env.L
        tables = pol.scores(v0=v)
        got = _list_value(tables, items, window)
        ref = _brute_best(tables, env.K, env.L, mask, distinct, window)
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["ts", "ucb", "gen", "base_ucb", "ucb_logistic"])
def test_select_equals_the_dp_at_k50(name):
    env = br.RankingEnv.paper(seed=4, K=50, L=4, d=5, w_max=5.0)
    pol = _policies(env)[name]()
    rng = np.random.default_rng(6)
    _train(pol, env, rng, T=20)
    for _ in range(3):
        v = rng.normal(size=env.d)
        mask = rng.random(env.K) < 0.5
        items = pol.select(v0=v, mask=mask)
        first, pairs = pol.scores(v0=v)
        ref_items, ref_value = br.best_list(first, pairs, mask=mask)
        np.testing.assert_allclose(
            _list_value((first, pairs), items, False), float(ref_value), rtol=1e-12
        )
        np.testing.assert_array_equal(items, np.asarray(ref_items))


@pytest.mark.parametrize("shared_mask", [True, False])
@pytest.mark.parametrize("name", UCB_NAMES)
def test_select_batch_equals_row_by_row_select(env, name, shared_mask):
    pol = _policies(env)[name]()
    rng = np.random.default_rng(7)
    _train(pol, env, rng)
    B = 9
    V0 = rng.normal(size=(B, env.d))
    if shared_mask:
        masks = rng.random(env.K) < 0.6
        masks[:2] = True
        rows = [masks] * B
    else:
        masks = rng.random((B, env.K)) < 0.6
        masks[:, :2] = True
        rows = list(masks)
    batch = pol.select_batch(V0, masks)
    assert batch.shape == (B, env.L)
    for b in range(B):
        np.testing.assert_array_equal(batch[b], pol.select(v0=V0[b], mask=rows[b]))
        assert rows[b][batch[b]].all()


def test_ts_batch_makes_one_independent_draw_per_request(env):
    """Each row is the best list under its own draw (brute force over that draw's
    scores), rows differ although the context is the same, and the draws follow the
    posterior (mean and covariance against the closed form, 4,000 draws)."""
    pol = _policies(env)["ts"]()
    # 8 rounds: the learnt noise variance's inverse gamma has shape n/2 = 4, so the
    # draws' sample covariance settles (with n = 3 its variance is infinite)
    _train(pol, env, np.random.default_rng(8), T=8)
    B, v = 4000, np.ones(env.d)
    ctxs = Context(jnp.asarray(np.tile(v, (B, 1))), pol.context().mask)
    _, sel = pol.core.select_batch(jax.random.key(5), pol.state, ctxs)
    theta = np.asarray(sel.params)  # (B, L, p)
    tabs = pol.core.tables
    for b in range(0, B, 400):
        rest = tabs.rest(sel.params[b], pol.state.items)
        first = tabs.first(sel.params[b], pol.state.items, rest, jnp.asarray(v))
        tables = (np.asarray(first), np.asarray(tabs.dense(rest)))
        value = _brute_best(tables, env.K, env.L, np.ones(env.K, bool), False, False)
        got = _list_value(tables, np.asarray(sel.items[b]), False)
        assert got == pytest.approx(value, rel=1e-9, abs=1e-9)
    assert len({tuple(r) for r in np.asarray(sel.items).tolist()}) > 1
    mean = pol.posterior_mean()
    cov = np.asarray(pol.model.covariance(pol.state.model))
    for pos in range(env.L):
        sd = np.sqrt(np.diag(cov[pos]))
        z = (theta[:, pos].mean(0) - mean[pos]) / (sd / np.sqrt(B))
        assert np.abs(z).max() < 4.5
        np.testing.assert_allclose(np.cov(theta[:, pos].T), cov[pos],
                                   atol=0.1 * sd.max() ** 2)
    batch = pol.select_batch(np.tile(v, (16, 1)))  # the class: same path
    assert batch.shape == (16, env.L)


@pytest.mark.parametrize("name", NAMES)
def test_core_and_class_select_the_same_lists(env, name):
    pol, twin = _policies(env)[name](), _policies(env)[name]()
    rng = np.random.default_rng(9)
    state = twin.core.init()
    select, update = jax.jit(twin.core.select), jax.jit(twin.core.update)
    for t in range(15):
        v = rng.normal(size=env.d)
        mask = rng.random(env.K) < 0.8
        mask[:2] = True
        ctx = Context(jax.numpy.asarray(v), jax.numpy.asarray(mask))
        state, sel = select(jax.random.fold_in(jax.random.key(twin.seed), t), state, ctx)
        a = pol.select(v0=v, mask=mask)
        np.testing.assert_array_equal(a, np.asarray(sel.items))
        r = np.array(env.with_v0(v).sample(jax.random.key(t), a))
        r[-1] = np.nan if t % 3 == 0 else r[-1]  # an unobserved last position
        pol.update(a, r, v0=v)
        state = update(state, sel.items, r, ctx)
    ours = jax.tree_util.tree_flatten_with_path(pol.state)[0]
    leaves = {jax.tree_util.keystr(p): np.asarray(v) for p, v in ours}
    for (path, x), y in zip(ours, jax.tree_util.tree_leaves(state)):
        x, y, name = np.asarray(x), np.asarray(y), jax.tree_util.keystr(path)
        if x.dtype.kind != "f":
            np.testing.assert_array_equal(x, y)
            continue
        # two programs: equal up to the last bits (jax 0.4.38 fuses the window
        # features' multiply-adds differently); a compensation term holds the
        # rounding error of its sum, so it is compared at that sum's last bit
        top = np.abs(leaves.get(name[:-3], y) if name.endswith("_lo") else y).max()
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=4 * np.finfo(x.dtype).eps * top)


def test_position_one_posterior_is_ridge_on_each_requests_v0():
    """After updates with per-request v0 (and some unobserved positions), the
    conjugate posterior at every position equals the closed-form ridge solution on
    the observed impressions, position 1 on v_{a^1} + w_1 v0_request."""
    env = br.RankingEnv.paper(seed=1, K=8, L=3, d=4, w_max=3.0)
    w = np.array([2.5, *np.asarray(env.w)[1:]])
    pol = br.RankTS(env.items, model=GaussianLinear(prior_scale=0.7, noise_scale=0.5),
                    w=w, seed=0)
    rng = np.random.default_rng(2)
    n = 60
    lists = rng.integers(0, env.K, size=(n, 3))
    V0 = rng.normal(size=(n, env.d))
    R = rng.normal(size=(n, 3))
    R[rng.random((n, 3)) < 0.2] = np.nan
    pol.update(lists[:20], R[:20], v0=V0[:20])  # a batch
    for i in range(20, n):  # and one at a time
        pol.update(lists[i], R[i], v0=V0[i])
    items = np.asarray(env.items)
    X = [items[lists[:, 0]] + w[0] * V0]
    for l in (1, 2):
        X.append(items[lists[:, l]] + w[l] * items[lists[:, l - 1]])
    for l in range(3):
        seen = np.isfinite(R[:, l])
        Xl, yl = X[l][seen], R[seen, l]
        P = np.eye(env.d) / 0.7**2 + Xl.T @ Xl / 0.25
        ref = np.linalg.solve(P, Xl.T @ yl / 0.25)
        np.testing.assert_allclose(pol.posterior_mean()[l], ref, rtol=1e-8)


def test_a_policy_told_the_wrong_v0_does_not_learn_position_one():
    """Users whose last item varies: fed the true v0 at update, RankTS learns
    theta^1 and position 1's choice; fed v0 = 0 instead, it does not."""
    base = br.RankingEnv.paper(seed=5, K=10, L=2, d=5, w_max=1.0)
    env = br.RankingEnv(base.items, base.theta, np.array([4.0, 0.5]))
    rng = np.random.default_rng(3)
    model = br.GaussianLinear(prior_scale=1.0, noise_scale=1.0)  # as measured below
    right = br.RankTS(model=model, items=env.items, w=env.w, seed=0)
    wrong = br.RankTS(model=model, items=env.items, w=env.w, seed=0)
    regrets = {"right": [], "wrong": []}
    for t in range(400):
        v = np.asarray(env.items)[rng.integers(env.K)]
        e = env.with_v0(v)
        for name, pol, told in (("right", right, v), ("wrong", wrong, np.zeros(5))):
            a = pol.select(v0=v)
            pol.update(a, np.asarray(e.sample(jax.random.key(t), a)), v0=told)
            regrets[name].append(float(e.regret(a)))
    theta1 = np.asarray(env.theta)[0]
    err_right = np.linalg.norm(right.posterior_mean()[0] - theta1)
    err_wrong = np.linalg.norm(wrong.posterior_mean()[0] - theta1)
    assert err_right < 0.15 and err_wrong > 3 * err_right
    late = {k: np.mean(v[-100:]) for k, v in regrets.items()}
    # measured: right 0.09, wrong 0.34 per round over the last 100 rounds
    assert late["right"] < 0.15 and late["wrong"] > 3 * late["right"]


def test_added_items_are_shown_when_best_and_old_posterior_is_unchanged(env):
    pol = br.RankTS(items=env.items, w=np.zeros(env.L), seed=0)
    rng = np.random.default_rng(4)
    lists = rng.integers(0, env.K, size=(30, env.L))
    pol.update(lists, rng.normal(size=(30, env.L)) + 1.0)
    mean_before = pol.posterior_mean().copy()
    theta = mean_before.mean(axis=0)
    star = 50.0 * theta / np.linalg.norm(theta)  # far ahead of every item
    idx = pol.add_items(np.vstack([star, -star, star * 0.5]))
    np.testing.assert_array_equal(idx, [env.K, env.K + 1, env.K + 2])
    assert pol.K == env.K + 3 and pol.state.items.shape[0] == 2 * env.K
    np.testing.assert_array_equal(pol.posterior_mean(), mean_before)
    assert (pol.select() == env.K).all()
    # masked out, the new item is never shown; the capacity's spare rows never are
    mask = np.ones(pol.K, bool)
    mask[env.K] = False
    for _ in range(5):
        a = pol.select(mask=mask)
        assert (a != env.K).all() and (a < pol.K).all()
    pol.update(np.full(env.L, env.K), np.ones(env.L))
    assert pol.history()[0].shape == (31, env.L)


BAD_CONTEXT = [
    ("select", {"v0": np.ones(2)}, ValueError, r"v0: expected shape \(d,\)"),
    ("select", {"v0": np.array([np.nan, 0, 0])}, ValueError, "v0: expected finite"),
    ("select", {"v0": np.array([1j, 0, 0])}, TypeError, "v0: expected real"),
    ("select", {"v0": np.array(["a", "b", "c"])}, TypeError, "v0: expected real"),
    ("select", {"mask": np.ones(5, bool)}, ValueError, "mask: expected a"),
    ("select", {"mask": np.ones(6)}, ValueError, "mask: expected a"),
    ("select", {"mask": np.zeros(6, bool)}, ValueError, "mask: each request needs"),
    ("select_batch", {}, ValueError, "n: expected a positive number"),
    ("select_batch", {"n": 0}, ValueError, "n: expected an integer >= 1"),
    ("select_batch", {"v0": np.ones(3)}, ValueError, r"v0: expected shape \(B, d\)"),
    ("select_batch", {"v0": np.ones((2, 3)), "mask": np.ones((3, 6), bool)},
     ValueError, "mask: expected 2 rows"),
    ("select_batch", {"v0": np.ones((2, 3)), "n": 3}, ValueError, "n: expected 2"),
    ("update", {"items": np.zeros(3, int), "rewards": np.zeros(3), "v0": np.ones(4)},
     ValueError, r"v0: expected shape \(d,\)"),
    ("update", {"items": np.zeros((2, 3), int), "rewards": np.zeros((2, 3)),
                "v0": np.ones((3, 3))}, ValueError, "v0: expected 2 rows"),
    ("update", {"items": np.zeros(3, int), "rewards": np.array([0, np.inf, 0])},
     ValueError, "rewards: expected finite"),
    ("update", {"items": np.zeros(3, int), "rewards": np.array([0, 1j, 0])},
     TypeError, "rewards: expected real"),
    ("scores", {"v0": np.ones(4)}, ValueError, r"v0: expected shape \(d,\)"),
    ("add_items", {"vectors": np.ones((2, 4))}, ValueError, "vectors: expected shape"),
    ("add_items", {"vectors": np.full((1, 3), np.inf)}, ValueError,
     "vectors: expected finite"),
]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("method,kwargs,exc,msg", BAD_CONTEXT)
def test_bad_context_raises_and_leaves_state_unchanged(env, name, method, kwargs, exc,
                                                        msg):
    pol = _policies(env)[name]()
    pol.update(pol.select(), np.zeros(env.L))
    before = [np.asarray(x).copy() for x in jax.tree_util.tree_leaves(pol.state)]
    t, K = pol.t, pol.K
    with pytest.raises(exc, match=msg):
        getattr(pol, method)(**kwargs)
    after = jax.tree_util.tree_leaves(pol.state)
    assert pol.t == t and pol.K == K
    for x, y in zip(before, after):
        np.testing.assert_array_equal(x, np.asarray(y))
