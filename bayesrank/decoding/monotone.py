"""Exact best lists for monotone point-estimate scores, without K x K tables.

Scores (positions l = 2..L; position 1 is a plain (K,) vector ``first``)::

    s_l(i, j) = f_l(A_l[j] + B_l[i])        f_l nondecreasing

(a Thompson draw or posterior mean of theta through a logistic / probit / exp /
identity link: ``A = <theta^l, v_j>``, ``B = w_l <theta^l, v_i>``). The DP step is
``M(j) = max_i [V(i) + f(A_j + B_i)]``.

**Pareto front (any nondecreasing f).** Call item i *dominated* when another item k
has ``V(k) >= V(i)`` and ``B_k >= B_i``. Then for every j,
``V(k) + f(A_j + B_k) >= V(i) + f(A_j + B_i)`` because f is nondecreasing, so the max
over all i equals the max over the non-dominated items (the Pareto front of the points
``(V(i), B_i)``; of items with equal (V, B) one is kept). The step scans only the front:
O(K log K) for the sort plus O(m K) for the scan, m the front size. For points in
general position m is about ln K (the number of records of a random sequence; 12 at
K = 100,000), but m = K when V decreases exactly as B increases (e.g. ``V`` increasing in
``<theta^{l-1}, v>`` and ``w_l < 0`` with ``theta^l = theta^{l-1}``): the scan is then the
dense O(K^2) step, run in row blocks so memory stays O(K) (see :func:`front_step`).

**Exp link (convex hull trick).** ``f(A_j + B_i) = e^{A_j} e^{B_i}``: with ``x = e^{A_j}
> 0`` the step is the upper envelope of the lines ``y = V(i) + e^{B_i} x``, exact in
O(K log K) on every input (:func:`exp_step`).

**Identity link.** The scores separate; :func:`bayesrank.decoding.separable.separable_decode` is
O(L K).

:func:`monotone_backward` runs the same steps backwards (positions L..2, the front of
(value-to-go, A) over the next item), the pass the policies' decoder dispatcher uses
at catalogue scale.

Everything here runs on the host in NumPy (data-dependent front sizes);
:func:`monotone_backward_in_jit` calls the backward pass from inside ``jax.jit`` /
``vmap`` through ``jax.pure_callback(..., vmap_method="sequential")``. ``distinct=True``
runs the exact best-first search of :mod:`bayesrank.decoding.search`, bounded by the value-to-go of the same fast
steps and with score rows made on demand (O(K) memory per expanded prefix), at any K.
Windows (S > 2) are out of scope: use :func:`bayesrank.decoding.window.window_decode`.

Example:
    >>> import numpy as np
    >>> from bayesrank.decoding.monotone import monotone_decode
    >>> rng = np.random.default_rng(0)
    >>> first, A, B = rng.normal(size=5), rng.normal(size=(2, 5)), rng.normal(size=(2, 5))
    >>> items, value, info = monotone_decode(first, A, B, "logistic")
    >>> items.shape, info.front.shape
    ((3,), (2,))
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy import special

from bayesrank.decoding.checks import as_float, valid_shapes
from bayesrank.decoding.search import _astar
from bayesrank.model.links import Link, get_link

__all__ = [
    "MonotoneInfo",
    "backward_chain",
    "backward_in_jit",
    "exp_step",
    "front_step",
    "monotone_backward",
    "monotone_backward_in_jit",
    "monotone_decode",
    "np_link",
    "pareto_front",
    "resolve_step_links",
    "valid_scale_inputs",
]

#: Entries of one (rows, K) block in a front scan (memory ~ 8 bytes each, twice).
CHUNK = 1 << 21
#: Columns per block in the pruned front scan (:func:`_blocked_scan`).
BLOCK = 1024
#: Candidate count above which :func:`pareto_front` prunes by pivots first.
PIVOT_MIN = 256


class MonotoneInfo(NamedTuple):
    """What a monotone decode did (returned, never carried)."""

    front: np.ndarray  # (L-1,) int, items scanned per DP step (front or hull size)


# ------------------------------------------------------------------------ links
def np_link(link: Link):
    """The NumPy version of a link's mean function (custom links: their own f)."""
    table = {
        "identity": lambda z: z,
        "logistic": special.expit,
        "probit": special.ndtr,
        "exp": np.exp,
    }
    if link.name in table:
        return table[link.name]
    return lambda z: np.asarray(link.mean(z), dtype=np.result_type(z))


