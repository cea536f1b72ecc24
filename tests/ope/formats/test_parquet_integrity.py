"""Parquet logs are right or refused (issue 35, item 2).

A catalogue grouped by entry point:

* ``to_parquet``: the file is written beside the target and renamed over it, so a
  failed write leaves the old file intact (and no temporary file);
* ``read_parquet``: single-bit flips in the data pages, edited values, dropped
  columns or rounds, a newer or broken metadata format, unreadable metadata: each
  refused with a ``ValueError`` naming the path (or read as the identical log),
  the file left as it was.
"""

import json

import numpy as np
import pytest

import bayesrank as br
from bayesrank.ope import SoftmaxLogger, collect, read_parquet, to_parquet
from bayesrank.ope.formats import parquet as pqmod

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pc = pytest.importorskip("pyarrow.compute")

_META = b"bayesrank.ope"


@pytest.fixture(scope="module")
def log():
    env = br.RankingEnv.paper(seed=1, K=6, L=3, d=3)
    scores = np.random.default_rng(0).normal(size=(3, 6))
    out = collect(env, SoftmaxLogger(scores), 60, seed=3)
    rewards = out.rewards.values.copy()
    rewards[::7, 2] = np.nan
    v0 = np.random.default_rng(1).normal(size=(60, 3))
    return out.assign(rewards=(("round", "position"), rewards),
                      v0=(("round", "dim"), v0))


@pytest.fixture(scope="module")
def written(log, tmp_path_factory):
    path = tmp_path_factory.mktemp("pq") / "log.parquet"
    to_parquet(log, path)
    return path


def _refused(path, *words, exc=ValueError):
    before = path.read_bytes()
    with pytest.raises(exc) as info:
        read_parquet(path)
    msg = str(info.value)
    assert msg.startswith(f"path: {path}: "), msg
    for w in words:
        assert w in msg, msg
    assert path.read_bytes() == before
    return msg


