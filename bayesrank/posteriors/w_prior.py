"""The prior on the dependency weights w: a NumPyro distribution, checked and stored.

A prior is any ``numpyro.distributions.Distribution`` with a scalar event, a
continuous support on the real line (the reals or an interval) and batch shape ``()``
(one prior for every position) or ``(L,)``. Saved policies store it as its class name
and parameters; only the classes in :data:`SAVABLE` are rebuilt from a file (looked up
by name here, never imported from the file's text).
"""

from __future__ import annotations

import numpy as np

__all__ = ["SAVABLE", "check_w_prior", "is_distribution", "prior_config",
           "prior_from_config"]

#: Distributions a saved policy can rebuild: class name -> constructor parameters.
SAVABLE = {
    "Normal": ("loc", "scale"),
    "Laplace": ("loc", "scale"),
    "Cauchy": ("loc", "scale"),
    "Logistic": ("loc", "scale"),
    "StudentT": ("df", "loc", "scale"),
    "Uniform": ("low", "high"),
    "TruncatedNormal": ("loc", "scale", "low", "high"),
}


def is_distribution(obj) -> bool:
    """Whether obj is a NumPyro distribution (without importing NumPyro for others)."""
    if not type(obj).__module__.startswith("numpyro"):
        return False
    from numpyro.distributions import Distribution

    return isinstance(obj, Distribution)


def check_w_prior(prior, L: int | None):
    """Return ``prior`` if it is a usable prior on w for L positions, else raise.

    Raises:
        TypeError: not a NumPyro distribution.
        ValueError: a discrete or non-scalar support, a support that is not (part of)
            the real line, or a batch shape other than () or (L,).
    """
    if not is_distribution(prior):
        raise TypeError(
            "w: expected an array of dependency weights or a NumPyro distribution "
            f"(the prior of a latent w), got {type(prior).__name__}"
        )
    from numpyro.distributions import constraints

    support = prior.support
    if getattr(support, "is_discrete", False) or prior.event_shape != ():
        raise ValueError(
            f"w: the prior must be a continuous scalar distribution, got "
            f"{type(prior).__name__} with event shape {prior.event_shape}"
        )
    line = tuple(
        getattr(constraints, n) for n in ("_Real", "_Interval", "_GreaterThan", "_LessThan")
        if hasattr(constraints, n)
    )
    if not isinstance(support, line):
        raise ValueError(
            f"w: the prior's support must be the real line or an interval of it, got "
            f"{support}"
        )
    batch = tuple(prior.batch_shape)
    if not (batch == () or (len(batch) == 1 and (L is None or batch[0] == L))):
        want = "() or (L,)" if L is None else f"() or (L,) = ({L},)"
        raise ValueError(f"w: the prior's batch shape must be {want}, got {batch}")
    import jax

    with jax.ensure_compile_time_eval():  # the prior is a constant, also under jit
        _check_parameters(prior)
        _check_range(prior)
    return prior


def _check_parameters(prior) -> None:
    """Every parameter finite and inside its constraint (NaN loc, a negative scale,
    ``Uniform(2, 1)``), also for priors built with ``validate_args=False``, and for
    the base of a truncated or expanded distribution."""
    import jax.numpy as jnp
    from numpyro.distributions import constraints

    for name, c in prior.arg_constraints.items():
        if not hasattr(prior, name):
            continue
        v = np.asarray(getattr(prior, name), dtype=float)
        if not np.all(np.isfinite(v)):
            raise ValueError(f"w: the prior's {name} must be finite, got {v.tolist()}")
        dependent = isinstance(c, type(constraints.dependent))
        if not dependent and not np.all(np.asarray(c(jnp.asarray(v)))):
            raise ValueError(f"w: the prior's {name} must satisfy {c}, got {v.tolist()}")
    base = getattr(prior, "base_dist", None)
    if base is not None:
        _check_parameters(base)
    lo = getattr(prior.support, "lower_bound", None)
    hi = getattr(prior.support, "upper_bound", None)
    if lo is not None and hi is not None and np.any(np.asarray(lo) >= np.asarray(hi)):
        raise ValueError(
            f"w: the prior's support is empty (lower bound {np.asarray(lo).tolist()} >= "
            f"upper bound {np.asarray(hi).tolist()})"
        )


def _check_range(prior) -> None:
    """The grid needs a finite range holding the prior: its 1e-6 and 1 - 1e-6
    quantiles, or else its mean +- 10 sd."""
    import jax.numpy as jnp

    try:
        lo = np.asarray(prior.icdf(jnp.asarray(1e-6)), float)
        hi = np.asarray(prior.icdf(jnp.asarray(1 - 1e-6)), float)
    except (NotImplementedError, AttributeError, ImportError):  # StudentT: TFP
        try:
            mean = np.asarray(prior.mean, float)
            sd = np.sqrt(np.asarray(prior.variance, float))
        except (NotImplementedError, AttributeError):
            mean = sd = np.asarray(np.nan)
        lo, hi = mean - 10 * sd, mean + 10 * sd
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(hi > lo)):
        raise ValueError(
            f"w: cannot find a finite range holding the prior {type(prior).__name__} "
            "(neither finite quantiles nor a finite mean and variance; a StudentT with "
            "df <= 2 needs tensorflow_probability for its quantiles: use Cauchy for df = 1)"
        )


def prior_config(prior) -> dict:
    """JSON-able description: class name and parameters (None if not savable)."""
    name = type(prior).__name__
    params = SAVABLE.get(name)
    if params is None:
        return {"class": name, "params": None}
    out = {}
    for p in params:
        v = np.asarray(getattr(prior, p), float)
        out[p] = v.tolist()
    return {"class": name, "params": out}


def prior_from_config(cfg: dict):
    """Rebuild a prior saved by :func:`prior_config` (only :data:`SAVABLE` classes)."""
    import jax.numpy as jnp
    import numpyro.distributions as dist

    if not isinstance(cfg, dict):
        raise ValueError("w_prior: expected a dict with 'class' and 'params'")
    name, params = cfg.get("class"), cfg.get("params")
    if name not in SAVABLE or not isinstance(params, dict) or set(params) != set(
        SAVABLE[name]
    ):
        raise ValueError(
            f"w_prior: the saved prior {name!r} cannot be rebuilt from the file; pass "
            "w=... to load()"
        )
    values = {}
    for k, v in params.items():
        arr = np.asarray(v, float)
        if arr.ndim > 1 or not np.all(np.isfinite(arr)):
            raise ValueError(f"w_prior: parameter {k} must be finite, of shape () or (L,)")
        values[k] = jnp.asarray(arr)
    try:
        return getattr(dist, name)(**values)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"w_prior: invalid parameters for {name}: {exc}") from None
