"""UCB backward pass in compiled code: a windowed prefix search, no K x K table.

For UCB scores under the identity link (RankUCB, GenRankUCB with a Gaussian model),
each backward step ::

    H(i) = max_j [V(j) + A_j + B_i + c ||a_j + b_i||]

is bounded, as in :mod:`bayesrank.decoding.bounded`, by the separable
``V(j) + A'_j + B'_i`` with ``A'_j = A_j + c|a_j + mu|`` and ``B'_i = B_i + c|b_i - mu|``
(triangle inequality, any shift mu; inflated by 64 machine epsilons against
rounding). Sort the j's by ``u_j = V(j) + A'_j`` (descending). For every i, the j's
that can win are a prefix of that order: those with ``u_j >= best(i) - B'_i``, where
``best(i)`` is any exact score already found for i.

The search runs in XLA, in *windows* of that order: the first 16 j's, the next 16,
then 32, 64, ... A window scores only the i's that still have a candidate in it,
``max(u_j in the window) >= best(i) - B'_i`` (gathered, in chunks of at most
:data:`ROWS` rows), exactly, in the Gram form ``|a|^2 + 2 a.b + |b|^2``, and raises
their ``best(i)``; a window with no such i is skipped. Once no i has a candidate
left, every remaining pair is below its i's best and the step is exact:
``H(i) = best(i)`` (up to the rounding of the Gram form, as in the dense tables; the
maxima are rescored with the direct norm). Because each window tests the exact
maximum of its u's, the order only has to be a permutation for the step to be
exact; the closer it is to sorted, the fewer pairs are scored. The first
:data:`HEAD` j's come from ``lax.top_k`` (on float32 values: XLA's CPU TopK
falls back to a full sort for float64); the rest of the order, needed only when
some i may still find its best past the head, puts the head's j's first and the
others by u descending, quantised into one int32 key per j (a single-operand
sort, several times faster than an argsort on XLA's CPU backend), and is searched only
past the head. A window's live i's are compacted by an associative scan
(``jnp.nonzero``'s reduce-window cumulative sum is several times slower on CPU). A
window's best per row comes from two single-operand reductions
(:func:`bayesrank.decoding.dense.max_argmax`): XLA's CPU backend runs the variadic
``argmax`` reduction several times slower. In late rounds (a narrow
bonus) one or two windows do: about 50,000 pair scores per step at K = 3,000. In
early rounds (a wide bonus) most pairs stay in play and the work approaches K^2 pair
scores, computed in blocks: memory stays O(K q + CHUNK).

Skipping a window or the tail is a ``lax.cond`` on a scalar; under ``vmap`` a ``cond``
runs both branches, so a vmapped caller scores every window (still exact).

Other links keep the host pass (:func:`bayesrank.decoding.bounded.ucb_backward_in_jit`):
their candidates are onion layers, not a prefix.

Example:
    >>> import jax.numpy as jnp, numpy as np
    >>> from bayesrank.decoding.prefix import ucb_backward_prefix
    >>> rng = np.random.default_rng(0)
    >>> K, q = 50, 3
    >>> A, B = jnp.asarray(rng.normal(size=(2, 1, K)))
    >>> Ua, Ub = 0.1 * jnp.asarray(rng.normal(size=(2, 1, q, K)))
    >>> to_go, ptr, evals = ucb_backward_prefix(A, B, Ua, Ub, jnp.ones(1),
    ...                                         jnp.ones(K, bool))
    >>> to_go.shape, ptr.shape, evals.shape
    ((50,), (1, 50), (1,))
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from bayesrank.decoding.dense import max_argmax as _max_argmax

__all__ = [
    "CHUNK", "FUSE_COLS", "HEAD", "ROWS", "WINDOW0", "ucb_backward_prefix", "windows",
]

#: First window of the common order (j's scored against the live i's).
WINDOW0 = 16
#: The live i's of a window of w j's are scored in chunks of min(ROWS, CHUNK / w)
#: rows (at least 16; the first window, where every i is live, in one block when
#: K w <= CHUNK): the work follows the live rows, and memory stays O(CHUNK + K q).
ROWS, CHUNK = 256, 1 << 18
#: Windows of at least this many j's score their blocks as fused broadcast products
#: (:func:`_cross`).
FUSE_COLS = 64
#: Length of the head of the order, found by ``lax.top_k`` (no full sort) and searched
#: first; late-round steps rarely need more.
HEAD = 256


def windows(K: int) -> list[tuple[int, int]]:
    """The static windows ``(start, size)`` of a step over K items: sizes 64, 64, 128,
    256, ... until the order is exhausted (the last one clipped)."""
    out, start, size = [], 0, WINDOW0
    while start < K:
        out.append((start, min(size, K - start)))
        start += size
        size = size if len(out) == 1 else 2 * size
    return out


def _center(a, b, n: int = 256):
    """The shift mu of :func:`bayesrank.decoding.bounded._center` (same candidates and
    rule, on a strided subsample of ``n`` of the columns of a and b, (q, K) each), in
    jnp; any mu keeps the bound valid."""
    a_s = a[:, :: max(1, a.shape[1] // n)].T
    b_s = b[:, :: max(1, b.shape[1] // n)].T
    ma, mb = a_s.mean(axis=0), -b_s.mean(axis=0)
    cands = jnp.stack([jnp.zeros_like(ma), ma, mb, 0.5 * (ma + mb)])
    cost = jax.vmap(
        lambda m: jnp.linalg.norm(a_s - m, axis=1).mean()
        + jnp.linalg.norm(b_s + m, axis=1).mean()
    )(cands)
    return cands[jnp.argmin(cost)]


def _sq_cols(U):
    """``sum(U * U, axis=0)`` for U (q, K), as q - 1 elementwise adds when q <= 32: XLA's
    CPU backend reduces over the leading axis several times slower (figures:
    docs/performance.md, "Why the code is written this way")."""
    if U.shape[0] > 32:
        return jnp.sum(U * U, axis=0)
    out = U[0] * U[0]
    for k in range(1, U.shape[0]):
        out = out + U[k] * U[k]
    return out


def _cross(Ur, Uw):
    """``Ur.T @ Uw`` (R, W) for Ur (q, R) and Uw (q, W).

    For windows of at least :data:`FUSE_COLS` columns and q <= 32, as q broadcast
    products summed elementwise: XLA's CPU backend then fuses the whole block
    (products, norm, square root) into one loop instead of writing a dot's output
    first: the early-round backward pass is faster than with ``einsum``. Narrow
    windows keep ``einsum``: fused for every window, the late-round pass is slower
    (figures: docs/performance.md, "Why the code is written this way").
    """
    if Ur.shape[0] > 32 or Uw.shape[1] < FUSE_COLS:
        return jnp.einsum("qr,qw->rw", Ur, Uw)
    out = Ur[0][:, None] * Uw[0][None, :]
    for k in range(1, Ur.shape[0]):
        out = out + Ur[k][:, None] * Uw[k][None, :]
    return out


def _compact(live):
    """``(idx, n)``: the indices of the True entries of ``live``, ascending, then zeros
    (K in all, int32), and their number.

    The same as ``jnp.nonzero(live, size=K)``, from an associative scan: on XLA's CPU
    backend ``nonzero``'s cumulative sum is a reduce-window, several times slower
    (figures: docs/performance.md, "Why the code is written this way"), and a step
    compacts its live rows once per window.
    """
    K = live.shape[0]
    pos = jax.lax.associative_scan(jnp.add, live.astype(jnp.int32))
    idx = jnp.zeros(K, jnp.int32).at[jnp.where(live, pos - 1, K)].set(
        jnp.arange(K, dtype=jnp.int32), mode="drop")
    return idx, pos[-1]


def _head(u, n: int):
    """Indices of the ``n`` largest u (ties: any), by ``lax.top_k`` on float32 values.

    XLA's CPU TopK takes float32 only: on float64 it falls back to a full sort, many
    times slower at large K (figures: docs/performance.md, "Why the code is written
    this way"). Rounding to
    float32 may swap near-equal u's; the search tests each window's exact maximum of
    u, so the order only has to be a permutation. (The barrier keeps XLA from turning
    the top_k into a full sort when later windows slice its output; seen on jax 0.12's
    CPU backend.)
    """
    return jax.lax.optimization_barrier(jax.lax.top_k(u.astype(jnp.float32), n)[1])


def _order(u, head):
    """Every j: the ``head``'s first, then the others by u descending, up to a
    quantisation of u. One int32 key per j (the quantised u above the bits of the
    index) sorted as a single operand: on XLA's CPU backend several times faster than
    an argsort (a two-operand sort). Non-finite u's go last."""
    K = u.shape[0]
    bits = max(1, (K - 1).bit_length())
    levels = (1 << (31 - bits)) - 3  # q in [0, levels + 2]: (q << bits) < 2^31
    fin = jnp.isfinite(u)
    hi = jnp.max(jnp.where(fin, u, -jnp.inf))
    lo = jnp.min(jnp.where(fin, u, jnp.inf))
    span = jnp.where(hi > lo, hi - lo, 1.0)
    q = jnp.floor(jnp.clip((hi - jnp.where(fin, u, lo)) / span, 0.0, 1.0) * levels)
    q = jnp.where(fin, q.astype(jnp.int32) + 1, levels + 2).at[head].set(0)
    key = (q << bits) | jnp.arange(K, dtype=jnp.int32)
    return jnp.sort(key) & ((1 << bits) - 1)


def _prefix_step(V, Ai, Bj, Ui, Uj, c):
    """One exact step ``H(i) = max_j V(j) + Ai_i + Bj_j + c||Ui[:, i] + Uj[:, j]||``
    (Ui, Uj: (q, K), as given: a transpose of a large (q, K) array is costly on XLA's
    CPU backend; figures: docs/performance.md, "Why the code is written this way"):
    returns (H (K,), arg (K,) int32, pair scores computed ())."""
    K = V.shape[0]
    dtype = V.dtype
    slack = 64.0 * jnp.finfo(dtype).eps
    src = V > -jnp.inf
    mu = _center(Ui, Uj)
    grow = 1.0 + slack
    Ap = Ai + c * jnp.sqrt(_sq_cols(Ui - mu[:, None])) * grow
    u = jnp.where(src, V + Bj + c * jnp.sqrt(_sq_cols(Uj + mu[:, None])) * grow,
                  -jnp.inf)
    ni2 = _sq_cols(Ui)
    nj2 = _sq_cols(Uj)
    g = V + Bj

    def threshold(best):
        return best - slack * (1.0 + jnp.abs(best))

    def run(order, carry, first_block, skip=0):
        """The windows over ``order``, skipping those within its first ``skip`` j's
        (searched already). A window's test uses the exact maximum of its u's."""
        n = order.shape[0]
        for w, (start, size) in enumerate(windows(n)):
            if start + size <= skip:
                continue
            js = order[start:start + size]
            top_u = jnp.max(u[js])
            # every i is live in the first window: one block of K rows when it fits
            one = first_block and w == 0 and K * size <= CHUNK
            R = K if one else min(K, ROWS, max(16, CHUNK // size))

            def block(Ur, nr2, Ar, cols):
                """Exact scores of rows (their U (q, rows), |U|^2, A) against the
                window's j's (``cols``: their indices, U, |U|^2 and V + Bj, gathered
                once per window): each row's best value and its j."""
                js, Uw, nw2, gw = cols
                sq = nr2[:, None] + 2.0 * _cross(Ur, Uw) + nw2[None, :]
                val = gw[None, :] + Ar[:, None] + c * jnp.sqrt(jnp.maximum(sq, 0.0))
                top, k = _max_argmax(val, axis=1)
                return top, js[k].astype(jnp.int32)

            def columns(js=js):
                return js, Uj[:, js], nj2[js], g[js]

            def whole(carry, size=size, columns=columns):
                """Every row against the window's j's (no gather of rows)."""
                best, arg, evals = carry
                top, jbest = block(Ui, ni2, Ai, columns())
                better = top > best
                return (jnp.where(better, top, best), jnp.where(better, jbest, arg),
                        evals + K * size)

            def score(carry, size=size, R=R, top_u=top_u, columns=columns):
                """Score the live i's against the window's j's, R rows at a time."""
                idx, n_live = _compact(top_u + Ap >= threshold(carry[0]))
                cols = columns()

                def chunk(st):
                    r0, best, arg, evals = st
                    s0 = jnp.minimum(r0, K - R)  # clamped: rows seen twice are harmless
                    ii = jax.lax.dynamic_slice_in_dim(idx, s0, R)
                    ii = jnp.where(s0 + jnp.arange(R) < n_live, ii, K)  # K: dropped
                    ic = jnp.minimum(ii, K - 1)
                    top, jbest = block(Ui[:, ic], ni2[ic], Ai[ic], cols)
                    tgt = jnp.where(top > best[ic], ii, K)
                    best = best.at[tgt].set(top, mode="drop")
                    arg = arg.at[tgt].set(jbest, mode="drop")
                    return r0 + R, best, arg, evals + R * size

                _, best, arg, evals = jax.lax.while_loop(
                    lambda st: st[0] < n_live, chunk, (jnp.zeros((), n_live.dtype), *carry)
                )
                return best, arg, evals

            carry = jax.lax.cond(
                jnp.any(top_u + Ap >= threshold(carry[0])),
                whole if R == K else score, lambda st: st,
                carry,
            )
        return carry

    carry = (jnp.full(K, -jnp.inf, dtype), jnp.zeros(K, jnp.int32),
             jnp.zeros((), jnp.int32))
    # the head of the order by top_k (a full sort is slow on XLA's CPU backend); the
    # rest only if some i may still find its best past it
    n_head = min(K, HEAD)
    head = _head(u, n_head)
    carry = run(head, carry, True)
    if n_head < K:
        rest_u = jnp.max(u.at[head].set(-jnp.inf))
        carry = jax.lax.cond(
            jnp.any(rest_u + Ap >= threshold(carry[0])),
            lambda st: run(_order(u, head), st, False, skip=n_head), lambda st: st, carry
        )
    best, arg, evals = carry
    # rescore the maxima with the direct norm (the blocks use the Gram form)
    d = Ui + Uj[:, arg]
    H = g[arg] + Ai + c * jnp.sqrt(_sq_cols(d))
    H = jnp.where(jnp.any(src), H, -jnp.inf)
    return H, arg, evals


def ucb_backward_prefix(A, B, Ua, Ub, c, mask):
    """Backward pass for identity-link UCB scores ``A_j + B_i + c ||Ua_j + Ub_i||``.

    The same contract as :func:`bayesrank.decoding.bounded.ucb_backward` (exact; ties:
    some maximiser), traceable and vmappable: each step is the windowed prefix search
    of the module docstring.

    Args:
        A, B: (L-1, K); Ua, Ub: (L-1, q, K); c: (L-1,) >= 0; mask: (K,) bool.

    Returns:
        to_go (K,), ptr (L-1, K) int32 (0 where masked), pair_evals (L-1,) int32: pair
        scores computed per step (the rows of every chunk scored, padding included).
    """
    A, B, Ua, Ub, c = (jnp.asarray(x) for x in (A, B, Ua, Ub, c))
    Lm1, K = A.shape
    dtype = A.dtype
    mask = jnp.asarray(mask, bool)
    H = jnp.zeros(K, dtype)
    ptr = [None] * Lm1
    evals = [None] * Lm1
    for l in range(Lm1 - 1, -1, -1):
        V = jnp.where(mask, H, -jnp.inf)
        M, arg, evals[l] = _prefix_step(V, B[l], A[l], Ub[l], Ua[l], c[l])
        H = jnp.where(mask, M, -jnp.inf)
        ptr[l] = jnp.where(mask, arg, 0).astype(jnp.int32)
    return H, jnp.stack(ptr), jnp.stack(evals)
