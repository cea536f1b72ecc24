"""Host-side checks of posterior hyper-parameters, shared by every model family.

Real numbers arrive as Python ``int``/``float``, NumPy scalars (``np.float32(2.0)``)
or 0-d arrays; all are accepted. Bools, strings, complex numbers, NaN/inf and
out-of-range values are rejected with a message naming the argument.

Example:
    >>> import numpy as np
    >>> positive_float(np.float32(2.0), "prior_scale")
    2.0
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["check_int", "positive_float", "real_float", "unit_interval"]


def real_float(value, name: str) -> float:
    """A finite real scalar as a Python float; TypeError/ValueError otherwise."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected a real number, got a bool ({value!r})")
    arr = np.asarray(value) if isinstance(value, (np.ndarray, np.generic)) else None
    if arr is not None:
        if arr.ndim != 0:
            raise ValueError(f"{name}: expected a scalar, got shape {arr.shape}")
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"{name}: expected a real number, got dtype {arr.dtype}")
        value = arr.item()
    elif not isinstance(value, (int, float)):
        raise TypeError(
            f"{name}: expected a real number, got {type(value).__name__} ({value!r})"
        )
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name}: expected a finite number, got {value!r}")
    return value


def positive_float(value, name: str) -> float:
    """A finite real scalar > 0 as a Python float."""
    v = real_float(value, name)
    if not v > 0:
        raise ValueError(f"{name}: expected a finite number > 0, got {value!r}")
    return v


def unit_interval(value, name: str) -> float:
    """A real scalar strictly between 0 and 1."""
    v = real_float(value, name)
    if not 0.0 < v < 1.0:
        raise ValueError(f"{name}: expected a number in (0, 1), got {value!r}")
    return v


def check_int(value, name: str, low: int) -> int:
    """A Python or NumPy integer >= low (bools rejected) as a Python int."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, np.integer)
    ):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name}: expected an int >= {low}, got {value}")
    return int(value)
