"""Shared pieces of the estimators: the :class:`Estimate` tuple and argument checks."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: The optional propensity variables and their dims.
PSCORE_VARS = {
    "pscore_list": ("round",),
    "pscore_position": ("round", "position"),
    "pscore_pair": ("round", "position"),
    "pscore_cascade": ("round", "position"),
}

#: The 0.975 quantile of the standard normal (the 95 % normal interval).
Z95 = 1.959963984540054


class Estimate(NamedTuple):
    """A value estimate with its standard error and normal 95 % interval.

    Examples:
        >>> from bayesrank.ope import Estimate
        >>> Estimate(1.0, 0.5, 0.02, 1.98).stderr
        0.5
    """

    estimate: float
    stderr: float
    ci_low: float
    ci_high: float


def normal_estimate(est: float, contrib: np.ndarray) -> Estimate:
    """The estimate with stderr sd(contrib) / sqrt(n) from per-round contributions."""
    n = contrib.shape[0]
    se = float(contrib.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    return Estimate(float(est), se, est - Z95 * se, est + Z95 * se)


def check_items(items, d: int, K: int | None = None, n_used: int = 0) -> np.ndarray:
    """Item vectors (K, d) as a float array, or a ValueError/TypeError naming ``items``.

    Args:
        items: the candidate array.
        d: the context dimension (v0's) the items must share.
        K: the number of items when known (the rows must match).
        n_used: the largest item index used plus one (the rows must cover it).
    """
    arr = np.asarray(items)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"items: expected a real numeric (K, d) array, got dtype {arr.dtype}")
    arr = arr.astype(float)
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] != d:
        raise ValueError(f"items: expected shape (K, {d}) (d as v0), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError("items: expected finite values, found NaN or inf")
    if K is not None and arr.shape[0] != K:
        raise ValueError(f"items: expected K = {K} rows, got {arr.shape[0]}")
    if arr.shape[0] < n_used:
        raise ValueError(
            f"items: {arr.shape[0]} rows, but the lists use item index {n_used - 1}"
        )
    return arr
