"""A catalogue of bad inputs to :mod:`bayesrank.ope` (issue 35, item 3), grouped by
entry point: every one is refused with the right exception, a message that starts with
the argument's name, and (for objects with state) the state exactly as it was.

Each case was found by an adversarial trial of the earlier code, which answered it
wrongly (a probability of item K-1 for item -1, an estimate from a propensity of 1.5,
0 +- 0 from a log with no observed reward, ...) or refused it without naming the
argument.
"""

from __future__ import annotations

import copy

import jax
import numpy as np
import pytest

import bayesrank as br
from bayesrank.ope import (
    EpsilonGreedyLogger,
    SoftmaxLogger,
    UniformLogger,
    as_log,
    cascade_dr,
    cascade_ips,
    collect,
    dm,
    evaluate,
    fit_reward_model,
    list_ips,
    pair_dr,
    pair_ips,
    position_ips,
    to_dataframe,
    true_value,
)

K, L, D = 10, 3, 2


def _raises(exc, name, fn):
    """fn() raises exc with a message that starts with ``name:``."""
    with pytest.raises(exc) as info:
        fn()
    assert str(info.value).startswith(f"{name}:"), str(info.value)


def _snapshot(obj) -> dict:
    """Deep copies of an object's attributes (arrays included)."""
    return {k: copy.deepcopy(v) for k, v in vars(obj).items() if not callable(v)}


def _same(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    for k, x in a.items():
        y = b[k]
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True):
                return False
        elif x != y:
            return False
    return True


def _policy_state(pol):
    """Everything a refused call must leave alone: the state's arrays, t, history."""
    leaves = [np.asarray(x).copy() for x in jax.tree_util.tree_leaves(pol.state)
              if not jax.dtypes.issubdtype(np.asarray(x).dtype, jax.dtypes.prng_key)]
    items, rewards = pol.history()
    return leaves, pol.t, items.copy(), rewards.copy(), pol.K, np.asarray(pol.items).copy()


def _assert_policy_unchanged(before, pol):
    after = _policy_state(pol)
    assert len(before[0]) == len(after[0])
    for x, y in zip(before[0], after[0]):
        np.testing.assert_array_equal(x, y)
    assert before[1:2] == after[1:2] and before[4] == after[4]
    for i in (2, 3, 5):
        np.testing.assert_array_equal(before[i], after[i])


class Fixed:
    """A deterministic target showing one list to every request."""

    def __init__(self, lst):
        self.lst = np.asarray(lst)

    def select_batch(self, v0, *, n=None):
        return np.tile(self.lst, (np.shape(v0)[0], 1))


# ====================================================================== loggers
def _loggers():
    scores = np.arange(K * L, dtype=float).reshape(L, K) / 10
    return {
        "uniform": UniformLogger(K, L),
        "epsilon_greedy": EpsilonGreedyLogger(lambda v0: np.array([0, 1, 2]), K, L, 0.1),
        "softmax": SoftmaxLogger(scores),
        "softmax_fn": SoftmaxLogger(lambda v0: scores, K=K, L=L),
    }


LOGGERS = list(_loggers())


@pytest.mark.parametrize("kind", LOGGERS)
@pytest.mark.parametrize(
    "lists, exc",
    [
        ([[-1, 0, 0]], ValueError),  # softmax answered with item K-1's probability
        ([[99, 0, 0]], ValueError),
        ([[0, -5, 0]], ValueError),
        ([[0, 0, K]], ValueError),
        ([0, 1, 2], ValueError),  # one list, not (n, L)
        ([[0, 1]], ValueError),  # wrong L
        ([[0.0, 1.0, 2.0]], TypeError),
    ],
    ids=["-1", "99", "-5", "K", "1-d", "short", "float"],
)
def test_logger_propensities_refuse_items_outside_the_catalogue(kind, lists, exc):
    logger = _loggers()[kind]
    before = _snapshot(logger)
    _raises(exc, "lists", lambda: logger.propensities(np.asarray(lists), np.zeros((1, D))))
    assert _same(before, _snapshot(logger))


