"""``best_list``: the public entry point to the exact best list, with input checks."""

from __future__ import annotations

import jax
import numpy as np

from bayesrank._validate import check_int, is_tracer
from bayesrank.decoding.checks import apply_mask, as_float, refuse_bad_inputs
from bayesrank.decoding.dense import dp_decode, dp_host
from bayesrank.decoding.search import search_decode

__all__ = ["best_list"]


def best_list(
    first, pairs, *, distinct: bool = False, mask=None, top_k: int | None = None
):
    """The exact best list: the longest path of the L-layered graph.

    Args:
        first: (K,) scores of item j at position 1 (including the v0 term).
        pairs: (L-1, K, K); ``pairs[l-2, i, j]`` is the score of item j at position l
            after item i. Zero rows (shape (0, K, K)) means L = 1.
        distinct: forbid repeated items (exact best-first search bounded by the DP).
        mask: (K,) bool, True where the item may be shown.
        top_k: return the k best lists instead of the best one.

    Returns:
        ``(items, value)``: items (L,) int32 array and a scalar; with ``top_k=k``,
        items (k', L) and values (k',), best first (k' < k only when fewer lists
        have a finite score).

    Raises:
        ValueError: bad shapes, NaN/+inf scores, a bad mask, K < L with
            ``distinct=True``, or no list with a finite score.
        TypeError: scores that are not real numbers, or a mask that is not boolean.

    Example:
        >>> import numpy as np, bayesrank as br
        >>> first = np.array([0.0, 1.0]); pairs = np.array([[[0.0, 2.0], [3.0, 0.0]]])
        >>> items, value = br.best_list(first, pairs)
        >>> items.tolist(), float(value)
        ([1, 0], 4.0)
    """
    refuse_bad_inputs(first, pairs, mask, distinct)
    if top_k is not None:
        top_k = check_int(top_k, "top_k", low=1)
    first, pairs = as_float(first), as_float(pairs)
    if mask is not None:
        first, pairs = apply_mask(first, pairs, mask)
    traced = is_tracer(first) or is_tracer(pairs)
    host = not any(isinstance(x, jax.Array) for x in (first, pairs))
    if not distinct and top_k is None:
        # NumPy in, NumPy out: the same DP on the host, without copying the tables
        # onto the device (the copy alone costs more than the O(L K^2) DP).
        items, value = (dp_host if host else _dp_jit)(first, pairs)
        if not traced and not np.isfinite(float(value)):
            raise ValueError("first/pairs: every list has score -inf; nothing to rank")
        return items, value
    if traced:
        raise TypeError(
            "first/pairs: distinct=True or top_k under jax.jit needs decode_in_jit "
            "(best_list searches on the host)"
        )
    items, values = search_decode(first, pairs, distinct=distinct, k=top_k or 1)
    if items.shape[0] == 0:
        raise ValueError(
            "first/pairs: no list has a finite score under these constraints"
        )
    if top_k is None:
        return items[0], values[0]
    return items, values


_dp_jit = jax.jit(dp_decode)
