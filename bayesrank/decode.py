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
  best-first (A*) search bounded by the unconstrained DP, which is exact;
* :func:`decode_in_jit` and :func:`separable_in_jit` - the same inside ``jax.jit``,
  ``lax.scan`` and ``vmap`` (the distinct search runs on the host through
  ``jax.pure_callback``).

Scores of ``-inf`` mean "never rank this item there".
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "apply_mask",
    "best_list",
    "check_window_scores",
    "decode_in_jit",
    "dp_decode",
    "search_decode",
    "separable_decode",
    "separable_in_jit",
    "separable_search_decode",
    "window_decode",
]


def _as_float(x):
    """Scores of a floating dtype (integer scores are promoted).

    Host data stay NumPy arrays: a jitted function takes them directly, which costs
    less than converting them with ``jnp.asarray`` first (a dispatched op per array).
    """
    if isinstance(x, (jax.Array, jax.core.Tracer)):
        if not jnp.issubdtype(x.dtype, jnp.floating):
            x = x.astype(jnp.result_type(float))
        return x
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64 if jax.config.jax_enable_x64 else np.float32)
    return x


# ----------------------------------------------------------------------------- DP cores
def _max_argmax(x, axis: int = 0):
    """``(max, first argmax)`` along ``axis``; int32 indices.

    Equal to ``jnp.max`` and ``jnp.argmax`` (ties go to the first index), but built
    from two single-operand reductions: XLA on CPU runs ``argmax`` over a non-minor
    axis about 10x slower (measured: 35 ms vs 2 ms for a (1000, 1000) DP step).
    """
    # One materialised x for both reductions: if XLA fuses and recomputes x in each
    # consumer, rounding (e.g. FMA contraction) can differ and no entry equals m.
    x = jax.lax.optimization_barrier(x)
    m = jnp.max(x, axis=axis)
    n = x.shape[axis]
    shape = [1] * x.ndim
    shape[axis] = n
    iota = jnp.arange(n, dtype=jnp.int32).reshape(shape)
    hit = x == jnp.expand_dims(m, axis)
    idx = jnp.min(jnp.where(hit, iota, jnp.int32(n)), axis=axis)
    return m, jnp.minimum(idx, n - 1)  # stays a valid index even for NaN input


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
        return _max_argmax(v[:, None] + s, axis=0)  # (K, K): prev i, next j

    v_last, back = jax.lax.scan(forward, first, pairs)  # back: (L-1, K)
    value, last = _max_argmax(v_last)

    def backward(j, bp):
        i = bp[j]
        return i, i

    _, prev = jax.lax.scan(backward, last, back, reverse=True)
    items = jnp.concatenate([prev, last[None]])
    return items, value


def separable_decode(first, A, B):
    """Exact best list when ``pairs[l-2, i, j] = A[l-2, j] + B[l-2, i]``, in O(L K).

    The best predecessor of every item j at position l is the same item,
    ``argmax_i V_{l-1}(i) + B_l[i]``, so each layer costs O(K).

    Args:
        first: (K,) scores at position 1.
        A: (L-1, K) the part of the score of position l that depends on the item there.
        B: (L-1, K) the part that depends on the item before it.

    Returns:
        items: (L,) int32 array; value: scalar.
    """
    first = jnp.asarray(first)

    def forward(v, ab):
        a, b = ab
        best, i_star = _max_argmax(v + b)
        return a + best, i_star

    v_last, best_prev = jax.lax.scan(forward, first, (jnp.asarray(A), jnp.asarray(B)))
    value, last = _max_argmax(v_last)
    # With a separable score the predecessor does not depend on the item chosen next.
    items = jnp.concatenate([best_prev, last[None]])
    return items, value


def check_window_scores(scores) -> tuple[int, int]:
    """Check the layout of window scores and return ``(K, S)``.

    ``scores[l]`` (0-based position l) must have ``min(l, S-1) + 1`` axes of length K,
    where S (the window size) is the largest number of axes; values must be real and
    finite or ``-inf``. Value checks are skipped for traced arrays (shapes are static).

    Raises:
        TypeError: ``scores`` is not a list/tuple of arrays, or non-real values.
        ValueError: a shape does not follow the layout, or NaN/+inf values.
    """
    if not isinstance(scores, (list, tuple)):
        raise TypeError(
            "scores: expected a list or tuple of L arrays (one per position), got "
            f"{type(scores).__name__}"
        )
    if len(scores) < 1:
        raise ValueError("scores: expected at least one position (L >= 1), got none")
    shapes = [tuple(np.shape(s)) for s in scores]
    if len(shapes[0]) != 1 or shapes[0][0] < 1:
        raise ValueError(
            f"scores[0]: expected a (K,) array with K >= 1, got {shapes[0]}"
        )
    K = shapes[0][0]
    S = max(len(sh) for sh in shapes)
    for l, sh in enumerate(shapes):
        want = (K,) * (min(l, S - 1) + 1)
        if sh != want:
            raise ValueError(
                f"scores[{l}]: expected shape {want} (min(l, S-1)+1 = {len(want)} axes "
                f"of length K={K}, window S={S}), got {sh}"
            )
    for l, s in enumerate(scores):
        _check_values(s, f"scores[{l}]")
    return K, S


