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

import jax.numpy as jnp
import numpy as np

from bayesrank.decoding.checks import as_float
from bayesrank.decoding.front import (  # the step's public names re-exported
    _step,
    exp_step,
    front_step,
    np_link,
    pareto_front,
    resolve_step_links,
)
from bayesrank.decoding.host_chain import (  # the driver's public names re-exported
    _first_or_raise,
    _host_mask,
    _host_values,
    backward_chain,
    backward_in_jit,
    chain_decode,
    valid_scale_inputs,
    search_with_rows,
)

__all__ = [
    "MonotoneInfo",
    "backward_chain",
    "backward_in_jit",
    "valid_scale_inputs",
    "exp_step",
    "front_step",
    "monotone_backward",
    "monotone_backward_in_jit",
    "monotone_decode",
    "np_link",
    "pareto_front",
    "resolve_step_links",
]


class MonotoneInfo(NamedTuple):
    """What a monotone decode did (returned, never carried)."""

    front: np.ndarray  # (L-1,) int, items scanned per DP step (front or hull size)


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