@pytest.mark.parametrize("kind", LOGGERS)
@pytest.mark.parametrize(
    "v0s, exc",
    [
        (np.zeros(4), ValueError),  # 1-d: was read as 4 requests of dimension 1
        (np.zeros((4, 2, 1)), ValueError),
        (np.full((4, D), np.nan), ValueError),
        (np.array([["a", "b"]]), TypeError),
    ],
    ids=["1-d", "3-d", "nan", "str"],
)
def test_logger_sample_requires_v0s_of_shape_n_by_d(kind, v0s, exc):
    logger = _loggers()[kind]
    before = _snapshot(logger)
    rng = np.random.default_rng(0)
    rng_state = copy.deepcopy(rng.bit_generator.state)
    _raises(exc, "v0s", lambda: logger.sample(rng, v0s))
    assert _same(before, _snapshot(logger))
    assert rng.bit_generator.state == rng_state  # nothing drawn


@pytest.mark.parametrize("kind", LOGGERS)
def test_logger_propensities_require_one_v0_row_per_list(kind):
    logger = _loggers()[kind]
    lists = np.array([[0, 1, 2], [3, 4, 5]])
    _raises(ValueError, "v0s", lambda: logger.propensities(lists, np.zeros((1, D))))
    _raises(ValueError, "v0s", lambda: logger.propensities(lists, np.zeros(2)))


@pytest.mark.parametrize(
    "epsilon, exc",
    [(None, TypeError), ("0.1", TypeError), (True, TypeError), (1.5, ValueError),
     (-0.1, ValueError), (float("nan"), ValueError)],
    ids=["None", "str", "bool", "1.5", "-0.1", "nan"],
)
def test_epsilon_greedy_names_epsilon(epsilon, exc):
    _raises(exc, "epsilon",
            lambda: EpsilonGreedyLogger(lambda v0: np.array([0, 1, 2]), K, L, epsilon))


@pytest.fixture(scope="module")
def env():
    return br.RankingEnv.paper(seed=0, K=5, L=2, d=3, w_max=2.0)


@pytest.mark.parametrize(
    "seed, exc", [(-1, ValueError), (1.5, TypeError), (True, TypeError), ("0", TypeError)],
    ids=["-1", "1.5", "bool", "str"],
)
def test_collect_names_seed(env, seed, exc):
    _raises(exc, "seed", lambda: collect(env, UniformLogger(5, 2), 10, seed=seed))


# ============================================================ array-level estimators
N = 6


def _ips_args(fn, field, value):
    """(rewards, pi, pscore) for fn with ``field`` set to ``value`` everywhere."""
    shape = (N,) if fn is list_ips else (N, L)
    args = {"rewards": np.ones((N, L)), "pi": np.full(shape, 0.5),
            "pscore": np.full(shape, 0.5)}
    if field is not None:
        args[field] = np.full(args[field].shape, value, dtype=np.asarray(value).dtype)
    return args["rewards"], args["pi"], args["pscore"]


def _call(fn, r, pi, ps, **kw):
    q = np.zeros((N, L))
    if fn is pair_dr:
        return pair_dr(r, pi, ps, q_logged=q, q_target=q, **kw)
    if fn is cascade_dr:  # no self-normalised variant
        return cascade_dr(r, pi, ps, q_logged=q, q_expected=q, **kw)
    return fn(r, pi, ps, **kw)


ARRAY_FNS = {"list_ips": (list_ips, "list"), "position_ips": (position_ips, "position"),
             "cascade_ips": (cascade_ips, "cascade"), "pair_ips": (pair_ips, "pair"),
             "pair_dr": (pair_dr, "pair"), "cascade_dr": (cascade_dr, "cascade")}
