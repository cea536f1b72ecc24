"""Cascade-DR (``cascade_dr``): Open Bandit Pipeline's ``SlateCascadeDoublyRobust`` on
stored cases, exact unbiasedness by enumerating every list a logger can show, the Q
terms of a random target against a brute-force loop over its draws, and the fitted
estimator's mean and spread over click logs against the exact truth and cascade IPS.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bayesrank.ope import UniformLogger, cascade_dr, collect, evaluate
from bayesrank.ope.reward_model import fit_inputs_model, prefix_means
from bayesrank.ope.target import TargetDraws
from bayesrank.simulation import CascadeEnv, DBNEnv, PBMEnv

FIXTURE = Path(__file__).parent / "data" / "obp_cascade_dr.npz"


@pytest.mark.parametrize("case", range(4))
def test_equals_obp_slate_cascade_doubly_robust(case):
    """obp 0.5.7's estimate (scripts/obp_cascade_dr_fixture.py, Python 3.10) from the
    same arrays: q_logged is obp's q_hat at the logged action, q_expected its q_hat
    weighted by the target's action distribution."""
    f = np.load(FIXTURE)
    g = {k.split("_", 1)[1]: f[k] for k in f.files if k.startswith(f"case{case}_")}
    n, L = g["action"].shape
    q_logged = np.take_along_axis(g["q_hat"], g["action"][..., None], axis=2)[..., 0]
    q_expected = (g["q_hat"] * g["action_dist"]).sum(axis=2)
    est = cascade_dr(g["reward"], g["pi_cascade"], g["pscore_cascade"],
                     q_logged=q_logged, q_expected=q_expected)
    assert str(f["obp_version"]) == "0.5.7"
    assert abs(est.estimate - float(g["obp_estimate"])) < 1e-10
    # a deliberate break: the baseline term weighted by w_l instead of w_{l-1}
    w = g["pi_cascade"] / g["pscore_cascade"]
    broken = (w * (g["reward"] - q_logged + q_expected)).sum(axis=1).mean()
    assert abs(broken - float(g["obp_estimate"])) > 1e-3


def _every_list(K, L):
    return np.indices((K,) * L).reshape(L, -1).T


def _expected_clicks(env, lists):
    """E[observed click at l] of each list, written from each model's definition."""
    A = np.asarray(env.attraction, float)[lists]
    if isinstance(env, PBMEnv):
        return np.asarray(env.examination, float) * A
    if isinstance(env, CascadeEnv):
        go = 1 - A
    else:
        go = float(env.gamma) * (1 - A * np.asarray(env.satisfaction, float)[lists])
    reach = np.concatenate([np.ones((len(lists), 1)), np.cumprod(go[:, :-1], 1)], 1)
    return A * reach


@pytest.mark.parametrize("model", ["cascade", "dbn", "pbm"])
def test_unbiased_for_any_q_by_enumeration(model):
    """E[cascade_dr] over every list of an epsilon-greedy logger (its exact
    probability) equals the target's expected clicks to 1e-12, for an arbitrary Q
    (random per prefix) and a random target (a distribution over three lists)."""
    rng = np.random.default_rng(1)
    K, L = 4, 3
    attraction = rng.uniform(0.1, 0.8, K)
    env = {"cascade": CascadeEnv(attraction, L),
           "dbn": DBNEnv(attraction, rng.uniform(0.2, 0.9, K), 0.8, L),
           "pbm": PBMEnv(attraction, 1.0 / np.arange(1, L + 1))}[model]
    lists = _every_list(K, L)
    base = np.array([2, 0, 3])
    p_log = 0.4 / K**L + 0.6 * (lists == base).all(axis=1)
    support = np.array([[1, 2, 3], [1, 3, 0], [2, 0, 1]])
    p_tgt = np.array([0.5, 0.3, 0.2])
    truth = p_tgt @ _expected_clicks(env, support).sum(axis=1)

    def prefix_prob(probs, table, l):
        same = (lists[:, None, : l + 1] == table[None, :, : l + 1]).all(axis=2)
        return same.astype(float) @ probs  # table of lists with probabilities

    ps = np.stack([prefix_prob(p_log, lists, l) for l in range(L)], axis=1)
    pi = np.stack([prefix_prob(p_tgt, support, l) for l in range(L)], axis=1)
    Q = {l: rng.uniform(-1, 2, (K,) * (l + 1)) for l in range(L)}  # Q_l(a^1..a^l)
    q_logged = np.stack([Q[l][tuple(lists[:, : l + 1].T)] for l in range(L)], axis=1)
    q_expected = np.zeros((len(lists), L))
    for l in range(L):  # sum_a pi(a | logged a^1..a^{l-1}) Q_l(a^1..a^{l-1}, a)
        above = pi[:, l - 1] if l else np.ones(len(lists))
        for a in range(K):
            ext = lists.copy()
            ext[:, l] = a
            same = (ext[:, None, : l + 1] == support[None, :, : l + 1]).all(axis=2)
            p_joint = same.astype(float) @ p_tgt
            cond = np.where(above > 0, p_joint / np.where(above > 0, above, 1), 0)
            q_expected[:, l] += cond * Q[l][tuple(ext[:, : l + 1].T)]
    m = _expected_clicks(env, lists)
    w = pi / ps
    w_above = np.concatenate([np.ones((len(lists), 1)), w[:, :-1]], axis=1)
    per_list = (w * (m - q_logged) + w_above * q_expected).sum(axis=1)
    assert abs(p_log @ per_list - truth) < 1e-12
    # the same through cascade_dr: its estimate on rewards m is this expectation
    # when each list is weighted by its probability (rows repeated in proportion)
    est = cascade_dr(m, pi, ps, q_logged=q_logged, q_expected=q_expected)
    assert abs(est.estimate - per_list.mean()) < 1e-12
    # a deliberate break: Q at the logged prefix left out of the correction
    broken = (w * m + w_above * q_expected).sum(axis=1)
    assert abs(p_log @ broken - truth) > 1e-3


