"""Feature maps: a shown list (and the request's v0) -> one feature row per position.

Every policy learns per-position models on features of the list it showed:

* :func:`window_features`: ``x^l = v_{a^l} + sum_i W[l, i-1] v_{a^{l-i}}`` (RankTS,
  RankUCB, WindowRankUCB; the pairwise case is S = 2);
* :func:`pair_features`: ``(v_{a^l}, v_{a^{l-1}})`` in R^{2d} (GenRankUCB learns w);
* :func:`item_features`: ``v_{a^l}`` alone (the ranked-bandits baseline).

Each returns a function ``(items (K, d), lists (..., L), v0 (d,)) -> (..., L, p)``,
pure and jittable; ``v0`` is the "previous item" of position 1.
"""

from __future__ import annotations

import jax.numpy as jnp

from bayesrank._static import Part
from bayesrank.model import scores

__all__ = ["WindowFeatures", "item_features", "pair_features", "window_features"]


class WindowFeatures(Part):
    """Features for known window weights W (L, S-1); p = d. W is a pytree leaf, so
    policies with other weights share one compiled program."""

    def __init__(self, W):
        self.W = jnp.asarray(W)

    def __call__(self, items, lists, v0):
        return scores.list_features(items, self.W.astype(items.dtype), v0, lists)


def window_features(W) -> WindowFeatures:
    """Features for known window weights W (L, S-1); p = d."""
    return WindowFeatures(W)


def pair_features(items, lists, v0):
    """(..., L, 2d) features ``(v_{a^l}, v_{a^{l-1}})`` of shown lists (a^0 -> v0)."""
    shown = items[jnp.asarray(lists)]  # (..., L, d)
    v0b = jnp.broadcast_to(v0, shown.shape[:-2] + (1, shown.shape[-1]))
    prev = jnp.concatenate([v0b, shown[..., :-1, :]], axis=-2)
    return jnp.concatenate([shown, prev], axis=-1)


def item_features(items, lists, v0):
    """(..., L, d) the shown items' vectors; the baseline ignores neighbours."""
    del v0
    return items[jnp.asarray(lists)]