SN_FNS = [k for k in ARRAY_FNS if k != "cascade_dr"]

BAD_ARRAYS = [
    ("pscore", 1.5, ValueError),  # was accepted: a weight of 1/3
    ("pscore", 0.0, ValueError),
    ("pscore", np.nan, ValueError),
    ("pi", 1.5, ValueError),  # was accepted
    ("pi", -0.1, ValueError),  # was accepted: a negative estimate
    ("pi", np.nan, ValueError),
    ("rewards", np.inf, ValueError),  # was turned into 1.3e304
    ("rewards", -np.inf, ValueError),
    ("rewards", np.nan, ValueError),  # no position observed: was 0 +- 0
    ("rewards", "a", TypeError),
    ("pi", "a", TypeError),
]


@pytest.mark.parametrize("name", list(ARRAY_FNS))
@pytest.mark.parametrize("field, value, exc", BAD_ARRAYS,
                         ids=[f"{f}={v}" for f, v, _ in BAD_ARRAYS])
def test_array_estimators_refuse_bad_values(name, field, value, exc):
    fn, event = ARRAY_FNS[name]
    label = {"pi": f"pi_{event}", "pscore": f"pscore_{event}"}.get(field, field)
    r, pi, ps = _ips_args(fn, field, value)
    _raises(exc, label, lambda: _call(fn, r, pi, ps))


@pytest.mark.parametrize("name", SN_FNS)
@pytest.mark.parametrize("flag", ["no", 1, None, np.float64(1.0)])
def test_array_estimators_require_a_bool_self_normalised(name, flag):
    fn, _ = ARRAY_FNS[name]
    r, pi, ps = _ips_args(fn, None, None)
    _raises(TypeError, "self_normalised", lambda: _call(fn, r, pi, ps, self_normalised=flag))


@pytest.mark.parametrize("name", list(ARRAY_FNS))
def test_array_estimators_still_take_good_values(name):
    """The edges that are allowed: pscore 1, pi 0 and 1, NaN rewards (not all)."""
    fn, _ = ARRAY_FNS[name]
    r, pi, ps = _ips_args(fn, None, None)
    r[0, 0] = np.nan
    pi[0], ps[1], pi[2] = 0.0, 1.0, 1.0
    if name == "cascade_dr":
        assert np.isfinite(_call(fn, r, pi, ps).estimate)
        return
    for sn in (False, True, np.bool_(True)):
        assert np.isfinite(_call(fn, r, pi, ps, self_normalised=sn).estimate)


BAD_Q = [(np.nan, (N, L), ValueError), (np.inf, (N, L), ValueError),
         (0.0, (N, L + 1), ValueError), ("a", (N, L), TypeError)]


@pytest.mark.parametrize("fn, names", [(pair_dr, ("q_logged", "q_target")),
                                       (cascade_dr, ("q_logged", "q_expected"))],
                         ids=["pair_dr", "cascade_dr"])
@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("value, shape, exc", BAD_Q, ids=["nan", "inf", "shape", "str"])
def test_doubly_robust_estimators_refuse_bad_predictions(fn, names, which, value, shape,
                                                         exc):
    r, pi, ps = np.ones((N, L)), np.full((N, L), 0.5), np.full((N, L), 0.5)
    q = {k: np.zeros((N, L)) for k in names}
    q[names[which]] = np.full(shape, value, dtype=np.asarray(value).dtype)
    _raises(exc, names[which], lambda: fn(r, pi, ps, **q))


@pytest.mark.parametrize("fn", [dm, fit_reward_model], ids=["dm", "fit_reward_model"])
def test_direct_method_refuses_rewards_that_are_all_nan(fn):
    rng = np.random.default_rng(0)
    lists = rng.integers(0, 4, (50, 2))
    items = rng.normal(size=(4, 3))
    extra = (lists,) if fn is dm else ()
    _raises(ValueError, "rewards",
            lambda: fn(lists, np.full((50, 2), np.nan), np.zeros(3), items, *extra))


