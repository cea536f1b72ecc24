"""The direct method and pair_dr: the fit against scikit-learn's Ridge, the value
against a hand computation, consistency under the identity link (any w), the
doubly robust property under a misspecified model, and RMSE against pair IPS on
logs whose truth is exact."""

import numpy as np
import pytest
from sklearn.linear_model import Ridge

import bayesrank as br
from bayesrank.ope import (
    UniformLogger,
    as_log,
    collect,
    dm,
    evaluate,
    fit_reward_model,
    pair_dr,
    pair_ips,
)

K, L, D = 8, 3, 5
TARGET = np.array([1, 2, 3])
N_LOGS, N = 20, 4000


class FixedList:
    def __init__(self, lst):
        self.lst = np.asarray(lst)

    def select_batch(self, v0, *, n=None):
        return np.tile(self.lst, (np.shape(v0)[0], 1))


@pytest.fixture(scope="module")
def env():
    return br.RankingEnv.paper(seed=0, K=K, L=L, d=D, w_max=5.0)


@pytest.fixture(scope="module")
def logs(env):
    big = collect(env, UniformLogger(K, L), N * N_LOGS, seed=11)  # one JAX call
    return [big.isel(round=slice(i * N, (i + 1) * N)) for i in range(N_LOGS)]


@pytest.fixture(scope="module")
def results(logs):
    return [evaluate(log, FixedList(TARGET), ["dm", "pair_ips", "pair_dr"]) for log in logs]


def _pair_features(items, lists, v0s):
    cur = items[lists]
    prev = np.concatenate([v0s[:, None, :], cur[:, :-1]], axis=1)
    return np.concatenate([cur, prev], axis=-1)


def test_fit_equals_sklearn_ridge_with_the_same_prior():
    rng = np.random.default_rng(0)
    items = rng.normal(size=(6, 3))
    n = 400
    lists = rng.integers(0, 6, (n, L))
    v0s = rng.normal(size=(4, 3))[rng.integers(0, 4, n)]  # a few distinct contexts
    rewards = rng.normal(size=(n, L))
    rewards[::3, 1] = np.nan  # skipped by the fit
    m = fit_reward_model(lists, rewards, v0s, items, ridge=2.5)
    x = _pair_features(items, lists, v0s)
    for l in range(L):
        ok = ~np.isnan(rewards[:, l])
        ref = Ridge(alpha=2.5, fit_intercept=False, solver="cholesky")
        ref.fit(x[ok, l], rewards[ok, l])
        np.testing.assert_allclose(m.coef[l], ref.coef_, atol=1e-10)
        A = x[ok, l].T @ x[ok, l] + 2.5 * np.eye(6)
        np.testing.assert_allclose(m.precision_inv[l], np.linalg.inv(A), atol=1e-12)
    np.testing.assert_allclose(m.predict(lists, v0s), np.einsum("nlp,lp->nl", x, m.coef))


def test_dm_value_equals_the_hand_computation():
    rng = np.random.default_rng(1)
    items = rng.normal(size=(5, 2))
    n = 300
    lists = rng.integers(0, 5, (n, L))
    v0s = rng.normal(size=(n, 2))
    rewards = rng.normal(size=(n, L))
    coef = fit_reward_model(lists, rewards, v0s, items).coef
    target = np.array([4, 0, 4])
    # deterministic: mean over rounds of sum_l <coef_l, (v_{b^l}, v_{b^{l-1}})>
    hand = np.mean([
        coef[0] @ np.r_[items[4], v0s[i]] + coef[1] @ np.r_[items[0], items[4]]
        + coef[2] @ np.r_[items[4], items[0]] for i in range(n)
    ])
    est = dm(lists, rewards, v0s, items, np.tile(target, (n, 1)))
    assert est.estimate == pytest.approx(hand, rel=1e-12)
    assert est.ci_low < est.estimate < est.ci_high
    # m draws per round: the mean of the draws' predicted totals
    draws = rng.integers(0, 5, (n, 7, L))
    xd = _pair_features(items, draws.reshape(-1, L), np.repeat(v0s, 7, axis=0))
    hand = np.einsum("nlp,lp->n", xd, coef).mean()
    got = dm(lists, rewards, v0s, items, draws).estimate
    assert got == pytest.approx(hand, rel=1e-12)


