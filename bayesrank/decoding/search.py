"""Distinct and top-k lists: exact best-first (A*) search bounded by the
unconstrained DP's value-to-go, on the host (NumPy).

The heuristic is an upper bound for any completion (with or without repeated items),
so complete lists leave the queue best first: the first is the exact best distinct
list, the first k the k best lists.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["host_search", "search_decode", "separable_search_decode"]


def _to_go(first: np.ndarray, pairs: np.ndarray) -> list[np.ndarray]:
    """h[l][j]: best unconstrained value of positions l+1..L after item j at l."""
    L = pairs.shape[0] + 1
    h = [None] * L
    h[L - 1] = np.zeros(first.shape[0])
    for l in range(L - 2, -1, -1):
        h[l] = np.max(pairs[l] + h[l + 1][None, :], axis=1)
    return h


def _to_go_separable(first: np.ndarray, A: np.ndarray, B: np.ndarray) -> list:
    """The same value-to-go for separable scores, in O(L K)."""
    L = A.shape[0] + 1
    h = [None] * L
    h[L - 1] = np.zeros(first.shape[0])
    for l in range(L - 2, -1, -1):
        h[l] = B[l] + np.max(A[l] + h[l + 1])
    return h


def _astar(first, row: Callable, h: list, L: int, distinct: bool, k: int):
    """Best-first search over prefixes; children are pushed lazily, best first.

    ``row(l, i)`` is the (K,) score vector of position l+1 (0-based) after item i.
    A popped node pushes its next sibling and its own best child, so the heap stays
    small; because siblings are sorted by their bound f = g + h, the order in which
    complete lists leave the heap is still best first.
    """
    tie = itertools.count()
    heap: list = []

    def push_children(g_parent, prefix):
        l = len(prefix)
        g = first if l == 0 else g_parent + row(l - 1, prefix[-1])
        with np.errstate(invalid="ignore"):
            f = g + h[l]
        ok = np.isfinite(f)
        if distinct and prefix:
            ok[list(prefix)] = False
        cand = np.flatnonzero(ok)
        order = cand[np.argsort(-f[cand], kind="stable")]
        push_sibling((g, f, order, prefix), 0)

    def push_sibling(family, r):
        _, f, order, _ = family
        if r < order.shape[0]:
            heapq.heappush(heap, (-f[order[r]], next(tie), family, r))

    out_items, out_vals = [], []
    push_children(None, ())
    while heap and len(out_items) < k:
        _, _, family, r = heapq.heappop(heap)
        g, _, order, prefix = family
        q = int(order[r])
        push_sibling(family, r + 1)
        new = prefix + (q,)
        if len(new) == L:
            out_items.append(new)
            out_vals.append(g[q])
        else:
            push_children(g[q], new)
    return (
        np.asarray(out_items, dtype=np.int32).reshape(-1, L),
        np.asarray(out_vals, dtype=np.float64),
    )


def search_decode(first, pairs, *, distinct: bool = False, k: int = 1):
    """The k best lists by best-first (A*) search; exact, on the host (NumPy).

    The heuristic is the unconstrained DP's value-to-go, an upper bound for any
    completion (with or without repeats), so lists leave the queue best first.

    Args:
        first: (K,) scores at position 1; pairs: (L-1, K, K).
        distinct: forbid repeated items.
        k: how many lists.

    Returns:
        items: (k', L) int32 array; values: (k',) float64, best first, with k' <= k
        (fewer if fewer lists have a finite score).
    """
    first = np.asarray(first, dtype=np.float64)
    pairs = np.asarray(pairs, dtype=np.float64)
    L = pairs.shape[0] + 1
    h = _to_go(first, pairs)
    return _astar(first, lambda l, i: pairs[l, i], h, L, distinct, k)


def separable_search_decode(first, A, B, *, distinct: bool = False, k: int = 1):
    """:func:`search_decode` for separable scores ``A[l-2, j] + B[l-2, i]``.

    Never forms the (L-1, K, K) table: memory O(L K) plus O(K) per expanded prefix.

    Returns:
        items: (k', L) int32; values: (k',) float64, best first.
    """
    first = np.asarray(first, dtype=np.float64)
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    L = A.shape[0] + 1
    h = _to_go_separable(first, A, B)
    return _astar(first, lambda l, i: A[l] + B[l, i], h, L, distinct, k)



def host_search(fn, L: int, dtype, *arrays):
    """Run a host search through ``jax.pure_callback``; -1 items if none exists."""
    out = (jax.ShapeDtypeStruct((L,), jnp.int32), jax.ShapeDtypeStruct((), dtype))

    def host(*xs):
        items, values = fn(*xs, distinct=True, k=1)
        if items.shape[0] == 0:
            return np.full(L, -1, np.int32), np.asarray(-np.inf, dtype)
        return items[0].astype(np.int32), np.asarray(values[0], dtype)

    return jax.pure_callback(host, out, *arrays, vmap_method="sequential")
