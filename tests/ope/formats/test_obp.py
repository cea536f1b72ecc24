"""Open Bandit Pipeline slate logs: ``from_obp`` and ``to_obp``.

obp itself cannot be installed here (0.5.x needs Python < 3.11), so the obp-convention
dicts are built by hand: rows per (slate, position), the three obp propensities
computed independently by enumerating every slate the logger can show (itertools),
shuffled rows and slate ids that are not 0 .. n-1. References: that enumeration,
closed forms for the uniform logger without repeats (obp's own default), bayesrank's
loggers' propensities, and ``evaluate`` on the equivalent bayesrank log.
"""

import itertools
import math

import numpy as np
import pytest

import bayesrank as br
from bayesrank.ope import (
    EpsilonGreedyLogger,
    SoftmaxLogger,
    UniformLogger,
    check_log,
    collect,
    evaluate,
    from_obp,
    to_obp,
)

K, L, D = 4, 3, 3


def _softmax(s):
    z = np.exp(s - s.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


SCORES = np.random.default_rng(5).normal(size=(L, K)) * 1.5
BASE = np.array([2, 0, 3])


def _loggers():
    return {
        "uniform": UniformLogger(K, L),
        "softmax": SoftmaxLogger(SCORES),
        "epsilon": EpsilonGreedyLogger(lambda v0: BASE, K, L, epsilon=0.3),
    }


def _table(name):
    """Every list the logger can show (S, L) and its probability (S,), written out
    from the logger's definition, not from its code."""
    every = np.array(list(itertools.product(range(K), repeat=L)))
    if name == "uniform":
        prob = np.full(len(every), 1.0 / K**L)
    elif name == "softmax":
        p = _softmax(SCORES)
        prob = np.array([math.prod(p[j, s[j]] for j in range(L)) for s in every])
    else:
        prob = 0.3 / K**L + 0.7 * (every == BASE).all(axis=1)
    assert np.isclose(prob.sum(), 1.0)
    return every, prob


def _obp_pscores(every, prob, lists):
    """obp's three propensities of each shown list by summing over the table:
    (whole slate (n,), item at position (n, L), prefix up to and including (n, L))."""
    n = len(lists)
    slate = np.empty(n)
    item_pos, cascade = np.empty((n, L)), np.empty((n, L))
    for i, a in enumerate(lists):
        same = every == a  # (S, L)
        slate[i] = prob[same.all(axis=1)].sum()
        for j in range(L):
            item_pos[i, j] = prob[same[:, j]].sum()
            cascade[i, j] = prob[same[:, : j + 1].all(axis=1)].sum()
    return slate, item_pos, cascade


def _obp_dict(lists, rewards, slate, item_pos, cascade, *, ids=None, context=None,
              action_context=None, n_actions=K, seed=None):
    """obp's long layout: one row per (slate, position), rows shuffled with ``seed``."""
    n, Ln = lists.shape
    ids = np.arange(n) if ids is None else np.asarray(ids)
    bf = {
        "n_rounds": n,
        "n_unique_action": n_actions,
        "slate_id": np.repeat(ids, Ln),
        "context": np.zeros((n, 2)) if context is None else context,
        "action_context": np.eye(n_actions) if action_context is None else action_context,
        "action": lists.reshape(-1).astype(np.int64),
        "position": np.tile(np.arange(Ln), n),
        "reward": rewards.reshape(-1).astype(float),
        "pscore_cascade": cascade.reshape(-1),
        "pscore": np.repeat(slate, Ln),
        "pscore_item_position": item_pos.reshape(-1),
    }
    if seed is not None:
        perm = np.random.default_rng(seed).permutation(n * Ln)
        bf = {k: v[perm] if k not in ("n_rounds", "n_unique_action", "context",
                                       "action_context") else v
              for k, v in bf.items()}
    return bf


@pytest.fixture(scope="module")
def env():
    return br.RankingEnv.paper(seed=0, K=K, L=L, d=D)


@pytest.fixture(scope="module", params=["uniform", "softmax", "epsilon"])
def collected(request, env):
    logger = _loggers()[request.param]
    return request.param, logger, collect(env, logger, 300, seed=1)


# ------------------------------------------------------------- the propensities
def test_obp_propensities_by_enumeration_are_the_loggers(collected):
    name, logger, log = collected
    lists = log.lists.values
    slate, item_pos, cascade = _obp_pscores(*_table(name), lists)
    ids = 3 * np.arange(len(lists)) + 11  # not 0 .. n-1
    context = np.random.default_rng(2).normal(size=(len(lists), 2))
    bf = _obp_dict(lists, log.rewards.values, slate, item_pos, cascade, ids=ids,
                   context=context, seed=4)
    got = from_obp(bf)
    want = logger.propensities(lists, log.v0.values)
    np.testing.assert_array_equal(got.lists.values, lists)
    np.testing.assert_array_equal(got.rewards.values, log.rewards.values)
    np.testing.assert_array_equal(got.slate_id.values, ids)
    np.testing.assert_array_equal(got.context.values, context)
    np.testing.assert_allclose(got.pscore_list.values, want["pscore_list"], rtol=0,
                               atol=1e-15)
    np.testing.assert_allclose(got.pscore_position.values, want["pscore_position"],
                               rtol=0, atol=1e-15)
    np.testing.assert_allclose(got.pscore_cascade.values, want["pscore_cascade"],
                               rtol=0, atol=1e-15)
    assert "pscore_pair" not in got  # obp has no pair propensity
    assert got.attrs == {"K": K, "feedback": "full"}  # every reward there
    np.testing.assert_array_equal(got["items"].values, np.eye(K))
    np.testing.assert_array_equal(got.v0.values, np.zeros((len(lists), K)))
    check_log(got)


def test_distinct_uniform_slates_have_obps_closed_forms():
    # obp's default logger draws without repeats: every slate 1/(K(K-1)..(K-L+1))
    every = np.array(list(itertools.permutations(range(K), L)))
    prob = np.full(len(every), 1.0 / len(every))
    rng = np.random.default_rng(0)
    lists = every[rng.integers(0, len(every), 40)]
    slate, item_pos, cascade = _obp_pscores(every, prob, lists)
    falling = np.cumprod([1.0 / (K - j) for j in range(L)])  # 1/K, 1/(K(K-1)), ...
    np.testing.assert_allclose(slate, 1.0 / math.perm(K, L), rtol=0, atol=1e-15)
    np.testing.assert_allclose(item_pos, 1.0 / K, rtol=0, atol=1e-15)
    np.testing.assert_allclose(cascade, np.tile(falling, (40, 1)), rtol=0, atol=1e-15)
    rewards = rng.normal(size=lists.shape)
    got = from_obp(_obp_dict(lists, rewards, slate, item_pos, cascade, seed=1))
    np.testing.assert_array_equal(got.lists.values, lists)
    np.testing.assert_array_equal(got.rewards.values, rewards)
    np.testing.assert_array_equal(got.pscore_list.values, slate)
    np.testing.assert_array_equal(got.pscore_position.values, item_pos)
    np.testing.assert_array_equal(got.pscore_cascade.values, cascade)
    assert "slate_id" not in got.coords  # ids 0 .. n-1: the round order itself


# -------------------------------------------------------------- the round trips
def test_a_collected_log_round_trips(collected):
    _, _, log = collected
    assert set(log.data_vars) == {"lists", "rewards", "v0", "pscore_list",
                                  "pscore_position", "pscore_pair", "pscore_cascade",
                                  "items"}
    bf = to_obp(log)
    assert from_obp(bf).identical(log)
    # unobserved rewards, a context of its own, slate ids, a non-zero v0
    rng = np.random.default_rng(3)
    rewards = log.rewards.values.copy()
    rewards[::5, 1:] = np.nan
    n = log.sizes["round"]
    richer = log.assign(
        rewards=(("round", "position"), rewards),
        v0=(("round", "dim"), rng.normal(size=(n, D))),
        context=(("round", "context_dim"), rng.normal(size=(n, 5))),
        expected_reward_factual=(("round", "position"), rng.normal(size=(n, L))),
    ).assign_coords(slate_id=("round", 2 * np.arange(n) + 1))
    bf = to_obp(richer)
    assert np.isnan(bf["reward"]).sum() == np.isnan(rewards).sum()  # rows kept
    assert from_obp(bf).identical(richer)


def test_to_obp_writes_obps_layout(collected):
    _, _, log = collected
    bf = to_obp(log)
    n = log.sizes["round"]
    rows = [(t, j) for t in range(n) for j in range(L)]  # slate-major, 0-based
    assert list(bf) == ["n_rounds", "n_unique_action", "slate_id", "context",
                        "action_context", "action", "position", "reward",
                        "pscore_cascade", "pscore", "pscore_item_position", "v0",
                        "pscore_pair"] + (["feedback"] if "feedback" not in log.attrs
                                          else [])
    assert bf["n_rounds"] == n and bf["n_unique_action"] == K
    assert type(bf["n_rounds"]) is int and type(bf["n_unique_action"]) is int
    np.testing.assert_array_equal(bf["slate_id"], [t for t, _ in rows])
    np.testing.assert_array_equal(bf["position"], [j for _, j in rows])
    for k in ("slate_id", "position", "action"):
        assert bf[k].dtype == np.int64
    np.testing.assert_array_equal(bf["action"], [log.lists.values[t, j] for t, j in rows])
    np.testing.assert_array_equal(bf["reward"], [log.rewards.values[t, j] for t, j in rows])
    ps = log.pscore_list.values
    np.testing.assert_array_equal(bf["pscore"], [ps[t] for t, _ in rows])  # repeated
    casc = log.pscore_cascade.values
    np.testing.assert_array_equal(bf["pscore_cascade"], [casc[t, j] for t, j in rows])
    # inclusive: the prefix up to the last position is the whole slate
    np.testing.assert_allclose(bf["pscore_cascade"][L - 1 :: L], ps, rtol=1e-15)
    np.testing.assert_array_equal(bf["pscore_item_position"],
                                  [log.pscore_position.values[t, j] for t, j in rows])
    np.testing.assert_array_equal(bf["context"], log.v0.values)  # no context: v0
    np.testing.assert_array_equal(bf["action_context"], log["items"].values)
    np.testing.assert_array_equal(bf["v0"], log.v0.values)


def _hand_obp():
    """A small obp-style dict as obp's generator lays it out (sorted rows)."""
    rng = np.random.default_rng(9)
    every = np.array(list(itertools.permutations(range(K), L)))
    prob = np.full(len(every), 1.0 / len(every))
    lists = every[rng.integers(0, len(every), 6)]
    bf = _obp_dict(lists, rng.integers(0, 2, lists.shape).astype(float),
                   *_obp_pscores(every, prob, lists), context=rng.normal(size=(6, 2)),
                   action_context=rng.normal(size=(K, 3)))
    bf["expected_reward_factual"] = rng.random(6 * L)
    return bf


def _assert_same_dict(got, want):
    assert set(got) == set(want)
    for k, v in want.items():
        if isinstance(v, np.ndarray):
            assert got[k].dtype == v.dtype, k
            np.testing.assert_array_equal(got[k], v, err_msg=k)
        else:
            assert got[k] == v and type(got[k]) is type(v), k


def test_an_obp_dict_round_trips():
    bf = _hand_obp()
    _assert_same_dict(to_obp(from_obp(bf)), bf)
    # rows in any order and other slate ids: the rows come back sorted
    ids = np.array([40, 3, 17, 8, 99, 21])
    with_ids = {**bf, "slate_id": np.repeat(ids, L)}
    order = np.argsort(ids, kind="stable")
    sorted_bf = dict(with_ids)
    for k in ("slate_id", "action", "position", "reward", "pscore", "pscore_cascade",
              "pscore_item_position", "expected_reward_factual"):
        sorted_bf[k] = with_ids[k].reshape(6, L)[order].reshape(-1)
    sorted_bf["context"] = bf["context"]  # row i: the i-th smallest slate id
    perm = np.random.default_rng(0).permutation(6 * L)
    shuffled = {k: v[perm] if isinstance(v, np.ndarray) and v.shape == (6 * L,) else v
                for k, v in with_ids.items()}
    got = to_obp(from_obp(shuffled))
    _assert_same_dict(got, sorted_bf)
    # an integer reward (obp's binary rewards) comes back as float, equal
    ints = {**bf, "reward": bf["reward"].astype(np.int64)}
    back = to_obp(from_obp(ints))
    assert back["reward"].dtype == np.float64
    np.testing.assert_array_equal(back["reward"], ints["reward"])


def test_the_optional_keys_are_optional():
    bf = _hand_obp()
    core = {k: bf[k] for k in ("n_rounds", "n_unique_action", "slate_id", "position",
                               "action", "reward")}
    log = from_obp(core)
    assert set(log.data_vars) == {"lists", "rewards", "v0", "examined"}
    assert log.attrs["feedback"] == "full" and log["examined"].values.all()
    np.testing.assert_array_equal(log.v0.values, np.zeros((6, 1)))
    # obp always has a context: without one, to_obp writes v0 (and v0 itself)
    back = to_obp(log)
    _assert_same_dict(back, {**core, "context": np.zeros((6, 1)), "v0": np.zeros((6, 1))})
    assert from_obp(back).identical(log)


# ------------------------------------------------------------------ ragged slates
def test_ragged_slates_are_refused():
    bf = _hand_obp()
    for drop in (L - 1, 1):  # a short slate (last position missing), and a gap
        keep = ~((bf["slate_id"] == 2) & (bf["position"] == drop))
        ragged = {k: v[keep] if isinstance(v, np.ndarray) and v.shape == (6 * L,) else v
                  for k, v in bf.items()}
        with pytest.raises(ValueError, match=r"^bandit_feedback\['position'\]: slate 2 "
                           rf"has no row for position {drop}.*ragged"):
            from_obp(ragged)


def test_a_padded_row_with_a_nan_reward_is_not_observed():
    bf = _hand_obp()
    bf["reward"][2 * L + L - 1] = np.nan  # slate 2, last position: shown, not observed
    with pytest.raises(ValueError, match=r"^bandit_feedback\['reward'\]: NaN .* no "
                       "feedback model declared"):
        from_obp(bf)
    with pytest.raises(ValueError, match="^feedback: expected one of"):
        from_obp(bf, feedback="missing")
    log = from_obp(bf, feedback="undeclared")
    assert np.isnan(log.rewards.values[2, L - 1])
    assert np.isnan(log.rewards.values).sum() == 1 and "feedback" not in log.attrs
    _assert_same_dict(to_obp(log), {**bf, "feedback": "undeclared"})
    assert from_obp(to_obp(log)).identical(log)


# --------------------------------------------------------------- bad inputs
def _set(k, v):
    return lambda bf: bf.__setitem__(k, v)


def _edit(k, i, v):
    def go(bf):
        bf[k] = bf[k].copy()
        bf[k][i] = v
    return go


def _drop(k):
    return lambda bf: bf.pop(k)


def _repeat_row(i):
    """Row i once more, in every per-row key: (slate, position) twice, none missing."""
    def go(bf):
        m = len(bf["slate_id"])
        for k, v in list(bf.items()):
            if isinstance(v, np.ndarray) and v.shape == (m,):
                bf[k] = np.append(v, v[i])
    return go


M = 6 * L
BAD = [
    # lengths
    ("position", _set("position", np.arange(M - 1) % L), ValueError),
    ("action", _set("action", np.zeros(M + 1, np.int64)), ValueError),
    ("reward", _set("reward", np.zeros(M - 1)), ValueError),
    ("pscore", _set("pscore", np.full(M - 1, 0.5)), ValueError),
    ("pscore_item_position", _set("pscore_item_position", np.full(M + 2, 0.5)),
     ValueError),
    ("pscore_cascade", _set("pscore_cascade", np.full(2, 0.5)), ValueError),
    ("expected_reward_factual", _set("expected_reward_factual", np.zeros(M - 1)),
     ValueError),
    ("context", _set("context", np.zeros((5, 2))), ValueError),
    ("action_context", _set("action_context", np.zeros((K + 1, 3))), ValueError),
    ("n_rounds", _set("n_rounds", 7), ValueError),
    # propensities outside (0, 1]
    ("pscore", _set("pscore", np.zeros(M)), ValueError),
    ("pscore", _set("pscore", np.full(M, 1.5)), ValueError),
    ("pscore", _set("pscore", np.full(M, np.nan)), ValueError),
    ("pscore", _edit("pscore", 1, 0.5), ValueError),  # differs within the slate
    ("pscore_item_position", _edit("pscore_item_position", 4, 0.0), ValueError),
    ("pscore_item_position", _edit("pscore_item_position", 4, -0.1), ValueError),
    ("pscore_cascade", _edit("pscore_cascade", 5, 1.5), ValueError),
    ("pscore_cascade", _edit("pscore_cascade", 2, 0.9), ValueError),  # rises
    # positions, slates, actions
    ("position", _edit("position", 1, 0), ValueError),  # duplicate (slate, position)
    ("position", _repeat_row(4), ValueError),  # a duplicated row
    ("position", _edit("position", 0, -1), ValueError),
    ("slate_id", _edit("slate_id", 0, -1), ValueError),
    ("slate_id", _set("slate_id", np.zeros(0, np.int64)), ValueError),
    ("action", _edit("action", 3, K), ValueError),
    ("action", _edit("action", 3, -1), ValueError),
    ("reward", _edit("reward", 3, np.inf), ValueError),
    ("expected_reward_factual", _edit("expected_reward_factual", 0, -np.inf),
     ValueError),
    ("context", _edit("context", (0, 0), np.nan), ValueError),
    ("action_context", _edit("action_context", (0, 0), np.inf), ValueError),
    ("v0", _set("v0", np.zeros((6, 2))), ValueError),  # not action_context's dim
    # missing keys
    *[(k, _drop(k), ValueError) for k in ("n_rounds", "n_unique_action", "slate_id",
                                          "position", "action", "reward")],
    # not numeric, or not the kind of number
    ("reward", _set("reward", np.array(["1"] * M)), TypeError),
    ("reward", _set("reward", np.array([object()] * M)), TypeError),
    ("action", _set("action", np.zeros(M)), TypeError),  # floats
    ("action", _set("action", np.zeros(M, bool)), TypeError),
    ("slate_id", _set("slate_id", np.repeat(np.arange(6.0), L)), TypeError),
    ("position", _set("position", np.array(["0"] * M)), TypeError),
    ("pscore", _set("pscore", np.array(["0.5"] * M)), TypeError),
    ("context", _set("context", np.array([["a", "b"]] * 6)), TypeError),
    ("n_rounds", _set("n_rounds", 6.0), TypeError),
    ("n_rounds", _set("n_rounds", True), TypeError),
    ("n_unique_action", _set("n_unique_action", "4"), TypeError),
    ("n_unique_action", _set("n_unique_action", 0), ValueError),
    # shapes
    ("reward", _set("reward", np.zeros((6, L))), ValueError),
    ("context", _set("context", np.zeros(6)), ValueError),
    # propensities that contradict each other (no logger gives them)
    # slate 0's last prefix (the whole slate) 1/12, its pscore 1/24
    ("pscore_cascade", _edit("pscore_cascade", 2, 1 / 12), ValueError),
    ("pscore_item_position", _edit("pscore_item_position", 4, 1e-3), ValueError),
    # None for a required key
    ("reward", _set("reward", None), TypeError),
]


@pytest.mark.parametrize("key, edit, exc", BAD,
                         ids=[f"{i}-{k}" for i, (k, _, _) in enumerate(BAD)])
def test_bad_input_names_the_key(key, edit, exc):
    bf = _hand_obp()
    bf["v0"] = np.zeros((6, 3))  # so the v0 case has a key to break
    from_obp(bf)  # the unbroken dict is fine
    edit(bf)
    with pytest.raises(exc) as err:
        from_obp(bf)
    assert str(err.value).startswith(f"bandit_feedback[{key!r}]"), str(err.value)


def test_propensities_that_contradict_each_other_name_the_keys_and_the_slate():
    bf = _hand_obp()
    bf["slate_id"] = 10 * bf["slate_id"] + 3
    bf["pscore"] = bf["pscore"].copy()
    bf["pscore"][2 * L:3 * L] = 0.5  # slate 23: more probable than its own prefix
    with pytest.raises(ValueError, match=r"^bandit_feedback\['pscore_cascade'\], "
                       r"bandit_feedback\['pscore'\]: .*slate 23\b"):
        from_obp(bf)


#: keys from_obp does not read, as obp's dicts carry them (issue 46, item 3)
UNREAD = {
    "len_list": L,
    "evaluation_policy_pscore": np.ones(M),
    "ranking_pi_b": np.full((6, L, K), 0.25),
    "marginal_pi_b_cascade": None,
    "a callable": print,
    0: "a key that is not a string",
}


@pytest.mark.parametrize("keys", [["len_list"], ["evaluation_policy_pscore"],
                                  list(UNREAD)], ids=["len_list", "eval_pscore", "all"])
def test_keys_it_does_not_read_are_ignored_and_listed(keys):
    bf = _hand_obp()
    want = from_obp(bf)
    got = from_obp({**bf, **{k: UNREAD[k] for k in keys}})
    assert got.attrs.pop("ignored_keys") == ", ".join(str(k) for k in keys)
    assert got.identical(want)
    assert "ignored_keys" not in want.attrs


@pytest.mark.parametrize("key, edit", [
    ("pscore", _set("pscore", np.full(M, 1.5))),
    ("action", _edit("action", 3, K)),
    ("n_rounds", _drop("n_rounds")),
], ids=["pscore", "action", "n_rounds"])
def test_what_it_reads_is_still_checked_beside_unread_keys(key, edit):
    bf = {**_hand_obp(), "len_list": L, "evaluation_policy_pscore": np.ones(M)}
    edit(bf)
    with pytest.raises(ValueError, match=rf"^bandit_feedback\[{key!r}\]"):
        from_obp(bf)


@pytest.mark.parametrize("key", ["pscore_item_position", "pscore_cascade", "pscore",
                                 "expected_reward_factual", "context", "action_context"])
def test_an_optional_key_set_to_none_is_absent(key):
    """obp writes None for what it did not compute (pscore_item_position without
    return_pscore_item_position, its generators' pscore_cascade)."""
    bf = _hand_obp()
    want = from_obp({k: v for k, v in bf.items() if k != key})
    got = from_obp({**bf, key: None})
    assert got.identical(want)


def test_a_duplicated_row_is_named_as_such():
    bf = _hand_obp()
    _repeat_row(4)(bf)
    with pytest.raises(ValueError, match=r"^bandit_feedback\['position'\]: "
                       r"\(slate_id, position\) = \(1, 1\) appears 2 times"):
        from_obp(bf)


def test_not_a_dict_and_nothing_named_is_called():
    with pytest.raises(TypeError, match=r"^bandit_feedback: expected a dict"):
        from_obp([("slate_id", np.zeros(3, int))])
    called = []
    bf = _hand_obp()
    bf["reward"] = lambda: called.append(1)
    with pytest.raises(TypeError, match=r"^bandit_feedback\['reward'\]"):
        from_obp(bf)
    bf = _hand_obp()
    bf["context"] = "os.system"
    with pytest.raises(TypeError, match=r"^bandit_feedback\['context'\]"):
        from_obp(bf)
    assert not called


def test_to_obp_checks_the_log(collected):
    _, _, log = collected
    n = log.sizes["round"]
    with pytest.raises(ValueError, match="^slate_id: "):
        to_obp(log.assign_coords(slate_id=("round", np.arange(n)[::-1])))
    with pytest.raises(ValueError, match="^slate_id: "):
        to_obp(log.assign_coords(slate_id=("round", np.arange(n) - 1)))
    with pytest.raises(ValueError, match="^context: "):
        to_obp(log.assign(context=(("dim",), np.zeros(D))))
    with pytest.raises(ValueError, match="^pscore_list: "):
        to_obp(log.assign(pscore_list=log.pscore_list * 0))  # check_log first


# -------------------------------------------------------------- evaluate on it
@pytest.mark.parametrize("self_normalised", [False, True])
def test_evaluate_on_a_from_obp_log_is_evaluate_on_the_log(env, self_normalised):
    log = collect(env, UniformLogger(K, L), 3000, seed=2)
    bf = to_obp(log)
    for k in ("v0", "pscore_pair"):  # what a real obp dict lacks
        bf.pop(k)
    bf["slate_id"] = 5 * bf["slate_id"] + 2
    perm = np.random.default_rng(1).permutation(len(bf["slate_id"]))
    bf = {k: v[perm] if isinstance(v, np.ndarray) and v.ndim == 1 else v
          for k, v in bf.items()}
    from_bf = from_obp(bf)

    class Fixed:
        def select_batch(self, v0):
            return np.tile([1, 0, 3], (len(v0), 1))

    names = ["list_ips", "position_ips", "cascade_ips"]
    got = evaluate(from_bf, Fixed(), names, self_normalised=self_normalised)
    want = evaluate(log, Fixed(), names, self_normalised=self_normalised)
    assert float(want.estimate.sel(estimator="list_ips")) != 0.0
    for v in ("estimate", "stderr"):
        np.testing.assert_array_equal(got[v].values, want[v].values)


def test_a_cascade_click_log_round_trips_with_what_was_examined():
    from bayesrank.simulation.click import CascadeEnv

    rng = np.random.default_rng(0)
    env = CascadeEnv.from_features(rng.normal(size=(6, 2)), np.array([1.0, -0.5]), L=3)
    log = br.ope.collect(env, br.ope.UniformLogger(6, 3), 50, seed=1)
    bf = to_obp(log)
    assert bf["feedback"] == "cascade" and bf["examined"].shape == (150,)
    assert from_obp(bf).identical(log)
