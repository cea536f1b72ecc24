"""The logged-data format of off-policy evaluation, built and checked.

See :mod:`bayesrank.ope` for the format itself.
"""

from __future__ import annotations

import sys

import numpy as np
import xarray as xr

from bayesrank._validate import check_array, check_int
from bayesrank.ope._common import (
    PSCORE_VARS,
    pscore_tolerance,
    refuse_pscore_contradictions,
    valid_items,
)
from bayesrank.ope._long import columns_to_arrays
from bayesrank.ope.examination import valid_examination

__all__ = ["PSCORE_VARS", "as_log", "check_log", "examination_of"]


def examination_of(log) -> dict:
    """``{"examined": (n, L) bool or None, "feedback": str or None}`` of a log,
    checked against its rewards (:func:`~bayesrank.ope.examination.valid_examination`).
    """
    ex = log["examined"].values if "examined" in log else None
    if ex is not None and log["examined"].dims != ("round", "position"):
        raise ValueError(f"examined: expected dims ('round', 'position'), got "
                         f"{log['examined'].dims}")
    ex, fb = valid_examination(log["rewards"].values, ex, log.attrs.get("feedback"))
    return {"examined": ex, "feedback": fb}



def _valid_K(K) -> int | None:
    if K is None:
        return None
    return check_int(K, "K", low=1)


def _valid_lists(lists, K) -> np.ndarray:
    arr = np.asarray(lists)
    if arr.ndim != 2:
        raise ValueError(f"lists: expected shape (round, position), got {arr.shape}")
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"lists: expected at least one round and position, got {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"lists: expected integer item indices, got dtype {arr.dtype}")
    if arr.min() < 0:
        raise ValueError(f"lists: item indices must be >= 0, got min {arr.min()}")
    if K is not None and arr.max() >= K:
        raise ValueError(
            f"lists: item indices must lie in [0, K) = [0, {K}), got max {arr.max()}"
        )
    return arr.astype(np.int64)


def _valid_rewards(rewards, shape) -> np.ndarray:
    arr = check_array(rewards, "rewards", finite=None, clicks=True)
    if arr.shape != shape:
        raise ValueError(f"rewards: expected shape {shape} (as lists), got {arr.shape}")
    if np.isinf(arr).any():
        raise ValueError("rewards: expected finite values or NaN (not observed), found inf")
    return arr


def _valid_v0(v0, n: int) -> np.ndarray:
    arr = check_array(v0, "v0", finite=None)
    if arr.ndim == 1:
        arr = np.broadcast_to(arr, (n, arr.shape[0])).copy()
    if arr.ndim != 2 or arr.shape[0] != n or arr.shape[1] < 1:
        raise ValueError(f"v0: expected shape (dim,) or ({n}, dim), got {np.shape(v0)}")
    if not np.isfinite(arr).all():
        raise ValueError("v0: expected finite values, found NaN or inf")
    return arr


def _valid_pscore(p, name: str, shape) -> np.ndarray:
    arr = check_array(p, name, finite=None)
    if arr.shape != shape:
        raise ValueError(f"{name}: expected shape {shape}, got {arr.shape}")
    if np.isnan(arr).any():
        raise ValueError(f"{name}: propensities must lie in (0, 1], found NaN")
    if (arr <= 0).any() or (arr > 1).any():
        raise ValueError(
            f"{name}: propensities must lie in (0, 1], got min {arr.min()} and max "
            f"{arr.max()}"
        )
    return arr


def _stored_precision(stored: np.ndarray) -> np.dtype:
    """The float dtype ``stored`` carries its values in: its own when narrower than
    float64, float32 when a float64 array holds only float32 numbers (e.g. a JAX
    float32 array stored as float64), else float64."""
    if stored.dtype.kind == "f" and stored.dtype.itemsize < 8:
        return stored.dtype
    a = stored.astype(np.float64)
    with np.errstate(over="ignore"):
        if np.array_equal(a.astype(np.float32).astype(np.float64), a):
            return np.dtype(np.float32)
    return np.dtype(np.float64)


def same_items(stored, items) -> bool:
    """Whether the item vectors ``stored`` (a log's) are ``items`` (a policy's), at
    the precision ``stored`` holds them in: both are rounded to that dtype first
    (:func:`_stored_precision`), so a catalogue that went through float32 on the way
    to the log (JAX's default dtype) is the same catalogue, while one that differs
    by more than that rounding is not.

    Examples:
        >>> import numpy as np
        >>> V = np.array([[0.1, 1 / 3]])
        >>> same_items(V.astype(np.float32).astype(float), V)  # through float32
        True
        >>> same_items(V, V + 1e-12), same_items(V.astype(np.float32), V * (1 + 1e-6))
        (False, False)
    """
    stored, items = np.asarray(stored), np.asarray(items)
    if stored.shape != items.shape:
        return False
    dtype = _stored_precision(stored)
    with np.errstate(over="ignore"):
        return bool(np.array_equal(stored.astype(dtype), items.astype(dtype)))


