"""The prior on the dependency weights w: a NumPyro distribution, checked and stored.

A prior is any ``numpyro.distributions.Distribution`` with a scalar event, a
continuous support on the real line (the reals or an interval) and batch shape ``()``
(one prior for every position) or ``(L,)``. Saved policies store it as its class name
and parameters; only the classes in :data:`SAVABLE` are rebuilt from a file (looked up
by name here, never imported from the file's text).
"""

from __future__ import annotations

import functools

import jax
import numpy as np

from bayesrank._validate import is_integer
from bayesrank.posteriors.positive_quantiles import (
    finite_range,
    on_positive_axis,
    positive_range,
)

__all__ = ["SAVABLE", "chain_start", "refuse_bad_parameters", "refuse_bad_w_batch", "valid_w_prior",
           "is_distribution", "prior_box", "prior_config", "prior_from_config",
           "prior_quantiles", "prior_range"]

#: Distributions a saved policy can rebuild: class name -> constructor parameters.
#: Truncations (``TruncatedNormal(loc, scale, low=1)``, ``TruncatedDistribution`` of a
#: Cauchy, Laplace, ...) and ``.expand([L])`` of these are rebuilt too (see
#: :func:`prior_config`); a policy with any other prior refuses to be saved.
SAVABLE = {
    "Normal": ("loc", "scale"),
    "Laplace": ("loc", "scale"),
    "Cauchy": ("loc", "scale"),
    "Logistic": ("loc", "scale"),
    "SoftLaplace": ("loc", "scale"),
    "Gumbel": ("loc", "scale"),
    "StudentT": ("df", "loc", "scale"),
    "AsymmetricLaplace": ("loc", "scale", "asymmetry"),
    "Uniform": ("low", "high"),
    "LogUniform": ("low", "high"),
    "HalfNormal": ("scale",),
    "HalfCauchy": ("scale",),
    "Exponential": ("rate",),
    "Gamma": ("concentration", "rate"),
    "InverseGamma": ("concentration", "rate"),
    "Chi2": ("df",),
    "LogNormal": ("loc", "scale"),
    "Weibull": ("scale", "concentration"),
    "Beta": ("concentration1", "concentration0"),
    "Kumaraswamy": ("concentration1", "concentration0"),
    "Pareto": ("scale", "alpha"),
    # read only (written as a TruncatedDistribution of a Normal); low/high may be null
    "TruncatedNormal": ("loc", "scale", "low", "high"),
}

#: The truncated classes NumPyro builds, written as one "TruncatedDistribution".
_TRUNCATED = ("LeftTruncatedDistribution", "RightTruncatedDistribution",
              "TwoSidedTruncatedDistribution")
#: Nesting a file may hold (a truncation inside an expansion).
_MAX_DEPTH = 3


def is_distribution(obj) -> bool:
    """Whether obj is a NumPyro distribution (without importing NumPyro for others)."""
    if not type(obj).__module__.startswith("numpyro"):
        return False
    from numpyro.distributions import Distribution

    return isinstance(obj, Distribution)


def valid_w_prior(prior, L: int | None):
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
    refuse_bad_w_batch(prior, L)
    refuse_bad_parameters(prior)
    _refuse_unbounded(prior)
    return prior


def refuse_bad_w_batch(prior, L: int | None) -> None:
    """The prior's batch shape must be () or (L,) (raises ValueError naming w)."""
    batch = tuple(prior.batch_shape)
    if not (batch == () or (len(batch) == 1 and (L is None or batch[0] == L))):
        want = "() or (L,)" if L is None else f"() or (L,) = ({L},)"
        raise ValueError(f"w: the prior's batch shape must be {want}, got {batch}")