def resolve_step_links(links, L: int) -> tuple[Link, ...]:
    """Links of positions 2..L: one link, L-1 links, or L links (the first dropped).

    Raises:
        ValueError/TypeError: a wrong count or an unknown link.
    """
    if isinstance(links, (list, tuple)) and not isinstance(links, Link):
        if len(links) == L:
            links = links[1:]
        elif len(links) != L - 1:
            raise ValueError(
                f"links: expected one link or a sequence of L-1={L - 1} (or L={L}) "
                f"links, got {len(links)}"
            )
        return tuple(get_link(f, argname=f"links[{i}]") for i, f in enumerate(links))
    return (get_link(links, argname="links"),) * (L - 1)


# ------------------------------------------------------------------------ steps
def pareto_front(V, B) -> np.ndarray:
    """Indices of the Pareto front of ``(V(i), B_i)`` over items with ``V > -inf``.

    Returns:
        (m,) int64 indices, sorted by B descending (so V ascending); of items with
        equal (V, B) the one sorted first is kept.
    """
    idx = np.flatnonzero(V > -np.inf)
    if idx.size == 0:
        return idx
    # Cheap prefilter (exact): the item of largest B (of those, largest V) dominates
    # every item of smaller V, the item of largest V (of those, largest B) every item
    # of smaller B; only the rest is sorted. Breaking the ties matters when V is flat
    # (the first backward step, where the value-to-go is 0 everywhere).
    b = B[idx]
    top = idx[b == b.max()]
    k = top[np.argmax(V[top])]
    idx = idx[V[idx] >= V[k]]
    v = V[idx]
    top = idx[v == v.max()]
    k = top[np.argmax(B[top])]
    idx = idx[B[idx] >= B[k]]
    if idx.size > PIVOT_MIN:
        idx = _drop_dominated_by_pivots(V, B, idx)
    order = idx[np.lexsort((-V[idx], -B[idx]))]  # B descending, then V descending
    v = V[order]
    before = np.maximum.accumulate(np.concatenate(([-np.inf], v[:-1])))
    return order[v > before]


def _step_start(V, A, B, cols):
    """The columns (all by default), M = -inf, arg = 0 and the Pareto front of a step."""
    K = A.shape[0]
    cols = np.arange(K) if cols is None else cols
    return cols, np.full(K, -np.inf), np.zeros(K, np.int64), pareto_front(V, B)


def _drop_dominated_by_pivots(V, B, idx):
    """``idx`` less the items that a few pivot items dominate (exact, a prefilter).

    The pivots maximise ``V + c B`` for five slopes c > 0 (each such maximiser is on
    the front). Item i is dropped when a pivot p has ``V(p) >= V(i)`` and ``B_p >= B_i``
    and is strictly better in one of them or, on exact ties, has the smaller index:
    p (or an item that drops p) then stays, and the kept tie is the one
    :func:`pareto_front` keeps anyway. On random data this leaves a few times the front
    size out of K, so the sort that follows is cheap.
    """
    v, b = V[idx], B[idx]
    sv, sb = float(np.ptp(v)), float(np.ptp(b))
    if not (0.0 < sv < np.inf and 0.0 < sb < np.inf):
        return idx
    alive = np.ones(idx.size, bool)
    for c in (0.1, 0.3, 1.0, 3.0, 10.0):
        p = int(np.argmax(v + (c * sv / sb) * b))
        vp, bp = v[p], b[p]
        alive &= ~((v <= vp) & (b <= bp) & ((v < vp) | (b < bp) | (idx > idx[p])))
    return idx[alive]


def front_step(V, A, B, f, cols=None):
    """``M(j) = max_i V(i) + f(A_j + B_i)`` by scanning the Pareto front of (V, B).

    Exact for any nondecreasing f (module docstring). Time O(K log K + m K) at worst,
    memory O(K + CHUNK): the front is scanned in row blocks. From 4 BLOCK columns
    and a front of 3 items on, the columns are cut into blocks by value of A and each
    block scans only the front items that its monotone bounds cannot exclude
    (:func:`_blocked_scan`): about O(K + m K / BLOCK) link evaluations on random data.

    Args:
        V: (K,) values of the previous position (-inf: unreachable).
        A, B: (K,) the two halves of the predictor.
        f: NumPy mean function (nondecreasing).
        cols: (n,) int indices j to compute (default: all); the others get -inf.

    Returns:
        M: (K,); arg: (K,) int64 maximiser (0 where M = -inf); m: the front size.
    """
    cols, M, arg, front = _step_start(V, A, B, cols)
    if front.size == 0 or cols.size == 0:
        return M, arg, int(front.size)
    a = A[cols]
    if front.size >= 3 and cols.size >= 4 * BLOCK:
        best, barg = _blocked_scan(V, a, B, f, front)
    else:
        best, barg = _scan(V, a, B, f, front)
    M[cols], arg[cols] = best, barg
    return M, arg, int(front.size)