# ======================================================================== evaluate
@pytest.fixture(scope="module")
def log(env):
    return collect(env, UniformLogger(5, 2), 400, seed=0)


@pytest.mark.parametrize("estimators", [["pair_ips"], ["dm"], ["pair_dr"], ["list_ips"]])
@pytest.mark.parametrize("lst", [[7, 0], [0, -1], [5, 5]], ids=["7", "-1", "K"])
def test_evaluate_refuses_a_target_showing_items_the_log_lacks(log, estimators, lst):
    """pair_ips answered 0 for a list with item 7 of 5; dm raised a bare IndexError."""
    _raises(ValueError, "target", lambda: evaluate(log, Fixed(lst), estimators))


def test_evaluate_refuses_a_target_of_another_catalogue_and_leaves_it_alone(log):
    """A RankTS over 8 items (the log has 5) raised a bare IndexError."""
    env8 = br.RankingEnv.paper(seed=0, K=8, L=2, d=3)
    pol = br.RankTS(items=env8.items, w=env8.w, seed=0)
    before = _policy_state(pol)
    for est in (["pair_ips"], ["dm", "pair_dr"]):
        _raises(ValueError, "target", lambda est=est: evaluate(log, pol, est))
    _assert_policy_unchanged(before, pol)


def test_evaluate_refuses_a_target_of_larger_k_even_when_it_shows_only_shared_items(log):
    """Items 5..7 masked out: every list it shows exists in the log, but its K differs."""
    env8 = br.RankingEnv.paper(seed=0, K=8, L=2, d=3)
    pol = br.RankTS(items=env8.items, w=env8.w, mask=np.arange(8) < 5, seed=0)
    before = _policy_state(pol)
    _raises(ValueError, "target", lambda: evaluate(log, pol, ["pair_ips"]))
    _assert_policy_unchanged(before, pol)


def test_evaluate_checks_the_target_against_the_items_when_the_log_has_no_catalogue(log):
    """No K attribute and no items in the log: the items given stand for the catalogue."""
    bare = log.drop_vars("items")
    bare.attrs = {}
    items = log["items"].values
    _raises(ValueError, "target",
            lambda: evaluate(bare, Fixed([7, 0]), ["dm"], items=items))
    _raises(ValueError, "target", lambda: evaluate(bare, Fixed([0, -1]), ["pair_ips"]))


def _bare(log, bad=None):
    """The log's arrays through as_log without items or K (no catalogue of its own);
    ``bad``: item index shown at round 3, position 1."""
    lists = log["lists"].values.copy()
    if bad is not None:
        lists[3, 1] = bad
    return as_log(lists=lists, rewards=log["rewards"].values, v0=log["v0"].values,
                  **{k: log[k].values for k in ("pscore_list", "pscore_position",
                                                "pscore_pair", "pscore_cascade")})


@pytest.mark.parametrize("estimators", [["list_ips"], ["pair_ips"],
                                        ["position_ips", "cascade_ips"], ["dm"], None],
                         ids=["list_ips", "pair_ips", "position+cascade", "dm", "default"])
@pytest.mark.parametrize("bad", [5, 9], ids=["K", "K+4"])
def test_evaluate_refuses_a_bare_log_showing_items_outside_the_targets_catalogue(
        env, log, estimators, bad):
    """A log without items or K showing item 5 to a K = 5 target: list_ips and the
    other IPS answered with intervals (issue 46, item 1); fit refuses the same log."""
    bare = _bare(log, bad)
    pol = br.RankTS(items=env.items, w=env.w, seed=0)
    before = _policy_state(pol)
    kw = {} if estimators is None else {"estimators": estimators}
    with pytest.raises(ValueError, match=rf"^lists: .*item index {bad}\b.*\[0, 5\)"):
        evaluate(bare, pol, **kw)
    _assert_policy_unchanged(before, pol)
    with pytest.raises(ValueError, match=r"^lists: "):
        pol.fit(bare)
    with pytest.raises(ValueError, match=r"^lists: "):
        br.ope.target_probabilities(bare, pol)


