"""The exact best list: the longest path of the paper's L-layered graph, as a DP.

The weight of a path in the L-layered graph (Eq. 2 of the paper) equals the sum of the
per-position scores ``s_1(a^1) + sum_{l>=2} s_l(a^{l-1}, a^l)``, so the longest path is a
max-sum dynamic programme over a chain (Viterbi):

* :func:`dp_decode` - pairwise scores, O(L K^2), jittable and vmappable;
* :func:`separable_decode` - scores ``s_l(i, j) = A_l[j] + B_l[i]`` (identity link and a
  point estimate of theta), exact in O(L K);
* :func:`window_decode` - scores over a window of S-1 previous items, O(L K^S);
* :func:`best_list` - the public entry point with input checks, ``mask=``,
  ``distinct=True`` (no repeated item) and ``top_k=`` (the k best lists), the last two by
  best-first (A*) search bounded by the unconstrained DP, which is exact.

Scores of ``-inf`` mean "never rank this item there".
"""

from __future__ import annotations

import heapq
import itertools

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "best_list",
    "dp_decode",
    "separable_decode",
    "window_decode",
    "apply_mask",
    "search_decode",
]


# ----------------------------------------------------------------------------- DP cores
def dp_decode(first, pairs):
    """Unconstrained best list for pairwise scores (jittable, vmappable).

    Args:
        first: (K,) score of item j at position 1.
        pairs: (L-1, K, K); ``pairs[l-2, i, j]`` is the score of item j at position l
            after item i.

    Returns:
        items: (L,) int32 array; value: scalar, the total score.
    """
    first = jnp.asarray(first)
    pairs = jnp.asarray(pairs)

    def forward(v, s):
        tot = v[:, None] + s  # (K, K): prev i, next j
        return jnp.max(tot, axis=0), jnp.argmax(tot, axis=0).astype(jnp.int32)

    v_last, back = jax.lax.scan(forward, first, pairs)  # back: (L-1, K)
    last = jnp.argmax(v_last).astype(jnp.int32)

    def backward(j, bp):
        i = bp[j]
        return i, i

    _, prev = jax.lax.scan(backward, last, back, reverse=True)
    items = jnp.concatenate([prev, last[None]])
    return items, v_last[last]


def separable_decode(first, A, B):
    """Exact best list when ``pairs[l-2, i, j] = A[l-2, j] + B[l-2, i]``, in O(L K).

    The best predecessor of every item j at position l is the same item,
    ``argmax_i V_{l-1}(i) + B_l[i]``, so each layer costs O(K).

    Args:
        first: (K,) scores at position 1.
        A: (L-1, K) the part of the score of position l that depends on the item there.
        B: (L-1, K) the part that depends on the item before it.
    """
    first = jnp.asarray(first)

    def forward(v, ab):
        a, b = ab
        i_star = jnp.argmax(v + b).astype(jnp.int32)
        return a + (v[i_star] + b[i_star]), i_star

    v_last, best_prev = jax.lax.scan(forward, first, (jnp.asarray(A), jnp.asarray(B)))
    last = jnp.argmax(v_last).astype(jnp.int32)
    # With a separable score the predecessor does not depend on the item chosen next.
    items = jnp.concatenate([best_prev, last[None]])
    return items, v_last[last]


def window_decode(scores):
    """Exact best list for scores over a window of S-1 previous items, O(L K^S).

    Args:
        scores: a sequence of L arrays; ``scores[l]`` (0-based position l) has
            ``min(l, S-1) + 1`` axes of length K, ordered from the oldest item in the
            window to the item at position l (last axis). Pairwise scores are the case
            S = 2: ``[first, pairs[0], pairs[1], ...]``.

    Returns:
        items: (L,) int32 array; value: scalar.
    """
    scores = [jnp.asarray(s) for s in scores]
    L = len(scores)
    S = max(s.ndim for s in scores)  # window size (previous S-1 items + current)
    # V over the last (up to S-1) items; shape (K,)*m with oldest axis first.
    V = scores[0]
    backs = []
    for l in range(1, L):
        tot = V[..., None] + scores[l]  # append the item at position l
        if tot.ndim > S - 1:  # window full: maximise out the oldest item
            backs.append(jnp.argmax(tot, axis=0).astype(jnp.int32))
            V = jnp.max(tot, axis=0)
        else:
            backs.append(None)
            V = tot
    flat = jnp.argmax(V.reshape(-1))
    value = V.reshape(-1)[flat]
    state = list(jnp.unravel_index(flat, V.shape))  # items at the last V.ndim positions
    items = [jnp.asarray(x, jnp.int32) for x in state]
    # Walk back: each full-window step recorded the dropped (oldest) item.
    for bp in reversed(backs):
        if bp is None:
            continue
        oldest = bp[tuple(items[: S - 1])]
        items.insert(0, oldest)
    return jnp.stack(items), value


def apply_mask(first, pairs, mask):
    """Set the scores of masked-out items (mask False) to -inf."""
    mask = jnp.asarray(mask, bool)
    neg = jnp.asarray(-jnp.inf, jnp.result_type(first, pairs))
    first = jnp.where(mask, first, neg)
    pairs = jnp.where(mask[None, None, :], pairs, neg)
    return first, pairs