def refuse_bad_parameters(prior) -> None:
    """Every parameter finite and inside its constraint (NaN loc, a negative scale,
    ``Uniform(2, 1)``), also for priors built with ``validate_args=False``, and for
    the base of a truncated or expanded distribution."""
    import jax

    with jax.ensure_compile_time_eval():  # the prior is a constant, also under jit
        inside = _programs()["inside"](prior)
    for name in prior.arg_constraints:
        if not hasattr(prior, name):
            continue
        v = np.asarray(getattr(prior, name), dtype=float)
        if not np.all(np.isfinite(v)):
            raise ValueError(f"w: the prior's {name} must be finite, got {v.tolist()}")
        if name in inside and not bool(inside[name]):
            c = prior.arg_constraints[name]
            raise ValueError(f"w: the prior's {name} must satisfy {c}, got {v.tolist()}")
    base = getattr(prior, "base_dist", None)
    if base is not None:
        refuse_bad_parameters(base)
    lo = getattr(prior.support, "lower_bound", None)
    hi = getattr(prior.support, "upper_bound", None)
    if lo is not None and hi is not None and np.any(np.asarray(lo) >= np.asarray(hi)):
        raise ValueError(
            f"w: the prior's support is empty (lower bound {np.asarray(lo).tolist()} >= "
            f"upper bound {np.asarray(hi).tolist()})"
        )


@functools.cache
def _programs() -> dict:
    """The prior's numbers as two jitted programs of the distribution (a pytree:
    its parameters traced, its class static), compiled once per class (and found
    in the persistent cache by a new process) instead of dozens of op-by-op calls:
    ``inside``: for each parameter with a constraint, whether all its values
    satisfy it; ``quantiles``: the 1e-6, 0.5 and 1 - 1e-6 quantiles."""
    import jax
    import jax.numpy as jnp
    from numpyro.distributions import constraints

    dependent = type(constraints.dependent)

    def inside(prior):
        return {name: jnp.all(c(jnp.asarray(getattr(prior, name), float)))
                for name, c in prior.arg_constraints.items()
                if hasattr(prior, name) and not isinstance(c, dependent)}

    def quantiles(prior, q):  # q an argument: traced, never evaluated op by op
        return tuple(prior.icdf(q[i]) for i in range(q.shape[0]))

    return {"inside": jax.jit(inside), "quantiles": jax.jit(quantiles)}


def prior_quantiles(prior):
    """``(lo, median, hi)``: the prior's 1e-6, 0.5 and 1 - 1e-6 quantiles as NumPy
    arrays of its batch shape, or None where its ``icdf`` is not available (an
    expansion, StudentT without tensorflow_probability)."""
    import jax

    with jax.ensure_compile_time_eval():  # the prior is a constant, also under jit
        try:
            out = _programs()["quantiles"](prior, np.array([1e-6, 0.5, 1 - 1e-6]))
        except (NotImplementedError, AttributeError, ImportError):  # StudentT: TFP
            return None
    return tuple(np.broadcast_to(np.asarray(q, float), prior.batch_shape) for q in out)


#: The tail mass a range leaves out on each side (its quantiles TAIL and 1 - TAIL).
_TAIL = 1e-6


def prior_range(prior):
    """``(lo, hi)`` NumPy arrays (the prior's batch shape): a range holding all but a
    negligible part of the prior, its 1e-6 and 1 - 1e-6 quantiles.

    The quantiles come from the prior's ``icdf``; a prior on (part of) [0, inf)
    without a usable ``icdf`` takes them from a numerical inverse of its ``cdf``,
    else from draws (:func:`~bayesrank.posteriors.positive_quantiles.positive_range`);
    any other prior without an ``icdf``
    takes its mean +- 10 sd. An expanded prior takes its base's range. NaN where
    none of these exists.

    Example:
        >>> import numpyro.distributions as dist
        >>> lo, hi = prior_range(dist.InverseGamma(1.0, 1.0))  # no icdf: by its cdf
        >>> f"{float(lo):.2g} {float(hi):.2g}"                 # scipy: invgamma(1)
        '0.072 1e+06'
    """
    q = prior_quantiles(prior)
    positive = on_positive_axis(prior)
    if q is not None and (not positive or finite_range(q[0], q[2])):
        return q[0], q[2]
    if type(prior).__name__ == "ExpandedDistribution":
        lo, hi = prior_range(prior.base_dist)
        return (np.broadcast_to(lo, prior.batch_shape),
                np.broadcast_to(hi, prior.batch_shape))
    if positive:
        found = positive_range(prior, _TAIL)
        if found is not None:
            return found
        nan = np.full(prior.batch_shape, np.nan)
        return nan, nan
    import jax

    with jax.ensure_compile_time_eval():  # the prior is a constant, also under jit
        try:
            mean = np.asarray(prior.mean, float)
            sd = np.sqrt(np.asarray(prior.variance, float))
        except (NotImplementedError, AttributeError, ZeroDivisionError):
            mean = sd = np.asarray(np.nan)
    return (np.broadcast_to(mean - 10 * sd, prior.batch_shape),
            np.broadcast_to(mean + 10 * sd, prior.batch_shape))


