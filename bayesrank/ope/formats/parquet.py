"""Logs as Parquet files (through pyarrow), in long format.

One row per (round, position): columns ``round``, ``position``, ``item``, ``reward``
and the per-position pscore columns present, plus per-round columns repeated on each
of the round's rows (``pscore_list``, ``v0_0`` .. ``v0_{d-1}``). Float64 columns round
trip exactly. ``K`` and the item vectors (when the log has them) are kept in the
file's key-value metadata as JSON (``bayesrank.ope``); reading never evaluates or
imports anything from the file. The columns are those of
:func:`~bayesrank.ope.to_dataframe` (:mod:`.frame` converts both).

Integrity (metadata format 2): the metadata also lists the ``columns``, the number
of ``rounds`` and ``positions``, and a SHA-256 ``digest`` over the metadata and every
column's name, dtype and values; :func:`read_parquet` checks all of them, so a
flipped bit, an edited value, a dropped column or round is refused (``ValueError``
naming the path), never read as another log. :func:`to_parquet` writes a temporary
file in the same folder and renames it over the target, so a failed write (a full
disk) leaves the old file intact. Files of metadata format 1 (written before the
digest existed) are read without these checks, as are tables without bayesrank
metadata (written by other tools).

What was examined (format 3): an ``examined`` column holds the log's mask and the
metadata its declared ``feedback`` model (null: none declared). A file that declares
nothing (format 1 or 2, or another tool's table) is read as ``"full"`` when every
reward is present; with NaN rewards it is refused unless ``read_parquet(path,
feedback=...)`` says how to read them (``"cascade"``, ``"pbm"``, or ``"undeclared"``:
NaN as missing at random, the log as it was read before), since a NaN could mean an
unexamined position or a missing record and the estimators treat the two
differently.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import numpy as np

from bayesrank._validate import is_integer
from bayesrank.ope.formats.frame import from_columns, to_columns

__all__ = ["read_parquet", "to_parquet"]

_META = b"bayesrank.ope"
#: The metadata format :func:`to_parquet` writes (and the newest it reads):
#: 1 (K, items), 2 (+ columns, rounds, positions, digest), 3 (+ feedback, and the
#: examined column when the log has one).
FORMAT = 3
#: What ``read_parquet(feedback=...)`` accepts for a file that declares no feedback.
READ_FEEDBACK = ("full", "cascade", "pbm", "undeclared")


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(
            "Parquet logs need pyarrow, which is not installed: pip install pyarrow"
        ) from None
    return pa, pq


def _path(path) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path: expected a str or os.PathLike, got {type(path).__name__}")
    return Path(path)


def _digest(table, meta: dict) -> str:
    """SHA-256 over the metadata (all but ``digest``, keys sorted) and each column's
    name, dtype, length and values, in the table's order."""
    h = hashlib.sha256()
    h.update(json.dumps({k: v for k, v in meta.items() if k != "digest"},
                        sort_keys=True).encode())
    for name, col in zip(table.column_names, table.columns):
        a = np.asarray(col.to_numpy())
        if a.dtype.kind == "O":  # nulls in an int column, strings: hashed as text
            a = np.asarray([repr(v) for v in a.tolist()], dtype=str)
        h.update(f"\0{name}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def to_parquet(log, path) -> None:
    """Write a log to a Parquet file, in long format.

    One row per (round, position): ``round``, ``position``, ``item``, ``reward``, the
    per-position pscore columns present, and the per-round ``pscore_list`` and
    ``v0_0`` .. ``v0_{d-1}`` repeated on the round's rows. ``K`` and ``items`` go
    into the file's metadata as JSON. Float64 values round-trip exactly.

    The metadata also holds the column names, the numbers of rounds and positions
    and a SHA-256 digest of the content, which :func:`read_parquet` checks. The file
    is written beside ``path`` under a temporary name, then renamed over it: a
    failed write leaves an existing file intact.

    Args:
        log: a log Dataset (checked with :func:`check_log` first).
        path: the file to write (a str or os.PathLike; replaced if it exists).

    Raises:
        ImportError: when pyarrow is not installed (``pip install pyarrow``).
        TypeError: ``path`` is not a str or os.PathLike.

    Examples:
        >>> import os, tempfile
        >>> import numpy as np
        >>> from bayesrank.ope import as_log, read_parquet, to_parquet
        >>> log = as_log(np.array([[0, 1]]), np.array([[1.0, np.nan]]), np.zeros(2), K=2)
        >>> path = os.path.join(tempfile.mkdtemp(), "log.parquet")
        >>> to_parquet(log, path)
        >>> read_parquet(path).identical(log)
        True
    """
    pa, pq = _pyarrow()
    path = _path(path)
    cols = to_columns(log)  # checks the log
    n, L = log["lists"].shape
    meta = {"format": FORMAT, "K": int(log.attrs["K"]) if "K" in log.attrs else None}
    if "items" in log:
        meta["items"] = log["items"].values.astype(float).tolist()
    meta.update(columns=list(cols), rounds=int(n), positions=int(L),
                feedback=log.attrs.get("feedback"))
    table = pa.table(cols)
    meta["digest"] = _digest(table, meta)
    table = table.replace_schema_metadata({_META: json.dumps(meta).encode()})
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        pq.write_table(table, tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _meta(table, path) -> dict:
    """The file's bayesrank metadata, checked (format, columns, rounds, digest);
    {} for a table without it."""
    raw = (table.schema.metadata or {}).get(_META)
    if raw is None:
        return {}
    where = f"path: {path}: metadata {_META.decode()}"
    try:
        meta = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{where}: not valid JSON ({e})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{where}: expected a JSON object")  # noqa: TRY004 (a bad file)
    fmt = meta.get("format")
    if not is_integer(fmt) or fmt < 1:
        raise ValueError(f"{where}: format must be an int >= 1, got {fmt!r}")
    if fmt > FORMAT:
        raise ValueError(f"{where}: written in format {fmt}; this version reads formats "
                         f"up to {FORMAT}: upgrade bayesrank")
    if fmt >= 2:
        _refuse_bad_content(table, meta, path, where)
    items = meta.get("items")
    if items is not None:
        try:
            meta["items"] = np.asarray(items, float)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: items must be a (K, d) list of numbers") from None
    return meta


def _refuse_bad_content(table, meta: dict, path, where: str) -> None:
    """Format 2: the columns, rounds and digest the metadata declares."""
    for key, low in (("rounds", 0), ("positions", 1)):
        v = meta.get(key)
        if not is_integer(v) or v < low:
            raise ValueError(f"{where}: {key} must be an int >= {low}, got {v!r}")
    cols = meta.get("columns")
    if not isinstance(cols, list) or not all(isinstance(c, str) for c in cols):
        raise ValueError(f"{where}: columns must be a list of column names")
    if cols != table.column_names:
        missing = [c for c in cols if c not in table.column_names]
        extra = [c for c in table.column_names if c not in cols]
        raise ValueError(f"path: {path}: the columns do not match the metadata (missing "
                         f"{missing}, unexpected {extra}, file order "
                         f"{table.column_names})")
    if table.num_rows != meta["rounds"] * meta["positions"]:
        raise ValueError(f"path: {path}: {table.num_rows} rows, but the metadata says "
                         f"{meta['rounds']} rounds of {meta['positions']} positions")
    if meta.get("digest") != _digest(table, meta):
        raise ValueError(f"path: {path}: the file's content does not match its digest "
                         "(edited or corrupted)")
    if "round" in cols:
        rounds = np.unique(np.asarray(table.column("round").to_numpy()))
        if not np.array_equal(rounds, np.arange(meta["rounds"])):
            raise ValueError(f"path: {path}: round: expected every round 0 .. "
                             f"{meta['rounds'] - 1}, got {rounds.size} distinct labels")


def read_parquet(path, K=None, feedback=None):
    """Read a log written by :func:`to_parquet` (or any table in its long format)
    and check it with :func:`check_log`.

    A file written by :func:`to_parquet` is checked against its metadata first: the
    format version, the columns, the number of rounds and positions, every round
    present, and the content digest (see the module docstring).

    Args:
        path: the Parquet file.
        K: the number of items; None: the file's metadata, if any.
        feedback: for a file that declares no feedback model (format 1 or 2, another
            tool's table) and has NaN rewards: ``"cascade"``, ``"pbm"`` or
            ``"undeclared"`` (NaN as missing at random); ignored when the file
            declares one (``"full"`` and None then read it as declared).

    Returns:
        The log Dataset.

    Raises:
        ImportError: when pyarrow is not installed (``pip install pyarrow``).
        ValueError: ``path: <path>: ...`` when the file is not readable Parquet, its
            metadata is not valid JSON, of a newer format, or does not match the
            content (columns, rounds, digest: an edited or corrupted file).
        ValueError, TypeError: naming the column when one is missing, unknown,
            duplicated or of the wrong dtype, when rounds are incomplete or
            duplicated, or a per-round column differs between a round's rows (as
            ``as_log`` on a DataFrame).

    Examples:
        >>> import os, tempfile
        >>> import numpy as np
        >>> from bayesrank.ope import as_log, read_parquet, to_parquet
        >>> log = as_log(np.array([[2, 1]]), np.ones((1, 2)), np.ones(3), K=3)
        >>> path = os.path.join(tempfile.mkdtemp(), "log.parquet")
        >>> to_parquet(log, path)
        >>> read_parquet(path).attrs["K"]
        3
    """
    pa, pq = _pyarrow()
    try:
        table = pq.read_table(path)
    except FileNotFoundError:
        raise
    except (pa.ArrowException, OSError, ValueError) as e:
        raise ValueError(f"path: {path}: not a readable Parquet file "
                         f"({type(e).__name__}: {e})") from None
    meta = _meta(table, path)
    K = meta.get("K") if K is None else K
    columns = [(c, a.to_numpy()) for c, a in zip(table.column_names, table.columns)]
    if feedback is not None and feedback not in READ_FEEDBACK:
        raise ValueError(f"feedback: expected one of {list(READ_FEEDBACK)} or None, got "
                         f"{feedback!r}")
    declared = meta.get("format", 0) >= 3 or "examined" in table.column_names
    if declared:
        fb = meta.get("feedback")
    else:
        rewards = np.asarray(table.column("reward").to_numpy(), float) \
            if "reward" in table.column_names else np.zeros(0)
        if feedback == "undeclared":
            fb = None
        elif feedback is not None:
            fb = feedback
        elif np.isnan(rewards).any():
            raise ValueError(
                f"path: {path}: the rewards have NaN (positions not observed) and the "
                "file declares no feedback model (written before bayesrank recorded "
                "one, or by another tool), so an unexamined position cannot be told "
                "from a missing record: read it with feedback='cascade' (examined down "
                "to the first click), 'pbm', or 'undeclared' (NaN as missing at random)")
        else:
            fb = "full"
    return from_columns(columns, K=K, items=meta.get("items"), feedback=fb)
