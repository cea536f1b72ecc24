"""The hyperprior of a scale (the signal-to-noise ratio g of the learnt-scale
Gaussian model, the prior scale tau of the learnt-scale Laplace and NUTS models), the
grid it is integrated on, and draws from a posterior on that grid.

Shared by the three families: :data:`GRID` nodes uniform in log g over the
hyperprior's :data:`TAIL` to 1 - :data:`TAIL` quantiles (:func:`hyper_grid`);
:func:`valid_hyperprior` refuses what cannot be gridded; :func:`grid_index`,
:func:`grid_draw` and :func:`cell_spread` draw a node (and a place in its cell) from
log weights on the grid.

Example:
    >>> import numpy as np
    >>> from bayesrank.posteriors.hyperprior import GRID, hyper_grid
    >>> log_g, logw = hyper_grid(None)                  # HalfCauchy(1), closed form
    >>> log_g.shape == (GRID,), bool(np.isclose(np.logaddexp.reduce(logw), 0.0))
    (True, True)
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank.posteriors.positive_quantiles import on_positive_axis
from bayesrank.posteriors.w_prior import prior_range, refuse_bad_parameters

__all__ = ["DECADES", "GRID", "TAIL", "cell_spread", "default_grid", "default_hyperprior",
           "grid_draw", "grid_draw_at", "grid_index", "hyper_grid", "inverse_cdf",
           "log_density",
           "valid_hyperprior"]

#: Grid nodes of log g (uniform in log g over the hyperprior's central 1 - 2e-6 mass).
GRID = 160
#: Quantiles of the hyperprior that bound the grid.
TAIL = 1e-6
#: The most decades of g the grid spans: a TAIL quantile further below the top one
#: (Gamma(0.01): 1e-600) is raised to it (such g act as 0: theta at its prior mean).
DECADES = 24


def default_hyperprior():
    """The default hyperprior of the signal-to-noise ratio g: ``HalfCauchy(1)``
    (Polson & Scott 2012; the choice is measured in docs/design-choices.md)."""
    import numpyro.distributions as dist

    return dist.HalfCauchy(1.0)


def default_grid() -> tuple[np.ndarray, np.ndarray]:
    """Grid and log weights of HalfCauchy(1) in closed form (no NumPyro call)."""
    lo, hi = math.tan(0.5 * math.pi * TAIL), math.tan(0.5 * math.pi * (1 - TAIL))
    log_g = np.linspace(math.log(lo), math.log(hi), GRID)
    g = np.exp(log_g)
    log_pdf = math.log(2 / math.pi) - np.log1p(g * g)
    return log_g, log_pdf


def hyper_grid(prior) -> tuple[np.ndarray, np.ndarray]:
    """``(log_g (G,), log weight (G,))`` of a positive scalar hyperprior: nodes
    uniform in log g between its :data:`TAIL` and 1 - :data:`TAIL` quantiles
    (:func:`~bayesrank.posteriors.w_prior.prior_range`: icdf, else the cdf's
    numerical inverse, else draws; at most :data:`DECADES` decades); weight =
    density x g (the Jacobian of log g), normalised. None: HalfCauchy(1) in closed
    form."""
    if prior is None:
        log_g, log_pdf = default_grid()
    else:
        lo, hi = (float(np.asarray(a).reshape(-1)[0]) for a in prior_range(prior))
        lo = max(lo, hi * 10.0**-DECADES)  # g far below the top act as 0
        log_g = np.linspace(math.log(lo), math.log(hi), GRID)
        with jax.ensure_compile_time_eval():
            log_pdf = np.asarray(prior.log_prob(jnp.asarray(np.exp(log_g))), float)
    logw = log_pdf + log_g
    logw = np.where(np.isfinite(logw), logw, -np.inf)
    return log_g, logw - np.logaddexp.reduce(logw)


def valid_hyperprior(prior, name: str):
    """Return ``prior`` if it is a usable hyperprior of a scale, else raise.

    Usable: a continuous scalar NumPyro distribution (batch and event shape ``()``)
    whose support is (part of) (0, inf), with finite parameters, and whose
    :data:`TAIL` and 1 - :data:`TAIL` quantiles (the grid's range) can be found: by
    its ``icdf``, else by a numerical inverse of its ``cdf``, else from draws
    (:func:`~bayesrank.posteriors.w_prior.prior_range`).

    Args:
        prior: None (returned as is: the default hyperprior) or a NumPyro
            distribution.
        name: the argument's name in messages (``"prior_scale"``).

    Raises:
        ValueError: a batch or event shape, a discrete support, a support reaching
            below 0, bad parameters, or no way to find the quantiles (the message
            names ``name`` and what is needed).

    Example:
        >>> import numpyro.distributions as dist
        >>> valid_hyperprior(dist.Normal(0.0, 1.0), "prior_scale")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: prior_scale: the hyperprior must live on (0, inf), got Normal with ...
    """
    if prior is None:
        return None
    if tuple(prior.batch_shape) != () or prior.event_shape != () or getattr(
            prior.support, "is_discrete", False):
        raise ValueError(
            f"{name}: expected a continuous scalar hyperprior (batch shape ()), got "
            f"{type(prior).__name__} with batch shape {tuple(prior.batch_shape)}"
        )
    if not on_positive_axis(prior):
        raise ValueError(
            f"{name}: the hyperprior must live on (0, inf), got {type(prior).__name__} "
            f"with support {prior.support}"
        )
    try:
        refuse_bad_parameters(prior)
    except ValueError as exc:
        raise ValueError(str(exc).replace("w:", f"{name}:", 1)) from None
    lo, hi = prior_range(prior)
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(hi > 0)
            and np.all(hi > lo)):
        raise ValueError(
            f"{name}: cannot find the {TAIL:g} and 1 - {TAIL:g} quantiles of the "
            f"hyperprior {type(prior).__name__} (the range of its grid): it needs an "
            "icdf, a cdf or a sample method that gives finite values in (0, inf)"
        )
    return prior


def inverse_cdf(u, logw):
    """Uniforms ``u (*shape, *logw.shape[:-1])`` on [0, 1] located in the running
    sum of the weights ``logw (..., G)`` (normalised or not): the node index k and
    the uniform's position within k's mass, itself Uniform(0, 1) given k."""
    cdf = jnp.cumsum(jnp.exp(logw), axis=-1)
    u = u * cdf[..., -1]
    k = jnp.minimum(jnp.sum(cdf <= u[..., None], axis=-1), logw.shape[-1] - 1)
    cdf = jnp.broadcast_to(cdf, (*k.shape, cdf.shape[-1]))
    upper = jnp.take_along_axis(cdf, k[..., None], -1)[..., 0]
    lower = jnp.where(k > 0, jnp.take_along_axis(cdf, jnp.maximum(k - 1, 0)[..., None],
                                                 -1)[..., 0], 0.0)
    mass = upper - lower
    return k, jnp.clip((u - lower) / jnp.where(mass > 0, mass, 1.0), 0.0, 1.0)


def grid_index(key, logw, shape=()):
    """Node indices drawn from normalised log weights ``logw (..., G)``: an array of
    shape ``(*shape, *logw.shape[:-1])``, by inverting the weights' running sum at
    one uniform per draw (exact, like ``jax.random.categorical``'s Gumbel trick,
    which draws G variates per index)."""
    return inverse_cdf(_uniform(key, logw, shape), logw)[0]


def grid_draw(key, log_g, logw, shape=()):
    """log g drawn from the grid posterior ``logw (..., G)`` over the uniform nodes
    ``log_g (G,)``, spread uniformly over its node's cell (width the node spacing):
    a draw of the piecewise-constant density in log g whose cell masses are the
    grid's midpoint-rule weights. The truth is continuous; a draw confined to the
    nodes ranks against it as a step function of its cell, which simulation-based
    calibration detects (GaussianLinear-learnt's log g: p = 0.0014 at 1,000
    simulations on the nodes). One uniform per draw gives both the node and the
    place in its cell (:func:`grid_index`'s, located within the node's mass). A
    one-node grid (a fixed scale) has no spread. Shape ``(*shape, *logw.shape[:-1])``."""
    return grid_draw_at(_uniform(key, logw, shape), log_g, logw)


def grid_draw_at(u, log_g, logw):
    """:func:`grid_draw` from given uniforms ``u (*shape, *logw.shape[:-1])`` on
    [0, 1] (a caller that draws all its random numbers in one call)."""
    return cell_spread(log_g, *inverse_cdf(u, logw))


def _uniform(key, logw, shape):
    return jax.random.uniform(key, (*shape, *logw.shape[:-1]), logw.dtype)


def cell_spread(nodes, k, frac):
    """``nodes[k]`` moved to the place ``frac`` in [0, 1] of its cell (width the
    spacing of the uniform ``nodes``, centred on the node); a one-node grid has no
    spread. Works on NumPy and JAX arrays alike."""
    if nodes.shape[-1] < 2:
        return nodes[k]
    return nodes[k] + (nodes[1] - nodes[0]) * (frac - 0.5)


def log_density(prior, t: np.ndarray) -> np.ndarray:
    """Log density of a scale's hyperprior at ``t`` (host side): ``prior`` a NumPyro
    distribution, or None for HalfCauchy(1) in closed form (no NumPyro call)."""
    if prior is None:
        return math.log(2 / math.pi) - np.log1p(t * t)
    with jax.ensure_compile_time_eval():
        return np.asarray(prior.log_prob(jnp.asarray(t)), float)