def _dataframe(x):
    """``x`` when it is a pandas DataFrame, else None (pandas is not imported: a
    DataFrame exists only once pandas has been)."""
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(x, pd.DataFrame):
        return x
    return None


def as_log(
    lists,
    rewards=None,
    v0=None,
    pscore_list=None,
    pscore_position=None,
    pscore_pair=None,
    pscore_cascade=None,
    *,
    K=None,
    items=None,
    examined=None,
    feedback=None,
) -> xr.Dataset:
    """A checked log as an :class:`xarray.Dataset` (the format of :mod:`bayesrank.ope`),
    from arrays or from a pandas DataFrame in long format.

    Args:
        lists: (n, L) int item indices in [0, K) of the shown lists; or a pandas
            DataFrame with one row per (round, position), the layout of
            :func:`~bayesrank.ope.to_dataframe` and of Parquet logs: columns ``round``,
            ``position``, ``item``, ``reward``, the per-position pscore columns,
            and the per-round ``pscore_list`` and ``v0_0`` .. ``v0_{d-1}``
            repeated on the round's rows. Rows may come in any order (rounds are
            ordered by label; the index is ignored), and the other array
            arguments must then be left out. ``df.attrs["K"]`` and
            ``df.attrs["items"]`` and ``df.attrs["feedback"]`` (set by
            ``to_dataframe``) stand in for ``K``, ``items`` and ``feedback``
            when those are not given; an ``examined`` column is the mask.
        rewards: (n, L) float rewards; NaN = position not observed.
        v0: (n, d) each request's context vector, or (d,) shared by every round.
        pscore_list: (n,) the logger's probability of the whole shown list.
        pscore_position: (n, L) P(item a^l at position l).
        pscore_pair: (n, L) P(a^{l-1} at l-1 and a^l at l); at l = 0, P(a^1 at 1).
        pscore_cascade: (n, L) P(the prefix a^1..a^l is shown).

            The propensities given must agree with each other as every logger's do
            (within rounding: a relative 1e-6, more for float32 propensities on long
            lists, plus the dtype's smallest normal number): ``pscore_cascade``
            does not increase along the positions, its last position is
            ``pscore_list``, and ``pscore_position`` and ``pscore_pair`` are at
            least the list's probability (``pscore_list``, else the last
            ``pscore_cascade``).
        K: the number of items; when given, indices must be below it. None: the
            rows of ``items`` when given; without either the log names no
            catalogue, and :func:`~bayesrank.ope.evaluate` and ``policy.fit``
            check its indices against the target's (the policy's) K.
        items: (K, d) the item vectors (d as v0), needed by the model-based
            estimators (``dm``, ``pair_dr``); stored as the variable ``items``.
        examined: (n, L) bool, whether the user examined each position (so its
            reward, click or no click, was observed); stored as the variable
            ``examined``.
        feedback: the feedback model, ``"full"``, ``"cascade"`` or ``"pbm"``
            (:mod:`bayesrank.ope.examination`); stored as the attribute
            ``feedback``. ``"cascade"`` without ``examined``: examined up to the
            first click. ``examined`` without ``feedback``: ``"full"`` when every
            position is examined, else ``"cascade"``. Neither: the log as before
            (a NaN reward is taken as missing at random by dm and pair_dr).

    Returns:
        Dataset with dims ("round", "position", "dim") (and "item" with ``items``)
        and the variables above (pscore variables and items only where given).

    Raises:
        ValueError, TypeError: with a message starting with the offending variable
            (for a DataFrame, the column when one is missing, unknown, duplicated or
            of the wrong dtype, when a round lacks a position or has one twice, or
            when a per-round column differs within a round). Propensities that
            contradict each other raise a ValueError starting with the two
            variables' names (``pscore_cascade, pscore_list: in round 3 ...``) and
            naming the first offending round.

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import as_log
        >>> log = as_log(lists=np.array([[0, 2], [1, 1]]), rewards=np.ones((2, 2)),
        ...              v0=np.zeros(3), pscore_list=np.full(2, 1 / 9), K=3)
        >>> dict(log.sizes)
        {'round': 2, 'position': 2, 'dim': 3}
        >>> as_log(np.array([[0, 5]]), np.ones((1, 2)), np.zeros(3), K=3)
        Traceback (most recent call last):
        ...
        ValueError: lists: item indices must lie in [0, K) = [0, 3), got max 5
        >>> as_log(np.array([[0, 1]]), np.ones((1, 2)), np.zeros(3), pscore_list=[0.5],
        ...        pscore_cascade=[[0.25, 0.01]])  # the list above its last prefix
        Traceback (most recent call last):
        ...
        ValueError: pscore_cascade, pscore_list: in round 0 the prefix through the last position has probability 0.01 and the list 0.5; both are the whole list's, so they must be equal: not the propensities of any logger
        >>> import pandas as pd
        >>> df = pd.DataFrame({"round": [0, 0], "position": [1, 0], "item": [2, 0],
        ...                    "reward": [0.0, 1.0], "v0_0": [0.5, 0.5]})
        >>> as_log(df, K=3)["lists"].values.tolist()
        [[0, 2]]
    """
    frame = _dataframe(lists)
    if frame is not None:
        extra = [name for name, a in (
            ("rewards", rewards), ("v0", v0), ("pscore_list", pscore_list),
            ("pscore_position", pscore_position), ("pscore_pair", pscore_pair),
            ("pscore_cascade", pscore_cascade)) if a is not None]
        if extra:
            raise TypeError(
                f"{', '.join(extra)}: not allowed with a DataFrame, whose columns hold "
                "them (see bayesrank.ope.to_dataframe for the layout)"
            )

        K = frame.attrs.get("K") if K is None else K
        items = frame.attrs.get("items") if items is None else items
        feedback = frame.attrs.get("feedback") if feedback is None else feedback
        columns = [(c, frame.iloc[:, j].to_numpy()) for j, c in enumerate(frame.columns)]
        arrays = columns_to_arrays(columns)
        if examined is not None:
            if "examined" in arrays:
                raise TypeError("examined: not allowed with a DataFrame that has an "
                                "examined column")
            arrays["examined"] = examined
        return as_log(**arrays, K=K, items=items, feedback=feedback)
    missing = [name for name, a in (("rewards", rewards), ("v0", v0)) if a is None]
    if missing:
        raise TypeError(f"{', '.join(missing)}: required when lists is an array")
    K = _valid_K(K)
    lists_a = _valid_lists(lists, K)
    n, L = lists_a.shape
    v0_a = _valid_v0(v0, n)
    items_a = None
    if items is not None:
        items_a = valid_items(items, v0_a.shape[1], K, int(lists_a.max()) + 1)
        K = items_a.shape[0]
    data = {
        "lists": (("round", "position"), lists_a),
        "rewards": (("round", "position"), _valid_rewards(rewards, (n, L))),
        "v0": (("round", "dim"), v0_a),
    }
    given = {"pscore_list": pscore_list, "pscore_position": pscore_position,
             "pscore_pair": pscore_pair, "pscore_cascade": pscore_cascade}
    pscores, dtypes = {}, []
    for name, p in given.items():
        if p is None:
            continue
        dims = PSCORE_VARS[name]
        shape = (n,) if len(dims) == 1 else (n, L)
        dtypes.append(np.asarray(p).dtype)
        pscores[name] = _valid_pscore(p, name, shape)
        data[name] = (dims, pscores[name])
    refuse_pscore_contradictions(pscores, *pscore_tolerance(dtypes, L))
    if items_a is not None:
        data["items"] = (("item", "dim"), items_a)
    ex, fb = valid_examination(data["rewards"][1], examined, feedback)
    if ex is not None:
        data["examined"] = (("round", "position"), ex)
    ds = xr.Dataset(data)
    if K is not None:
        ds.attrs["K"] = K
    if fb is not None:
        ds.attrs["feedback"] = fb
    return ds


