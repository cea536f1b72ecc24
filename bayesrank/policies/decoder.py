"""One decoder for every policy: the exact best list under a tables part's scores.

Pairwise kinds are decoded by the *backward* max-sum DP of :mod:`bayesrank.backward`
(positions L..2), which does not involve position 1: ``H_l(i)`` is the best total of
positions l+1..L after item i at position l, with pointers to the best next item. Position 1 then picks
``argmax_j first(j) + H_1(j)`` and follows the pointers. Because only position 1
depends on the request's v0, a batch of requests with a shared mask and a shared
(deterministic) estimate shares the backward pass: O(L K^2) once (O(L K) when
separable) plus O(K + L) per request.

Dispatch (fixed at trace time by the part's kind and ``distinct``):

* separable: O(L K) backward pass; ``distinct=True``: the exact host search of
  :func:`bayesrank.decode.separable_search_decode`;
* monotone, bonus: dense tables and the O(L K^2) backward pass; ``distinct=True``: the
  exact host search of :func:`bayesrank.decode.search_decode`;
* window: :func:`bayesrank.decode.window_decode`, O(L K^S).

Masked items get -inf (never shown). Ties go to the smallest item index at each step.
"""

from __future__ import annotations

from bayesrank import decode
from bayesrank.backward import Backward, backward_dense, backward_separable, pick

__all__ = ["backward", "decode_tables", "pick"]


def backward(part, rest, mask) -> Backward:
    """The backward pass of a pairwise part; mask (K,) bool."""
    if part.kind == "separable":
        return backward_separable(*part.separable(rest), mask)
    return backward_dense(part.dense(rest), mask)


def decode_tables(part, first, rest, mask, *, distinct: bool):
    """Exact best list of one request: ``(items (L,) int32, value ())``.

    Args:
        part: a tables part (its ``kind`` picks the route).
        first: (K,) position 1's scores (None for window parts).
        rest: the part's positions 2..L (window parts: the list of tables).
        mask: (K,) bool, True where an item may be shown.
        distinct: forbid repeated items (pairwise kinds only).
    """
    if part.kind == "window":
        return decode.window_decode(rest, mask=mask)
    if distinct:
        if part.kind == "separable":
            A, B = part.separable(rest)
            return decode.separable_in_jit(first, A, B, distinct=True, mask=mask)
        return decode.decode_in_jit(first, part.dense(rest), distinct=True, mask=mask)
    return pick(first, backward(part, rest, mask), mask)
