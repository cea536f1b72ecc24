"""Input checks and masking shared by the decoders.

Shapes are checked for traced arrays too; values (finite or ``-inf``) only for
concrete ones. ``-inf`` means "never rank this item there".
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["apply_mask", "as_float", "is_tracer", "refuse_bad_inputs", "refuse_bad_scores", "valid_shapes"]


def as_float(x):
    """Scores of a floating dtype (integer scores are promoted).

    Host data stay NumPy arrays: a jitted function takes them directly, which costs
    less than converting them with ``jnp.asarray`` first (a dispatched op per array).
    """
    if isinstance(x, (jax.Array, jax.core.Tracer)):
        if not jnp.issubdtype(x.dtype, jnp.floating):
            x = x.astype(jnp.result_type(float))
        return x
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64 if jax.config.jax_enable_x64 else np.float32)
    return x



def is_tracer(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def refuse_bad_scores(arr, name: str) -> None:
    """Real scores, finite or -inf; skipped for traced arrays."""
    if is_tracer(arr):
        return
    a = np.asarray(arr)
    if not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a):
        raise TypeError(f"{name}: expected real scores, got dtype {a.dtype}")
    # one pass: the max is NaN if any entry is, +inf if any entry is
    if a.size and not a.max() < np.inf:
        raise ValueError(
            f"{name}: scores must be finite or -inf (never rank); found NaN or +inf"
        )


def valid_shapes(first_shape, pairs_shape, mask, distinct, *, pairs_name="pairs"):
    """Shape checks (valid for traced arrays too); returns (K, L)."""
    if len(first_shape) != 1 or first_shape[0] < 1:
        raise ValueError(
            f"first: expected a (K,) array with K >= 1, got shape {first_shape}"
        )
    K = first_shape[0]
    if pairs_name == "pairs":
        if len(pairs_shape) != 3 or pairs_shape[1:] != (K, K):
            raise ValueError(
                f"pairs: expected shape (L-1, K, K) = (L-1, {K}, {K}), got {pairs_shape}"
            )
    elif len(pairs_shape) != 2 or pairs_shape[1] != K:
        raise ValueError(
            f"{pairs_name}: expected shape (L-1, K) = (L-1, {K}), got {pairs_shape}"
        )
    L = pairs_shape[0] + 1
    if mask is not None:
        mshape = tuple(np.shape(mask))
        if mshape != (K,):
            raise ValueError(f"mask: expected a (K,) = ({K},) bool array, got {mshape}")
        if jnp.asarray(mask).dtype != bool:
            raise TypeError(
                f"mask: expected a bool array, got dtype {jnp.asarray(mask).dtype}"
            )
    if distinct and K < L:
        raise ValueError(f"distinct=True needs K >= L, got K={K} items and L={L}")
    return K, L


def refuse_bad_inputs(first, pairs, mask, distinct):
    _, L = valid_shapes(np.shape(first), np.shape(pairs), mask, distinct)
    refuse_bad_scores(first, "first")
    refuse_bad_scores(pairs, "pairs")
    if mask is not None and not is_tracer(mask):
        avail = int(np.asarray(mask).sum())
        if avail == 0:
            raise ValueError("mask: every item is masked out; no list can be shown")
        if distinct and avail < L:
            raise ValueError(
                f"mask: distinct=True needs at least L={L} available items, got {avail}"
            )



def apply_mask(first, pairs, mask):
    """Set the scores of masked-out items (mask False) to -inf.

    Integer scores are promoted to floating point (``-inf`` needs a float).
    """
    mask = jnp.asarray(mask, bool)
    first, pairs = as_float(first), as_float(pairs)
    dtype = jnp.result_type(first, pairs)
    neg = jnp.asarray(-jnp.inf, dtype)
    first = jnp.where(mask, first.astype(dtype), neg)
    pairs = jnp.where(mask[None, None, :], pairs.astype(dtype), neg)
    return first, pairs

