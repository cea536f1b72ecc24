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

__all__ = [
    "check_array",
    "check_bool",
    "check_cascade",
    "check_choice",
    "check_int",
    "check_lists",
    "check_mask",
    "check_position",
    "check_probabilities",
    "check_real",
    "check_reward_support",
    "check_seed",
    "check_v0",
    "is_bool",
    "is_integer",
    "is_tracer",
]

_INCLUSIVE = ("both", "left", "right", "neither")


def is_tracer(x) -> bool:
    """Whether ``x`` is a JAX tracer (checks are skipped under ``jit``/``vmap``)."""
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(x, jax.core.Tracer)


def is_integer(value) -> bool:
    """Whether ``value`` is an integer (Python or NumPy), not a bool: the test for
    code that words its own message (a file's content, a config's key)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def is_bool(value) -> bool:
    """Whether ``value`` is a flag (a Python or NumPy bool), not 0/1 or None."""
    return isinstance(value, (bool, np.bool_))


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
    if not is_integer(value):
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
    if is_bool(value):
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
    shape: tuple | None = None,
    finite: bool | None = True,
    dtype=float,
    clicks: bool = False,
) -> np.ndarray:
    """A real array as a NumPy array of ``dtype``, of the given number of dimensions
    or ``shape`` (``None`` entries match any length), with finite values (unless
    ``finite=False``: NaN allowed, as "not observed", inf never; ``None``: values
    unchecked, for a caller that words its own message); ``dtype=None`` keeps the
    input's int or float dtype.

    The one bool-array rule of the package: a bool array is not a number (a
    ``TypeError``, as for strings, complex and object data), except rewards
    (``clicks=True``), where True/False are the outcomes 1/0; masks and flags are
    checked by :func:`check_mask` and :func:`check_bool`.

    Example:
        >>> check_array([[1, 2]], "items", ndim=2).shape
        (1, 2)
        >>> check_array([1.0, float("inf")], "v0", ndim=1)
        Traceback (most recent call last):
        ...
        ValueError: v0: expected finite values, found NaN or inf
        >>> check_array([True, False], "w")
        Traceback (most recent call last):
        ...
        TypeError: w: expected real numbers (an int or float array), got dtype bool
    """
    try:
        raw = None if isinstance(x, (str, bytes)) else np.asarray(x)
    except (TypeError, ValueError):  # ragged nested lists
        raw = None
    if raw is None or raw.dtype.kind not in ("biuf" if clicks else "iuf"):
        kind = type(x).__name__ if raw is None else f"dtype {raw.dtype}"
        raise TypeError(f"{name}: expected real numbers (an int or float array), got {kind}")
    arr = raw if dtype is None else raw.astype(dtype)
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            want = " or ".join(f"{n}-d" for n in allowed)
            raise ValueError(f"{name}: expected a {want} array, got shape {arr.shape}")
    if shape is not None and (arr.ndim != len(shape) or any(
            w is not None and w != n for w, n in zip(shape, arr.shape))):
        want = "(" + ", ".join("n" if w is None else str(w) for w in shape) + (
            ",)" if len(shape) == 1 else ")")
        raise ValueError(f"{name}: expected shape {want}, got {arr.shape}")
    if finite and not np.isfinite(arr).all():
        raise ValueError(f"{name}: expected finite values, found NaN or inf")
    if finite is False and np.isinf(arr).any():
        raise ValueError(f"{name}: expected finite values or NaN (not observed), found inf")
    return arr


def check_bool(value, name: str) -> bool:
    """A flag: a Python or NumPy bool (not 0/1, not None) as a Python bool.

    Example:
        >>> check_bool(1, "distinct")
        Traceback (most recent call last):
        ...
        TypeError: distinct: expected a bool, got int (1)
    """
    if not is_bool(value):
        raise TypeError(f"{name}: expected a bool, got {type(value).__name__} ({value!r})")
    return bool(value)


def check_cascade(rewards, name: str = "rewards") -> None:
    """Refuse click lists a cascade cannot produce (the user examines the list
    top-down and stops at the first click): an observed position below an unobserved
    (NaN) one, or a click (1) below the first click. Zeros below the first click are
    accepted (logs record the clicks never made there as 0).

    Args:
        rewards: (L,) or (n, L) floats, NaN = not observed; the values already
            checked to be 0/1.
        name: the argument's name in the message.

    Raises:
        ValueError: naming ``name``, the list and the position (both 0-based).

    Example:
        >>> check_cascade(np.array([0.0, 1.0, 0.0, np.nan]))
        >>> check_cascade(np.array([0.0, 1.0, 1.0]))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: rewards: a cascade stops at its first click, but list 0 has a ...
    """
    rows = np.atleast_2d(np.asarray(rewards, float))
    seen = np.isfinite(rows)
    click = seen & (rows == 1)
    checks = (
        (seen & (np.cumsum(~seen, axis=1) > 0),
         "a cascade examines positions top-down, but list {i} has an observed "
         "reward at position {j} below an unobserved (NaN) one: {lst}"),
        (click & (np.cumsum(click, axis=1) > 1),
         "a cascade stops at its first click, but list {i} has a second click "
         "at position {j}: {lst}"),
    )
    for bad, text in checks:
        if bad.any():
            i, j = (int(v) for v in np.argwhere(bad)[0])
            lst = rows[i].tolist()
            raise ValueError(f"{name}: " + text.format(i=i, j=j, lst=lst))


def check_choice(value, name: str, choices) -> str:
    """One of ``choices`` (strings), or a ``ValueError`` listing them.

    Example:
        >>> check_choice("tandem", "link", ("identity", "logistic"))
        Traceback (most recent call last):
        ...
        ValueError: link: expected one of ('identity', 'logistic'), got 'tandem'
    """
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}: expected one of {tuple(choices)}, got {value!r}")
    return value


def check_position(position, L: int, name: str = "position") -> int:
    """A 0-based position: an integer (not a bool) in ``[0, L-1]``, as a Python int.

    Example:
        >>> check_position(3, 3)
        Traceback (most recent call last):
        ...
        ValueError: position: expected an int in [0, 2], got 3
    """
    if not is_integer(position):
        raise TypeError(
            f"{name}: expected an int in [0, {L - 1}], got {type(position).__name__} "
            f"({position!r})"
        )
    if not 0 <= position < L:
        raise ValueError(f"{name}: expected an int in [0, {L - 1}], got {position!r}")
    return int(position)


def check_probabilities(x, name: str, *, shape: tuple | None = None,
                        zero: bool = False) -> np.ndarray:
    """Probabilities as a float array: in ``(0, 1]`` (``zero=True``: ``[0, 1]``).

    Example:
        >>> check_probabilities([0.5, 0.0], "examination")
        Traceback (most recent call last):
        ...
        ValueError: examination: expected probabilities in (0, 1], got [0.5, 0.0]
    """
    arr = check_array(x, name, shape=shape, finite=False)
    low_ok = arr >= 0 if zero else arr > 0
    if not (low_ok & (arr <= 1)).all():  # NaN fails both
        got = arr.tolist() if arr.size <= 8 else f"min {arr.min()} and max {arr.max()}"
        raise ValueError(
            f"{name}: expected probabilities in {'[' if zero else '('}0, 1], got {got}"
        )
    return arr


def check_v0(v0, d: int, *, batch: bool = False, name: str = "v0") -> np.ndarray:
    """A request's v0: finite reals of shape (d,), or (B, d) with ``batch=True``."""
    arr = check_array(v0, name, finite=None)
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
    """A mask of showable items: (K,) bool, or (B, K) with ``batch=True``; each
    request needs at least one available item (L with ``distinct=True``). ``None``
    means every item and is returned as is."""
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