# ================================================================= to_parquet
def test_a_failed_overwrite_leaves_the_old_file_intact(log, written, tmp_path,
                                                       monkeypatch):
    path = tmp_path / "log.parquet"
    path.write_bytes(written.read_bytes())
    before = path.read_bytes()
    real = pq.write_table

    def full_disk(table, where, **kwargs):
        real(table, where, **kwargs)  # half a file, then the disk is full
        with open(where, "r+b") as fh:
            fh.truncate(len(before) // 2)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq, "write_table", full_disk)
    with pytest.raises(OSError, match="No space left"):
        to_parquet(log.isel(round=slice(0, 10)), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["log.parquet"]
    monkeypatch.undo()
    assert read_parquet(path).identical(log)


def test_the_file_carries_its_digest_columns_and_rounds(log, written):
    meta = json.loads(pq.read_table(written).schema.metadata[_META])
    assert meta["format"] == pqmod.FORMAT == 3
    assert meta["feedback"] is None  # the log declares none: NaN missing at random
    assert meta["rounds"] == 60 and meta["positions"] == 3 and meta["K"] == 6
    assert meta["columns"] == pq.read_table(written).column_names
    assert len(meta["digest"]) == 64
    assert read_parquet(written).identical(log)


@pytest.mark.parametrize("bad", [3, None, ["a"]])
def test_a_bad_path_type_names_path(log, bad):
    with pytest.raises(TypeError, match="^path: expected a str or os.PathLike"):
        to_parquet(log, bad)


# ========================================================= read_parquet: bits
def _data_pages(path):
    """(start, size) of each column chunk's pages (dictionary page included)."""
    md = pq.ParquetFile(path).metadata
    out = []
    for g in range(md.num_row_groups):
        for j in range(md.num_columns):
            c = md.row_group(g).column(j)
            start = c.dictionary_page_offset if c.has_dictionary_page else \
                c.data_page_offset
            out.append((start, c.total_compressed_size))
    return out


_FLIPS = 30


@pytest.fixture(scope="module")
def flips(written):
    rng = np.random.default_rng(35)
    pages = _data_pages(written)
    out = []
    for _ in range(_FLIPS):
        start, size = pages[rng.integers(len(pages))]
        out.append((start + int(rng.integers(size)), int(rng.integers(8))))
    return out


@pytest.mark.parametrize("k", range(_FLIPS))
def test_a_flipped_bit_is_refused_or_reads_the_identical_log(k, log, written, flips,
                                                             tmp_path):
    pos, bit = flips[k]
    raw = bytearray(written.read_bytes())
    raw[pos] ^= 1 << bit
    path = tmp_path / "flipped.parquet"
    path.write_bytes(bytes(raw))
    try:
        back = read_parquet(path)
    except ValueError as e:
        assert str(e).startswith(f"path: {path}: "), str(e)
    else:
        assert back.identical(log), f"bit {bit} of byte {pos}: another log, no error"
    assert path.read_bytes() == bytes(raw)


# ===================================================== read_parquet: edits
def _rewrite(path, table, meta=None, redigest=False):
    """Write ``table`` with bayesrank metadata ``meta`` (a dict, raw bytes, or None:
    the table's own), recomputing the digest if asked."""
    if meta is None:
        meta = json.loads(table.schema.metadata[_META])
    if isinstance(meta, dict):
        meta = dict(meta)
        if redigest:
            meta["digest"] = pqmod._digest(table.replace_schema_metadata(None), meta)
        meta = json.dumps(meta).encode()
    pq.write_table(table.replace_schema_metadata({_META: meta}), path)


def _meta(t):
    return json.loads(t.schema.metadata[_META])


def _drop_round(t, r=5):
    return t.filter(pc.not_equal(t["round"], r))


def _set_reward(t):
    rewards = t["reward"].to_numpy().copy()
    rewards[4] += 1.0
    return t.set_column(t.column_names.index("reward"), "reward", pa.array(rewards))


# name -> (the edited table and metadata, words; with a recomputed digest: the
# words of the check that still refuses it, or None when only the digest sees it)
EDITS = {
    "pscore_pair column dropped": (
        lambda t: (t.drop_columns(["pscore_pair"]), None),
        "the columns do not match the metadata (missing ['pscore_pair']", None),
    "last v0 column dropped": (
        lambda t: (t.drop_columns(["v0_2"]), None), "missing ['v0_2']", None),
    "an extra column": (
        lambda t: (t.append_column("extra", pa.array(np.zeros(t.num_rows))), None),
        "unexpected ['extra']", None),
    "a round missing": (lambda t: (_drop_round(t), None),
                        "177 rows, but the metadata says 60 rounds of 3 positions", None),
    "a round missing, metadata fixed": (
        lambda t: (_drop_round(t), {**_meta(t), "rounds": 59}),
        "the file's content does not match its digest",
        "round: expected every round 0 .. 58"),
    "a reward changed": (lambda t: (_set_reward(t), None),
                         "the file's content does not match its digest", None),
    "K changed": (lambda t: (t, {**_meta(t), "K": 7}),
                  "the file's content does not match its digest", None),
    "format 99": (lambda t: (t, {**_meta(t), "format": 99}),
                  "written in format 99", "written in format 99"),
    "format a string": (lambda t: (t, {**_meta(t), "format": "2"}),
                        "format must be an int >= 1", "format must be an int >= 1"),
    "format missing": (lambda t: (t, {k: v for k, v in _meta(t).items() if k != "format"}),
                       "format must be an int >= 1", "format must be an int >= 1"),
    "digest missing": (lambda t: (t, {k: v for k, v in _meta(t).items() if k != "digest"}),
                       "the file's content does not match its digest", None),
    "columns missing": (
        lambda t: (t, {k: v for k, v in _meta(t).items() if k != "columns"}),
        "columns must be a list of column names", "columns must be a list"),
    "rounds negative": (lambda t: (t, {**_meta(t), "rounds": -1}),
                        "rounds must be an int >= 0", "rounds must be an int >= 0"),
    "metadata not JSON": (lambda t: (t, b"{nope"),
                          "metadata bayesrank.ope: not valid JSON", None),
    "metadata not UTF-8": (lambda t: (t, b"\xff\xfe"),
                           "metadata bayesrank.ope: not valid JSON", None),
    "metadata a JSON list": (lambda t: (t, b"[1, 2]"),
                             "metadata bayesrank.ope: expected a JSON object", None),
}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_an_edited_file_is_refused(case, written, tmp_path):
    edit, words, _ = EDITS[case]
    table, meta = edit(pq.read_table(written))
    path = tmp_path / "bad.parquet"
    _rewrite(path, table, meta)
    _refused(path, words)


@pytest.mark.parametrize("case", sorted(c for c, v in EDITS.items() if v[2]))
def test_a_recomputed_digest_still_meets_the_checks(case, written, tmp_path):
    edit, _, words = EDITS[case]
    table, meta = edit(pq.read_table(written))
    path = tmp_path / "bad.parquet"
    _rewrite(path, table, meta, redigest=True)
    _refused(path, words)


@pytest.mark.parametrize("raw", [b"", b"not parquet at all", b"PAR1" + b"\0" * 50])
def test_a_file_that_is_not_parquet_names_the_path(raw, tmp_path):
    path = tmp_path / "bad.parquet"
    path.write_bytes(raw)
    _refused(path, "not a readable Parquet file")


def test_format_1_files_read_without_the_new_checks(log, written, tmp_path):
    """Written before the digest: metadata {format: 1, K, items} only."""
    t = pq.read_table(written)
    meta = {k: v for k, v in _meta(t).items() if k in ("K", "items")}
    path = tmp_path / "old.parquet"
    _rewrite(path, t, {"format": 1, **meta})
    # a file of before format 3 with NaN rewards declares no feedback: refused, unless
    # the reader says how to read the NaN
    with pytest.raises(ValueError, match="declares no feedback model"):
        read_parquet(path)
    assert read_parquet(path, feedback="undeclared").identical(log)
