"""The separable DP: the exact best list in O(L K) when
``s_l(i, j) = A_l[j] + B_l[i]`` (identity link with a point estimate of theta: a
Thompson draw or the posterior mean). The best predecessor of every item at position l
is then the same item, so each layer costs O(K).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank.decoding.checks import as_float, valid_shapes
from bayesrank.decoding.dense import max_argmax
from bayesrank.decoding.search import host_search, separable_search_decode

__all__ = ["separable_decode", "separable_in_jit"]


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
        best, i_star = max_argmax(v + b)
        return a + best, i_star

    v_last, best_prev = jax.lax.scan(forward, first, (jnp.asarray(A), jnp.asarray(B)))
    value, last = max_argmax(v_last)
    # With a separable score the predecessor does not depend on the item chosen next.
    items = jnp.concatenate([best_prev, last[None]])
    return items, value


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
    _, L = valid_shapes(np.shape(first), np.shape(A), mask, distinct, pairs_name="A")
    if tuple(np.shape(B)) != tuple(np.shape(A)):
        raise ValueError(
            f"B: expected the shape of A, {tuple(np.shape(A))}, got {tuple(np.shape(B))}"
        )
    first, A, B = as_float(first), as_float(A), as_float(B)
    dtype = jnp.result_type(first, A, B)
    first, A, B = first.astype(dtype), A.astype(dtype), B.astype(dtype)
    if mask is not None:
        m = jnp.asarray(mask, bool)
        neg = jnp.asarray(-jnp.inf, dtype)
        first = jnp.where(m, first, neg)
        A = jnp.where(m[None, :], A, neg)
    if not distinct:
        return separable_decode(first, A, B)
    return host_search(separable_search_decode, L, dtype, first, A, B)