def _refuse_unbounded(prior) -> None:
    """The grid needs a finite range holding the prior (:func:`prior_range`)."""
    lo, hi = prior_range(prior)
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(hi > lo)):
        raise ValueError(
            f"w: cannot find a finite range holding the prior {type(prior).__name__} "
            "(neither finite quantiles nor a finite mean and variance; a StudentT with "
            "df <= 2 needs tensorflow_probability for its quantiles: use Cauchy for df = 1)"
        )


def prior_config(prior) -> dict:
    """JSON-able description of a prior: ``{"class", "params"}`` (plus ``"base"`` for
    a truncation or an expansion), which :func:`prior_from_config` rebuilds (the
    parameters as float64 values: the same prior in the state's precision).

    Savable: the classes in :data:`SAVABLE` (exactly NumPyro's class, not a subclass),
    their truncations (``TruncatedNormal(0, 1, low=1)``, written as
    ``{"class": "TruncatedDistribution", "params": {"low", "high"}, "base": ...}``)
    and expansions (``Normal(0, 5).expand([L])``: ``"ExpandedDistribution"`` with
    ``batch_shape``). Any other prior gives ``"params": None`` and ``"why"``, the
    reason it cannot be rebuilt (``save`` refuses it).
    """
    import numpyro.distributions as dist

    name = type(prior).__name__
    if type(prior) is not getattr(dist, name, None):
        return {"class": name, "params": None,
                "why": f"{type(prior).__module__}.{name} is not a NumPyro distribution "
                       "class bayesrank rebuilds"}
    base = getattr(prior, "base_dist", None)
    if name in _TRUNCATED or name == "ExpandedDistribution":
        inner = prior_config(base)
        if inner["params"] is None:
            return {"class": name, "params": None, "why": inner["why"]}
        if name == "ExpandedDistribution":
            params = {"batch_shape": [int(n) for n in prior.batch_shape]}
            return {"class": name, "params": params, "base": inner}
        params = {b: None if getattr(prior, b, None) is None
                  else np.asarray(getattr(prior, b), float).tolist()
                  for b in ("low", "high")}
        return {"class": "TruncatedDistribution", "params": params, "base": inner}
    names = SAVABLE.get(name)
    if names is None or name == "TruncatedNormal":
        return {"class": name, "params": None,
                "why": f"{name} is not among the priors a file can rebuild "
                       f"({', '.join(sorted(SAVABLE))}, their truncations and "
                       ".expand([L]))"}
    return {"class": name,
            "params": {p: np.asarray(getattr(prior, p), float).tolist() for p in names}}


def _param(name: str, key: str, v, nullable: bool = False):
    """A saved parameter: finite, of shape () or (L,) (None where ``nullable``)."""
    import jax.numpy as jnp

    if v is None and nullable:
        return None
    try:
        arr = np.asarray(v, float)
    except (TypeError, ValueError):
        arr = np.asarray(np.nan)
    if arr.ndim > 1 or not np.all(np.isfinite(arr)):
        raise ValueError(
            f"w_prior: {name} parameter {key} must be finite, of shape () or (L,), "
            f"got {v!r}"
        )
    return jnp.asarray(arr)


