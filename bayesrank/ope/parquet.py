"""Logs as Parquet files (through pyarrow), in long format.

One row per (round, position): columns ``round``, ``position``, ``item``, ``reward``
and the per-position pscore columns present, plus per-round columns repeated on each
of the round's rows (``pscore_list``, ``v0_0`` .. ``v0_{d-1}``). Float64 columns round
trip exactly. ``K`` and the item vectors (when the log has them) are kept in the
file's key-value metadata as JSON (``bayesrank.ope``); reading never evaluates or
imports anything from the file. The columns are those of
:func:`~bayesrank.ope.to_dataframe` (:mod:`.frame` converts both).
"""

from __future__ import annotations

import json

import numpy as np

from bayesrank.ope.frame import from_columns, to_columns

__all__ = ["read_parquet", "to_parquet"]

_META = b"bayesrank.ope"


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
    pa, pq = _pyarrow()
    cols = to_columns(log)  # checks the log
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
    _, pq = _pyarrow()
    table = pq.read_table(path)
    meta = {}
    raw = (table.schema.metadata or {}).get(_META)
    if raw is not None:
        meta = json.loads(raw.decode())
        if not isinstance(meta, dict):
            raise ValueError(f"{_META.decode()}: expected a JSON object in the metadata")
    items = meta.get("items")
    K = meta.get("K") if K is None else K
    columns = [(c, a.to_numpy()) for c, a in zip(table.column_names, table.columns)]
    return from_columns(columns, K=K,
                        items=None if items is None else np.asarray(items, float))
