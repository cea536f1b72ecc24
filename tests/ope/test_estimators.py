"""Estimators: unbiasedness against the exact value of a fixed list, the bias of
position IPS when w != 0, formulas recomputed with NumPy here, and a frozen RankTS."""

import itertools

import jax
import numpy as np
import pytest

import bayesrank as br
from bayesrank.ope import (
    DEFAULT_ESTIMATORS,
    ESTIMATORS,
    UniformLogger,
    cascade_ips,
    collect,
    evaluate,
    list_ips,
    pair_ips,
    position_ips,
    target_probabilities,
    true_value,
)

K, L, N = 8, 3, 20_000
TARGET = np.array([1, 2, 3])
SEEDS = range(5)


class FixedList:
    """A deterministic target showing the same list to every request; never updated."""

    def __init__(self, lst):
        self.lst = np.asarray(lst)

    def select_batch(self, v0, *, n=None):
        return np.tile(self.lst, (np.shape(v0)[0], 1))

    def update(self, *a, **k):
        raise AssertionError("evaluation must not update the target")


class UniformTarget:
    """A random target: uniform lists from its own generator (exact pi = 1/K^...)."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)

    def select_batch(self, v0, *, n=None):
        return self.rng.integers(0, K, (np.shape(v0)[0], L))


@pytest.fixture(scope="module")
def env():
    e = br.RankingEnv.paper(seed=0, K=K, L=L, d=5, w_max=5.0)
    assert np.abs(np.asarray(e.w)).min() > 0.5  # the neighbour effect is real
    return e


@pytest.fixture(scope="module")
def logs(env):
    return [collect(env, UniformLogger(K, L), N, seed=s) for s in SEEDS]


@pytest.fixture(scope="module")
def results(logs):
    return [evaluate(log, FixedList(TARGET)) for log in logs]


def truth(env):
    return float(np.sum(np.asarray(env.position_means(TARGET))))


def _z(res, name, value):
    r = res.sel(estimator=name)
    return float((r.estimate - value) / r.stderr)


@pytest.mark.parametrize("name", ["pair_ips", "list_ips", "cascade_ips"])
def test_unbiased_estimators_cover_the_exact_value(env, results, name):
    zs = [_z(r, name, truth(env)) for r in results]
    assert sum(abs(z) < 3 for z in zs) >= 4, zs


def test_position_ips_is_biased_when_w_is_nonzero(env, results):
    # its limit under the uniform logger, by enumerating every list: the sum over
    # positions of the mean reward at l of lists with TARGET[l] at l (neighbours random)
    every = np.array(list(itertools.product(range(K), repeat=L)))
    means = np.asarray(env.position_means(every))
    limit = sum(means[every[:, l] == TARGET[l], l].mean() for l in range(L))
    se = max(float(r.sel(estimator="position_ips").stderr) for r in results)
    assert abs(limit - truth(env)) > 4 * se
    for r in results:
        assert abs(_z(r, "position_ips", truth(env))) > 4
        assert abs(float(r.sel(estimator="position_ips").estimate) - limit) < 4 * se


def test_pair_ips_has_a_smaller_stderr_than_list_ips(results):
    for r in results:
        assert r.stderr.sel(estimator="pair_ips") < 0.6 * r.stderr.sel(estimator="list_ips")


def _reference(log, lst, self_normalised=False):
    """The four estimators written out with NumPy on the log's arrays."""
    a = log["lists"].values
    r = np.nan_to_num(log["rewards"].values)
    n = a.shape[0]
    agree = a == lst
    pi = {
        "position": agree.astype(float),
        "pair": np.concatenate([agree[:, :1], agree[:, 1:] & agree[:, :-1]], axis=1),
        "cascade": np.cumprod(agree, axis=1),
        "list": np.repeat(agree.all(axis=1, keepdims=True), L, axis=1),
    }
    ps = {e: log[f"pscore_{e}"].values for e in ("position", "pair", "cascade")}
    ps["list"] = np.repeat(log["pscore_list"].values[:, None], L, axis=1)
    out = {}
    for e, pi_e in pi.items():
        w = pi_e / ps[e]
        if self_normalised:
            est_l = (w * r).sum(0) / w.sum(0)
            c = (w * (r - est_l) / w.mean(0)).sum(1)
            est = est_l.sum()
        else:
            c = (w * r).sum(1)
            est = c.mean()
        out[f"{e}_ips"] = (est, c.std(ddof=1) / np.sqrt(n))
    return out