def test_dm_through_evaluate_matches_dm_and_a_random_target(logs, env):
    log = logs[0]
    items = np.asarray(env.items, float)
    res = evaluate(log, FixedList(TARGET), ["dm"])
    ref = dm(log.lists.values, log.rewards.values, log.v0.values, items,
             np.tile(TARGET, (log.sizes["round"], 1)))
    np.testing.assert_allclose(float(res.estimate.item()), ref.estimate, rtol=1e-12)
    np.testing.assert_allclose(float(res.stderr.item()), ref.stderr, rtol=1e-12)


def test_dm_is_consistent_under_the_identity_link_whatever_w(env, results):
    # Eq. 1 with the identity link is linear in the pair features for any w, so the
    # fitted model is correctly specified: DM's interval covers the exact truth
    truth = float(env.expected_reward(TARGET))
    assert np.abs(np.asarray(env.w)).max() > 2
    est = np.array([float(r.estimate.sel(estimator="dm")) for r in results])
    se = np.array([float(r.stderr.sel(estimator="dm")) for r in results])
    assert np.mean(np.abs(est - truth) < 3 * se) >= 0.9
    assert abs(est.mean() - truth) < 3 * se.mean() / np.sqrt(len(est))
    # the stderr is the sd of the estimate over logs (ratio within chi-square noise)
    assert 0.7 < est.std(ddof=1) / se.mean() < 1.4


def test_pair_dr_covers_the_truth_and_beats_pair_ips(env, results):
    truth = float(env.expected_reward(TARGET))
    z = {}
    err = {}
    for name in ("pair_ips", "pair_dr"):
        e = np.array([float(r.estimate.sel(estimator=name)) for r in results])
        se = np.array([float(r.stderr.sel(estimator=name)) for r in results])
        z[name], err[name] = (e - truth) / se, e - truth
    assert np.mean(np.abs(z["pair_dr"]) < 3) >= 0.9, z["pair_dr"]
    rmse = {k: np.sqrt(np.mean(v**2)) for k, v in err.items()}
    assert rmse["pair_dr"] < 0.7 * rmse["pair_ips"], rmse


def test_pair_dr_is_unbiased_under_a_misspecified_model():
    """Rewards from an arbitrary table of pairs that the linear model cannot fit:
    DM is biased, pair_dr is not (its propensities are exact)."""
    rng = np.random.default_rng(5)
    Kq, n_logs, n = 6, 30, 3000
    items = rng.normal(size=(Kq, 2))
    table = rng.uniform(0, 1, size=(L, Kq + 1, Kq))  # mean of (prev, cur); row Kq: v0
    target = np.array([0, 5, 0])
    table[[0, 1, 2], [Kq, 0, 5], [0, 5, 0]] += 5.0  # a bump on the target's pairs only
    truth = table[0, Kq, 0] + table[1, 0, 5] + table[2, 5, 0]
    logger = UniformLogger(Kq, L)
    lists = logger.sample(rng, np.zeros((n * n_logs, 2)))
    prev = np.c_[np.full(len(lists), Kq), lists[:, :-1]]
    rewards = table[np.arange(L), prev, lists] + rng.normal(size=lists.shape)
    ests = {"dm": [], "pair_dr": [], "se_dr": [], "se_dm": []}
    for i in range(n_logs):
        rows = slice(i * n, (i + 1) * n)
        log = as_log(lists[rows], rewards[rows], np.zeros(2),
                     **logger.propensities(lists[rows]), items=items)
        r = evaluate(log, FixedList(target), ["dm", "pair_dr"])
        ests["dm"].append(float(r.estimate.sel(estimator="dm")))
        ests["pair_dr"].append(float(r.estimate.sel(estimator="pair_dr")))
        ests["se_dm"].append(float(r.stderr.sel(estimator="dm")))
        ests["se_dr"].append(float(r.stderr.sel(estimator="pair_dr")))
    dm_bias = np.mean(ests["dm"]) - truth
    dr_bias = np.mean(ests["pair_dr"]) - truth
    assert abs(dm_bias) > 10 * np.mean(ests["se_dm"]), (dm_bias, truth)
    assert abs(dr_bias) < 3 * np.mean(ests["se_dr"]) / np.sqrt(n_logs), (dr_bias, truth)


