"""The hyperprior on the signal-to-noise ratio g of :class:`~bayesrank.posteriors.scaled.LearntScaleLinear`, its grid, and the closed-form terms on it.

g is integrated on a fixed grid of :data:`GRID` nodes, uniform in log g over the
hyperprior's :data:`TAIL` to 1 - :data:`TAIL` quantiles (:func:`_hyper_grid`);
:func:`grid_terms` gives, from one position's running sums, the eigendecomposition
and ``log p(y | g)`` at every node (formulas: :mod:`bayesrank.posteriors.scaled`).
:func:`valid_hyperprior` is shared with the learnt-scale Laplace and NUTS models.

Example:
    >>> import numpy as np
    >>> from bayesrank.posteriors.scale_grid import GRID, _hyper_grid
    >>> log_g, logw = _hyper_grid(None)                 # HalfCauchy(1), closed form
    >>> log_g.shape == (GRID,), bool(np.isclose(np.logaddexp.reduce(logw), 0.0))
    (True, True)
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank.posteriors.w_prior import _refuse_bad_parameters, prior_range

__all__ = ["GRID", "TAIL", "valid_hyperprior", "default_hyperprior", "grid_terms"]

#: Grid nodes of log g (uniform in log g over the hyperprior's central 1 - 2e-6 mass).
GRID = 160
#: Quantiles of the hyperprior that bound the grid.
TAIL = 1e-6



def default_hyperprior():
    """The default hyperprior of the signal-to-noise ratio g: ``HalfCauchy(1)``
    (Polson & Scott 2012; the choice is measured in docs/design-choices.md)."""
    import numpyro.distributions as dist

    return dist.HalfCauchy(1.0)


def _default_grid() -> tuple[np.ndarray, np.ndarray]:
    """Grid and log weights of HalfCauchy(1) in closed form (no NumPyro call)."""
    lo, hi = math.tan(0.5 * math.pi * TAIL), math.tan(0.5 * math.pi * (1 - TAIL))
    log_g = np.linspace(math.log(lo), math.log(hi), GRID)
    g = np.exp(log_g)
    log_pdf = math.log(2 / math.pi) - np.log1p(g * g)
    return log_g, log_pdf


def _hyper_grid(prior) -> tuple[np.ndarray, np.ndarray]:
    """``(log_g (G,), log weight (G,))`` of a positive scalar hyperprior: nodes
    uniform in log g; weight = density x g (the Jacobian of log g), normalised."""
    if prior is None:
        log_g, log_pdf = _default_grid()
    else:
        lo, hi = (float(np.asarray(a).reshape(-1)[0]) for a in prior_range(prior))
        lo = max(lo, 1e-12 * max(hi, 1.0))
        log_g = np.linspace(math.log(lo), math.log(hi), GRID)
        with jax.ensure_compile_time_eval():
            log_pdf = np.asarray(prior.log_prob(jnp.asarray(np.exp(log_g))), float)
    logw = log_pdf + log_g
    logw = np.where(np.isfinite(logw), logw, -np.inf)
    return log_g, logw - np.logaddexp.reduce(logw)


def valid_hyperprior(prior, name: str):
    """A scalar NumPyro distribution on (0, inf) with finite quantiles, or None."""
    if prior is None:
        return None
    from numpyro.distributions import constraints

    if tuple(prior.batch_shape) != () or prior.event_shape != () or getattr(
            prior.support, "is_discrete", False):
        raise ValueError(
            f"{name}: expected a continuous scalar hyperprior (batch shape ()), got "
            f"{type(prior).__name__} with batch shape {tuple(prior.batch_shape)}"
        )
    positive = isinstance(prior.support, (type(constraints.positive),)) or (
        float(np.min(np.asarray(getattr(prior.support, "lower_bound", -1.0)))) >= 0.0)
    if not positive:
        raise ValueError(
            f"{name}: the hyperprior must live on (0, inf), got {type(prior).__name__} "
            f"with support {prior.support}"
        )
    try:
        _refuse_bad_parameters(prior)
    except ValueError as exc:
        raise ValueError(str(exc).replace("w:", f"{name}:", 1)) from None
    lo, hi = prior_range(prior)
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(hi > 0)):
        raise ValueError(
            f"{name}: cannot find a finite range holding the hyperprior "
            f"{type(prior).__name__}"
        )
    return prior


# ----------------------------------------------------------------- grid maths
def grid_terms(S, u, q, n, m0, log_g, learn_noise: bool, sf=1.0, xp=jnp, A=None):
    """Everything one position's draw, mean and evidence need, from its sums.

    Args:
        S (p, p), u (p,), q (), n (): the running sums; m0 (p,) prior mean;
        log_g (G,) grid; learn_noise: Jeffreys noise (True) or known noise sf;
        xp: ``jax.numpy`` (jittable) or ``numpy`` (host-side summaries);
        A: None, or (p, p) the prior's shape (theta = m0 + A z, z ~ N(0, g^2 s^2 I)):
        the sums are whitened by it.

    Returns:
        U (p, p), D (p,) eigenpairs of S; z (p,) = U^T u (centred, over sf);
        denom (G, p) = D + 1/g^2; beta (G,); loglik (G,) log p(y | g) up to a
        constant in g.
    """
    Sm = S @ m0
    uc = (u - Sm) / sf
    qc = (q - 2.0 * xp.dot(m0, u) + xp.dot(m0, Sm)) / (sf * sf)
    if A is not None:
        S, uc = A.T @ S @ A, A.T @ uc
    if xp is np:
        D, U = np.linalg.eigh(S)
    else:  # symmetrised here: eigh's own symmetrisation is a slower path (86 vs 35 us
        # for four 10 x 10 matrices on CPU, benchmarks/learnt_scale.py)
        D, U = jnp.linalg.eigh(0.5 * (S + S.T), symmetrize_input=False)
    D = xp.maximum(D, 0.0)
    z = U.T @ uc
    g2 = xp.exp(2.0 * log_g)
    denom = D[None, :] + 1.0 / g2[:, None]
    beta = qc - xp.sum(z * z / denom, axis=-1)
    tiny = xp.finfo(S.dtype).tiny
    beta = xp.maximum(beta, 1e-6 * xp.maximum(qc, tiny) + tiny)
    half_logdet = 0.5 * xp.sum(xp.log1p(g2[:, None] * D[None, :]), axis=-1)
    if learn_noise:
        loglik = -half_logdet - 0.5 * n * xp.log(beta)
    else:
        loglik = -half_logdet - 0.5 * beta
    return U, D, z, denom, beta, loglik
