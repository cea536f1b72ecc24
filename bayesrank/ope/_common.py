"""Shared pieces of the estimators: the :class:`Estimate` tuple and argument checks."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bayesrank._validate import check_array

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


def valid_items(items, d: int, K: int | None = None, n_used: int = 0) -> np.ndarray:
    """Item vectors (K, d) as a float array, or a ValueError/TypeError naming ``items``.

    Args:
        items: the candidate array.
        d: the context dimension (v0's) the items must share.
        K: the number of items when known (the rows must match).
        n_used: the largest item index used plus one (the rows must cover it).
    """
    arr = check_array(items, "items", finite=None)
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


# ------------------------------------------------ the propensities' invariants
#: The relative tolerance of :func:`refuse_pscore_contradictions` (float64 propensities):
#: the invariants hold exactly in exact arithmetic, within rounding in a logger's.
PSCORE_RTOL = 1e-6


def pscore_tolerance(dtypes, L: int) -> tuple[float, float]:
    """``(rtol, atol)`` of :func:`refuse_pscore_contradictions` for propensities given in
    ``dtypes`` on lists of ``L`` positions: rtol :data:`PSCORE_RTOL`, or 4 L
    machine epsilons of the coarsest float dtype when larger (a float32 logger's
    products over a long list); atol the smallest normal number of that dtype."""
    floats = [np.dtype(d) for d in dtypes if np.dtype(d).kind == "f"]
    coarse = max(floats, key=lambda d: np.finfo(d).eps, default=np.dtype(np.float64))
    fi = np.finfo(coarse)
    return max(PSCORE_RTOL, 4 * L * float(fi.eps)), float(fi.tiny)


def _first(bad: np.ndarray) -> tuple[int, ...]:
    """The index of the first True of ``bad`` (row-major: the first offending row)."""
    return tuple(int(j) for j in np.argwhere(bad)[0])


def refuse_pscore_contradictions(ps: dict, rtol: float = PSCORE_RTOL, atol: float = 0.0, *,
                            name=str, row=lambda i: f"round {i}") -> None:
    """Raise a ValueError unless the propensities obey what every logger's do.

    The invariants (each within ``rtol`` relative plus ``atol`` absolute), for each
    round, where a variable is given:

    * ``pscore_cascade`` does not increase along the positions (a prefix is never
      more probable than its own prefix);
    * its last position equals ``pscore_list`` (both are the whole list);
    * ``pscore_position`` and ``pscore_pair`` are at least the list's probability
      (``pscore_list``, else the last ``pscore_cascade``): each is the probability
      of an event the shown list implies.

    Args:
        ps: log variable name -> float array (``pscore_list`` (n,), the others
            (n, L)), the variables of :data:`PSCORE_VARS` that are given.
        rtol, atol: the tolerance (:func:`pscore_tolerance`).
        name: the variable's name in the message (e.g. obp's key).
        row: round index -> its name in the message (e.g. ``slate 7``).

    Raises:
        ValueError: starting with the names of the two variables that contradict
            each other (one, for a rising ``pscore_cascade``), naming the first
            offending round.
    """
    lst, casc = ps.get("pscore_list"), ps.get("pscore_cascade")
    tail = "not the propensities of any logger"
    if casc is not None and casc.shape[1] > 1:
        rise = casc[:, 1:] > casc[:, :-1] * (1 + rtol) + atol
        if rise.any():
            i, l = _first(rise)
            raise ValueError(
                f"{name('pscore_cascade')}: rises along the positions of {row(i)}: the "
                f"prefix through position {l + 1} has probability {casc[i, l + 1]}, "
                f"above the {casc[i, l]} of its own prefix through position {l}; a "
                f"longer prefix is never more probable: {tail}"
            )
    if casc is not None and lst is not None:
        last = casc[:, -1]
        off = np.abs(last - lst) > rtol * np.maximum(last, lst) + atol
        if off.any():
            (i,) = _first(off)
            raise ValueError(
                f"{name('pscore_cascade')}, {name('pscore_list')}: in {row(i)} the prefix "
                f"through the last position has probability {last[i]} and the list "
                f"{lst[i]}; both are the whole list's, so they must be equal: {tail}"
            )
    ref, ref_name = (lst, "pscore_list") if lst is not None else (
        (casc[:, -1], "pscore_cascade") if casc is not None else (None, None))
    if ref is None:
        return
    for var, what in (("pscore_position", "its item at position {l}"),
                      ("pscore_pair", "its pair of items ending at position {l}")):
        a = ps.get(var)
        if a is None:
            continue
        low = a < ref[:, None] * (1 - rtol) - atol
        if low.any():
            i, l = _first(low)
            raise ValueError(
                f"{name(var)}, {name(ref_name)}: in {row(i)} {what.format(l=l)} has "
                f"probability {a[i, l]}, below the {ref[i]} of the whole list that "
                f"shows it; an event of the list is at least as probable as the list: "
                f"{tail}"
            )
