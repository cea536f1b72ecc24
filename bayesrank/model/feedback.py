"""Turning click logs into the rewards ``policy.update`` takes.

``policy.update(items, rewards)`` reads NaN as "position not observed": that
position's model skips the impression, the others learn from it. Under the cascade
model of browsing (Craswell et al. 2008) a user scans the list from the top and stops
at the first click, so the positions after the click were never examined.

Example:
    >>> import numpy as np
    >>> cascade_rewards([1, -1], L=3)
    array([[ 0.,  1., nan],
           [ 0.,  0.,  0.]])
"""

from __future__ import annotations

import numpy as np

from bayesrank._validate import check_int

__all__ = ["cascade_rewards"]


def cascade_rewards(first_click, L: int) -> np.ndarray:
    """Rewards (n, L) from the 0-based position of each impression's first click.

    Args:
        first_click: (n,) ints, the position of the first click, or -1 for an
            impression with no click (every position examined, none clicked).
        L: list length.

    Returns:
        (n, L) float array: 0 before the click, 1 at it, NaN (not observed) after.

    Example:
        >>> import numpy as np, bayesrank as br
        >>> br.cascade_rewards(np.array([1, -1]), L=3).tolist()
        [[0.0, 1.0, nan], [0.0, 0.0, 0.0]]
    """
    L = check_int(L, "L", low=1)
    c = np.asarray(first_click)
    if c.dtype == bool or not np.issubdtype(c.dtype, np.integer):
        raise TypeError(
            f"first_click: expected integer positions (-1 = no click), got dtype {c.dtype}"
        )
    if c.ndim != 1:
        raise ValueError(f"first_click: expected shape (n,), got {c.shape}")
    if c.size and (c.min() < -1 or c.max() >= L):
        raise ValueError(
            f"first_click: expected positions in [0, {L - 1}] or -1, got min {c.min()} "
            f"and max {c.max()}"
        )
    pos = np.arange(L)
    clicked = c[:, None] >= 0
    out = np.where(pos < c[:, None], 0.0, np.where(pos == c[:, None], 1.0, np.nan))
    return np.where(clicked, out, 0.0)