def check_reward_support(y, support: str, name: str = "rewards", *,
                         bound: float | None = None, why: str = "") -> None:
    """Host-side check of reward values: finite, and binary or counts if required.

    Args:
        y: rewards (any shape); a traced array passes unchecked.
        support: "real", "binary" (values in {0, 1}) or "count" (non-negative
            integers).
        name: the argument name used in error messages.
        bound, why: None, or the largest magnitude accepted and what it protects.

    Raises:
        TypeError: non-numeric rewards.
        ValueError: NaN or inf, values outside the support, or beyond ``bound``.

    Example:
        >>> import numpy as np
        >>> from bayesrank.posteriors import check_reward_support
        >>> check_reward_support(np.array([0.0, 1.0]), "binary")
        >>> check_reward_support(np.array([0.0, 0.5]), "binary")
        Traceback (most recent call last):
        ...
        ValueError: rewards: a Bernoulli likelihood needs rewards in {0, 1}
    """
    if is_tracer(y):
        return
    arr = np.asarray(y)
    if arr.dtype.kind not in "biuf":  # clicks may come as bools here: 0/1 outcomes
        raise TypeError(f"{name}: expected numeric rewards, got dtype {arr.dtype}")
    arr = arr.astype(float, copy=False)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name}: expected finite rewards, found NaN or inf")
    if support == "binary" and not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{name}: a Bernoulli likelihood needs rewards in {{0, 1}}")
    if support == "count" and not np.all((arr >= 0) & (arr == np.round(arr))):
        raise ValueError(
            f"{name}: a Poisson likelihood needs non-negative integer rewards"
        )
    if bound is not None and arr.size and not np.abs(arr).max() <= bound:
        worst = arr.reshape(-1)[int(np.argmax(np.abs(arr).reshape(-1)))]
        raise ValueError(f"{name}: expected magnitudes up to {bound:.4g} ({why}), "
                         f"got {worst:.4g}")


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
    if not is_integer(seed):
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
