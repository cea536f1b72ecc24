"""Logs as pandas DataFrames in long format: ``to_dataframe`` and ``as_log(df)``.

References: the long layout written out by hand (a list of dict rows and the arrays it
stands for), a plain-NumPy construction of the columns, and ``as_log`` on arrays.
"""

import numpy as np
import pandas as pd
import pytest

import bayesrank as br
from bayesrank.ope import SoftmaxLogger, as_log, collect, to_dataframe


@pytest.fixture(scope="module")
def log():
    env = br.RankingEnv.paper(seed=1, K=6, L=3, d=4)
    scores = np.random.default_rng(0).normal(size=(3, 6))
    out = collect(env, SoftmaxLogger(scores), 50, seed=3)
    rewards = out.rewards.values.copy()
    rewards[::7, 2] = np.nan
    v0 = np.random.default_rng(1).normal(size=(50, 4))  # distinct contexts per round
    return out.assign(rewards=(("round", "position"), rewards),
                      v0=(("round", "dim"), v0))


def test_a_log_round_trips_exactly(log):
    assert {"items", "pscore_list", "pscore_pair", "pscore_cascade"} <= set(log)
    df = to_dataframe(log)
    assert as_log(df).identical(log)  # K and items through df.attrs
    bare = pd.DataFrame({c: df[c].to_numpy() for c in df.columns})  # no attrs
    assert as_log(bare, K=6, items=log["items"].values).identical(log)
    small = as_log(log.lists.values, log.rewards.values, log.v0.values)
    assert as_log(to_dataframe(small)).identical(small)
    with_k = as_log(log.lists.values, log.rewards.values, log.v0.values, K=8)
    assert as_log(to_dataframe(with_k)).identical(with_k)  # K through df.attrs alone


def test_the_frame_has_the_documented_long_layout(log):
    df = to_dataframe(log)
    lists, rewards, v0 = log.lists.values, log.rewards.values, log.v0.values
    n, L = lists.shape
    per_position = [v for v in ("pscore_position", "pscore_pair", "pscore_cascade")
                    if v in log]
    assert list(df.columns) == ["round", "position", "item", "reward", *per_position,
                                "pscore_list", "v0_0", "v0_1", "v0_2", "v0_3"]
    assert len(df) == n * L
    rows = [(t, pos) for t in range(n) for pos in range(L)]  # round-major
    np.testing.assert_array_equal(df["round"], [t for t, _ in rows])
    np.testing.assert_array_equal(df["position"], [pos for _, pos in rows])
    np.testing.assert_array_equal(df["item"], [lists[t, pos] for t, pos in rows])
    np.testing.assert_array_equal(df["reward"], [rewards[t, pos] for t, pos in rows])
    for v in per_position:
        np.testing.assert_array_equal(df[v], [log[v].values[t, pos] for t, pos in rows])
    np.testing.assert_array_equal(df["pscore_list"],
                                  [log.pscore_list.values[t] for t, _ in rows])
    np.testing.assert_array_equal(df["v0_2"], [v0[t, 2] for t, _ in rows])
    assert df.attrs == {"K": 6, "items": log["items"].values.tolist()}


def test_a_hand_written_frame_gives_the_expected_arrays():
    # rows in any order, round labels 10 and 3 (round 3 comes first), NaN = unobserved
    rows = [
        {"round": 10, "position": 1, "item": 0, "reward": np.nan, "pscore_list": 0.25,
         "pscore_position": 0.5, "v0_0": 1.0, "v0_1": -1.0},
        {"round": 3, "position": 0, "item": 2, "reward": 1.0, "pscore_list": 0.125,
         "pscore_position": 0.25, "v0_0": 0.0, "v0_1": 2.0},
        {"round": 10, "position": 0, "item": 1, "reward": 0.0, "pscore_list": 0.25,
         "pscore_position": 1.0, "v0_0": 1.0, "v0_1": -1.0},
        {"round": 3, "position": 1, "item": 2, "reward": 0.5, "pscore_list": 0.125,
         "pscore_position": 0.5, "v0_0": 0.0, "v0_1": 2.0},
    ]
    got = as_log(pd.DataFrame(rows), K=3)
    np.testing.assert_array_equal(got.lists.values, [[2, 2], [1, 0]])
    np.testing.assert_array_equal(got.rewards.values, [[1.0, 0.5], [0.0, np.nan]])
    np.testing.assert_array_equal(got.v0.values, [[0.0, 2.0], [1.0, -1.0]])
    np.testing.assert_array_equal(got.pscore_list.values, [0.125, 0.25])
    np.testing.assert_array_equal(got.pscore_position.values, [[0.25, 0.5], [1.0, 0.5]])
    assert got.attrs == {"K": 3} and "items" not in got
    assert got.lists.dtype == np.int64 and got.rewards.dtype == np.float64


