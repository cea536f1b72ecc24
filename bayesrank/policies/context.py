"""The request's context: the user's last item ``v0`` and the items available now.

In the paper ``v0`` is the vector of the user's last item: it changes with every request
and enters the features of position 1 only (``v_{a^1} + w_1 v0``). The mask says which
items may be shown to this request. Both travel explicitly through the functional core:
``core.select(key, state, ctx)`` and ``core.update(state, items, rewards, ctx)``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = ["Context", "check_mask", "check_v0"]


class Context(NamedTuple):
    """One request's context (arrays only, so it can be vmapped over requests).

    Example:
        >>> import bayesrank as br
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> policy = br.RankTS(items=env.items, w=env.w)
        >>> ctx = policy.context(v0=env.items[3])      # a checked Context
        >>> ctx.v0.shape, ctx.mask.shape
        ((10,), (10,))
    """

    v0: Any  # (d,) the user's last item vector
    mask: Any  # (Kc,) bool, True where an item may be shown to this request


def _real_array(x, name: str) -> np.ndarray:
    """``x`` as a float64 array, refusing complex, object, string and bool data."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "iuf":  # ints and floats; not bool, complex, object, str
        raise TypeError(
            f"{name}: expected real numbers (an int or float array), got dtype "
            f"{arr.dtype}"
        )
    return arr.astype(float)


def check_v0(v0, d: int, *, batch: bool = False, name: str = "v0") -> np.ndarray:
    """Validate a request's v0: (d,), or (B, d) with ``batch=True``; finite reals."""
    arr = _real_array(v0, name)
    if batch:
        if arr.ndim != 2 or arr.shape[1] != d or arr.shape[0] < 1:
            raise ValueError(
                f"{name}: expected shape (B, d) = (B, {d}) with B >= 1, got {arr.shape}"
            )
    elif arr.shape != (d,):
        raise ValueError(f"{name}: expected shape (d,) = ({d},), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: expected finite values, found NaN or inf")
    return arr


def check_mask(mask, K: int, L: int, distinct: bool, *, batch: bool = False):
    """Validate a mask of showable items: (K,) bool, or (B, K) with ``batch=True``.

    Each request needs at least one available item (L with ``distinct=True``).
    ``None`` means every item.
    """
    if mask is None:
        return None
    m = np.asarray(mask)
    ok_shape = m.shape == (K,) or (batch and m.ndim == 2 and m.shape[1] == K)
    if not ok_shape or m.dtype != bool:
        want = f"({K},) or (B, {K})" if batch else f"({K},)"
        raise ValueError(
            f"mask: expected a {want} bool array (True = may be shown), got "
            f"{m.dtype} {m.shape}"
        )
    need = L if distinct else 1
    counts = m.reshape(-1, K).sum(axis=1)
    if counts.min() < need:
        raise ValueError(
            f"mask: each request needs at least {need} available item(s), got "
            f"{int(counts.min())}"
        )
    return m