def _scan(V, a, B, f, front):
    """max / argmax over the front items of ``V(i) + f(a_j + B_i)`` for every j: the
    first maximiser in front order (row blocks of at most CHUNK scores)."""
    best = np.full(a.size, -np.inf)
    barg = np.zeros(a.size, np.int64)
    rows = max(1, CHUNK // max(a.size, 1))
    ar = np.arange(a.size)
    for s in range(0, front.size, rows):
        p = front[s : s + rows]
        tot = V[p][:, None] + f(a[None, :] + B[p][:, None])
        k = np.argmax(tot, axis=0)
        m = tot[k, ar]
        better = m > best
        best = np.where(better, m, best)
        barg = np.where(better, p[k], barg)
    return best, barg


def _blocked_scan(V, a, B, f, front):
    """:func:`_scan` with the columns cut into about K / BLOCK blocks by value of a.

    In a block with ``a`` in [lo, hi], item i scores within ``[V(i) + f(lo + B_i),
    V(i) + f(hi + B_i)]`` (f nondecreasing; float rounding keeps the order since
    ``a_j >= lo`` gives ``fl(a_j + B_i) >= fl(lo + B_i)``). An item whose upper bound
    is below the largest lower bound loses to that item on every column of the block
    (strictly, so no tie is lost) and is skipped; the others are scanned exactly in
    front order, so the result equals :func:`_scan`'s, argmax ties included. Typically
    one or two items survive per block, so the link is evaluated about 2 K times
    instead of m K.
    """
    # Blocks by value: equal-width bins of a (a stable radix sort on int16 bin ids is
    # O(K)); any split of the columns is exact, narrow ranges just prune better.
    amin, amax = float(a.min()), float(a.max())
    nb = int(min(a.size // BLOCK, 32767))
    if not (amax > amin and np.isfinite(amax - amin)) or nb < 2:
        return _scan(V, a, B, f, front)
    bins = np.minimum(((a - amin) * (nb / (amax - amin))).astype(np.int64), nb - 1)
    order = np.argsort(bins.astype(np.int16), kind="stable")
    a_s = a[order]
    counts = np.bincount(bins, minlength=nb)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))[counts > 0]
    ends = np.append(starts[1:], a.size)
    lo = np.minimum.reduceat(a_s, starts)
    hi = np.maximum.reduceat(a_s, starts)
    Vp, Bp = V[front], B[front]
    low = Vp[None, :] + f(lo[:, None] + Bp[None, :])  # (blocks, m)
    keep = Vp[None, :] + f(hi[:, None] + Bp[None, :]) >= low.max(axis=1)[:, None]
    best_s = np.empty(a.size)
    barg_s = np.empty(a.size, np.int64)
    for b, (s, e) in enumerate(zip(starts, ends)):
        best_s[s:e], barg_s[s:e] = _scan(V, a_s[s:e], B, f, front[keep[b]])
    best = np.empty(a.size)
    barg = np.empty(a.size, np.int64)
    best[order], barg[order] = best_s, barg_s
    return best, barg


def exp_step(V, A, B, cols=None):
    """:func:`front_step` for ``f = exp`` by the convex hull trick, O(K log K).

    ``V(i) + e^{A_j + B_i}`` is the line ``V(i) + s_i x`` with slope ``s_i =
    e^{B_i - b}`` at ``x = e^{A_j + b}`` (b = max B, against overflow). Lines on the
    upper envelope for x > 0 are on the Pareto front; sorted by slope they win on
    consecutive x-intervals, found by binary search. The winner and its two hull
    neighbours are then scored exactly, so rounding at a breakpoint cannot lose the max.

    Returns:
        M: (K,); arg: (K,) int64; h: the hull size.
    """
    cols, M, arg, front = _step_start(V, A, B, cols)
    if front.size == 0 or cols.size == 0:
        return M, arg, int(front.size)
    lines = front[::-1]  # slope ascending, intercept descending
    b = B[front[0]]
    slope = np.exp(B[lines] - b)
    icpt = V[lines]
    hull: list[int] = []
    for t in range(lines.size):
        if hull and slope[t] <= slope[hull[-1]]:
            continue  # same slope after rounding, lower intercept
        while len(hull) >= 2:
            p, q = hull[-2], hull[-1]
            # q is useless if p and t cross no later than p and q.
            if (icpt[p] - icpt[t]) * (slope[q] - slope[p]) <= (icpt[p] - icpt[q]) * (
                slope[t] - slope[p]
            ):
                hull.pop()
            else:
                break
        hull.append(t)
    h = np.asarray(hull)
    xs = (icpt[h[:-1]] - icpt[h[1:]]) / (slope[h[1:]] - slope[h[:-1]])
    x = np.exp(A[cols] + b)
    pos = np.searchsorted(xs, x)
    best = np.full(cols.size, -np.inf)
    barg = np.zeros(cols.size, np.int64)
    for off in (-1, 0, 1):
        t = np.clip(pos + off, 0, h.size - 1)
        p = lines[h[t]]
        val = V[p] + np.exp(A[cols] + B[p])
        better = val > best
        best = np.where(better, val, best)
        barg = np.where(better, p, barg)
    M[cols], arg[cols] = best, barg
    return M, arg, int(h.size)


def _step(V, A, B, link: Link, cols):
    if link.name == "identity":  # separable: one best predecessor for every j
        M = np.full(A.shape[0], -np.inf)
        arg = np.zeros(A.shape[0], np.int64)
        if np.any(V > -np.inf):
            i = int(np.argmax(V + B))
            M[cols] = V[i] + A[cols] + B[i]
            arg[cols] = i
        return M, arg, 1
    if link.name == "exp":
        return exp_step(V, A, B, cols)
    return front_step(V, A, B, np_link(link), cols)


# ------------------------------------------------------------------------ decode
def valid_scale_inputs(first, A, B, mask, distinct, *, arrays=()):
    """Shape checks shared by the fast decoders; returns (K, L).

    ``arrays`` lists extra ``(name, array, expected_shape)`` triples.
    """
    K, L = valid_shapes(np.shape(first), np.shape(A), mask, distinct,
                                pairs_name="A")
    if tuple(np.shape(B)) != tuple(np.shape(A)):
        raise ValueError(
            f"B: expected the shape of A, {tuple(np.shape(A))}, got {tuple(np.shape(B))}"
        )
    for name, arr, shape in arrays:
        if tuple(np.shape(arr)) != tuple(shape):
            raise ValueError(
                f"{name}: expected shape {tuple(shape)}, got {tuple(np.shape(arr))}"
            )
    return K, L


def _host_values(named):
    """Value checks (finite reals) on host arrays; names in the messages."""
    out = []
    for name, x in named:
        a = np.asarray(x)
        if not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a):
            raise TypeError(f"{name}: expected real numbers, got dtype {a.dtype}")
        a = a.astype(np.float64)
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name}: expected finite values, found NaN or inf")
        out.append(a)
    return out


