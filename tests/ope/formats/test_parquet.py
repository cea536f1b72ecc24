"""Parquet logs: an exact round trip, the documented long layout read back by pyarrow
itself, malformed tables named in the message, and the message without pyarrow."""

import builtins

import numpy as np
import pytest

import bayesrank as br
from bayesrank.ope import (
    SoftmaxLogger,
    as_log,
    collect,
    evaluate,
    read_parquet,
    to_parquet,
)

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture
def log():
    env = br.RankingEnv.paper(seed=1, K=6, L=3, d=4)
    scores = np.random.default_rng(0).normal(size=(3, 6))
    out = collect(env, SoftmaxLogger(scores), 200, seed=3)
    rewards = out.rewards.values.copy()
    rewards[::7, 2] = np.nan
    v0 = np.random.default_rng(1).normal(size=(200, 4))  # distinct contexts per round
    return out.assign(rewards=(("round", "position"), rewards),
                      v0=(("round", "dim"), v0))


def test_a_log_round_trips_exactly(log, tmp_path):
    to_parquet(log, tmp_path / "log.parquet")
    back = read_parquet(tmp_path / "log.parquet")
    assert back.identical(log)
    # without the optional variables too
    small = as_log(log.lists.values, log.rewards.values, log.v0.values)
    to_parquet(small, tmp_path / "small.parquet")
    assert read_parquet(tmp_path / "small.parquet").identical(small)


def test_the_file_has_the_documented_long_layout(log, tmp_path):
    to_parquet(log, tmp_path / "log.parquet")
    t = pq.read_table(tmp_path / "log.parquet")
    n, L = log.lists.shape
    assert t.num_rows == n * L
    row = 3 * L + 2  # round 3, position 2
    assert t.column("round")[row].as_py() == 3 and t.column("position")[row].as_py() == 2
    assert t.column("item")[row].as_py() == int(log.lists.values[3, 2])
    assert t.column("pscore_pair")[row].as_py() == float(log.pscore_pair.values[3, 2])
    assert t.column("pscore_list")[row].as_py() == float(log.pscore_list.values[3])
    assert t.column("v0_1")[row].as_py() == float(log.v0.values[3, 1])
    assert np.isnan(t.column("reward")[0 * L + 2].as_py())


def test_rows_in_any_order_and_k_from_the_argument(log, tmp_path):
    to_parquet(log, tmp_path / "log.parquet")
    t = pq.read_table(tmp_path / "log.parquet").replace_schema_metadata(None)
    order = np.random.default_rng(0).permutation(t.num_rows)
    pq.write_table(t.take(order), tmp_path / "shuffled.parquet")
    with pytest.raises(ValueError, match="declares no feedback model"):
        read_parquet(tmp_path / "shuffled.parquet", K=6)  # another tool's, NaN inside
    back = read_parquet(tmp_path / "shuffled.parquet", K=6, feedback="undeclared")
    assert back.attrs["K"] == 6 and "items" not in back
    for v in ("lists", "rewards", "v0", "pscore_list", "pscore_pair"):
        np.testing.assert_array_equal(back[v].values, log[v].values)
    with pytest.raises(ValueError, match="^lists:"):
        read_parquet(tmp_path / "shuffled.parquet", K=2, feedback="undeclared")


def _write(tmp_path, **cols):
    pq.write_table(pa.table(cols), tmp_path / "bad.parquet")
    return tmp_path / "bad.parquet"


GOOD = {"round": [0, 0, 1, 1], "position": [0, 1, 0, 1], "item": [0, 1, 1, 0],
        "reward": [1.0, 0.0, 0.5, 0.5], "v0_0": [0.0, 0.0, 1.0, 1.0]}


