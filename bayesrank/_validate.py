"""Argument checks shared by every layer (no bayesrank imports: the lowest module)."""

from __future__ import annotations

import numpy as np

__all__ = ["check_seed"]


def check_seed(seed, name: str = "seed") -> int:
    """A seed as a Python int, or a ``TypeError``/``ValueError`` that names ``name``.

    Args:
        seed: an integer >= 0 (Python or NumPy integer; not a bool).
        name: the argument's name, used in the message.

    Example:
        >>> check_seed(3)
        3
        >>> check_seed(-1)
        Traceback (most recent call last):
        ...
        ValueError: seed: expected an integer >= 0, got -1
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{name}: expected an integer >= 0, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"{name}: expected an integer >= 0, got {seed}")
    return int(seed)
