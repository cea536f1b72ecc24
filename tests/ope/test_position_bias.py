"""Position bias from click logs (bayesrank.ope.position_bias) against the truth of
PBM logs, against the maximum of the PBM likelihood found by scipy, and its refusals."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy.optimize import minimize

import bayesrank as br
from bayesrank.ope.examination_estimate import _em, _tables
from bayesrank.simulation.click import PBMEnv

EXAM = np.array([1.0, 0.55, 0.35, 0.2])


def _pbm_log(n, seed, *, K=8, exam=EXAM, lists=None, ranker=None):
    """A PBM click log: uniform random lists (or given ones), clicks drawn in NumPy
    from the environment's attraction and examination."""
    rng = np.random.default_rng(seed)
    env = PBMEnv(np.linspace(0.15, 0.85, K), exam)
    L = exam.shape[0]
    if lists is None:
        lists = np.argsort(rng.random((n, K)), axis=1)[:, :L]
    p = np.asarray(env.examination) * np.asarray(env.attraction)[lists]
    clicks = (rng.random(lists.shape) < p).astype(float)
    log = br.ope.as_log(lists=lists, rewards=clicks, v0=np.zeros(1), K=K, feedback="pbm")
    if ranker is not None:
        log["ranker"] = ("round", ranker)
    return log, env


def test_em_is_the_maximum_of_the_pbm_likelihood():
    """EM's fixed point on the tables equals the PBM likelihood's maximum found by
    L-BFGS over (logit theta, logit gamma), up to the scale theta_1 = 1."""
    log, _ = _pbm_log(4000, seed=1)
    N, C = _tables(log["lists"].values, log["rewards"].values, 8)
    theta, gamma = _em(N, C, max_iter=20000, tol=1e-12)

    def nll(z):
        t = 1 / (1 + np.exp(-z[:4]))
        g = 1 / (1 + np.exp(-z[4:]))
        p = np.clip(t[None, :] * g[:, None], 1e-12, 1 - 1e-12)
        return -np.sum(C * np.log(p) + (N - C) * np.log1p(-p))

    best = minimize(nll, np.zeros(12), method="L-BFGS-B", options={"maxiter": 20000,
                                                                     "ftol": 1e-15,
                                                                     "gtol": 1e-10})
    t = 1 / (1 + np.exp(-best.x[:4]))
    np.testing.assert_allclose(theta, t / t[0], atol=2e-3)


def test_em_recovers_the_examination_of_a_pbm_log():
    log, env = _pbm_log(30000, seed=2)
    est = br.ope.position_bias(log, n_boot=40)
    assert list(est.position.values) == [1, 2, 3, 4]
    np.testing.assert_allclose(est["examination"].values, EXAM, atol=0.04)
    assert est["examination"].values[0] == 1.0
    assert np.all(est["ci_low"].values <= est["examination"].values + 1e-12)
    assert np.all(est["examination"].values <= est["ci_high"].values + 1e-12)
    # the attraction on the same scale (theta_1 = 1 here): the environment's
    np.testing.assert_allclose(est["attraction"].values, env.attraction, atol=0.05)


def _two_rankers(n, seed):
    """Two deterministic rankers, each a fixed list with its items rotated one
    position: every item ranker A shows at k, ranker B shows at position 1 for some
    row (B's lists are A's with the item at k moved to the top)."""
    L, K = 4, 8
    rng = np.random.default_rng(seed)
    base = np.arange(L)
    a = np.tile(base, (n, 1))
    b = np.stack([np.roll(base, -j) for j in rng.integers(0, L, n)])
    return a, b


def test_harvesting_two_rankers_recovers_the_examination():
    a, b = _two_rankers(30000, seed=3)
    log_a, _ = _pbm_log(0, seed=4, lists=a)
    log_b, _ = _pbm_log(0, seed=5, lists=b)
    est = br.ope.position_bias([log_a, log_b], method="harvest", n_boot=40)
    np.testing.assert_allclose(est["examination"].values, EXAM, atol=0.04)
    assert est.attrs["rankers"] == 2 and "attraction" not in est
    # the same rows in one log with a ranker variable give the same estimate
    both = xr.concat([log_a, log_b], dim="round")
    both["ranker"] = ("round", np.repeat([0, 1], 30000))
    one = br.ope.position_bias(both, method="harvest", n_boot=5)
    np.testing.assert_allclose(one["examination"].values, est["examination"].values)


