"""The window DP: the exact best list when the score of position l depends on the
S-1 items before it, O(L K^S). Pairwise scores are the case S = 2.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from bayesrank.decoding.checks import as_float, refuse_bad_scores
from bayesrank.decoding.dense import max_argmax

__all__ = ["valid_window_scores", "window_decode"]


def valid_window_scores(scores) -> tuple[int, int]:
    """Check the layout of window scores and return ``(K, S)``.

    ``scores[l]`` (0-based position l) must have ``min(l, S-1) + 1`` axes of length K,
    where S (the window size) is the largest number of axes; values must be real and
    finite or ``-inf``. Value checks are skipped for traced arrays (shapes are static).

    Raises:
        TypeError: ``scores`` is not a list/tuple of arrays, or non-real values.
        ValueError: a shape does not follow the layout, or NaN/+inf values.
    """
    if not isinstance(scores, (list, tuple)):
        raise TypeError(
            "scores: expected a list or tuple of L arrays (one per position), got "
            f"{type(scores).__name__}"
        )
    if len(scores) < 1:
        raise ValueError("scores: expected at least one position (L >= 1), got none")
    shapes = [tuple(np.shape(s)) for s in scores]
    if len(shapes[0]) != 1 or shapes[0][0] < 1:
        raise ValueError(
            f"scores[0]: expected a (K,) array with K >= 1, got {shapes[0]}"
        )
    K = shapes[0][0]
    S = max(len(sh) for sh in shapes)
    for l, sh in enumerate(shapes):
        want = (K,) * (min(l, S - 1) + 1)
        if sh != want:
            raise ValueError(
                f"scores[{l}]: expected shape {want} (min(l, S-1)+1 = {len(want)} axes "
                f"of length K={K}, window S={S}), got {sh}"
            )
    for l, s in enumerate(scores):
        refuse_bad_scores(s, f"scores[{l}]")
    return K, S


def window_decode(scores, *, mask=None):
    """Exact best list for scores over a window of S-1 previous items, O(L K^S).

    Args:
        scores: a list of L arrays; ``scores[l]`` (0-based position l) has
            ``min(l, S-1) + 1`` axes of length K, ordered from the oldest item in the
            window to the item at position l (last axis). Pairwise scores are the case
            S = 2: ``[first, pairs[0], pairs[1], ...]``; S = 1 means independent
            positions.
        mask: (K,) bool, True where the item may be shown (optional).

    Returns:
        items: (L,) int32 array; value: scalar.
    """
    _, S = valid_window_scores(scores)
    scores = [as_float(s) for s in scores]
    if mask is not None:
        m = jnp.asarray(mask, bool)
        scores = [jnp.where(m, s, -jnp.inf) for s in scores]  # -inf takes s's dtype
    if S == 1:  # no dependence between positions
        stacked = jnp.stack(scores)  # (L, K)
        return jnp.argmax(stacked, axis=1).astype(jnp.int32), jnp.sum(
            jnp.max(stacked, axis=1)
        )
    L = len(scores)
    # V over the last (up to S-1) items; shape (K,)*m with oldest axis first.
    V = scores[0]
    backs = []
    for l in range(1, L):
        tot = V[..., None] + scores[l]  # append the item at position l
        if tot.ndim > S - 1:  # window full: maximise out the oldest item
            V, back = max_argmax(tot, axis=0)
            backs.append(back)
        else:
            backs.append(None)
            V = tot
    flat = jnp.argmax(V.reshape(-1))
    value = V.reshape(-1)[flat]
    state = list(jnp.unravel_index(flat, V.shape))  # items at the last V.ndim positions
    items = [jnp.asarray(x, jnp.int32) for x in state]
    # Walk back: each full-window step recorded the dropped (oldest) item.
    for bp in reversed(backs):
        if bp is None:
            continue
        oldest = bp[tuple(items[: S - 1])]
        items.insert(0, oldest)
    return jnp.stack(items), value