def chain_decode(first, step, L: int, K: int, mask):
    """Forward DP with a step ``step(l, V, cols) -> (M, arg, size)``; host NumPy.

    Returns items (L,) int32, value (float), sizes (L-1,) int64.
    """
    cols = np.arange(K) if mask is None else np.flatnonzero(mask)
    V = np.full(K, -np.inf)
    V[cols] = first[cols]
    backs, sizes = [], []
    for l in range(L - 1):
        V, arg, size = step(l, V, cols)
        backs.append(arg)
        sizes.append(size)
    last = int(np.argmax(V))
    value = float(V[last])
    items = [last]
    for arg in reversed(backs):
        items.append(int(arg[items[-1]]))
    return (
        np.asarray(items[::-1], np.int32),
        value,
        np.asarray(sizes, np.int64).reshape(L - 1),
    )


def backward_chain(step, L: int, K: int, mask):
    """Backward DP (positions L..2) with a step ``step(l, H, cols) -> (M, arg, size)``.

    ``step(l, H, cols)`` must return ``M(i) = max_j [H(j) + s_{l+2}(i, j)]`` for the
    items i in ``cols`` (-inf elsewhere), where ``H`` is -inf on masked items. This is
    the pass of :mod:`bayesrank.decoding.backward`, on the host.

    Returns:
        to_go (K,) float64, ptr (L-1, K) int32 (``ptr[l, i]``: best item at position
        l+2 after item i; 0 for masked i), sizes (L-1,) int64.
    """
    cols = np.arange(K) if mask is None else np.flatnonzero(mask)
    H = np.zeros(K)
    ptr = np.zeros((L - 1, K), np.int32)
    sizes = np.zeros(L - 1, np.int64)
    for l in range(L - 2, -1, -1):
        Hm = np.full(K, -np.inf)
        Hm[cols] = H[cols]
        H, arg, sizes[l] = step(l, Hm, cols)
        ptr[l] = arg
    return H, ptr, sizes