def prior_from_config(cfg, _depth: int = 0):
    """Rebuild a prior saved by :func:`prior_config` (only the :data:`SAVABLE`
    classes, their truncations and expansions: looked up here by name, nothing the
    file names is imported).

    ``cfg`` may also be a NumPyro distribution, returned as is: the prior given to
    ``load(path, w=prior)``, which replaces the saved one (a file's JSON never holds
    one).
    """
    import numpyro.distributions as dist

    if is_distribution(cfg):
        return cfg
    if not isinstance(cfg, dict):  # a file's content: a bad file is a ValueError
        raise ValueError("w_prior: expected a dict with 'class' and 'params'")  # noqa: TRY004
    if _depth >= _MAX_DEPTH:
        raise ValueError(f"w_prior: nested deeper than {_MAX_DEPTH} levels")
    name, params = cfg.get("class"), cfg.get("params")
    if name == "ExpandedDistribution" and isinstance(params, dict) \
            and set(params) == {"batch_shape"}:
        shape = params["batch_shape"]
        if not (isinstance(shape, list) and len(shape) <= 1 and all(
                is_integer(n) and 1 <= n <= 2**20
                for n in shape)):
            raise ValueError(
                f"w_prior: batch_shape must be [] or [L] with L >= 1, got {shape!r}"
            )
        base = prior_from_config(cfg.get("base"), _depth + 1)
        try:
            return base.expand(shape)
        except (TypeError, ValueError, AssertionError) as exc:
            raise ValueError(f"w_prior: cannot expand the prior to {shape}: {exc}") \
                from None
    if name == "TruncatedDistribution" and isinstance(params, dict) \
            and set(params) == {"low", "high"}:
        base = prior_from_config(cfg.get("base"), _depth + 1)
        bounds = {k: _param(name, k, v, nullable=True) for k, v in params.items()}
        try:
            return dist.TruncatedDistribution(base, **bounds)
        except (TypeError, ValueError, AssertionError) as exc:
            raise ValueError(f"w_prior: invalid truncation of the prior: {exc}") from None
    if name not in SAVABLE or not isinstance(params, dict) or set(params) != set(
        SAVABLE[name]
    ):
        raise ValueError(
            f"w_prior: the saved prior {name!r} cannot be rebuilt from the file; pass "
            "w=... to load()"
        )
    values = {k: _param(name, k, v, nullable=name == "TruncatedNormal" and k in
                        ("low", "high")) for k, v in params.items()}
    try:
        return getattr(dist, name)(**values)
    except (TypeError, ValueError, AssertionError) as exc:
        raise ValueError(f"w_prior: invalid parameters for {name}: {exc}") from None


def prior_box(prior, L: int, quantiles=None):
    """(lo (L,), hi (L,)) float64 NumPy arrays (no JAX operation): a range holding all
    but a negligible part of the prior (:func:`prior_range`, or ``quantiles`` from
    :func:`prior_quantiles` when the caller has them); (-100, 100) where it is not
    finite."""
    if quantiles is None:
        lo, hi = prior_range(prior)
    else:
        lo, hi = quantiles[0], quantiles[2]
    lo, hi = np.broadcast_to(lo, (L,)), np.broadcast_to(hi, (L,))
    ok = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
    return np.where(ok, lo, -100.0), np.where(ok, hi, 100.0)


def chain_start(prior, L: int):
    """(w (L,), width (L,)) float64: a chain's starting w in the prior's support (its
    median, else its mean, else the middle of :func:`prior_box`) and a slice width (a
    tenth of the box)."""
    q = prior_quantiles(prior)
    lo, hi = prior_box(prior, L, q)
    if q is not None:
        med = q[1]
    else:  # an expansion, or StudentT's icdf without TFP: the mean
        with jax.ensure_compile_time_eval():
            try:
                med = np.asarray(prior.mean, float)
            except (NotImplementedError, AttributeError):
                med = np.asarray(np.nan)
    med = np.broadcast_to(med, (L,))
    med = np.where(np.isfinite(med), med, 0.5 * (lo + hi))
    return med, (hi - lo) / 10.0
