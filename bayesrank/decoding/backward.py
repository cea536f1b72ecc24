"""The backward max-sum DP over positions L..2, shared by requests that differ in v0.

The best list's positions 2..L do not depend on the request's v0 (only position 1's
scores do), so the DP can run backwards once: ``to_go(i)`` is the best total of
positions 2..L after item i at position 1, with pointers to the best next item. A
request then costs O(K + L): :func:`pick` takes ``argmax_j first(j) + to_go(j)`` and
follows the pointers. Exact, like the forward DP of :mod:`bayesrank.decoding.dense`; ties go
to the smallest item index at each step.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from bayesrank.decoding.dense import max_argmax as _max_argmax

__all__ = ["Backward", "backward_dense", "backward_separable", "pick"]


class Backward(NamedTuple):
    """The backward pass over positions 2..L."""

    to_go: Any  # (K,) best total of positions 2..L after each item at position 1
    ptr: Any  # (L-1, K) int32, ptr[l-2, i]: best item at position l after item i


def _neg_inf(x):
    return jnp.asarray(-jnp.inf, x.dtype)


#: Scans over at most this many positions are unrolled: XLA on CPU pays a fixed cost
#: per loop iteration that, for a small catalogue, is a large part of a RankTS select
#: (figures: docs/performance.md, "Why the code is written this way").
UNROLL_MAX = 16


def _unroll(n: int) -> bool | int:
    return True if n <= UNROLL_MAX else 1


def backward_dense(pairs, mask) -> Backward:
    """Backward pass over dense tables pairs (L-1, K, K); mask (K,) bool."""
    K = pairs.shape[-1]
    pairs = jnp.where(mask[None, None, :], pairs, _neg_inf(pairs))

    def step(H, s):  # s (K_prev, K_next)
        return _max_argmax(s + H[None, :], axis=1)

    H, ptr = jax.lax.scan(
        step, jnp.zeros(K, pairs.dtype), pairs, reverse=True,
        unroll=_unroll(pairs.shape[0]),
    )
    return Backward(H, ptr)


def backward_separable(A, B, mask) -> Backward:
    """Backward pass when ``pairs[l-2, i, j] = A[l-2, j] + B[l-2, i]``, O(L K)."""
    K = A.shape[-1]
    A = jnp.where(mask[None, :], A, _neg_inf(A))

    def step(H, ab):
        a, b = ab
        best, arg = _max_argmax(a + H)
        return b + best, jnp.full((K,), arg, jnp.int32)

    H, ptr = jax.lax.scan(
        step, jnp.zeros(K, A.dtype), (A, B), reverse=True, unroll=_unroll(A.shape[0])
    )
    return Backward(H, ptr)


def pick(first, bw: Backward, mask):
    """One request: ``(items (L,) int32, value ())`` from its position-1 scores."""
    first = jnp.where(mask, first, _neg_inf(first))
    value, j = _max_argmax(first + bw.to_go)

    def follow(i, p):
        nxt = p[i]
        return nxt, nxt

    _, rest = jax.lax.scan(follow, j, bw.ptr, unroll=_unroll(bw.ptr.shape[0]))
    return jnp.concatenate([j[None], rest]), value
