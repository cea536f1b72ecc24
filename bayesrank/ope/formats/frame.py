"""Logs in long format: one row per (round, position), the layout that
:func:`to_dataframe`, ``as_log(df)`` and the Parquet files of :mod:`.parquet` share.

Columns: ``round``, ``position``, ``item`` (ints), ``reward`` (float, NaN = not
observed), the per-position pscore columns present (``pscore_position``,
``pscore_pair``, ``pscore_cascade``), and the per-round columns repeated on each of
the round's rows (``pscore_list``, ``v0_0`` .. ``v0_{d-1}``), and ``examined`` (bool)
when the log records what was examined. ``K``, the item vectors and the declared
``feedback`` model are not columns: a DataFrame carries them in ``df.attrs`` (when
known), a Parquet file in its metadata.
"""

from __future__ import annotations

import numpy as np

from bayesrank.ope._long import PER_POSITION, columns_to_arrays
from bayesrank.ope.log import as_log, check_log

__all__ = ["from_columns", "to_columns", "to_dataframe"]


def to_columns(log) -> dict[str, np.ndarray]:
    """The long-format columns of a log (checked with :func:`check_log` first).

    Returns:
        dict column name -> (n * L,) array, rows ordered by round then position.

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import as_log
        >>> from bayesrank.ope.formats.frame import to_columns
        >>> cols = to_columns(as_log(np.array([[0, 1]]), np.ones((1, 2)), np.zeros(1)))
        >>> list(cols), cols["position"].tolist()
        (['round', 'position', 'item', 'reward', 'v0_0'], [0, 1])
    """
    check_log(log)
    lists = log["lists"].values
    n, L = lists.shape
    cols = {
        "round": np.repeat(np.arange(n, dtype=np.int64), L),
        "position": np.tile(np.arange(L, dtype=np.int64), n),
        "item": lists.astype(np.int64).ravel(),
        "reward": log["rewards"].values.astype(float).ravel(),
    }
    if "examined" in log:
        cols["examined"] = log["examined"].values.astype(bool).ravel()
    for v in PER_POSITION:
        if v in log:
            cols[v] = log[v].values.astype(float).ravel()
    if "pscore_list" in log:
        cols["pscore_list"] = np.repeat(log["pscore_list"].values.astype(float), L)
    v0 = log["v0"].values.astype(float)
    cols.update({f"v0_{j}": np.repeat(v0[:, j], L) for j in range(v0.shape[1])})
    return cols


def from_columns(columns, K=None, items=None, feedback=None):
    """A checked log from long-format columns (what ``as_log(df)`` and
    :func:`~bayesrank.ope.read_parquet` call).

    Rows may come in any order; rounds are ordered by their ``round`` label.

    Args:
        columns: sequence of (name, (m,) array) pairs, one per column.
        K: the number of items (see :func:`~bayesrank.ope.as_log`).
        items: (K, d) item vectors, or None.
        feedback: the declared feedback model (see :func:`~bayesrank.ope.as_log`).

    Returns:
        The log Dataset.

    Raises:
        ValueError, TypeError: naming the column when one is missing, unknown,
            duplicated or of the wrong dtype, when a round lacks a position or has
            one twice, or when a per-round column differs within a round; otherwise
            as :func:`~bayesrank.ope.as_log`, naming the log variable.

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope.formats.frame import from_columns
        >>> cols = [("round", np.array([7, 7])), ("position", np.array([1, 0])),
        ...         ("item", np.array([2, 0])), ("reward", np.array([0.0, 1.0])),
        ...         ("v0_0", np.array([0.5, 0.5]))]
        >>> from_columns(cols, K=3)["lists"].values.tolist()
        [[0, 2]]
    """
    return as_log(**columns_to_arrays(columns), K=K, items=items, feedback=feedback)


def to_dataframe(log):
    """A log as a pandas DataFrame in long format (one row per round and position).

    The inverse of ``as_log(df)``: ``as_log(to_dataframe(log))`` is identical to
    ``log``. ``K`` and the item vectors (as nested lists) go into ``df.attrs``,
    which ``as_log`` reads when its ``K`` / ``items`` are not given.

    Args:
        log: a log Dataset (checked with :func:`~bayesrank.ope.check_log` first).

    Returns:
        ``pandas.DataFrame`` with columns ``round``, ``position``, ``item``,
        ``reward``, the per-position pscore columns present, ``pscore_list`` (if
        present) and ``v0_0`` .. ``v0_{d-1}``.

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import as_log, to_dataframe
        >>> log = as_log(np.array([[0, 2]]), np.array([[1.0, np.nan]]), np.zeros(1), K=3)
        >>> df = to_dataframe(log)
        >>> df[["round", "position", "item"]].values.tolist(), df.attrs["K"]
        ([[0, 0, 0], [0, 1, 2]], 3)
        >>> as_log(df).identical(log)
        True
    """
    import pandas as pd

    df = pd.DataFrame(to_columns(log))
    if "K" in log.attrs:
        df.attrs["K"] = int(log.attrs["K"])
    if "items" in log:
        df.attrs["items"] = log["items"].values.astype(float).tolist()
    if "feedback" in log.attrs:
        df.attrs["feedback"] = log.attrs["feedback"]
    return df
