"""Quantiles of a distribution on (part of) [0, inf) without an ``icdf``: a numerical
inverse of its ``cdf`` (bisection in log x, float64 on the host), else Monte Carlo
quantiles from draws with a fixed seed.
:func:`~bayesrank.posteriors.w_prior.prior_range` asks here when the ``icdf`` fails (InverseGamma, Gamma, Chi2 and Weibull have none
without tensorflow_probability; a FoldedDistribution has no cdf either): the range of
a learnt scale's grid (:mod:`~bayesrank.posteriors.conjugate.scale_grid`) and of a positive prior on w.

Example:
    >>> import numpyro.distributions as dist
    >>> lo, hi = positive_range(dist.InverseGamma(1.0, 1.0), 1e-6)
    >>> f"{float(lo):.2g} {float(hi):.2g}"                 # scipy: invgamma(1)
    '0.072 1e+06'
"""

from __future__ import annotations

import functools

import jax
import numpy as np

__all__ = ["finite_range", "on_positive_axis", "positive_range", "quantiles_by_cdf",
           "quantiles_by_draws"]

#: Bisection steps of the numerical inverse of a cdf (log x halves its bracket each:
#: a float64 bracket of width 1,420 narrows to 1e-15 in 60 steps).
_BISECTIONS = 64
#: Draws behind Monte Carlo tail quantiles (a prior with neither icdf nor cdf): 2^20,
#: about 1e6, so the 1e-6 quantile is about the smallest draw; fixed seed.
_DRAWS, _SEED = 2**20, 0


@functools.cache
def _programs() -> dict:
    """Jitted programs of the distribution (a pytree: its parameters traced, its
    class static), compiled once per class: ``cdf`` at x (n, *batch) (one call per
    bisection step) and ``sample``: n draws (n, *batch) (n static)."""

    def cdf(prior, x):
        return prior.cdf(x)

    def sample(prior, key, n):
        return prior.sample(key, (n,))

    return {"cdf": jax.jit(cdf), "sample": jax.jit(sample, static_argnums=2)}


def finite_range(lo, hi) -> bool:
    """Whether lo and hi are finite everywhere and hi > lo."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    return bool(np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(hi > lo))


def _scalar_support(prior):
    """The prior's support, unwrapped from ``independent(c, 0)`` (ImproperUniform)."""
    support = prior.support
    while getattr(support, "reinterpreted_batch_ndims", None) == 0:
        support = support.base_constraint
    return support


def on_positive_axis(prior) -> bool:
    """Whether the prior's support is (part of) [0, inf): its lower bound is >= 0
    (``positive``, ``greater_than(1)``, ``interval(0.1, 10)``)."""
    support = _scalar_support(prior)
    lower = getattr(support, "lower_bound", None)
    if lower is None or getattr(support, "is_discrete", False):
        return False
    return bool(np.all(np.asarray(lower, float) >= 0))


def _support_bracket(prior, batch: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(log lo, log hi) float64 arrays of shape ``batch``: the support's bounds in
    log space, clipped to the positive numbers the JAX float type can hold."""
    import jax.numpy as jnp

    info = np.finfo(jnp.result_type(float))
    support = _scalar_support(prior)
    lower = np.asarray(support.lower_bound, float)
    upper = np.asarray(getattr(support, "upper_bound", np.inf), float)
    lo = np.log(np.maximum(lower, float(info.tiny))) + 1e-9  # strictly inside the
    hi = np.log(np.minimum(upper, float(info.max) / 2)) - 1e-9  # support
    return np.broadcast_to(lo, batch).copy(), np.broadcast_to(hi, batch).copy()


def quantiles_by_cdf(prior, q: np.ndarray):
    """Quantiles (len(q), *batch) by bisection of ``cdf`` in log x (float64 on the
    host; one jitted cdf call per step), or None without a usable cdf (none, NaN,
    outside [0, 1], or not reaching q inside the support)."""
    batch = tuple(prior.batch_shape)
    lo, hi = _support_bracket(prior, batch)
    shape = (len(q),) + batch
    a, b = np.broadcast_to(lo, shape).copy(), np.broadcast_to(hi, shape).copy()
    target = q.reshape((-1,) + (1,) * len(batch))
    cdf = _programs()["cdf"]

    def at(log_x):
        with jax.ensure_compile_time_eval():
            return np.asarray(cdf(prior, np.exp(log_x)), float)

    try:
        ends = at(np.stack([a, b]))
    except (NotImplementedError, AttributeError, ImportError, TypeError):
        return None
    if not (np.all(np.isfinite(ends)) and np.all(ends >= 0) and np.all(ends <= 1)
            and np.all(ends[0] <= target) and np.all(ends[1] >= target)):
        return None
    for _ in range(_BISECTIONS):
        mid = 0.5 * (a + b)
        c = at(mid)
        if not np.all(np.isfinite(c)):
            return None
        below = c < target
        a, b = np.where(below, mid, a), np.where(below, b, mid)
    return np.exp(0.5 * (a + b))


def quantiles_by_draws(prior, q: np.ndarray):
    """Monte Carlo quantiles (len(q), *batch) from :data:`_DRAWS` draws per batch
    member (seed :data:`_SEED`), or None where the prior cannot be sampled or gives
    non-finite draws. The 1e-6 quantile of 2^20 draws is about the smallest one: the
    mass it leaves out is right within a factor of about 20 (a range holding the
    prior, not an exact quantile)."""
    with jax.ensure_compile_time_eval():
        try:
            x = np.asarray(_programs()["sample"](prior, jax.random.PRNGKey(_SEED),
                                                 _DRAWS), float)
        except (NotImplementedError, AttributeError, ImportError, TypeError):
            return None
    if not np.all(np.isfinite(x)):
        return None
    return np.quantile(x, q, axis=0)


def positive_range(prior, tail: float):
    """``(lo, hi)`` (the prior's batch shape) of a prior on (part of) [0, inf)
    without a usable ``icdf``: its ``tail`` and ``1 - tail`` quantiles by a numerical
    inverse of its ``cdf`` (bisection in log x), else from draws with a fixed seed;
    None where neither gives a finite range inside [0, inf).

    Example:
        >>> import numpyro.distributions as dist
        >>> lo, hi = positive_range(dist.Gamma(0.3, 1.0), 1e-6)  # no icdf: its cdf
        >>> f"{float(lo):.2g} {float(hi):.2g}"                    # scipy: gamma(0.3)
        '7e-21 11'
    """
    probs = np.array([tail, 1.0 - tail])
    for method in (quantiles_by_cdf, quantiles_by_draws):
        found = method(prior, probs)
        if found is not None and finite_range(found[0], found[1]) \
                and np.all(found[0] >= 0):
            return found[0], found[1]
    return None