@pytest.mark.parametrize(
    "change, match",
    [
        ({"item": None}, "^item:"),
        ({"v0_0": None}, "^v0:"),
        ({"position": [0, 0, 0, 1]}, "^position:"),
        ({"round": [0, 0, 1, 2]}, "^position:"),
        ({"v0_0": [0.0, 1.0, 1.0, 1.0]}, "^v0_0:"),
        ({"pscore_list": [0.5, 0.4, 0.5, 0.5]}, "^pscore_list:"),
        ({"pscore_pair": [0.5, 0.0, 0.5, 0.5]}, "^pscore_pair:"),
        ({"item": [0, 1, 1, -1]}, "^lists:"),
    ],
)
def test_malformed_tables_are_named(tmp_path, change, match):
    cols = {**GOOD, **change}
    cols = {k: v for k, v in cols.items() if v is not None}
    path = _write(tmp_path, **cols)
    with pytest.raises(ValueError, match=match):
        read_parquet(path)


def test_a_good_hand_written_table_reads(tmp_path):
    back = read_parquet(_write(tmp_path, **GOOD))
    np.testing.assert_array_equal(back.lists.values, [[0, 1], [1, 0]])
    np.testing.assert_array_equal(back.v0.values, [[0.0], [1.0]])


def test_evaluate_gives_the_same_result_after_a_round_trip(log, tmp_path):
    class Fixed:
        def select_batch(self, v0):
            return np.tile([1, 2, 3], (len(v0), 1))

    to_parquet(log, tmp_path / "log.parquet")
    a = evaluate(log, Fixed())
    b = evaluate(read_parquet(tmp_path / "log.parquet"), Fixed())
    assert a.identical(b)


def test_a_clear_message_without_pyarrow(log, tmp_path, monkeypatch):
    real = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ImportError(f"No module named {name!r}")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    with pytest.raises(ImportError, match="pip install pyarrow"):
        to_parquet(log, tmp_path / "x.parquet")
    with pytest.raises(ImportError, match="pip install pyarrow"):
        read_parquet(tmp_path / "x.parquet")


def test_what_was_examined_round_trips_and_old_files_read_as_declared(tmp_path):
    """A cascade click log's examined mask and feedback model survive Parquet and a
    DataFrame; a file declaring nothing reads as 'full' when every reward is there,
    and as the reader says otherwise (a bad word is refused)."""
    from bayesrank.simulation.click import CascadeEnv

    rng = np.random.default_rng(0)
    env = CascadeEnv.from_features(rng.normal(size=(6, 2)), np.array([1.0, -0.5]), L=3)
    log = br.ope.collect(env, br.ope.UniformLogger(6, 3), 200, seed=1)
    assert log.attrs["feedback"] == "cascade" and "examined" in log
    to_parquet(log, tmp_path / "c.parquet")
    back = read_parquet(tmp_path / "c.parquet")
    assert back.identical(log)
    assert br.ope.as_log(br.ope.to_dataframe(log)).identical(log)
    # a foreign table without NaN: every reward present, read as full feedback
    full = br.ope.as_log(lists=np.tile([0, 1, 2], (4, 1)), rewards=np.ones((4, 3)),
                         v0=np.zeros(1), K=6)
    to_parquet(full, tmp_path / "f.parquet")
    t = pq.read_table(tmp_path / "f.parquet").replace_schema_metadata(None)
    pq.write_table(t, tmp_path / "foreign.parquet")
    assert read_parquet(tmp_path / "foreign.parquet", K=6).attrs["feedback"] == "full"
    # a cascade log's table without its metadata and mask: the reader declares it
    t = pq.read_table(tmp_path / "c.parquet").replace_schema_metadata(None).drop(
        ["examined"])
    pq.write_table(t, tmp_path / "bare.parquet")
    again = read_parquet(tmp_path / "bare.parquet", K=6, feedback="cascade")
    np.testing.assert_array_equal(again["examined"].values, log["examined"].values)
    with pytest.raises(ValueError, match="^feedback: expected one of"):
        read_parquet(tmp_path / "bare.parquet", K=6, feedback="mar")
