"""Logs as Parquet files (through pyarrow), in long format.

One row per (round, position): columns ``round``, ``position``, ``item``, ``reward``
and the per-position pscore columns present, plus per-round columns repeated on each
of the round's rows (``pscore_list``, ``v0_0`` .. ``v0_{d-1}``). Float64 columns round
trip exactly. ``K`` and the item vectors (when the log has them) are kept in the
file's key-value metadata as JSON (``bayesrank.ope``); reading never evaluates or
imports anything from the file.
"""

from __future__ import annotations

import json

import numpy as np

from bayesrank.ope.log import PSCORE_VARS, as_log, check_log

__all__ = ["read_parquet", "to_parquet"]

_META = b"bayesrank.ope"
_PER_POSITION = [v for v, dims in PSCORE_VARS.items() if dims == ("round", "position")]


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(
            "Parquet logs need pyarrow, which is not installed: pip install pyarrow"
        ) from None
    return pa, pq


def to_parquet(log, path) -> None:
    """Write a log to a Parquet file, in long format.

    One row per (round, position): ``round``, ``position``, ``item``, ``reward``, the
    per-position pscore columns present, and the per-round ``pscore_list`` and
    ``v0_0`` .. ``v0_{d-1}`` repeated on the round's rows. ``K`` and ``items`` go
    into the file's metadata as JSON. Float64 values round-trip exactly.

    Args:
        log: a log Dataset (checked with :func:`check_log` first).
        path: the file to write.

    Raises:
        ImportError: when pyarrow is not installed (``pip install pyarrow``).

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
    check_log(log)
    pa, pq = _pyarrow()
    lists = log["lists"].values
    n, L = lists.shape
    cols = {
        "round": np.repeat(np.arange(n, dtype=np.int64), L),
        "position": np.tile(np.arange(L, dtype=np.int64), n),
        "item": lists.astype(np.int64).ravel(),
        "reward": log["rewards"].values.astype(float).ravel(),
    }
    for v in _PER_POSITION:
        if v in log:
            cols[v] = log[v].values.astype(float).ravel()
    if "pscore_list" in log:
        cols["pscore_list"] = np.repeat(log["pscore_list"].values.astype(float), L)
    v0 = log["v0"].values.astype(float)
    for j in range(v0.shape[1]):  # one column per context dimension
        cols[f"v0_{j}"] = np.repeat(v0[:, j], L)
    meta = {"format": 1, "K": int(log.attrs["K"]) if "K" in log.attrs else None}
    if "items" in log:
        meta["items"] = log["items"].values.astype(float).tolist()
    table = pa.table(cols).replace_schema_metadata({_META: json.dumps(meta).encode()})
    pq.write_table(table, path)


def read_parquet(path, K=None):
    """Read a log written by :func:`to_parquet` (or any table in its long format)
    and check it with :func:`check_log`.

    Args:
        path: the Parquet file.
        K: the number of items; None: the file's metadata, if any.

    Returns:
        The log Dataset.

    Raises:
        ImportError: when pyarrow is not installed (``pip install pyarrow``).
        ValueError: naming the column when rounds are incomplete, duplicated, or a
            per-round column differs between a round's rows.

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
    _, pq = _pyarrow()
    table = pq.read_table(path)
    meta = {}
    raw = (table.schema.metadata or {}).get(_META)
    if raw is not None:
        meta = json.loads(raw.decode())
        if not isinstance(meta, dict):
            raise ValueError(f"{_META.decode()}: expected a JSON object in the metadata")
    names = table.column_names
    for c in ("round", "position", "item", "reward"):
        if c not in names:
            raise ValueError(f"{c}: missing column")
    v0_cols = sorted((c for c in names if c.startswith("v0_") and c[3:].isdigit()),
                     key=lambda c: int(c[3:]))
    if not v0_cols or [int(c[3:]) for c in v0_cols] != list(range(len(v0_cols))):
        raise ValueError(f"v0: expected columns v0_0 .. v0_{{d-1}}, got {v0_cols}")
    col = {c: table.column(c).to_numpy() for c in names}
    rounds, r_idx = np.unique(col["round"], return_inverse=True)
    positions = col["position"]
    n, L = len(rounds), int(positions.max()) + 1 if positions.size else 0
    if positions.size != n * L or positions.min() < 0:
        raise ValueError(f"position: expected positions 0..L-1 in each of {n} rounds")
    cell = r_idx.reshape(-1) * L + positions
    if np.unique(cell).size != n * L:
        raise ValueError("position: each (round, position) must appear exactly once")
    order = np.argsort(cell)

    def grid(c):
        return col[c][order].reshape(n, L)

    def per_round(c):
        g = grid(c)
        if not (g == g[:, :1]).all():
            raise ValueError(f"{c}: differs between the positions of a round")
        return g[:, 0]

    pscores = {v: grid(v) for v in _PER_POSITION if v in col}
    if "pscore_list" in col:
        pscores["pscore_list"] = per_round("pscore_list")
    v0 = np.stack([per_round(c) for c in v0_cols], axis=1)
    items = meta.get("items")
    K = meta.get("K") if K is None else K
    log = as_log(grid("item"), grid("reward"), v0, **pscores, K=K,
                 items=None if items is None else np.asarray(items, float))
    return check_log(log)