def monotone_backward(A, B, links, *, mask=None):
    """Backward pass for ``s_l(i, j) = f_l(A[l-2, j] + B[l-2, i])``, no K x K table.

    The step ``H_l(i) = max_j [H_{l+1}(j) + f(A_j + B_i)]`` is :func:`front_step` (exp:
    :func:`exp_step`; identity: O(K)) with the roles of A and B swapped: the maximum runs
    over the next item j, so the front is that of ``(H(j), A_j)``. Exact for every
    nondecreasing link (module docstring); host NumPy, float64, no input checks (use
    :func:`monotone_decode` for a checked entry point).

    Args:
        A, B: (L-1, K); links: as in :func:`monotone_decode`; mask: (K,) bool or None.

    Returns:
        to_go (K,), ptr (L-1, K) int32, sizes (L-1,) int64: the front (or hull) size
        scanned per step. Ties: some maximiser (not always the smallest index).

    Example:
        >>> import numpy as np
        >>> to_go, ptr, _ = monotone_backward(
        ...     np.array([[2.0, 0.0]]), np.array([[0.0, 1.0]]), "exp")
        >>> np.round(to_go, 4).tolist(), ptr.tolist()
        ([7.3891, 20.0855], [[0, 0]])
    """
    A = np.asarray(A, np.float64)
    B = np.asarray(B, np.float64)
    Lm1, K = A.shape
    lks = resolve_step_links(links, Lm1 + 1)
    return backward_chain(
        lambda l, H, cols: _step(H, B[l], A[l], lks[l], cols), Lm1 + 1, K, mask
    )


def backward_in_jit(fn, K: int, L: int, dtype, *arrays):
    """Call a host backward pass ``fn(*host_arrays) -> (to_go, ptr, counts)``.

    ``jax.pure_callback`` with ``vmap_method="sequential"``. Returns ``to_go`` (K,) of
    ``dtype``, ``ptr`` (L-1, K) int32 and ``counts`` (L-1,) of the default int dtype
    (clipped to fit).
    """
    itype = jnp.result_type(int)
    out = (
        jax.ShapeDtypeStruct((K,), dtype),
        jax.ShapeDtypeStruct((L - 1, K), jnp.int32),
        jax.ShapeDtypeStruct((L - 1,), itype),
    )
    top = np.iinfo(itype).max

    def host(*xs):
        to_go, ptr, counts = fn(*(np.asarray(x) for x in xs))
        counts = np.minimum(np.asarray(counts, np.int64), top).astype(itype)
        return np.asarray(to_go, dtype), np.asarray(ptr, np.int32), counts

    return jax.pure_callback(host, out, *arrays, vmap_method="sequential")


def search_with_rows(first, row, back_step, L: int, K: int, mask, k: int = 1):
    """Exact distinct search (:func:`bayesrank.decoding.search._astar`) on rows made on demand.

    ``row(l, i)`` is the (K,) score row of position l+2 after item i and
    ``back_step(l, h)`` the value-to-go ``max_j [h(j) + s(i, j)]`` for every i.
    """
    cols = np.ones(K, bool) if mask is None else np.asarray(mask, bool)
    f0 = np.where(cols, first, -np.inf)
    h = [None] * L
    h[L - 1] = np.zeros(K)
    for l in range(L - 2, -1, -1):
        h[l] = back_step(l, np.where(cols, h[l + 1], -np.inf))

    def masked_row(l, i):
        return np.where(cols, row(l, i), -np.inf)

    return _astar(f0, masked_row, h, L, True, k)