@pytest.mark.parametrize("self_normalised", [False, True])
def test_estimates_equal_numpy_formulas(logs, self_normalised):
    log = logs[0].copy(deep=True)
    rew = log["rewards"].values
    rew[::7, 2] = np.nan  # unobserved positions count as 0
    res = evaluate(log, FixedList(TARGET), self_normalised=self_normalised)
    ref = _reference(log, TARGET, self_normalised)
    for name, (est, se) in ref.items():
        r = res.sel(estimator=name)
        np.testing.assert_allclose(float(r.estimate), est, rtol=1e-10)
        np.testing.assert_allclose(float(r.stderr), se, rtol=1e-10)
        np.testing.assert_allclose([float(r.ci_low), float(r.ci_high)],
                                   [est - 1.96 * se, est + 1.96 * se], rtol=1e-3)
        assert float(r.mc_stderr) == 0.0
    # the array functions directly
    a, r_ = log["lists"].values, log["rewards"].values
    agree = a == TARGET
    fns = {
        "list_ips": (list_ips, agree.all(1).astype(float), log["pscore_list"].values),
        "position_ips": (position_ips, agree.astype(float), log["pscore_position"].values),
        "cascade_ips": (cascade_ips, np.cumprod(agree, 1).astype(float),
                        log["pscore_cascade"].values),
    }
    for name, (fn, pi, ps) in fns.items():
        est = fn(r_, pi, ps, self_normalised=self_normalised)
        np.testing.assert_allclose(est.estimate, ref[name][0], rtol=1e-10)


def test_deterministic_false_on_a_fixed_list_gives_the_exact_estimates(logs):
    """Told to draw (deterministic=False), a fixed list's Monte Carlo frequencies
    are exactly its 0/1 probabilities: the estimates equal the NumPy formulas."""
    log = logs[0].isel(round=slice(0, 3000))
    res = evaluate(log, FixedList(TARGET), n_draws=50, deterministic=False,
                   estimators=["list_ips", "position_ips", "cascade_ips", "pair_ips"])
    assert res.attrs["deterministic"] == 0
    for name, (est, se) in _reference(log, TARGET).items():
        np.testing.assert_allclose(float(res.estimate.sel(estimator=name)), est,
                                   rtol=1e-10)


def test_pair_ips_function_rejects_a_wrong_shape():
    with pytest.raises(ValueError, match="^pi_pair:"):
        pair_ips(np.zeros((4, 3)), np.ones((4, 2)), np.ones((4, 3)))


def test_true_value_of_a_fixed_list_is_exact(env):
    assert true_value(env, FixedList(TARGET)) == pytest.approx(truth(env), rel=1e-12)


def test_monte_carlo_probabilities_of_a_random_target(logs):
    log = logs[0].isel(round=slice(0, 2000))
    probs, batch, det = target_probabilities(log, UniformTarget(), n_draws=4000)
    assert not det
    m = 4000
    for e, p in [("position", 1 / K), ("pair", 1 / K**2), ("cascade", 1 / K**3)]:
        got = probs[e][:, -1]  # one distinct v0: the same draws for every round
        tol = 4.5 * np.sqrt(p * (1 - p) / m)
        assert np.all(np.abs(got - p) < tol), (e, got[:5], p)
    np.testing.assert_allclose(probs["list"], probs["cascade"][:, -1])
    np.testing.assert_allclose(batch["position"].mean(0), probs["position"])
    res = evaluate(log, UniformTarget(), n_draws=4000, estimators=["position_ips"])
    assert float(res.mc_stderr.item()) > 0


def _leaves(policy):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(policy.state)
            if not jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)]


