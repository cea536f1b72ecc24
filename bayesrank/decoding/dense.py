"""The dense max-plus DP: the exact best list of pairwise scores in O(L K^2).

The weight of a path in the paper's L-layered graph (Eq. 2) equals the sum of the
per-position scores ``s_1(a^1) + sum_{l>=2} s_l(a^{l-1}, a^l)``, so the longest path is
a max-sum dynamic programme over a chain (Viterbi). :func:`dp_decode` is jittable and
vmappable; :func:`decode_in_jit` adds a mask and ``distinct=`` inside ``jax.jit``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank.decoding.checks import apply_mask, as_float, valid_shapes
from bayesrank.decoding.search import host_search, search_decode

__all__ = ["decode_in_jit", "dp_decode", "dp_host", "max_argmax"]


def max_argmax(x, axis: int = 0):
    """``(max, first argmax)`` along ``axis``; int32 indices.

    Equal to ``jnp.max`` and ``jnp.argmax`` (ties go to the first index), but built
    from two single-operand reductions: XLA on CPU runs ``argmax`` over a non-minor
    axis many times slower (figures: docs/performance.md, "Why the code is written
    this way").
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
        return max_argmax(v[:, None] + s, axis=0)  # (K, K): prev i, next j

    v_last, back = jax.lax.scan(forward, first, pairs)  # back: (L-1, K)
    value, last = max_argmax(v_last)

    def backward(j, bp):
        i = bp[j]
        return i, i

    _, prev = jax.lax.scan(backward, last, back, reverse=True)
    items = jnp.concatenate([prev, last[None]])
    return items, value




def dp_host(first: np.ndarray, pairs: np.ndarray):
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
    _, L = valid_shapes(np.shape(first), np.shape(pairs), mask, distinct)
    first, pairs = as_float(first), as_float(pairs)
    if mask is not None:
        first, pairs = apply_mask(first, pairs, mask)
    if not distinct:
        return dp_decode(first, pairs)
    return host_search(search_decode, L, first.dtype, first, pairs)