def monotone_decode(first, A, B, links, *, mask=None, distinct: bool = False):
    """Exact best list for ``s_l(i, j) = f_l(A[l-2, j] + B[l-2, i])``, no K x K table.

    Per DP step: identity link O(K) (separable); exp link O(K log K) (convex hull
    trick); any other nondecreasing link O(K log K + m K) with m the Pareto-front size
    (~ln K on data in general position; O(K^2) time, O(K) memory, in the worst case;
    proofs in the module docstring). Runs on the host (NumPy, float64).

    Args:
        first: (K,) scores of item j at position 1 (already through its link).
        A: (L-1, K) the part of position l's predictor that depends on the item there.
        B: (L-1, K) the part that depends on the item before it.
        links: the link of positions 2..L: a name, a :class:`~bayesrank.model.links.Link`
            or a callable (must be nondecreasing), or a sequence of L-1 (or L, the
            first ignored) of them.
        mask: (K,) bool, True where the item may be shown; masked items never are.
        distinct: forbid repeated items: exact best-first search bounded by the
            unconstrained value-to-go (fast backward steps), rows made on demand.

    Returns:
        items: (L,) int32; value: float; info: :class:`MonotoneInfo`.

    Raises:
        ValueError/TypeError: bad shapes or links, non-finite inputs, a bad mask, or
        (distinct) fewer than L available items.

    Example:
        >>> import numpy as np
        >>> items, value, _ = monotone_decode(
        ...     np.array([0.0, 1.0]), np.array([[2.0, 0.0]]), np.array([[0.0, 1.0]]),
        ...     "exp")
        >>> items.tolist(), round(value, 4)
        ([1, 0], 21.0855)
    """
    K, L = valid_scale_inputs(first, A, B, mask, distinct)
    first, A, B = _host_values((("first", first), ("A", A), ("B", B)))
    A, B = A.reshape(L - 1, K), B.reshape(L - 1, K)
    lks = resolve_step_links(links, L)
    mask = _host_mask(mask, K, L, distinct)
    if not distinct:
        items, value, sizes = chain_decode(
            first, lambda l, V, cols: _step(V, A[l], B[l], lks[l], cols), L, K, mask
        )
        return items, value, MonotoneInfo(sizes)
    fs = [np_link(lk) for lk in lks]
    sizes = np.zeros(L - 1, np.int64)

    def back(l, h):
        M, _, size = _step(h, B[l], A[l], lks[l], np.arange(K))
        sizes[l] = size
        return M

    items, values = search_with_rows(
        first, lambda l, i: fs[l](A[l] + B[l, i]), back, L, K, mask
    )
    return _first_or_raise(items, values, "first/A/B") + (MonotoneInfo(sizes),)


def _host_mask(mask, K: int, L: int, distinct: bool):
    if mask is None:
        return None
    m = np.asarray(mask, bool)
    avail = int(m.sum())
    if avail == 0:
        raise ValueError("mask: every item is masked out; no list can be shown")
    if distinct and avail < L:
        raise ValueError(
            f"mask: distinct=True needs at least L={L} available items, got {avail}"
        )
    return m


def _first_or_raise(items, values, name):
    if items.shape[0] == 0:
        raise ValueError(f"{name}: no list has a finite score under these constraints")
    return items[0], float(values[0])


# ------------------------------------------------------------------ inside jax.jit
def host_call(fn, L: int, dtype, n_info: int, *arrays):
    """Call ``fn(*host_arrays) -> (items, value, info_vector)`` from traced code.

    ``jax.pure_callback`` with ``vmap_method="sequential"``; the info vector is
    (n_info,) of the default int dtype (int32 without x64, counts clipped to fit).
    """
    itype = jnp.result_type(int)
    out = (
        jax.ShapeDtypeStruct((L,), jnp.int32),
        jax.ShapeDtypeStruct((), dtype),
        jax.ShapeDtypeStruct((n_info,), itype),
    )
    top = np.iinfo(itype).max

    def host(*xs):
        items, value, info = fn(*(np.asarray(x) for x in xs))
        info = np.minimum(np.asarray(info, np.int64), top).astype(itype)
        return items.astype(np.int32), np.asarray(value, dtype), info

    return jax.pure_callback(host, out, *arrays, vmap_method="sequential")


def monotone_backward_in_jit(A, B, links, mask):
    """:func:`monotone_backward` from traced code: ``(to_go, ptr, sizes)``.

    Args:
        A, B: (L-1, K) (may be traced); links: static; mask: (K,) bool (may be traced).
    """
    A, B = as_float(A), as_float(B)
    Lm1, K = A.shape
    lks = resolve_step_links(links, Lm1 + 1)
    dtype = jnp.result_type(A, B)

    def fn(a, b, m):
        return monotone_backward(a, b, lks, mask=np.asarray(m, bool))

    return backward_in_jit(fn, K, Lm1 + 1, dtype, A, B, jnp.asarray(mask, bool))
