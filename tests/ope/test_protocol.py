"""The Estimator protocol and targets given as probabilities (issue 37, items 4, 3).

* evaluate()'s IPS rows equal the textbook formulas recomputed here with plain NumPy
  (the target's probabilities by brute force over its own draws) to 1e-15;
* a user estimator (clipped list IPS) written here plugs into evaluate() as its own
  row; bad estimator objects are refused naming ``estimators``;
* a target's precomputed probabilities give the IPS family's estimates of the policy.
"""

import numpy as np
import pytest

import bayesrank as br
from bayesrank.ope import (
    DEFAULT_ESTIMATORS,
    EpsilonGreedyLogger,
    Estimate,
    Estimator,
    TargetProbabilities,
    UniformLogger,
    collect,
    draw_target,
    evaluate,
    target_probabilities,
)

K, L = 5, 3
Z95 = 1.959963984540054
STATS = ("estimate", "stderr", "ci_low", "ci_high")


class Fixed:
    def __init__(self, lst):
        self.lst = np.asarray(lst)

    def select_batch(self, v0, n=None):
        return np.tile(self.lst, (np.shape(v0)[0], 1))


class Noisy:
    """A random target: (0, 1, 2) or, with probability 0.3, a uniform list."""

    def __init__(self, seed):
        self.seed = seed
        self.reset()

    def reset(self):
        self.rng = np.random.default_rng(self.seed)

    def select_batch(self, v0, n=None):
        m = np.shape(v0)[0]
        out = np.tile(np.arange(L), (m, 1))
        flip = self.rng.random(m) < 0.3
        out[flip] = self.rng.integers(0, K, (int(flip.sum()), L))
        return out


def make_log(seed, nan=False):
    env = br.RankingEnv.paper(seed=seed, K=K, L=L, d=4, w_max=3.0)
    lg = UniformLogger(K, L) if seed % 2 == 0 else EpsilonGreedyLogger(
        lambda v0: np.array([0, 1, 2]), K, L, 0.3)
    log = collect(env, lg, 2000, seed=seed)
    if nan:  # some positions not observed
        r = log["rewards"].values.copy()
        r[::7, 2] = np.nan
        log["rewards"] = (("round", "position"), r)
    return log


@pytest.fixture(scope="module", params=[(0, False), (1, False), (2, True)],
                ids=["uniform", "epsilon-greedy", "uniform-nan"])
def log(request):
    return make_log(*request.param)


# ------------------------------------------------------------------ plain NumPy
def brute_force_pi(lists, draws):
    """The target's probability of each logged list's events: the share of the
    target's draws (for the round's context) that match it, by direct comparison."""
    n = lists.shape[0]
    pi = {e: np.zeros((n, L)) for e in ("position", "prefix", "pair")}
    for i in range(n):
        D = draws.lists[draws.inverse[i]]  # (m, L)
        eq = D == lists[i]
        for l in range(L):
            pi["position"][i, l] = eq[:, l].mean()
            pi["prefix"][i, l] = eq[:, : l + 1].all(axis=1).mean()
            pi["pair"][i, l] = eq[:, max(l - 1, 0): l + 1].all(axis=1).mean()
    pi["list"] = pi["prefix"][:, -1].copy()
    return pi


def plain_ips(rewards, w, self_normalised):
    """(estimate, stderr, ci_low, ci_high) of IPS with weights w (n, L)."""
    r = np.where(np.isnan(rewards), 0.0, rewards)
    n = r.shape[0]
    if self_normalised:
        mw = w.mean(axis=0)
        v = np.array([(w[:, l] * r[:, l]).mean() / mw[l] if mw[l] > 0 else 0.0
                      for l in range(r.shape[1])])
        est = v.sum()
        terms = np.zeros(n)
        for l in range(r.shape[1]):
            if mw[l] > 0:
                terms += w[:, l] * (r[:, l] - v[l]) / mw[l]
    else:
        terms = (w * r).sum(axis=1)
        est = terms.mean()
    se = terms.std(ddof=1) / np.sqrt(n)
    return np.array([est, se, est - Z95 * se, est + Z95 * se])


