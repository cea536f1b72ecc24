"""Exact best lists for UCB scores by bound-and-prune, without K x K tables.

Scores (positions l = 2..L; position 1 is a plain (K,) vector ``first``)::

    s_l(i, j) = f_l(A_l[j] + B_l[i] + c_l ||a_j + b_i||_2)       c_l >= 0, f_l nondecreasing

with ``a_j = Ua_l[:, j]`` and ``b_i = Ub_l[:, i]`` (q,) whitened vectors. RankUCB:
``A = <theta_hat, v_j>``, ``B = w_l <theta_hat, v_i>``, ``Ua = Z``, ``Ub = w_l Z`` with
``Z = C_l^-1 items^T`` (``V_l = C_l C_l^T``), ``c = width``; GenRankUCB: the two
whitened halves of ``(v_j, v_i)`` (q = 2d). The DP step is
``M(j) = max_i [V(i) + s(i, j)]``.

**Bounds.** By the triangle inequality ``| |a| - |b| | <= ||a + b|| <= |a| + |b|``, so
with ``A'_j = A_j + c|a_j|`` and ``B'_i = B_i + c|b_i|``

    V(i) + s(i, j)  <=  U(i, j) = V(i) + f(A'_j + B'_i)        (f nondecreasing, c >= 0)

a separable, monotone upper bound: exactly the structure of
:mod:`bayesrank.decoding.monotone`.

**Pruned step (exact).** For every j a lower bound ``best(j)`` is the exact score of
the maximiser of the bound (found on the Pareto front of (V, B'), one exact pair per j).
Item i can only be the maximiser for j if ``U(i, j) >= best(j)``. The items are visited
in groups whose bound can only decrease:

* identity f: items sorted by ``u_i = V(i) + B'_i`` (descending) in blocks of growing
  size; ``U(i, j) = A'_j + u_i``, so once ``A'_j + u_first(block) < best(j)`` no later
  item can win for j and j leaves the active set;
* other f: the onion layers of the points (V(i), B'_i) (front, then the front of the
  rest, ...). Every item of layer t+1 is dominated in (V, B') by an item of layer t, so
  ``max_{layer t+1} U(., j) <= max_{layer t} U(., j)`` and again j leaves for good when
  its layer bound drops below ``best(j)``.

Active j's are scored exactly against their candidates in the group (dense BLAS
blocks in the Gram form ``||a + b||^2 = |a|^2 + 2 a.b + |b|^2`` for the identity link,
rows padded to the longest prefix of the block; every computed entry is counted as a
pair evaluation), which raises ``best(j)``. When no j is active
every remaining pair is below its j's best, so ``M(j) = best(j)``: the step is exact (up
to the rounding of the Gram form, as in the dense tables of the policies; the returned
maxima are rescored with the direct norm). The count of exact pair evaluations is
returned. Worst case (a wide bonus that dwarfs the spread of V and B) every pair is
evaluated: O(K^2) time, memory O(K q + block) always.

:func:`ucb_backward` runs the same step backwards (positions L..2, the maximum over
the next item), the pass the policies' decoder dispatcher uses at catalogue scale.

Runs on the host in NumPy (float64); :func:`ucb_backward_in_jit` calls the backward
pass from inside ``jax.jit`` / ``vmap`` through ``jax.pure_callback(...,
vmap_method="sequential")``. ``distinct=True`` runs the exact best-first search of
:mod:`bayesrank.decoding.search` bounded by
the pruned backward value-to-go, with score rows made on demand (O(K q) per prefix).
Windows (S > 2) are out of scope: use :func:`bayesrank.decoding.window.window_decode`.

Example:
    >>> import numpy as np
    >>> from bayesrank.decoding.bounded import ucb_decode
    >>> rng = np.random.default_rng(0)
    >>> K, q = 6, 3
    >>> first, A, B = rng.normal(size=K), rng.normal(size=(2, K)), rng.normal(size=(2, K))
    >>> Ua, Ub = rng.normal(size=(2, q, K)), rng.normal(size=(2, q, K))
    >>> items, value, info = ucb_decode(first, A, B, Ua, Ub, np.ones(2), "identity")
    >>> items.shape, info.pair_evals.shape
    ((3,), (2,))
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from bayesrank.decoding.checks import as_float
from bayesrank.decoding.front import (
    CHUNK,
    _step,
    front_step,
    np_link,
    resolve_step_links,
)
from bayesrank.decoding.host_chain import (
    _first_or_raise,
    _host_mask,
    _host_values,
    backward_chain,
    backward_in_jit,
    chain_decode,
    valid_scale_inputs,
    search_with_rows,
)
from bayesrank.model.links import Link

__all__ = [
    "BoundInfo",
    "bound_step",
    "ucb_backward",
    "ucb_backward_in_jit",
    "ucb_decode",
]

#: Relative slack on the bound (rounding of norms and sums cannot prune a winner).
SLACK = 1e-9
#: First and largest group size of the identity-link block order.
BLOCK0, BLOCK_MAX = 4, 4096
#: Pairs scored per vectorised batch.
PAIRS = 1 << 18


class BoundInfo(NamedTuple):
    """What a UCB decode did (returned, never carried)."""

    pair_evals: np.ndarray  # (L-1,) int, exact pair scores computed per DP step


def bound_step(V, A, B, UaT, UbT, c: float, link: Link, cols):
    """One exact DP step ``M(j) = max_i V(i) + f(A_j + B_i + c||a_j + b_i||)``.

    Args:
        V: (K,) previous values (-inf: unreachable); A, B: (K,).
        UaT, UbT: (K, q) rows ``a_j`` and ``b_i``; c: >= 0; link: nondecreasing.
        cols: (n,) int, the j's to compute (the others get -inf).

    Returns:
        M: (K,); arg: (K,) int64; evals: exact pair scores computed.
    """
    K = A.shape[0]
    f = np_link(link)
    M = np.full(K, -np.inf)
    arg = np.zeros(K, np.int64)
    src = np.flatnonzero(V > -np.inf)
    if src.size == 0 or cols.size == 0:
        return M, arg, 0
    if c == 0.0:
        M, arg, _ = _step(V, A, B, link, cols)
        return M, arg, 0
    mu = _center(UaT[cols], UbT[src])
    grow = 1.0 + SLACK
    Ap = A[cols] + c * np.linalg.norm(UaT[cols] - mu, axis=1) * grow  # (n,)
    Bp = np.full(K, -np.inf)
    Bp[src] = B[src] + c * np.linalg.norm(UbT[src] + mu, axis=1) * grow
    pairs = _Pairs(V, A, B, UaT, UbT, c, f, cols)
    # Lower bound: the exact score of the bound's maximiser, one pair per j.
    Apk = np.full(K, -np.inf)
    Apk[cols] = Ap
    _, seed, _ = front_step(V, Apk, Bp, f, cols)
    n = cols.size
    pairs.score(np.arange(n), seed[cols])
    if link.name == "identity":
        _prefix_search(pairs, V[src] + Bp[src], src, Ap)
    else:
        _onion_search(pairs, V, Bp, src, Ap, f)
    # Rescore the maximisers with the direct norm (blocks use the Gram form).
    j, i = cols, pairs.arg
    d = UaT[j] + UbT[i]
    M[cols] = V[i] + f(A[j] + B[i] + c * np.sqrt(np.einsum("kq,kq->k", d, d)))
    arg[cols] = i
    return M, arg, int(pairs.evals)


class _Pairs:
    """Exact pair scores (direct norm) and the running best per j (local index)."""

    def __init__(self, V, A, B, UaT, UbT, c, f, cols):
        self.V, self.A, self.B, self.UaT, self.UbT = V, A, B, UaT, UbT
        self.c, self.f, self.cols = c, f, cols
        self.best = np.full(cols.size, -np.inf)
        self.arg = np.zeros(cols.size, np.int64)
        self.evals = 0
        self.na2 = np.einsum("kq,kq->k", UaT, UaT)
        self.nb2 = np.einsum("kq,kq->k", UbT, UbT)

    def score_prefixes(self, jl, cnt, items):
        """Score j = jl[r] against items[:cnt[r]], in dense BLAS blocks.

        The rows are sorted by cnt and cut into blocks of at most CHUNK entries; each
        block is scored in the Gram form ``|a|^2 + 2 a.b + |b|^2`` up to its longest
        prefix, entries past a row's own prefix are ignored. Counts every computed
        entry as a pair evaluation.
        """
        order = np.argsort(-cnt, kind="stable")
        jl, cnt = jl[order], cnt[order]
        s = 0
        while s < jl.size:
            width = int(cnt[s])
            e = min(jl.size, s + max(1, CHUNK // width))
            J, I = jl[s:e], items[:width]
            j = self.cols[J]
            sq = (self.UaT[j] @ self.UbT[I].T) * 2.0
            sq += self.na2[j][:, None]
            sq += self.nb2[I][None, :]
            z = self.A[j][:, None] + self.B[I][None, :]
            z += self.c * np.sqrt(np.maximum(sq, 0.0))
            val = self.V[I][None, :] + self.f(z)
            val[np.arange(width)[None, :] >= cnt[s:e, None]] = -np.inf
            k = np.argmax(val, axis=1)
            top = val[np.arange(e - s), k]
            better = top > self.best[J]
            self.best[J[better]] = top[better]
            self.arg[J[better]] = I[k[better]]
            self.evals += (e - s) * width
            s = e

    def threshold(self, jl):
        """Scores a candidate must reach: best minus a rounding slack."""
        b = self.best[jl]
        return b - SLACK * (1.0 + np.abs(b))

    def score(self, jl, ii):
        """Score pairs (jl local j, ii item); jl must come in contiguous runs."""
        self.evals += jl.size
        for s in range(0, jl.size, PAIRS):
            J, I = jl[s : s + PAIRS], ii[s : s + PAIRS]
            j = self.cols[J]
            d = self.UaT[j] + self.UbT[I]
            nrm = np.sqrt(np.einsum("kq,kq->k", d, d))
            val = self.V[I] + self.f(self.A[j] + self.B[I] + self.c * nrm)
            starts = np.flatnonzero(np.r_[True, J[1:] != J[:-1]])
            top = np.maximum.reduceat(val, starts)
            rep = np.repeat(top, np.diff(np.r_[starts, J.size]))
            pos = np.where(val == rep, np.arange(J.size), J.size)
            first = np.minimum.reduceat(pos, starts)
            Js = J[starts]
            better = top > self.best[Js]
            self.best[Js[better]] = top[better]
            self.arg[Js[better]] = I[first[better]]


def _prefix_search(pairs: _Pairs, u, src, Ap):
    """Identity link: the candidates of j are a prefix of the items sorted by u."""
    order = np.argsort(-u, kind="stable")
    srt, neg = src[order], -u[order]  # neg ascending
    act = np.arange(pairs.cols.size)
    start, size = 0, BLOCK0
    while act.size and start < srt.size:
        end = min(start + size, srt.size)
        thr = pairs.threshold(act) - Ap[act]  # candidates: u_i >= thr
        cnt = np.searchsorted(neg[start:end], -thr, side="right")
        live = cnt > 0
        act, cnt = act[live], cnt[live]
        pairs.score_prefixes(act, cnt, srt[start:end])
        act = act[cnt == end - start]  # the others ran out of candidates
        start, size = end, min(2 * size, BLOCK_MAX)


def _onion_search(pairs: _Pairs, V, Bp, src, Ap, f):
    """Other links: onion layers of (V, B'); pairs whose bound passes are scored."""
    rem = src[np.lexsort((-V[src], -Bp[src]))]  # B' descending, then V descending
    act = np.arange(pairs.cols.size)
    while act.size and rem.size:
        v = V[rem]
        before = np.maximum.accumulate(np.concatenate(([-np.inf], v[:-1])))
        top = v > before
        layer, rem = rem[top], rem[~top]
        keep = np.zeros(act.size, bool)
        step = max(1, CHUNK // layer.size)
        for s in range(0, act.size, step):
            rows = act[s : s + step]
            ub = V[layer][None, :] + f(Ap[rows][:, None] + Bp[layer][None, :])
            ok = ub >= pairs.threshold(rows)[:, None]
            keep[s : s + step] = ok.any(axis=1)
            r, k = np.nonzero(ok)
            pairs.score(rows[r], layer[k])
        act = act[keep]  # deeper layers are bounded by this one


def _center(a, b, n: int = 256):
    """A shift mu for the bound ``||a + b|| <= ||a - mu|| + ||b + mu||``.

    Any mu keeps the bound valid; a good one cancels what the a's and b's share (e.g.
    RankUCB with w near -1, where ``a_j + b_i`` nearly cancels but ``|a| + |b|`` does
    not). Picks, on a subsample, the candidate among 0, mean(a), -mean(b) and their
    midpoint with the smallest mean bound.
    """
    a_s, b_s = a[:: max(1, a.shape[0] // n)], b[:: max(1, b.shape[0] // n)]
    ma, mb = a_s.mean(axis=0), -b_s.mean(axis=0)
    cands = [np.zeros_like(ma), ma, mb, 0.5 * (ma + mb)]
    cost = [
        np.linalg.norm(a_s - m, axis=1).mean() + np.linalg.norm(b_s + m, axis=1).mean()
        for m in cands
    ]
    return cands[int(np.argmin(cost))]


def _row(A, B, UaT, UbT, c, f, i):
    """Exact (K,) scores of every j after item i."""
    diff = UaT + UbT[i]
    return f(A + B[i] + c * np.sqrt(np.sum(diff * diff, axis=1)))


def ucb_decode(first, A, B, Ua, Ub, c, links, *, mask=None, distinct: bool = False):
    """Exact best list for UCB scores ``f(A_j + B_i + c ||a_j + b_i||)``, no K x K table.

    See the module docstring for the bounds and the proof of exactness. Host NumPy,
    float64.

    Args:
        first: (K,) scores of item j at position 1 (already through its link).
        A, B: (L-1, K) the item's and the previous item's part of the predictor.
        Ua, Ub: (L-1, q, K) whitened vectors; ``||Ua[l, :, j] + Ub[l, :, i]||`` is the
            norm of pair (i, j) at position l+2.
        c: (L-1,) widths >= 0 (0: the monotone decode, no pair is scored).
        links: as in :func:`bayesrank.decoding.monotone.monotone_decode`.
        mask: (K,) bool, True where the item may be shown.
        distinct: forbid repeated items (exact best-first search; see the module).

    Returns:
        items: (L,) int32; value: float; info: :class:`BoundInfo` (exact pair scores
        per step; with ``distinct=True`` those of the backward value-to-go).

    Raises:
        ValueError/TypeError: bad shapes or links, non-finite inputs, a negative c, a
        bad mask.
    """
    K, L = valid_scale_inputs(first, A, B, mask, distinct)
    q = np.shape(Ua)[1] if np.ndim(Ua) == 3 else -1
    valid_scale_inputs(
        first, A, B, mask, distinct,
        arrays=(("Ua", Ua, (L - 1, q, K)), ("Ub", Ub, (L - 1, q, K)), ("c", c, (L - 1,))),
    )
    first, A, B, Ua, Ub, c = _host_values(
        (("first", first), ("A", A), ("B", B), ("Ua", Ua), ("Ub", Ub), ("c", c))
    )
    if np.any(c < 0):
        raise ValueError(f"c: expected widths >= 0, got {c.tolist()}")
    lks = resolve_step_links(links, L)
    mask = _host_mask(mask, K, L, distinct)
    UaT = [np.ascontiguousarray(Ua[l].T) for l in range(L - 1)]
    UbT = [np.ascontiguousarray(Ub[l].T) for l in range(L - 1)]
    evals = np.zeros(L - 1, np.int64)
    if not distinct:

        def step(l, V, cols):
            M, arg, n = bound_step(V, A[l], B[l], UaT[l], UbT[l], c[l], lks[l], cols)
            evals[l] = n
            return M, arg, n

        items, value, _ = chain_decode(first, step, L, K, mask)
        return items, value, BoundInfo(evals)
    fs = [np_link(lk) for lk in lks]

    def back(l, h):
        M, _, n = bound_step(h, B[l], A[l], UbT[l], UaT[l], c[l], lks[l], np.arange(K))
        evals[l] = n
        return M

    items, values = search_with_rows(
        first, lambda l, i: _row(A[l], B[l], UaT[l], UbT[l], c[l], fs[l], i), back,
        L, K, mask,
    )
    return _first_or_raise(items, values, "first/A/B/Ua/Ub") + (BoundInfo(evals),)


def ucb_backward(A, B, Ua, Ub, c, links, *, mask=None):
    """Backward pass for UCB scores ``f(A_j + B_i + c||a_j + b_i||)``, no K x K table.

    Each step ``H_l(i) = max_j [H_{l+1}(j) + s_l(i, j)]`` is :func:`bound_step` with the
    roles of (A, Ua) and (B, Ub) swapped (the maximum runs over the next item j); exact
    (module docstring). Host NumPy, float64, no input checks (see :func:`ucb_decode`).

    Args:
        A, B: (L-1, K); Ua, Ub: (L-1, q, K); c: (L-1,) >= 0; links: as in
        :func:`ucb_decode`; mask: (K,) bool or None.

    Returns:
        to_go (K,), ptr (L-1, K) int32, pair_evals (L-1,) int64: the exact pair scores
        computed per step. Ties: some maximiser (not always the smallest index).

    Example:
        >>> import numpy as np
        >>> zero = np.zeros((1, 2))
        >>> Ua, Ub = np.array([[[1.0, -1.0]]]), np.array([[[1.0, -2.0]]])
        >>> to_go, ptr, _ = ucb_backward(zero, zero, Ua, Ub, np.ones(1), "identity")
        >>> to_go.tolist(), ptr.tolist()
        ([2.0, 3.0], [[0, 1]])
    """
    A, B, c = (np.asarray(x, np.float64) for x in (A, B, c))
    Lm1, K = A.shape
    lks = resolve_step_links(links, Lm1 + 1)
    UaT = [np.ascontiguousarray(np.asarray(Ua[l], np.float64).T) for l in range(Lm1)]
    UbT = [np.ascontiguousarray(np.asarray(Ub[l], np.float64).T) for l in range(Lm1)]

    def step(l, H, cols):
        return bound_step(H, B[l], A[l], UbT[l], UaT[l], float(c[l]), lks[l], cols)

    return backward_chain(step, Lm1 + 1, K, mask)


def ucb_backward_in_jit(A, B, Ua, Ub, c, links, mask):
    """:func:`ucb_backward` from traced code: ``(to_go, ptr, pair_evals)``.

    Args:
        A, B: (L-1, K); Ua, Ub: (L-1, q, K); c: (L-1,) (may be traced); links: static;
        mask: (K,) bool (may be traced).
    """
    arrs = [as_float(x) for x in (A, B, Ua, Ub, c)]
    Lm1, K = arrs[0].shape
    lks = resolve_step_links(links, Lm1 + 1)
    dtype = jnp.result_type(*arrs)

    def fn(a, b, ua, ub, cc, m):
        return ucb_backward(a, b, ua, ub, cc, lks, mask=np.asarray(m, bool))

    return backward_in_jit(fn, K, Lm1 + 1, dtype, *arrs, jnp.asarray(mask, bool))