class _Mixture:
    """A random target: one of three lists with fixed probabilities, whatever v0."""

    support = np.array([[1, 2, 3], [1, 3, 0], [2, 0, 1]])
    probs = np.array([0.5, 0.3, 0.2])

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)

    def select_batch(self, v0):
        return self.support[self.rng.choice(3, size=len(v0), p=self.probs)]


def test_prefix_means_match_a_loop_over_draws():
    rng = np.random.default_rng(3)
    D = rng.integers(0, 3, (2, 40, 3))
    V = rng.normal(size=(2, 40, 3))
    lists = rng.integers(0, 3, (25, 3))
    inv = rng.integers(0, 2, 25)
    draws = TargetDraws(np.zeros((2, 1)), inv, D, False)
    at, above, at_b, above_b = prefix_means(lists, draws, V, 4)
    for i in range(25):
        g = inv[i]
        for l in range(3):
            for k, (out, out_b) in enumerate(((at, at_b), (above, above_b))):
                depth = l + 1 - k
                same = [j for j in range(40) if (D[g, j, :depth] == lists[i, :depth]).all()]
                want = np.mean(V[g, same, l]) if same else 0.0
                assert out[i, l] == pytest.approx(want, abs=1e-12)
                for b in range(4):
                    sb = [j for j in same if j % 4 == b]
                    wb = np.mean(V[g, sb, l]) if sb else 0.0
                    assert out_b[b, i, l] == pytest.approx(wb, abs=1e-12)


@pytest.fixture(scope="module")
def cascade_logs():
    rng = np.random.default_rng(0)
    K, L, d = 4, 3, 4
    items = np.concatenate([rng.normal(size=(K, d - 1)), np.ones((K, 1))], axis=1)
    theta = np.array([1.0, -0.5, 0.5, -1.0])
    env = CascadeEnv.from_features(items, theta, L)
    logger = UniformLogger(K, L)
    return env, [collect(env, logger, 2000, seed=s) for s in range(20)]


def test_fitted_estimator_is_unbiased_and_no_wider_than_cascade_ips(cascade_logs):
    """On 20 cascade logs (uniform logger, n = 2,000) with a random target: the mean
    of cascade_dr within 3 standard errors of the exact truth, and its spread over
    the logs below cascade IPS's."""
    env, logs = cascade_logs
    target = _Mixture()
    truth = target.probs @ np.asarray(env.expected_reward(target.support))
    est = np.array([evaluate(log, _Mixture(s), ["cascade_ips", "cascade_dr"],
                             n_draws=400).estimate.values
                    for s, log in enumerate(logs)])
    mean, se = est.mean(0), est.std(0, ddof=1) / np.sqrt(len(logs))
    assert abs(mean[1] - truth) < 3 * se[1] + 0.01 * truth
    assert est[:, 1].std() < est[:, 0].std()


def test_evaluate_equals_the_array_function_with_brute_force_q(cascade_logs):
    """evaluate's cascade_dr for a deterministic list equals cascade_dr on Q terms
    computed here: the model's expected clicks from l on of the target's list
    (from dm's predictions through a cascade: E_l q_l, E_l = prod_{j<l} (1 - q_j)),
    where the logged prefix matches the target's."""
    env, logs = cascade_logs
    log = logs[0]
    target = np.array([3, 1, 0])

    class Fixed:
        def select_batch(self, v0):
            return np.tile(target, (len(v0), 1))

    res = evaluate(log, Fixed(), ["dm", "cascade_dr"])
    draws = TargetDraws(np.zeros((1, 4)), np.zeros(log.sizes["round"], np.int64),
                        target[None, None], True)
    m = fit_inputs_model(log["lists"].values, log["rewards"].values, log["v0"].values,
                         draws, log["items"].values, examined=log["examined"].values,
                         feedback="cascade")
    q = np.clip(np.einsum("lp,lp->l", m.feats[0], m.coef), 0, 1)
    E = np.concatenate([[1.0], np.cumprod(1 - q[:-1])])
    V = np.cumsum((E * q)[::-1])[::-1]  # expected clicks from l on
    assert float(res.estimate.sel(estimator="dm")) == pytest.approx((E * q).sum(), abs=1e-10)
    lists = log["lists"].values
    match = np.cumprod(lists == target, axis=1).astype(bool)
    above = np.concatenate([np.ones((len(lists), 1), bool), match[:, :-1]], axis=1)
    pi = match.astype(float)
    want = cascade_dr(log["rewards"].values, pi, log["pscore_cascade"].values,
                      q_logged=match * V, q_expected=above * V)
    got = float(res.estimate.sel(estimator="cascade_dr"))
    assert got == pytest.approx(want.estimate, abs=1e-12)