def check_log(ds, K=None) -> xr.Dataset:
    """Check an existing log (e.g. read back from NetCDF) and return it.

    Args:
        ds: a Dataset in the format of :mod:`bayesrank.ope`.
        K: the number of items; None: the Dataset's ``K`` attribute, if any.

    Returns:
        ``ds`` itself, unchanged.

    Raises:
        ValueError, TypeError: as :func:`as_log`, the message starting with the
            variable name (or ``log`` when it is not a Dataset).

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import as_log, check_log
        >>> log = as_log(np.array([[0, 1]]), np.ones((1, 2)), np.zeros(2), K=2)
        >>> check_log(log) is log
        True
        >>> check_log(log.drop_vars("v0"))
        Traceback (most recent call last):
        ...
        ValueError: v0: missing from the log
    """
    if not isinstance(ds, xr.Dataset):
        hint = " (convert a DataFrame with bayesrank.ope.as_log(df))" if _dataframe(
            ds) is not None else ""
        raise TypeError(f"log: expected an xarray.Dataset, got {type(ds).__name__}{hint}")
    for name in ("lists", "rewards", "v0"):
        if name not in ds:
            raise ValueError(f"{name}: missing from the log")
    expected = {"lists": ("round", "position"), "rewards": ("round", "position"),
                "examined": ("round", "position"),
                "v0": ("round", "dim"), "items": ("item", "dim"), **PSCORE_VARS}
    for name, dims in expected.items():
        if name in ds and ds[name].dims != dims:
            raise ValueError(f"{name}: expected dims {dims}, got {ds[name].dims}")
    if K is None and "K" in ds.attrs:
        K = int(ds.attrs["K"])
    as_log(
        ds["lists"].values, ds["rewards"].values, ds["v0"].values,
        **{name: ds[name].values for name in PSCORE_VARS if name in ds}, K=K,
        items=ds["items"].values if "items" in ds else None,
    )
    examination_of(ds)
    return ds