@pytest.mark.parametrize("self_normalised", [False, True])
@pytest.mark.parametrize("random_target", [False, True])
def test_ips_rows_equal_plain_numpy(log, self_normalised, random_target):
    target = Noisy(3) if random_target else Fixed([1, 2, 3])
    res = evaluate(log, target, self_normalised=self_normalised, n_draws=300)
    assert list(res.estimator.values) == list(DEFAULT_ESTIMATORS)
    if random_target:
        target.reset()  # the same draws again
    draws = draw_target(log, target, n_draws=300)
    pi = brute_force_pi(log["lists"].values, draws)
    rewards = log["rewards"].values
    for name, event, var in [("list_ips", "list", "pscore_list"),
                             ("position_ips", "position", "pscore_position"),
                             ("cascade_ips", "prefix", "pscore_cascade"),
                             ("pair_ips", "pair", "pscore_pair")]:
        w = pi[event] / log[var].values
        if w.ndim == 1:
            w = np.repeat(w[:, None], L, axis=1)
        want = plain_ips(rewards, w, self_normalised)
        got = np.array([float(res[s].sel(estimator=name)) for s in STATS])
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15, err_msg=name)


# ------------------------------------------------------------------ a user estimator
class ClippedListIPS(Estimator):
    """List IPS with weights min(pi / p, c) (biased, bounded variance)."""

    needs = ("list",)

    def __init__(self, c, name="clipped_list_ips"):
        self.c, self.name = c, name

    def estimate(self, inputs):
        w = np.minimum(inputs.pi["list"] / inputs.pscore["list"], self.c)
        v = w * np.nansum(inputs.rewards, axis=1)
        se = v.std(ddof=1) / np.sqrt(len(v))
        return Estimate(v.mean(), se, v.mean() - Z95 * se, v.mean() + Z95 * se)


def test_a_clipped_list_ips_plugs_into_evaluate(log):
    c = 20.0
    target = Fixed([1, 2, 3])
    res = evaluate(log, target, ("dm", "list_ips", ClippedListIPS(c)))
    assert list(res.estimator.values) == ["dm", "list_ips", "clipped_list_ips"]
    lists, r = log["lists"].values, log["rewards"].values
    pi = (lists == [1, 2, 3]).all(axis=1).astype(float)
    w = np.minimum(pi / log["pscore_list"].values, c)
    assert w.max() == c  # the clip bites on these logs
    v = w * np.where(np.isnan(r), 0.0, r).sum(axis=1)
    row = res.sel(estimator="clipped_list_ips")
    assert float(row.estimate) == pytest.approx(v.mean(), rel=1e-12)
    assert float(row.stderr) == pytest.approx(v.std(ddof=1) / np.sqrt(len(v)), rel=1e-12)
    assert float(row.mc_stderr) == 0.0
    # an unbinding clip gives list IPS itself; the built-in rows are unchanged
    big = evaluate(log, target, ("list_ips", ClippedListIPS(np.inf)))
    assert float(big.estimate[1]) == pytest.approx(float(big.estimate[0]), rel=1e-12)
    alone = evaluate(log, target, ("dm", "list_ips"))
    np.testing.assert_array_equal(res.estimate.values[:2], alone.estimate.values)


def test_a_user_estimator_gets_the_generic_bootstrap(log):
    target = Fixed([1, 2, 3])
    res = evaluate(log, target, [ClippedListIPS(20.0)], ci="bootstrap", n_boot=200,
                   seed=1)
    lists, r = log["lists"].values, log["rewards"].values
    w = np.minimum((lists == [1, 2, 3]).all(axis=1) / log["pscore_list"].values, 20.0)
    v = w * np.where(np.isnan(r), 0.0, r).sum(axis=1)
    counts = np.concatenate(list(br.ope.bootstrap.resample_counts(len(v), 200, 1)))
    reps = counts @ v / len(v)  # the mean of each resample
    lo, hi = np.quantile(reps, [0.025, 0.975])
    assert float(res.ci_low[0]) == pytest.approx(lo, rel=1e-9)
    assert float(res.ci_high[0]) == pytest.approx(hi, rel=1e-9)


class NoEstimate:
    name, needs, needs_reward_model = "x", ("list",), False

    def bootstrap(self, inputs, counts):
        return np.zeros(len(counts))


class Garbage(Estimator):
    name, needs = "garbage", ()

    def estimate(self, inputs):
        return "no"


class Needs(Estimator):
    def __init__(self, name="needs", needs=("list",), model=False):
        self.name, self.needs, self.needs_reward_model = name, needs, model

    def estimate(self, inputs):
        return Estimate(0.0, 0.0, 0.0, 0.0)