def _pair_dr_reference(r, pi, ps, ql, qt, sn):
    obs = ~np.isnan(r)
    w = pi / ps
    e = np.where(obs, r - ql, 0.0)
    if sn:
        corr = (w * e).sum(0) / w.sum(0)
        c = (qt + w * (e - corr) / w.mean(0)).sum(1)
        est = qt.mean(0).sum() + corr.sum()
    else:
        c = (qt + w * e).sum(1)
        est = c.mean()
    return est, c.std(ddof=1) / np.sqrt(len(c))


@pytest.mark.parametrize("sn", [False, True])
def test_pair_dr_equals_the_numpy_formula(sn):
    rng = np.random.default_rng(2)
    n = 50
    r = rng.normal(size=(n, L))
    r[::4, 2] = np.nan
    pi = rng.uniform(0, 1, (n, L))
    ps = rng.uniform(0.1, 1, (n, L))
    ql, qt = rng.normal(size=(n, L)), rng.normal(size=(n, L))
    got = pair_dr(r, pi, ps, q_logged=ql, q_target=qt, self_normalised=sn)
    est, se = _pair_dr_reference(r, pi, ps, ql, qt, sn)
    assert got.estimate == pytest.approx(est, rel=1e-12)
    assert got.stderr == pytest.approx(se, rel=1e-12)
    # with a zero model, plain pair_dr is pair IPS
    if not sn:
        z = np.zeros((n, L))
        assert pair_dr(r, pi, ps, q_logged=z, q_target=z).estimate == pytest.approx(
            pair_ips(r, pi, ps).estimate, rel=1e-12)


def _random_target_truth(env, probs):
    """Exact value of a target drawing each position independently from probs (L, K)."""
    import itertools

    every = np.array(list(itertools.product(range(K), repeat=L)))
    p = np.prod(probs[np.arange(L), every], axis=1)
    return float(p @ np.asarray(env.expected_reward(every)))


class SoftmaxTarget:
    """A random target: independent per-position draws from probs (L, K)."""

    def __init__(self, probs, seed=0):
        self.probs = probs
        self.rng = np.random.default_rng(seed)

    def select_batch(self, v0, *, n=None):
        m = np.shape(v0)[0]
        u = self.rng.random((m, L, 1))
        return np.minimum((u > np.cumsum(self.probs, axis=1)[None]).sum(axis=2), K - 1)


def test_dm_and_pair_dr_with_a_random_target(env, logs):
    probs = np.full((L, K), 0.02)
    probs[np.arange(L), TARGET] = 1 - 0.02 * (K - 1)
    truth = _random_target_truth(env, probs)
    res = [evaluate(log, SoftmaxTarget(probs, seed=i), ["dm", "pair_dr"], n_draws=4000)
           for i, log in enumerate(logs[:8])]
    for name in ("dm", "pair_dr"):
        e = np.array([float(r.estimate.sel(estimator=name)) for r in res])
        se = np.array([float(r.stderr.sel(estimator=name)) for r in res])
        mc = np.array([float(r.mc_stderr.sel(estimator=name)) for r in res])
        assert (mc > 0).all()
        tot = np.sqrt(se**2 + mc**2)
        assert np.mean(np.abs(e - truth) < 3 * tot) >= 0.75, (name, e, truth)


def test_dm_needs_the_item_vectors(logs):
    log = logs[0].drop_vars("items")
    with pytest.raises(ValueError, match="^items:"):
        evaluate(log, FixedList(TARGET), ["dm"])
    res = evaluate(log, FixedList(TARGET), ["dm"], items=logs[0]["items"].values)
    ref = evaluate(logs[0], FixedList(TARGET), ["dm"])
    assert float(res.estimate.item()) == float(ref.estimate.item())
