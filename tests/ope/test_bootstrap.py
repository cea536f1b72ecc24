"""Bootstrap intervals: the vectorised resampling equals a plain loop over resampled
logs (the IPS formulas and scikit-learn's weighted Ridge for dm), agrees with the
normal interval on a large log, covers the truth at about the nominal rate, and is
reproducible from its seed."""

import numpy as np
import pytest
from sklearn.linear_model import Ridge

import bayesrank as br
from bayesrank.ope import UniformLogger, collect, evaluate

K, L = 6, 3
TARGET = np.array([1, 2, 3])


class FixedList:
    def __init__(self, lst):
        self.lst = np.asarray(lst)

    def select_batch(self, v0, *, n=None):
        return np.tile(self.lst, (np.shape(v0)[0], 1))


@pytest.fixture(scope="module")
def env():
    return br.RankingEnv.paper(seed=3, K=K, L=L, d=4, w_max=3.0)


@pytest.fixture(scope="module")
def big(env):
    return collect(env, UniformLogger(K, L), 40_000, seed=5)


def _features(items, lists, v0s):
    cur = items[lists]
    prev = np.concatenate([v0s[:, None, :], cur[:, :-1]], axis=1)
    return np.concatenate([cur, prev], axis=-1)


@pytest.mark.parametrize("sn", [False, True])
def test_vectorised_bootstrap_equals_a_loop_over_resamples(big, sn):
    log = big.isel(round=slice(0, 400))
    n, n_boot, seed = 400, 60, 9
    res = evaluate(log, FixedList(TARGET), ci="bootstrap", n_boot=n_boot, seed=seed,
                   self_normalised=sn)
    # the same resamples, drawn as the documented index matrix, one replicate at a time
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    a, r = log.lists.values, log.rewards.values
    v0s, items = log.v0.values, log["items"].values
    agree = a == TARGET
    pi = {"position": agree * 1.0, "cascade": np.cumprod(agree, axis=1) * 1.0,
          "pair": np.c_[agree[:, :1], agree[:, 1:] & agree[:, :-1]] * 1.0}
    pi["list"] = np.repeat(pi["cascade"][:, -1:], L, axis=1)
    ps = {e: log[f"pscore_{e}"].values for e in ("position", "pair", "cascade")}
    ps["list"] = np.repeat(log.pscore_list.values[:, None], L, axis=1)
    x = _features(items, a, v0s)
    xt = _features(items, np.tile(TARGET, (n, 1)), v0s)
    reps = {name: [] for name in res.estimator.values}
    for j in range(n_boot):
        rows = idx[j]
        for e in ("list", "position", "cascade", "pair"):
            w = pi[e][rows] / ps[e][rows]
            wr = w * r[rows]
            den = w.sum(0)  # a resample without the target's list: SNIPS gives 0 there
            sn_est = np.sum(wr.sum(0)[den > 0] / den[den > 0])
            reps[f"{e}_ips"].append(sn_est if sn else wr.sum(1).mean())
        cnt = np.bincount(rows, minlength=n)
        coef = np.array([Ridge(alpha=1.0, fit_intercept=False, solver="cholesky")
                         .fit(x[:, l], r[:, l], sample_weight=cnt).coef_ for l in range(L)])
        reps["dm"].append(np.einsum("nlp,lp->n", xt[rows], coef).mean())
    # pair_dr holds the full log's model fixed
    coef = np.array([Ridge(alpha=1.0, fit_intercept=False, solver="cholesky")
                     .fit(x[:, l], r[:, l]).coef_ for l in range(L)])
    ql, qt = np.einsum("nlp,lp->nl", x, coef), np.einsum("nlp,lp->nl", xt, coef)
    w = pi["pair"] / ps["pair"]
    for j in range(n_boot):
        rows = idx[j]
        wj, e_j = w[rows], r[rows] - ql[rows]
        corr = (wj * e_j).sum(0) / wj.sum(0) if sn else (wj * e_j).mean(0)
        reps["pair_dr"].append(qt[rows].mean(0).sum() + corr.sum())
    for name, v in reps.items():
        lo, hi = np.quantile(v, [0.025, 0.975])
        got = res.sel(estimator=name)
        np.testing.assert_allclose([float(got.ci_low), float(got.ci_high)], [lo, hi],
                                   rtol=1e-9, err_msg=name)


def test_bootstrap_agrees_with_the_normal_interval_on_a_large_log(big):
    names = ["dm", "cascade_ips", "pair_ips", "pair_dr"]
    normal = evaluate(big, FixedList(TARGET), names)
    boot = evaluate(big, FixedList(TARGET), names, ci="bootstrap", n_boot=1000, seed=1)
    np.testing.assert_array_equal(boot.estimate, normal.estimate)
    np.testing.assert_array_equal(boot.stderr, normal.stderr)
    half = (normal.ci_high - normal.ci_low).values / 2
    for v in ("ci_low", "ci_high"):
        assert np.all(np.abs(boot[v] - normal[v]).values < 0.12 * half), (v, boot, normal)
    assert boot.attrs["ci"] == "bootstrap" and boot.attrs["n_boot"] == 1000


def test_bootstrap_covers_the_truth_at_about_the_nominal_rate(env, big):
    truth = float(env.expected_reward(TARGET))
    n, n_logs = 1000, 40
    names = ["dm", "pair_ips", "pair_dr"]
    hits = []
    for i in range(n_logs):
        log = big.isel(round=slice(i * n, (i + 1) * n))
        res = evaluate(log, FixedList(TARGET), names, ci="bootstrap", n_boot=300, seed=i)
        hits.append(((res.ci_low < truth) & (truth < res.ci_high)).values)
    coverage = np.mean(hits, axis=0)
    assert np.all((coverage >= 0.85) & (coverage <= 1.0)), dict(zip(names, coverage))


def test_bootstrap_is_reproducible_from_its_seed(big):
    log = big.isel(round=slice(0, 2000))
    a = evaluate(log, FixedList(TARGET), ci="bootstrap", n_boot=200, seed=4)
    b = evaluate(log, FixedList(TARGET), ci="bootstrap", n_boot=200, seed=4)
    c = evaluate(log, FixedList(TARGET), ci="bootstrap", n_boot=200, seed=5)
    assert a.identical(b)
    assert not np.array_equal(a.ci_low.values, c.ci_low.values)
