"""Ring buffers of observations, one per position, shared by the models that refit
from their data (the Laplace and NUTS families): an update's arguments checked
against the buffers, and one row per valid position written over the oldest.

Example:
    >>> import jax.numpy as jnp
    >>> from typing import NamedTuple
    >>> class Buffers(NamedTuple):
    ...     x: jnp.ndarray
    ...     y: jnp.ndarray
    ...     n: jnp.ndarray
    >>> state = Buffers(jnp.zeros((2, 3, 1)), jnp.zeros((2, 3)), jnp.zeros(2, int))
    >>> x, y, valid = valid_update(state, jnp.ones((2, 1)), jnp.ones(2), None)
    >>> append_rows(state, x, y, valid)[2].tolist()
    [1, 1]
"""

from __future__ import annotations

import jax.numpy as jnp

from bayesrank.posteriors.base import update_args

__all__ = ["append_rows", "valid_update"]


def valid_update(state, x, y, valid):
    """An update's arguments checked against a buffered state (ValueError naming the
    argument): x (L, p), y (L,) in the state's dtype and valid (L,) bool."""
    L, _, p = state.x.shape
    return update_args(x, y, valid, L, p, state.x.dtype, state.y.dtype)


def append_rows(state, x, y, valid):
    """The ring buffers ``(x (L, n_max, p), y (L, n_max), n (L,))`` with one row per
    valid position written over the oldest (a position not valid keeps its buffers)."""
    n_max = state.x.shape[1]
    rows = jnp.arange(state.x.shape[0])
    idx = state.n % n_max
    x_buf = state.x.at[rows, idx].set(jnp.where(valid[:, None], x, state.x[rows, idx]))
    y_buf = state.y.at[rows, idx].set(jnp.where(valid, y, state.y[rows, idx]))
    return x_buf, y_buf, state.n + valid.astype(state.n.dtype)