def test_a_frame_gives_the_same_log_as_the_arrays():
    rng = np.random.default_rng(5)
    n, L, d, K = 40, 3, 2, 7
    lists = rng.integers(0, K, size=(n, L))
    rewards = rng.normal(size=(n, L))
    rewards[rng.random((n, L)) < 0.3] = np.nan
    v0 = rng.normal(size=(n, d))
    pscore_pair = rng.uniform(0.1, 1.0, size=(n, L))
    # a list is no more probable than its pairs (as_log refuses propensities that say so)
    pscore_list = pscore_pair.min(axis=1) * rng.uniform(0.1, 1.0, size=n)
    items = rng.normal(size=(K, d))
    t, pos = np.repeat(np.arange(n), L), np.tile(np.arange(L), n)
    df = pd.DataFrame({"round": t, "position": pos, "item": lists[t, pos],
                       "reward": rewards[t, pos], "pscore_pair": pscore_pair[t, pos],
                       "pscore_list": pscore_list[t], "v0_0": v0[t, 0], "v0_1": v0[t, 1]})
    df = df.sample(frac=1.0, random_state=0)  # shuffled rows, shuffled index
    expected = as_log(lists, rewards, v0, pscore_list=pscore_list,
                      pscore_pair=pscore_pair, K=K, items=items)
    assert as_log(df, K=K, items=items).identical(expected)
    assert as_log(df.reset_index(drop=True), K=K, items=items).identical(expected)


GOOD = {"round": [0, 0, 1, 1], "position": [0, 1, 0, 1], "item": [0, 1, 1, 0],
        "reward": [1.0, 0.0, 0.5, 0.5], "pscore_list": [0.5, 0.5, 0.25, 0.25],
        "v0_0": [0.0, 0.0, 1.0, 1.0]}


@pytest.mark.parametrize(
    "change, error, match",
    [
        ({"item": None}, ValueError, "^item: missing column"),
        ({"reward": None}, ValueError, "^reward: missing column"),
        ({"round": None}, ValueError, "^round: missing column"),
        ({"v0_0": None}, ValueError, "^v0: expected columns"),
        ({"v0_0": None, "v0_1": [0.0] * 4}, ValueError, "^v0: expected columns"),
        ({"clicks": [1, 0, 1, 0]}, ValueError, "^clicks: unknown column"),
        ({"v0_x": [0.0] * 4}, ValueError, "^v0_x: unknown column"),
        ({"position": [0, 0, 0, 1]}, ValueError,
         r"^position: \(round, position\) = \(0, 0\) appears 2 times"),
        ({"round": [0, 0, 1, 2]}, ValueError, "^position: round 1 has no row for position 1"),
        ({"position": [0, 1, 0, 2]}, ValueError, "^position: round 0 has no row for position 2"),
        ({"position": [0, 1, -1, 0]}, ValueError, "^position: expected positions >= 0"),
        ({"v0_0": [0.0, 1.0, 1.0, 1.0]}, ValueError, "^v0_0: differs .* round 0"),
        ({"pscore_list": [0.5, 0.5, 0.25, 0.3]}, ValueError,
         "^pscore_list: differs .* round 1"),
        ({"item": [0.0, 1.0, 1.0, 0.0]}, TypeError, "^item: expected integers"),
        ({"position": [0.0, 1.0, 0.0, 1.0]}, TypeError, "^position: expected integers"),
        ({"round": ["a", "a", "b", "b"]}, TypeError, "^round: expected integers"),
        ({"reward": ["1", "0", "1", "0"]}, TypeError, "^reward: expected real numbers"),
        ({"item": [0, 1, 1, 5]}, ValueError, r"^lists: item indices must lie in \[0, K\)"),
        ({"reward": [1.0, np.inf, 0.5, 0.5]}, ValueError, "^rewards: expected finite"),
        ({"pscore_pair": [0.5, 0.0, 0.5, 0.5]}, ValueError, "^pscore_pair: propensities"),
        ({"v0_0": [0.0, 0.0, np.nan, np.nan]}, ValueError, "^v0: expected finite"),
    ],
)
def test_malformed_frames_are_named(change, error, match):
    cols = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    with pytest.raises(error, match=match):
        as_log(pd.DataFrame(cols), K=3)


def test_duplicated_and_empty_frames_are_named():
    df = pd.DataFrame(GOOD)
    dup = pd.concat([df, df[["reward"]]], axis=1)
    with pytest.raises(ValueError, match="^reward: duplicated column"):
        as_log(dup)
    with pytest.raises(ValueError, match="^round: expected at least one row"):
        as_log(df.iloc[:0])
    assert as_log(df).lists.shape == (2, 2)  # the good frame itself reads


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"rewards": np.ones((2, 2))}, "^rewards: not allowed with a DataFrame"),
        ({"v0": np.zeros(1), "pscore_list": np.ones(2)},
         "^v0, pscore_list: not allowed with a DataFrame"),
        ({"pscore_cascade": np.ones((2, 2))}, "^pscore_cascade: not allowed"),
    ],
)
def test_array_arguments_with_a_frame_are_refused(kwargs, match):
    with pytest.raises(TypeError, match=match):
        as_log(pd.DataFrame(GOOD), **kwargs)


def test_arrays_still_need_rewards_and_v0():
    with pytest.raises(TypeError, match="^rewards, v0: required"):
        as_log(np.zeros((2, 2), int))
    with pytest.raises(TypeError, match="^v0: required"):
        as_log(np.zeros((2, 2), int), np.ones((2, 2)))


def test_explicit_k_and_items_override_the_attrs(log):
    df = to_dataframe(log)
    assert as_log(df, K=9, items=np.zeros((9, 4))).attrs["K"] == 9
    with pytest.raises(ValueError, match="^items: expected K = 7 rows"):
        as_log(df, K=7)  # the attrs' 6 item vectors no longer match


def test_pandas_own_parquet_reader_gives_the_same_log(log, tmp_path):
    pytest.importorskip("pyarrow")
    path = tmp_path / "log.parquet"
    br.ope.to_parquet(log, path)
    df = pd.read_parquet(path)
    assert as_log(df, K=6, items=log["items"].values).identical(log)
    assert br.ope.read_parquet(path).identical(log)
