"""Per-position scores of every super-arm from a parameter estimate.

The expected reward of item j at position l after item i is
``f^l(<theta^l, v_j + w_l v_i>)`` (Eq. 1). Because ``<theta, v_j + w v_i> =
(V theta)_j + w (V theta)_i``, all K^2 super-arm scores of a position come from one
matrix-vector product: O(K d + K^2) instead of O(K^2 d).

These functions are pure and jittable; they feed :mod:`bayesrank.decoding.dense`.
"""

from __future__ import annotations

import jax.numpy as jnp

from bayesrank.model.links import Link, apply_links

__all__ = [
    "linear_parts",
    "list_features",
    "pair_scores",
    "window_lookback",
    "window_scores",
]


def linear_parts(theta, items, w, v0):
    """Separable parts of the linear predictor for pairwise dependence.

    Args:
        theta: (L, d) one parameter per position.
        items: (K, d) item vectors.
        w: (L,) dependency on the previous item.
        v0: (d,) the user's last item (the "previous item" of position 1).

    Returns:
        first: (K,) predictor of item j at position 1, ``<theta^1, v_j + w_1 v0>``;
        A: (L-1, K) ``<theta^l, v_j>`` for l >= 2; B: (L-1, K) ``w_l <theta^l, v_i>``.
    """
    proj = theta @ items.T  # (L, K)
    first = proj[0] + w[0] * (theta[0] @ v0)
    return first, proj[1:], w[1:, None] * proj[1:]


def pair_scores(theta, items, w, v0, links: tuple[Link, ...]):
    """Scores of all super-arms: ``first`` (K,) and ``pairs`` (L-1, K, K).

    ``pairs[l-2, i, j] = f^l(<theta^l, v_j + w_l v_i>)``.
    """
    first, A, B = linear_parts(theta, items, w, v0)
    z = A[:, None, :] + B[:, :, None]  # (L-1, K_prev, K_next)
    first = links[0].mean(first)
    if z.shape[0]:
        z = apply_links(links[1:], z)
    return first, z


def window_lookback(l: int, S: int):
    """Offsets i = 1..S-1 seen from 0-based position l: ('item', axis), ('v0', None)
    or ('none', None) for positions before the user's last item."""
    out = []
    n_axes = min(l, S - 1)
    for i in range(1, S):
        if i <= l:
            out.append(("item", n_axes - i))
        elif i == l + 1:
            out.append(("v0", None))
        else:
            out.append(("none", None))
    return out


def window_scores(theta, items, W, v0, links: tuple[Link, ...]):
    """Scores for a window of S-1 previous items (Appendix E).

    Args:
        W: (L, S-1); ``W[l, i-1]`` weighs the item i positions before position l.

    Returns:
        A list of L arrays; entry l has ``min(l, S-1) + 1`` axes of length K, oldest item
        first, the item at position l last (the layout of ``decode.window_decode``).
    """
    L, S = theta.shape[0], W.shape[1] + 1
    proj = theta @ items.T  # (L, K)
    out = []
    for l in range(L):
        n_axes = min(l, S - 1) + 1
        z = proj[l].reshape((1,) * (n_axes - 1) + (-1,))
        for i, (kind, axis) in enumerate(window_lookback(l, S), start=1):
            if kind == "item":
                shape = [1] * n_axes
                shape[axis] = -1
                z = z + W[l, i - 1] * proj[l].reshape(shape)
            elif kind == "v0":
                z = z + W[l, i - 1] * (theta[l] @ v0)
        out.append(links[l].mean(z))
    return out


def list_features(items, W, v0, lists):
    """Features x^l = v_{a^l} + sum_i W[l, i-1] v_{a^{l-i}} of shown lists.

    Args:
        items: (K, d); W: (L, S-1); v0: (d,); lists: (..., L) int.

    Returns:
        (..., L, d) features, one per position.
    """
    lists = jnp.asarray(lists)
    L, S = W.shape[0], W.shape[1] + 1
    shown = items[lists]  # (..., L, d)
    pad = jnp.zeros(shown.shape[:-2] + (S - 1, shown.shape[-1]), shown.dtype)
    v0b = jnp.broadcast_to(v0, shown.shape[:-2] + (1, shown.shape[-1]))
    # history[..., S-1 + l] is the vector at position l; S-2 holds v0; earlier, zeros.
    history = jnp.concatenate([pad[..., :-1, :], v0b, shown], axis=-2)
    x = shown
    for i in range(1, S):
        prev = history[..., S - 1 - i : S - 1 - i + L, :]
        x = x + W[:, i - 1, None] * prev
    return x