def window_decode(scores, *, mask=None):
    """Exact best list for scores over a window of S-1 previous items, O(L K^S).

    Args:
        scores: a list of L arrays; ``scores[l]`` (0-based position l) has
            ``min(l, S-1) + 1`` axes of length K, ordered from the oldest item in the
            window to the item at position l (last axis). Pairwise scores are the case
            S = 2: ``[first, pairs[0], pairs[1], ...]``; S = 1 means independent
            positions.
        mask: (K,) bool, True where the item may be shown (optional).

    Returns:
        items: (L,) int32 array; value: scalar.
    """
    _, S = check_window_scores(scores)
    scores = [_as_float(s) for s in scores]
    if mask is not None:
        m = jnp.asarray(mask, bool)
        scores = [jnp.where(m, s, jnp.asarray(-jnp.inf, s.dtype)) for s in scores]
    if S == 1:  # no dependence between positions
        stacked = jnp.stack(scores)  # (L, K)
        return jnp.argmax(stacked, axis=1).astype(jnp.int32), jnp.sum(
            jnp.max(stacked, axis=1)
        )
    L = len(scores)
    # V over the last (up to S-1) items; shape (K,)*m with oldest axis first.
    V = scores[0]
    backs = []
    for l in range(1, L):
        tot = V[..., None] + scores[l]  # append the item at position l
        if tot.ndim > S - 1:  # window full: maximise out the oldest item
            V, back = _max_argmax(tot, axis=0)
            backs.append(back)
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
    """Set the scores of masked-out items (mask False) to -inf.

    Integer scores are promoted to floating point (``-inf`` needs a float).
    """
    mask = jnp.asarray(mask, bool)
    first, pairs = _as_float(first), _as_float(pairs)
    dtype = jnp.result_type(first, pairs)
    neg = jnp.asarray(-jnp.inf, dtype)
    first = jnp.where(mask, first.astype(dtype), neg)
    pairs = jnp.where(mask[None, None, :], pairs.astype(dtype), neg)
    return first, pairs


# ------------------------------------------------------------------------- exact search
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


# ----------------------------------------------------------------------------- checks
def _is_tracer(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def _check_values(arr, name: str) -> None:
    """Real scores, finite or -inf; skipped for traced arrays."""
    if _is_tracer(arr):
        return
    a = np.asarray(arr)
    if not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a):
        raise TypeError(f"{name}: expected real scores, got dtype {a.dtype}")
    # one pass: the max is NaN if any entry is, +inf if any entry is
    if a.size and not a.max() < np.inf:
        raise ValueError(
            f"{name}: scores must be finite or -inf (never rank); found NaN or +inf"
        )


def _check_shapes(first_shape, pairs_shape, mask, distinct, *, pairs_name="pairs"):
    """Shape checks (valid for traced arrays too); returns (K, L)."""
    if len(first_shape) != 1 or first_shape[0] < 1:
        raise ValueError(
            f"first: expected a (K,) array with K >= 1, got shape {first_shape}"
        )
    K = first_shape[0]
    if pairs_name == "pairs":
        if len(pairs_shape) != 3 or pairs_shape[1:] != (K, K):
            raise ValueError(
                f"pairs: expected shape (L-1, K, K) = (L-1, {K}, {K}), got {pairs_shape}"
            )
    elif len(pairs_shape) != 2 or pairs_shape[1] != K:
        raise ValueError(
            f"{pairs_name}: expected shape (L-1, K) = (L-1, {K}), got {pairs_shape}"
        )
    L = pairs_shape[0] + 1
    if mask is not None:
        mshape = tuple(np.shape(mask))
        if mshape != (K,):
            raise ValueError(f"mask: expected a (K,) = ({K},) bool array, got {mshape}")
        if jnp.asarray(mask).dtype != bool:
            raise TypeError(
                f"mask: expected a bool array, got dtype {jnp.asarray(mask).dtype}"
            )
    if distinct and K < L:
        raise ValueError(f"distinct=True needs K >= L, got K={K} items and L={L}")
    return K, L


