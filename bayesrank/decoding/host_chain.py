"""The host DP driver shared by the catalogue-scale decoders (:mod:`~.monotone`,
:mod:`~.bounded`): input checks, a forward or backward chain of any exact step
function, the exact distinct search on rows made on demand, and the calls from
inside ``jax.jit`` through ``jax.pure_callback``.

A *step* is ``step(l, V, cols) -> (M, arg, size)``: the best value and predecessor of
every item at the next position given the values V so far (``size``: what the step
scanned, reported as info). Host NumPy, float64.

Example:
    >>> import numpy as np
    >>> from bayesrank.decoding.host_chain import chain_decode
    >>> pairs = np.array([[[0.0, 1.0], [2.0, 0.0]]])             # (L-1, K, K)
    >>> def step(l, V, cols):
    ...     t = V[:, None] + pairs[l]
    ...     return t.max(0), t.argmax(0), 2
    >>> items, value, sizes = chain_decode(np.array([0.0, 0.5]), step, 2, 2, None)
    >>> items.tolist(), float(value)
    ([1, 0], 2.5)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank.decoding.checks import valid_shapes
from bayesrank.decoding.search import _astar

__all__ = ["backward_chain", "backward_in_jit", "chain_decode", "valid_scale_inputs",
           "host_call", "search_with_rows"]


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
