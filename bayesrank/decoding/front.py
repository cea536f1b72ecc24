"""One host DP step for scores ``f(A_j + B_i)`` with f nondecreasing, without K x K tables.

The step is ``M(j) = max_i [V(i) + f(A_j + B_i)]`` (the formulas and why each is exact:
:mod:`bayesrank.decoding.monotone`). :func:`front_step` scans only the Pareto front of
``(V(i), B_i)`` (any nondecreasing f), :func:`exp_step` is the convex hull trick of
the exp link, and the identity link's step is separable. :func:`np_link` gives a link's
NumPy form and :func:`resolve_step_links` the links of positions 2..L. Host NumPy,
shared by :mod:`~.monotone` and :mod:`~.bounded`.

Example:
    >>> import numpy as np
    >>> from bayesrank.decoding.front import front_step
    >>> rng = np.random.default_rng(0)
    >>> V, A, B = rng.normal(size=(3, 50))
    >>> f = lambda z: 1.0 / (1.0 + np.exp(-z))                  # logistic
    >>> M, arg, size = front_step(V, A, B, f)
    >>> brute = (V[:, None] + f(A[None, :] + B[:, None])).max(0)  # every i, every j
    >>> bool(np.allclose(M, brute)), int(size) < 50             # only the front scanned
    (True, True)
"""

from __future__ import annotations

import numpy as np
from scipy import special

from bayesrank.model.links import Link, get_link

__all__ = ["exp_step", "front_step", "np_link", "pareto_front", "resolve_step_links"]

#: Entries of one (rows, K) block in a front scan (memory ~ 8 bytes each, twice).
CHUNK = 1 << 21
#: Columns per block in the pruned front scan (:func:`_blocked_scan`).
BLOCK = 1024
#: Candidate count above which :func:`pareto_front` prunes by pivots first.
PIVOT_MIN = 256



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