def _check_inputs(first, pairs, mask, distinct):
    _, L = _check_shapes(np.shape(first), np.shape(pairs), mask, distinct)
    _check_values(first, "first")
    _check_values(pairs, "pairs")
    if mask is not None and not _is_tracer(mask):
        avail = int(np.asarray(mask).sum())
        if avail == 0:
            raise ValueError("mask: every item is masked out; no list can be shown")
        if distinct and avail < L:
            raise ValueError(
                f"mask: distinct=True needs at least L={L} available items, got {avail}"
            )


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
        ValueError/TypeError: bad shapes, NaN/+inf scores, a bad mask, K < L with
        ``distinct=True``, or no list with a finite score.

    Example:
        >>> import numpy as np, bayesrank as br
        >>> first = np.array([0.0, 1.0]); pairs = np.array([[[0.0, 2.0], [3.0, 0.0]]])
        >>> items, value = br.best_list(first, pairs)
        >>> items.tolist(), float(value)
        ([1, 0], 4.0)
    """
    _check_inputs(first, pairs, mask, distinct)
    if top_k is not None and (
        isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1
    ):
        raise ValueError(f"top_k: expected a positive integer, got {top_k!r}")
    first, pairs = _as_float(first), _as_float(pairs)
    if mask is not None:
        first, pairs = apply_mask(first, pairs, mask)
    traced = _is_tracer(first) or _is_tracer(pairs)
    host = not any(isinstance(x, jax.Array) for x in (first, pairs))
    if not distinct and top_k is None:
        # NumPy in, NumPy out: the same DP on the host, without copying the tables
        # onto the device (the copy alone costs more than the O(L K^2) DP).
        items, value = (_dp_host if host else _dp_jit)(first, pairs)
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


def _dp_host(first: np.ndarray, pairs: np.ndarray):
    """:func:`dp_decode` in NumPy, step for step (same sums, same tie rule: the
    smallest index among equal maxima)."""
    v, back = first, []
    for s in pairs:
        tot = v[:, None] + s
        arg = np.argmax(tot, axis=0)
        back.append(arg)
        v = tot[arg, np.arange(s.shape[1])]
    last = int(np.argmax(v))
    items = [last]
    for arg in reversed(back):
        items.append(int(arg[items[-1]]))
    return np.array(items[::-1], np.int32), v[last]


# ------------------------------------------------------------------ inside jax.jit
def _host_search(fn, L: int, dtype, *arrays):
    """Run a host search through ``jax.pure_callback``; -1 items if none exists."""
    out = (jax.ShapeDtypeStruct((L,), jnp.int32), jax.ShapeDtypeStruct((), dtype))

    def host(*xs):
        items, values = fn(*xs, distinct=True, k=1)
        if items.shape[0] == 0:
            return np.full(L, -1, np.int32), np.asarray(-np.inf, dtype)
        return items[0].astype(np.int32), np.asarray(values[0], dtype)

    return jax.pure_callback(host, out, *arrays, vmap_method="sequential")


def decode_in_jit(first, pairs, *, distinct: bool = False, mask=None):
    """:func:`best_list` for use inside ``jax.jit``, ``lax.scan`` and ``vmap``.

    Non-distinct: the masked DP (:func:`dp_decode`). Distinct: the exact host search
    (:func:`search_decode`) through ``jax.pure_callback`` (``vmap`` calls it once per
    batch element). Only shapes are checked (values may be traced). If no distinct
    list has a finite score, items are all -1 and the value is -inf.

    Args:
        first: (K,) scores at position 1; pairs: (L-1, K, K).
        distinct: forbid repeated items (requires K >= L).
        mask: (K,) bool, True where the item may be shown.

    Returns:
        items: (L,) int32; value: scalar of the scores' floating dtype.
    """
    _, L = _check_shapes(np.shape(first), np.shape(pairs), mask, distinct)
    first, pairs = _as_float(first), _as_float(pairs)
    if mask is not None:
        first, pairs = apply_mask(first, pairs, mask)
    if not distinct:
        return dp_decode(first, pairs)
    return _host_search(search_decode, L, first.dtype, first, pairs)


def separable_in_jit(first, A, B, *, distinct: bool = False, mask=None):
    """:func:`separable_decode` with a mask and ``distinct=``, jittable.

    Scores are ``s_1 = first[j]`` and ``s_l(i, j) = A[l-2, j] + B[l-2, i]``. Masked
    items get ``-inf`` in ``first`` and ``A``. Distinct runs the exact host search
    (:func:`separable_search_decode`, O(L K) memory) through ``jax.pure_callback``.

    Args:
        first: (K,); A: (L-1, K); B: (L-1, K).
        distinct: forbid repeated items (requires K >= L).
        mask: (K,) bool, True where the item may be shown.

    Returns:
        items: (L,) int32; value: scalar (items -1 and value -inf if no distinct list
        has a finite score).
    """
    _, L = _check_shapes(np.shape(first), np.shape(A), mask, distinct, pairs_name="A")
    if tuple(np.shape(B)) != tuple(np.shape(A)):
        raise ValueError(
            f"B: expected the shape of A, {tuple(np.shape(A))}, got {tuple(np.shape(B))}"
        )
    first, A, B = _as_float(first), _as_float(A), _as_float(B)
    dtype = jnp.result_type(first, A, B)
    first, A, B = first.astype(dtype), A.astype(dtype), B.astype(dtype)
    if mask is not None:
        m = jnp.asarray(mask, bool)
        neg = jnp.asarray(-jnp.inf, dtype)
        first = jnp.where(m, first, neg)
        A = jnp.where(m[None, :], A, neg)
    if not distinct:
        return separable_decode(first, A, B)
    return _host_search(separable_search_decode, L, dtype, first, A, B)