def test_a_rank_ts_target_is_evaluated_frozen(env, logs):
    ts = br.RankTS(items=env.items, w=env.w, v0=env.v0, seed=0)
    # learn a little first, so the state is not the prior (20 rounds: its 200 draws
    # hold about 47 lists; after 200 rounds the learnt-scale posterior draws 3, and a
    # last-bit change of the draws made it 1, which is judged deterministic)
    lists = logs[1]["lists"].values[:20]
    ts.update(lists, np.asarray(env.sample(jax.random.key(9), lists)))
    before, t0 = _leaves(ts), ts.t
    res = evaluate(logs[0], ts, n_draws=200)
    after = _leaves(ts)
    assert len(before) == len(after) and ts.t == t0
    assert all(np.array_equal(b, a) for b, a in zip(before, after))
    for v in ("estimate", "stderr", "ci_low", "ci_high", "mc_stderr"):
        assert np.isfinite(res[v].values).all(), v
    assert res.attrs["deterministic"] == 0
    assert (res.mc_stderr.values > 0).any()
    v = true_value(env, ts, n_draws=200)
    assert np.isfinite(v) and all(np.array_equal(b, a) for b, a in zip(before, _leaves(ts)))


def test_evaluate_names_a_missing_pscore(logs):
    with pytest.raises(ValueError, match="^pscore_pair:"):
        evaluate(logs[0].drop_vars("pscore_pair"), FixedList(TARGET))
    with pytest.raises(ValueError, match="^pscore_pair:"):
        evaluate(logs[0].drop_vars("pscore_pair"), FixedList(TARGET), ["dm", "pair_dr"])
    # dm needs no propensity at all
    res = evaluate(logs[0].drop_vars([v for v in logs[0].data_vars if "pscore" in v]),
                   FixedList(TARGET), ["dm"])
    assert np.isfinite(res.estimate.values).all()


def test_the_default_estimators_are_the_design_tuple_and_all_registered(results):
    design = ("dm", "list_ips", "position_ips", "cascade_ips", "pair_ips", "pair_dr")
    assert DEFAULT_ESTIMATORS == design
    assert tuple(results[0].estimator.values) == design
    assert set(design) <= set(ESTIMATORS)
    for name, est in ESTIMATORS.items():
        assert isinstance(est, br.ope.Estimator) and est.name == name
        assert set(est.needs) <= {"list", "position", "prefix", "pair"}


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"estimators": ["nope"]}, "^estimators:"),
        ({"estimators": []}, "^estimators:"),
        ({"ci": "student"}, "^ci:"),
        ({"ci": None}, "^ci:"),
        ({"n_boot": 0}, "^n_boot:"),
        ({"n_boot": -5}, "^n_boot:"),
        ({"n_boot": 2.5}, "^n_boot:"),
        ({"seed": -1}, "^seed:"),
        ({"ridge": 0.0}, "^ridge:"),
        ({"ridge": np.nan}, "^ridge:"),
        ({"ridge": -1.0}, "^ridge:"),
        ({"items": np.zeros((K, 4))}, "^items:"),
        ({"items": np.zeros((K - 1, 5))}, "^items:"),
        ({"items": np.full((K, 5), np.nan)}, "^items:"),
        ({"n_draws": 0}, "^n_draws:"),
        ({"n_batches": 0}, "^n_batches:"),
    ],
)
def test_bad_arguments_of_evaluate_are_named_and_leave_the_target_unchanged(
    env, logs, kwargs, match
):
    ts = br.RankTS(items=env.items, w=env.w, v0=env.v0, seed=0)
    before, t0 = _leaves(ts), ts.t
    with pytest.raises((ValueError, TypeError), match=match):
        evaluate(logs[0].isel(round=slice(0, 500)), ts, **kwargs)
    assert ts.t == t0
    assert all(np.array_equal(b, a) for b, a in zip(before, _leaves(ts)))


def test_a_bootstrap_evaluation_leaves_a_rank_ts_target_unchanged(env, logs):
    ts = br.RankTS(items=env.items, w=env.w, v0=env.v0, seed=0)
    before, t0 = _leaves(ts), ts.t
    res = evaluate(logs[0].isel(round=slice(0, 1000)), ts, n_draws=100, ci="bootstrap",
                   n_boot=50)
    assert ts.t == t0
    assert all(np.array_equal(b, a) for b, a in zip(before, _leaves(ts)))
    assert (res.ci_low < res.ci_high).all()
