"""Click logs (issue 61): the examined mask and the declared feedback model in a log,
and dm / pair_dr under a cascade against the exact truth."""

import itertools

import numpy as np
import pytest

import bayesrank as br
from bayesrank.ope import as_log
from bayesrank.ope.examination import exam_value, valid_examination
from bayesrank.simulation import CascadeEnv

A = np.array([0.6, 0.3, 0.15, 0.05])  # attraction of K = 4 items, L = 2
K, L = 4, 2


class _Fixed:
    """A deterministic target showing one list."""

    K, L = K, L

    def __init__(self, lst):
        self.lst = np.asarray(lst)

    def select_batch(self, v0):
        return np.tile(self.lst, (len(v0), 1))


def _brute_truth(lst) -> float:
    """P(at least one click) by walking every combination of attraction coins."""
    total = 0.0
    for coins in itertools.product((0, 1), repeat=len(lst)):
        p = np.prod([A[a] if c else 1 - A[a] for a, c in zip(lst, coins)])
        total += p * any(coins)  # the cascade clicks the first attractive item
    return total


def _cascade_log(n, seed):
    env = CascadeEnv(A, L, items=np.eye(K))
    return br.ope.collect(env, br.ope.UniformLogger(K, L), n, seed=seed)


def test_collect_fills_examined_and_feedback():
    log = _cascade_log(200, 0)
    assert log.attrs["feedback"] == "cascade"
    r = log["rewards"].values
    assert np.array_equal(log["examined"].values, ~np.isnan(r))
    assert br.ope.check_log(log) is log


def test_exam_value_derivatives_match_finite_differences():
    rng = np.random.default_rng(0)
    q, c1, c0 = rng.uniform(0.1, 0.9, (3, 4))
    _, _, dq, dc1, dc0 = exam_value(q, c1, c0)
    for x, d, i in ((q, dq, 0), (c1, dc1, 1), (c0, dc0, 2)):
        for l in range(4):
            args = [q.copy(), c1.copy(), c0.copy()]
            args[i][l] += 1e-6
            num = (exam_value(*args)[0] - exam_value(q, c1, c0)[0]) / 1e-6
            assert num == pytest.approx(d[l], abs=1e-5)


def test_dm_and_pair_dr_unbiased_under_a_cascade_against_the_exact_truth():
    target = [2, 1]  # the target's items are less attractive than the average list's
    truth = _brute_truth(target)
    assert truth == pytest.approx(1 - (1 - A[2]) * (1 - A[1]))
    new, old = {"dm": [], "pair_dr": []}, {"dm": [], "pair_dr": []}
    for seed in range(4):
        log = _cascade_log(20_000, seed)
        legacy = log.drop_vars("examined")
        legacy.attrs.pop("feedback")  # as before: a NaN taken as missing at random
        for out, lg in ((new, log), (old, legacy)):
            res = br.ope.evaluate(lg, _Fixed(target), estimators=("dm", "pair_dr"),
                                  deterministic=True)
            for k in out:
                out[k].append(float(res["estimate"].sel(estimator=k)))
    for k in new:
        # band: 4 Monte Carlo stderr of the mean of 4 logs (the sd over logs is below
        # 0.006 for dm, 0.015 for pair_dr at n = 20,000), plus 0.005 for the ridge
        band = 4 * (0.006 if k == "dm" else 0.015) / 2 + 0.005
        assert abs(np.mean(new[k]) - truth) < band, (k, np.mean(new[k]), truth)
        assert np.mean(old[k]) - truth > 0.04, (k, np.mean(old[k]), truth)  # +14 %


def _r(*rows):
    return np.array(rows, float)


N = np.nan
BAD = [  # (rewards, examined, feedback, error, message start)
    (_r([1, 0]), [[True, False]], None, ValueError, "examined, rewards: round 0 has reward 0.0 at position 1, which it did not examine"),
    (_r([0, N]), [[True, True]], None, ValueError, "examined, rewards: round 0 examines position 1 but its reward is NaN"),
    (_r([0, 0, 0]), [[True, False, True]], "cascade", ValueError, "examined: round 0 examines position 2 below an unexamined position"),
    (_r([1, 1]), None, "cascade", ValueError, "rewards: round 0 has a click at position 1 below its first click at position 0"),
    (_r([1, 0]), None, "cascade", ValueError, "rewards: round 0 has a reward at position 1 below its first click at position 0"),
    (_r([N, 0]), None, "cascade", ValueError, "examined, rewards: round 0 examines position 0 but its reward is NaN"),
    (_r([0.5, 0]), None, "cascade", ValueError, "rewards: feedback 'cascade' reads clicks (1) and non-clicks (0), got 0.5"),
    (_r([0, N]), None, "full", ValueError, "rewards: NaN in round 0 at position 1, but under feedback 'full'"),
    (_r([0, 0]), [[True, False]], "full", ValueError, "examined, feedback: round 0 does not examine position 1"),
    (_r([0, 1]), [[True, True]], "pbm", ValueError, "examined: under feedback 'pbm' examination is latent"),
    (_r([0, N]), None, "pbm", ValueError, "rewards: NaN in round 0 at position 1, but under feedback 'pbm'"),
    (_r([0, 0]), None, "dcm", ValueError, "feedback: expected one of ['full', 'cascade', 'pbm'], got 'dcm'"),
    (_r([0, 0]), [[True]], None, ValueError, "examined: expected shape (1, 2) (as lists), got (1, 1)"),
    (_r([0, 0]), [["a", "b"]], None, TypeError, "examined: expected a bool mask, got dtype <U1"),
    (_r([0, 0]), [[1, 2]], None, ValueError, "examined: expected True/False (or 1/0), got 2"),
]


@pytest.mark.parametrize("rewards, examined, feedback, err, msg", BAD,
                         ids=[m[:40] for *_, m in BAD])
def test_as_log_refuses_an_examination_that_contradicts_the_rewards(
        rewards, examined, feedback, err, msg):
    with pytest.raises(err) as info:
        as_log(np.zeros(rewards.shape, np.int64), rewards, np.zeros(2),
               examined=examined, feedback=feedback)
    assert str(info.value).startswith(msg), str(info.value)


@pytest.mark.parametrize("rewards, examined, feedback, err, msg", BAD[:6],
                         ids=[m[:40] for *_, m in BAD[:6]])
def test_check_log_refuses_a_tampered_examination(rewards, examined, feedback, err, msg):
    log = as_log(np.zeros(rewards.shape, np.int64), np.zeros(rewards.shape),
                 np.zeros(2))
    log["rewards"] = (("round", "position"), rewards)
    if examined is not None:
        log["examined"] = (("round", "position"), np.asarray(examined))
    if feedback is not None:
        log.attrs["feedback"] = feedback
    with pytest.raises(err, match="^" + msg[:30].replace("(", r"\(").replace(")", r"\)")):
        br.ope.check_log(log)


def test_dcm_style_mask_accepted_and_continuation_defaults():
    r = _r([1, 1, N], [0, 0, 0])
    ex, fb = valid_examination(r, [[True, True, False], [True, True, True]], None)
    assert fb == "cascade" and ex.dtype == bool
    assert valid_examination(_r([0, 1]), None, None) == (None, None)