@pytest.mark.parametrize("estimators, exc", [
    ([NoEstimate()], TypeError),
    ([object()], TypeError),
    ([Needs(name="")], TypeError),
    ([Needs(name=3)], TypeError),
    ([Needs(needs=("cascade",))], ValueError),
    ([Needs(needs="list")], ValueError),
    ([Needs(model="yes")], TypeError),
    (["list_ips", ClippedListIPS(2.0, name="list_ips")], ValueError),
    ([ClippedListIPS(2.0), ClippedListIPS(3.0)], ValueError),
    ([Garbage()], TypeError),
    (3, TypeError),
])
def test_bad_estimator_objects_are_refused_naming_estimators(estimators, exc):
    log = make_log(0)
    with pytest.raises(exc, match="^estimators:"):
        evaluate(log, Fixed([1, 2, 3]), estimators)


def test_a_user_estimator_needing_a_missing_pscore_is_refused():
    log = make_log(0).drop_vars("pscore_list")
    with pytest.raises(ValueError, match="^pscore_list:.*clipped_list_ips"):
        evaluate(log, Fixed([1, 2, 3]), [ClippedListIPS(2.0)])


# ------------------------------------------------------------------ probabilities
IPS = ("list_ips", "position_ips", "cascade_ips", "pair_ips")


@pytest.mark.parametrize("ci", ["normal", "bootstrap"])
@pytest.mark.parametrize("self_normalised", [False, True])
def test_precomputed_probabilities_give_the_policys_ips_estimates(log, self_normalised, ci):
    target = Noisy(5)
    kw = {"self_normalised": self_normalised, "ci": ci, "n_boot": 200, "seed": 2}
    ref = evaluate(log, target, IPS, n_draws=300, **kw)
    target.reset()
    probs, _, _ = target_probabilities(log, target, n_draws=300)
    tp = TargetProbabilities(list=probs["list"], position=probs["position"],
                             prefix=probs["cascade"], pair=probs["pair"])
    for given in (tp, probs):  # the NamedTuple, or target_probabilities' own mapping
        got = evaluate(log, given, IPS, **kw)
        assert list(got.estimator.values) == list(IPS)
        for s in STATS:
            np.testing.assert_array_equal(got[s].values, ref[s].values, err_msg=s)
        assert (got.mc_stderr.values == 0).all() and got.attrs["deterministic"] == -1


def test_the_default_estimators_with_probabilities_are_those_they_allow():
    log = make_log(0)
    pi = (log["lists"].values == [1, 2, 3]).all(axis=1).astype(float)
    res = evaluate(log, TargetProbabilities(list=pi))
    assert list(res.estimator.values) == ["list_ips"]
    res = evaluate(log, {"list": pi, "pair": np.ones((log.sizes["round"], L))})
    assert list(res.estimator.values) == ["list_ips", "pair_ips"]


@pytest.mark.parametrize("target, estimators, exc, match", [
    (TargetProbabilities(list=np.ones(2000)), ["dm"], ValueError, "^target: dm needs"),
    (TargetProbabilities(pair=np.ones((2000, L))), ["pair_dr"], ValueError,
     "^target: pair_dr needs"),
    (TargetProbabilities(list=np.ones(2000)), ["pair_ips"], ValueError,
     "^target: no 'pair'.*pair_ips"),
    (TargetProbabilities(list=np.ones(2000)), [ClippedListIPS(1.0), "position_ips"],
     ValueError, "^target: no 'position'"),
    (TargetProbabilities(), ["list_ips"], ValueError, "^target: no probabilities"),
    (TargetProbabilities(list=np.ones(1999)), ["list_ips"], ValueError, "^target.list:"),
    (TargetProbabilities(pair=np.ones((2000, L + 1))), ["pair_ips"], ValueError,
     "^target.pair:"),
    (TargetProbabilities(list=np.full(2000, 1.5)), ["list_ips"], ValueError,
     "^target.list:.*\\[0, 1\\]"),
    (TargetProbabilities(prefix=np.full((2000, L), np.nan)), ["cascade_ips"], ValueError,
     "^target.prefix:"),
    (TargetProbabilities(list=np.array(["a"] * 2000)), ["list_ips"], TypeError,
     "^target.list:"),
    ({"lists": np.ones(2000)}, ["list_ips"], ValueError, "^target: unknown"),
    (object(), ["list_ips"], TypeError, "^target:"),
])
def test_bad_probabilities_are_refused_naming_them(target, estimators, exc, match):
    with pytest.raises(exc, match=match):
        evaluate(make_log(0), target, estimators)
