"""The one home of argument checks, shared by every layer (the lowest module: it imports
no bayesrank module, and JAX only when the caller already has).

Each check returns the value in a plain form (a Python ``int``/``float``, a NumPy array)
or raises a ``TypeError`` (wrong kind: a bool where a number is expected, a string, a
complex number) or a ``ValueError`` (right kind, wrong value: NaN, out of range, wrong
shape) whose message starts with the argument's name, in the spirit of scikit-learn's
``check_scalar``. Config readers pass their key as the name (``"sweep.T"``,
``"cfg.runs"``), so the message names what the user wrote.

Example:
    >>> check_int(3, "runs", low=1)
    3
    >>> check_real(0.5, "delta", low=0, high=1, inclusive="neither")
    0.5
    >>> check_real(float("nan"), "lam")
    Traceback (most recent call last):
    ...
    ValueError: lam: expected a finite number, got nan
    >>> check_int(True, "L")
    Traceback (most recent call last):
    ...
    TypeError: L: expected an integer, got bool (True)
"""

from __future__ import annotations

import math
import numbers
import sys

import numpy as np

__all__ = ["check_array", "check_int", "check_lists", "check_real", "check_seed", "is_tracer"]

_INCLUSIVE = ("both", "left", "right", "neither")


def is_tracer(x) -> bool:
    """Whether ``x`` is a JAX tracer (checks are skipped under ``jit``/``vmap``)."""
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(x, jax.core.Tracer)


def _range_text(low, high, inclusive: str) -> str:
    lo = "[" if inclusive in ("both", "left") else "("
    hi = "]" if inclusive in ("both", "right") else ")"
    if low is not None and high is not None:
        return f"in {lo}{low:g}, {high:g}{hi}"
    if low is not None:
        return f"{'>=' if lo == '[' else '>'} {low:g}"
    return f"{'<=' if hi == ']' else '<'} {high:g}"


def _out_of_range(v, low, high, inclusive: str) -> bool:
    left = inclusive in ("both", "left")
    right = inclusive in ("both", "right")
    if low is not None and (v < low or (v == low and not left)):
        return True
    return high is not None and (v > high or (v == high and not right))


def check_int(value, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """An integer (Python or NumPy; not a bool) in ``[low, high]`` as a Python int.

    Example:
        >>> check_int(0, "K", low=1)
        Traceback (most recent call last):
        ...
        ValueError: K: expected an integer >= 1, got 0
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name}: expected an integer, got {type(value).__name__} ({value!r})"
        )
    if _out_of_range(value, low, high, "both"):
        raise ValueError(
            f"{name}: expected an integer {_range_text(low, high, 'both')}, got {value!r}"
        )
    return int(value)


def check_real(
    value,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    inclusive: str = "both",
) -> float:
    """A finite real scalar in the given range as a Python float.

    Accepts Python and NumPy numbers and 0-d arrays; rejects bools, strings, complex
    numbers, NaN and inf. ``inclusive`` says which ends of ``[low, high]`` are allowed:
    "both", "left", "right" or "neither" (``low=0, inclusive="neither"``: > 0).

    Example:
        >>> check_real(0, "prior_scale", low=0, inclusive="neither")
        Traceback (most recent call last):
        ...
        ValueError: prior_scale: expected a finite number > 0, got 0
    """
    if inclusive not in _INCLUSIVE:
        raise ValueError(f"inclusive: expected one of {_INCLUSIVE}, got {inclusive!r}")
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected a real number, got a bool ({value!r})")
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.ndim != 0:
            raise ValueError(f"{name}: expected a scalar, got shape {arr.shape}")
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"{name}: expected a real number, got dtype {arr.dtype}")
        v = float(arr)
    elif isinstance(value, numbers.Real):
        v = float(value)
    else:
        raise TypeError(
            f"{name}: expected a real number, got {type(value).__name__} ({value!r})"
        )
    if not math.isfinite(v):
        raise ValueError(f"{name}: expected a finite number, got {value!r}")
    if _out_of_range(v, low, high, inclusive):
        raise ValueError(
            f"{name}: expected a finite number {_range_text(low, high, inclusive)}, "
            f"got {value!r}"
        )
    return v


def check_array(
    x,
    name: str,
    *,
    ndim: int | tuple[int, ...] | None = None,
    finite: bool = True,
    dtype=float,
) -> np.ndarray:
    """A real array as a NumPy array of ``dtype``, of the given number of dimensions,
    with finite values (unless ``finite=False``: NaN allowed, inf never).

    Example:
        >>> check_array([[1, 2]], "items", ndim=2).shape
        (1, 2)
        >>> check_array([1.0, float("inf")], "v0", ndim=1)
        Traceback (most recent call last):
        ...
        ValueError: v0: expected finite values, found NaN or inf
    """
    raw = np.asarray(x) if not isinstance(x, (str, bytes)) else None
    if raw is None or raw.dtype.kind not in "biuf":
        kind = type(x).__name__ if raw is None else f"dtype {raw.dtype}"
        raise TypeError(f"{name}: expected a real numeric array, got {kind}")
    arr = raw.astype(dtype)
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            want = " or ".join(f"{n}-d" for n in allowed)
            raise ValueError(f"{name}: expected a {want} array, got shape {arr.shape}")
    bad = ~np.isfinite(arr) if finite else np.isinf(arr)
    if bad.any():
        what = "NaN or inf" if finite else "inf"
        raise ValueError(f"{name}: expected finite values, found {what}")
    return arr


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


def check_lists(lists, K: int, L: int, name: str = "items") -> None:
    """Raise unless ``lists`` is an int array (..., L) of item indices in [0, K).
    Tracers pass unchecked (their values are not known)."""
    if is_tracer(lists):
        return
    arr = np.asarray(lists)
    if arr.ndim < 1 or arr.shape[-1] != L:
        raise ValueError(
            f"{name}: expected shape (L,) or (n, L) with L={L}, got {arr.shape}"
        )
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected integer item indices, got dtype {arr.dtype}")
    if arr.size and (arr.min() < 0 or arr.max() >= K):
        raise ValueError(
            f"{name}: item indices must lie in [0, K-1] = [0, {K - 1}], "
            f"got min {arr.min()} and max {arr.max()}"
        )