@pytest.mark.parametrize("estimators", [["list_ips"], ["pair_ips"], None],
                         ids=["list_ips", "pair_ips", "default"])
def test_evaluate_takes_a_bare_log_inside_the_targets_catalogue(env, log, estimators):
    kw = {} if estimators is None else {"estimators": estimators}
    bare = _bare(log, 4)
    pol = br.RankTS(items=env.items, w=env.w, seed=0)
    res = evaluate(bare, pol, n_draws=50, **kw)
    assert np.isfinite(res.estimate.values).all()
    res = evaluate(bare, Fixed([9, 0]), ["list_ips"])  # no K of its own: nothing to check
    assert float(res.estimate.values[0]) == 0.0


@pytest.mark.parametrize("estimators", [["dm"], ["pair_ips"], ["pair_dr"], None],
                         ids=["dm", "pair_ips", "pair_dr", "default"])
def test_evaluate_refuses_a_log_with_no_observed_reward(log, estimators):
    """dm (and every IPS) answered 0 +- 0."""
    blind = log.assign(rewards=log["rewards"] * np.nan)
    kw = {} if estimators is None else {"estimators": estimators}
    _raises(ValueError, "rewards", lambda: evaluate(blind, Fixed([1, 0]), **kw))


@pytest.mark.parametrize("names", [["pair_ips", "pair_ips"], ["dm", "pair_dr", "dm"],
                                   ("list_ips", "list_ips")])
def test_evaluate_refuses_a_repeated_estimator(log, names):
    _raises(ValueError, "estimators", lambda: evaluate(log, Fixed([1, 0]), names))


@pytest.mark.parametrize("flag", ["no", 1, None])
def test_evaluate_requires_a_bool_self_normalised(log, flag):
    _raises(TypeError, "self_normalised",
            lambda: evaluate(log, Fixed([1, 0]), ["pair_ips"], self_normalised=flag))


@pytest.mark.parametrize("flag", ["yes", 1])
def test_evaluate_requires_deterministic_to_be_none_or_a_bool(log, flag):
    _raises(TypeError, "deterministic",
            lambda: evaluate(log, Fixed([1, 0]), ["pair_ips"], deterministic=flag))


def test_evaluate_names_log_when_given_a_dataframe(log):
    """The message called it ``ds``."""
    _raises(TypeError, "log", lambda: evaluate(to_dataframe(log), Fixed([1, 0])))


def test_true_value_refuses_a_target_of_another_catalogue(env):
    """JAX would clamp item 7 of 5 to item 4 and answer."""
    _raises(ValueError, "target", lambda: true_value(env, Fixed([7, 0])))
    env8 = br.RankingEnv.paper(seed=0, K=8, L=2, d=3)
    pol = br.RankTS(items=env8.items, w=env8.w, seed=0)
    before = _policy_state(pol)
    _raises(ValueError, "target", lambda: true_value(env, pol))
    _assert_policy_unchanged(before, pol)


# ========================================================================= fit
def _other_catalogue_logs(env):
    """Logs a policy over env's items must not learn from."""
    env6 = br.RankingEnv.paper(seed=0, K=6, L=2, d=3)
    other = br.RankingEnv.paper(seed=1, K=5, L=2, d=3)  # same K, other item vectors
    rng = np.random.default_rng(0)
    lists = rng.integers(0, 5, (30, 2))  # only indices the policy has
    r = rng.normal(size=(30, 2))
    return {
        "K=6 with items": collect(env6, UniformLogger(6, 2), 30, seed=0),
        "K=6 attr only": as_log(lists, r, np.zeros(3), K=6),
        "K=6 items, indices < 5": as_log(lists, r, np.zeros(3),
                                         items=np.asarray(env6.items, float)),
        "other items": collect(other, UniformLogger(5, 2), 30, seed=0),
        "items nudged": as_log(lists, r, np.zeros(3),
                               items=np.asarray(env.items, float) + 1e-12),
    }


