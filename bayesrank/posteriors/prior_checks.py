"""Checks of the conjugate linear models' hyper-parameters (prior, scales, discount).

Shared by :mod:`~bayesrank.posteriors.conjugate.gaussian`, :mod:`~bayesrank.posteriors.conjugate.unknown_noise` and :mod:`~bayesrank.posteriors.conjugate.learnt_scale`: each raises
ValueError/TypeError naming the argument, and lets traced JAX values through with
their shape checked only (a model built inside ``jit`` or ``vmap``).

Example:
    >>> from bayesrank.posteriors.prior_checks import valid_prior
    >>> mean, scale, p = valid_prior(0.0, [1.0, 2.0])
    >>> p
    2
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from bayesrank._validate import check_array, check_int, check_real, is_tracer
from bayesrank.posteriors.w_prior import is_distribution

__all__ = ["is_learnt", "jsonable", "valid_L_p", "valid_discount", "valid_positive_scalar",
           "valid_prior"]


def is_learnt(value) -> bool:
    """Whether a scale argument asks for learning: None or a NumPyro distribution.

    Example:
        >>> is_learnt(None), is_learnt(1.0)
        (True, False)
    """
    return value is None or is_distribution(value)


def _to_float_array(value, name: str) -> np.ndarray:
    """Real numbers (Python, NumPy scalars or arrays) as float (a scalar as a
    Python float); bools, strings, complex and object values are refused."""
    arr = check_array(value, name)
    return arr.item() if arr.ndim == 0 else arr


def valid_positive_scalar(value, name: str):
    if is_tracer(value):
        if jnp.ndim(value) != 0:
            raise ValueError(f"{name}: expected a scalar, got shape {jnp.shape(value)}")
        return value
    arr = _to_float_array(value, name)
    if np.ndim(arr) != 0:
        raise ValueError(f"{name}: expected a scalar, got shape {np.shape(arr)}")
    if arr <= 0:
        raise ValueError(f"{name}: expected a finite number > 0, got {value!r}")
    return arr


def valid_prior(prior_mean, prior_scale):
    """Validate (prior_mean, prior_scale); return them and the implied p (or None)."""
    if is_tracer(prior_mean):
        mean = prior_mean
    else:
        mean = _to_float_array(prior_mean, "prior_mean")
    if jnp.ndim(mean) > 1 or (jnp.ndim(mean) == 1 and jnp.shape(mean)[0] == 0):
        raise ValueError(
            "prior_mean: expected a scalar or a (p,) vector, got shape "
            f"{jnp.shape(mean)}"
        )
    if is_tracer(prior_scale):
        scale = prior_scale
    else:
        scale = _to_float_array(prior_scale, "prior_scale")
    sshape = jnp.shape(scale)
    if len(sshape) > 2 or (len(sshape) == 2 and sshape[0] != sshape[1]):
        raise ValueError(
            "prior_scale: expected a scalar, a (p,) vector of standard deviations or a "
            f"(p, p) covariance matrix, got shape {sshape}"
        )
    if len(sshape) >= 1 and sshape[0] == 0:
        raise ValueError(f"prior_scale: expected p >= 1, got shape {sshape}")
    if not is_tracer(scale):
        if np.ndim(scale) < 2 and np.any(np.asarray(scale) <= 0):
            raise ValueError("prior_scale: expected standard deviations > 0")
        if np.ndim(scale) == 2:
            if not np.allclose(scale, scale.T, rtol=1e-10, atol=1e-12):
                raise ValueError("prior_scale: a (p, p) covariance must be symmetric")
            try:
                np.linalg.cholesky(scale)
            except np.linalg.LinAlgError:
                raise ValueError(
                    "prior_scale: a (p, p) covariance must be positive definite"
                ) from None
    dims = {}
    if jnp.ndim(mean) == 1:
        dims["prior_mean"] = jnp.shape(mean)[0]
    if len(sshape) >= 1:
        dims["prior_scale"] = sshape[0]
    if len(set(dims.values())) > 1:
        raise ValueError(
            f"prior_scale: its dimension {dims['prior_scale']} does not match "
            f"prior_mean's {dims['prior_mean']}"
        )
    p = next(iter(dims.values()), None)
    return mean, scale, p


def valid_discount(discount) -> float:
    """gamma in (0, 1]: 1 keeps every observation at full weight."""
    return check_real(discount, "discount", low=0, high=1, inclusive="right")


def jsonable(value):
    if is_tracer(value):
        raise TypeError("config: hyper-parameters are traced JAX values")
    arr = np.asarray(value, dtype=float)
    return float(arr) if arr.ndim == 0 else arr.tolist()


def valid_L_p(L, p, p_prior) -> tuple[int, int]:
    L, p = check_int(L, "L", low=1), check_int(p, "p", low=1)
    if p_prior is not None and p != p_prior:
        raise ValueError(
            f"p: the prior has dimension {p_prior}, but init was asked for p={p}"
        )
    return int(L), int(p)