# ------------------------------------------------------------------------- exact search
def _to_go(first: np.ndarray, pairs: np.ndarray) -> list[np.ndarray]:
    """h[l][j]: best unconstrained value of positions l+1..L after item j at l."""
    L = pairs.shape[0] + 1
    h = [None] * L
    h[L - 1] = np.zeros(first.shape[0])
    for l in range(L - 2, -1, -1):
        with np.errstate(invalid="ignore"):
            h[l] = np.max(pairs[l] + h[l + 1][None, :], axis=1)
    return h


def search_decode(first, pairs, *, distinct: bool = False, k: int = 1):
    """The k best lists by best-first (A*) search; exact.

    The heuristic is the unconstrained DP's value-to-go, an upper bound for any
    completion (with or without repeats), so lists leave the queue best first.

    Returns:
        items: (k', L) int array; values: (k',) with k' <= k (fewer if fewer lists
        have a finite score).
    """
    first = np.asarray(first, dtype=np.float64)
    pairs = np.asarray(pairs, dtype=np.float64)
    L = pairs.shape[0] + 1
    h = _to_go(first, pairs)
    tie = itertools.count()
    heap: list = []
    f0 = first + h[0]
    for j in np.flatnonzero(np.isfinite(f0)):
        heapq.heappush(heap, (-f0[j], next(tie), first[j], (int(j),)))
    out_items, out_vals = [], []
    while heap and len(out_items) < k:
        negf, _, g, prefix = heapq.heappop(heap)
        l = len(prefix)
        if l == L:
            out_items.append(prefix)
            out_vals.append(g)
            continue
        g_next = g + pairs[l - 1, prefix[-1]]
        f_next = g_next + h[l]
        ok = np.isfinite(f_next)
        if distinct:
            ok[list(prefix)] = False
        for q in np.flatnonzero(ok):
            heapq.heappush(heap, (-f_next[q], next(tie), g_next[q], prefix + (int(q),)))
    return (
        np.asarray(out_items, dtype=np.int64).reshape(-1, L),
        np.asarray(out_vals, dtype=np.float64),
    )


# ----------------------------------------------------------------------------- checks
def _is_tracer(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def _check_inputs(first, pairs, mask, distinct):
    if _is_tracer(first) or _is_tracer(pairs):
        return
    f = np.asarray(first)
    p = np.asarray(pairs)
    if f.ndim != 1 or f.shape[0] < 1:
        raise ValueError(f"first: expected a (K,) array with K >= 1, got shape {f.shape}")
    K = f.shape[0]
    if p.ndim != 3 or p.shape[1:] != (K, K):
        raise ValueError(
            f"pairs: expected shape (L-1, K, K) = (L-1, {K}, {K}), got {p.shape}"
        )
    for name, arr in (("first", f), ("pairs", p)):
        if not np.issubdtype(arr.dtype, np.number) or np.iscomplexobj(arr):
            raise TypeError(f"{name}: expected real scores, got dtype {arr.dtype}")
        if np.isnan(arr).any() or np.isposinf(arr).any():
            raise ValueError(
                f"{name}: scores must be finite or -inf (never rank); found NaN or +inf"
            )
    L = p.shape[0] + 1
    if mask is not None and not _is_tracer(mask):
        m = np.asarray(mask)
        if m.shape != (K,):
            raise ValueError(f"mask: expected a (K,) = ({K},) bool array, got {m.shape}")
        if m.dtype != bool:
            raise TypeError(f"mask: expected a bool array, got dtype {m.dtype}")
        avail = int(m.sum())
        if avail == 0:
            raise ValueError("mask: every item is masked out; no list can be shown")
        if distinct and avail < L:
            raise ValueError(
                f"mask: distinct=True needs at least L={L} available items, got {avail}"
            )
    if distinct and K < L:
        raise ValueError(f"distinct=True needs K >= L, got K={K} items and L={L}")


def best_list(first, pairs, *, distinct: bool = False, mask=None, top_k: int | None = None):
    """The exact best list: the longest path of the L-layered graph.

    Args:
        first: (K,) scores of item j at position 1 (including the v0 term).
        pairs: (L-1, K, K); ``pairs[l-2, i, j]`` is the score of item j at position l
            after item i.
        distinct: forbid repeated items (exact best-first search bounded by the DP).
        mask: (K,) bool, True where the item may be shown.
        top_k: return the k best lists instead of the best one.

    Returns:
        ``(items, value)``: items (L,) int array and a float; with ``top_k=k``,
        items (k, L) and values (k,), best first.

    Example:
        >>> import numpy as np, bayesrank as br
        >>> first = np.array([0.0, 1.0]); pairs = np.array([[[0.0, 2.0], [3.0, 0.0]]])
        >>> items, value = br.best_list(first, pairs)
        >>> items.tolist(), float(value)
        ([1, 0], 4.0)
    """
    _check_inputs(first, pairs, mask, distinct)
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
            raise ValueError(f"top_k: expected a positive integer, got {top_k!r}")
    if mask is not None:
        first, pairs = apply_mask(jnp.asarray(first), jnp.asarray(pairs), mask)
    if not distinct and top_k is None:
        return _dp_jit(first, pairs)
    items, values = search_decode(first, pairs, distinct=distinct, k=top_k or 1)
    if top_k is None:
        return items[0], values[0]
    return items, values


_dp_jit = jax.jit(dp_decode)