def test_the_estimate_feeds_pbmucb():
    log, env = _pbm_log(20000, seed=6)
    est = br.ope.position_bias(log, n_boot=10)
    policy = br.PBMUCB(8, L=4, examination=est["examination"].values)
    assert policy.select().shape == (4,)


def _cascade_log():
    r = np.array([[0.0, 1.0, np.nan, np.nan], [0.0, 0.0, 0.0, 0.0]])
    return br.ope.as_log(lists=np.array([[0, 1, 2, 3], [4, 5, 6, 7]]), rewards=r, K=8,
                         v0=np.zeros(1),
                         feedback="cascade")


def _fixed_ranker():
    lists = np.tile(np.arange(4), (500, 1))
    return _pbm_log(0, seed=7, lists=lists)[0]


BAD = {
    "cascade log": (lambda: _cascade_log(), {}, ValueError, "PBM click logs"),
    "clicks not 0/1": (lambda: br.ope.as_log(lists=np.tile(np.arange(4), (3, 1)),
                                             rewards=np.full((3, 4), 2.0), K=8,
                                             v0=np.zeros(1)),
                       {}, ValueError, "clicks in"),
    "method": (lambda: _pbm_log(50, 0)[0], {"method": "regression"}, ValueError,
               "method"),
    "level": (lambda: _pbm_log(50, 0)[0], {"level": 1.5}, ValueError, "level"),
    "n_boot": (lambda: _pbm_log(50, 0)[0], {"n_boot": 0}, ValueError, "n_boot"),
    "not a log": (lambda: np.zeros((3, 4)), {}, TypeError, "logs"),
    "different K": (lambda: [_pbm_log(50, 0)[0], _pbm_log(50, 1, K=9)[0]], {},
                    ValueError, "same K"),
    "one ranker to harvest": (lambda: _pbm_log(500, 0)[0], {"method": "harvest"},
                              ValueError, "two or more rankers"),
    "fixed ranker to EM": (_fixed_ranker, {}, ValueError, "not identified"),
    "one ranker label": (lambda: _pbm_log(50, 0, ranker=np.zeros(50))[0],
                     {"method": "harvest"}, ValueError, "two or more"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_refused_naming_the_argument(case):
    make, kwargs, exc, match = BAD[case]
    with pytest.raises(exc, match=match):
        br.ope.position_bias(make(), **kwargs)


@pytest.mark.heavy
def test_em_accuracy_and_coverage_over_20_logs_of_100000():
    """Within 0.02 of the true examination at n = 100,000, and the 90 % intervals
    cover at about the nominal rate over 20 logs (4 positions' worth: 60 intervals
    below the top)."""
    errs, covered = [], []
    for seed in range(20):
        log, _ = _pbm_log(100_000, seed=100 + seed)
        est = br.ope.position_bias(log, n_boot=200, seed=seed)
        e = est["examination"].values
        errs.append(np.abs(e - EXAM).max())
        covered += list((est["ci_low"].values[1:] <= EXAM[1:])
                        & (EXAM[1:] <= est["ci_high"].values[1:]))
    assert max(errs) <= 0.02, errs
    assert 0.8 <= np.mean(covered) <= 1.0, np.mean(covered)


@pytest.mark.heavy
def test_harvesting_accuracy_and_coverage_over_20_pairs_of_logs():
    """Two rankers, 50,000 rows each, 20 times: within 0.02 of the truth, and the 90 %
    intervals cover at about the nominal rate (60 intervals below the top; 3 binomial
    sd below 0.9 is 0.78)."""
    errs, covered = [], []
    for seed in range(20):
        a, b = _two_rankers(50_000, 200 + seed)
        la, _ = _pbm_log(0, 300 + seed, lists=a)
        lb, _ = _pbm_log(0, 400 + seed, lists=b)
        est = br.ope.position_bias([la, lb], method="harvest", n_boot=200, seed=seed)
        errs.append(np.abs(est["examination"].values - EXAM).max())
        covered += list((est["ci_low"].values[1:] <= EXAM[1:])
                        & (EXAM[1:] <= est["ci_high"].values[1:]))
    assert max(errs) <= 0.02, errs
    assert 0.78 <= np.mean(covered) <= 1.0, np.mean(covered)