@pytest.mark.parametrize("case", ["K=6 with items", "K=6 attr only",
                                  "K=6 items, indices < 5", "other items", "items nudged"])
def test_fit_refuses_a_log_from_another_catalogue_before_any_change(env, case):
    pol = br.RankTS(items=env.items, w=env.w, seed=0)
    pol.update(np.array([[0, 1]]), np.ones((1, 2)))  # some state to keep
    bad = _other_catalogue_logs(env)[case]
    before = _policy_state(pol)
    _raises(ValueError, "log", lambda: pol.fit(bad))
    _assert_policy_unchanged(before, pol)


def test_fit_takes_a_log_of_its_own_catalogue(env, log):
    pol = br.RankTS(items=env.items, w=env.w, seed=0)
    pol.fit(log)
    assert pol.t == 0 and pol.history()[0].shape == (400, 2)
    pol.fit(log.drop_vars("items"))  # K only: checked against the policy's K


def _catalogue_through_float32():
    """(V float64, a log collected in an env built from V): JAX in float32 keeps the
    env's item vectors in float32, and collect stores those."""
    rng = np.random.default_rng(7)
    V = rng.normal(size=(5, 3))
    paper = br.RankingEnv.paper(seed=0, K=5, L=2, d=3)
    env = br.RankingEnv(V, paper.theta, paper.w)
    return V, env, collect(env, UniformLogger(5, 2), 40, seed=0)


@pytest.mark.parametrize("stored", ["float32 in float64", "float32"])
def test_fit_takes_a_log_whose_items_went_through_float32(stored):
    """RankTS(items=V).fit(log) said "another catalogue" over a 1.5e-8 difference
    (issue 46, item 3b)."""
    V, env, log = _catalogue_through_float32()
    assert log["items"].dtype == np.float64  # as_log stores float64 ...
    assert not np.array_equal(log["items"].values, V)  # ... of float32 numbers
    if stored == "float32":
        log = log.assign(items=log["items"].astype(np.float32))
    pol = br.RankTS(items=V, w=env.w, seed=0)
    pol.fit(log)
    assert pol.history()[0].shape == (40, 2)


@pytest.mark.parametrize("case", ["nudged 1e-6", "another catalogue", "one row",
                                  "float32 log, nudged 1e-6", "float64 nudged 1e-12"])
def test_fit_still_refuses_items_beyond_the_rounding_of_their_storage(case):
    V, env, log = _catalogue_through_float32()
    mine = V.copy()
    if case in ("nudged 1e-6", "float32 log, nudged 1e-6"):
        mine = V * (1 + 1e-6)  # some 16 float32 ulps
        if case.startswith("float32"):
            log = log.assign(items=log["items"].astype(np.float32))
    elif case == "another catalogue":
        mine = np.random.default_rng(8).normal(size=V.shape)
    elif case == "one row":
        mine[2] = -mine[2]
    else:  # a log stored in float64 is compared in float64
        lists = log["lists"].values
        log = as_log(lists, log["rewards"].values, log["v0"].values, items=V)
        mine = V + 1e-12
    pol = br.RankTS(items=mine, w=env.w, seed=0)
    before = _policy_state(pol)
    _raises(ValueError, "log", lambda: pol.fit(log))
    _assert_policy_unchanged(before, pol)


def test_fit_names_log_when_given_a_dataframe(env, log):
    pol = br.RankTS(items=env.items, w=env.w, seed=0)
    before = _policy_state(pol)
    _raises(TypeError, "log", lambda: pol.fit(to_dataframe(log)))
    _assert_policy_unchanged(before, pol)
