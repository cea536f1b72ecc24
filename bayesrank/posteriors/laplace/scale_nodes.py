"""The nodes that integrate a Laplace GLM's learnt prior scale tau: a short grid in
the standardised coordinate of log tau's posterior, moved with it round by round (the
default of :class:`~bayesrank.posteriors.laplace.learnt_scale.LearntScaleLaplace`).

Per position, rho = log tau. The nodes sit at ``rho_j = m + s z_j`` (``Z``:
thirteen offsets from -3 to 3, 0.5 apart), m and s the mean and sd of rho's posterior after the last
round (moment-matched from the nodes' own weights: the mode tracked warm, one step a
round, as INLA integrates one hyperparameter on a short grid around its mode). Each
round:

1. **One exact fit**, at the centre ``lam_c = exp(-2 m)``: the fixed-scale model's
   warm-started Newton search over the buffer (its start the last centre's MAP moved
   to lam_c by one Newton step, its first Hessian the last one's plus the new row).
2. **The other nodes from it, without a pass over the buffer**: with ``HL`` the
   likelihood's Hessian at the centre's MAP (its factor minus ``lam_c I``), node j's
   MAP is one Newton step away, ``theta_j = theta_c + (HL + lam_j I)^-1 (lam_c -
   lam_j) theta_c`` (exact where the log-likelihood is quadratic), its Hessian
   ``HL + lam_j I``: one eigendecomposition of HL and thirteen p x p factorisations.
3. **The evidence**, one pass over the rows held for all nodes at once (``X theta_j``,
   a matrix product): ``log p(y | tau_j) ~ log lik(theta_j) - lam_j |theta_j|^2 / 2 -
   p rho_j - 1/2 log det H_j`` (exact log-likelihood at the node's point; log det H_j
   corrected to first order for the likelihood's curvature at theta_j rather than at
   the centre, ``sum_i (W_ij - W_ic) x_i^T H_j^-1 x_i``, in HL's eigenbasis: without
   it the nodes of a large tau are under-weighted), times the
   hyperprior's mass of the node's cell (cells between midpoints; the end cells reach
   0 and infinity, so no prior mass is lost).

The 24-node grid (``nodes="grid"``: every node its own Newton fit) stays as the
reference the tests hold this scheme to (docs/design-choices.md).

Example:
    >>> Z.shape, float(Z[0]), float(Z[-1])
    ((13,), -3.0, 3.0)
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank.posteriors.hyperprior import log_density
from bayesrank.posteriors.laplace.glm_fit import _block, link_derivatives, loglik
from bayesrank.posteriors.w_prior import prior_range

__all__ = ["SPREAD_MIN", "Z", "cell_log_mass", "centre_spread", "log_evidence",
           "node_fits", "node_loglik", "prior_table"]

#: Offsets of the nodes in sd of log tau's posterior.
Z = np.linspace(-3.0, 3.0, 13)
#: Smallest spread of the nodes in log tau (the posterior's sd stays above about
#: 1 / sqrt(2 p) however many rows arrive: tau is learnt from p coordinates).
SPREAD_MIN = 0.02
#: Points of the fine table of the hyperprior's CDF in log tau.
_FINE = 4001


def prior_table(prior):
    """``(rho (F,), cdf (F,))``: the hyperprior's CDF in log tau on a fine uniform
    table between its 1e-6 and 1 - 1e-6 quantiles (None: HalfCauchy(1)).

    Example:
        >>> rho, cdf = prior_table(None)
        >>> float(cdf[0]), float(cdf[-1])
        (0.0, 1.0)
    """
    if prior is None:
        lo, hi = math.tan(0.5 * math.pi * 1e-6), math.tan(0.5 * math.pi * (1 - 1e-6))
    else:
        lo, hi = (float(np.asarray(a).reshape(-1)[0]) for a in prior_range(prior))
        lo = max(lo, 1e-12 * max(hi, 1.0))
    fine = np.linspace(math.log(lo), math.log(hi), _FINE)
    dens = log_density(prior, np.exp(fine)) + fine  # density in log tau
    dens = np.where(np.isfinite(dens), dens, -np.inf)
    mass = np.exp(dens - np.max(dens))
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (mass[1:] + mass[:-1]))])
    return fine, cdf / cdf[-1]


def cell_log_mass(rho, table):
    """(..., J) log hyperprior mass of each node's cell (edges at the midpoints;
    the end cells reach 0 and infinity); ``rho`` (..., J) sorted nodes."""
    fine, cdf = (jnp.asarray(a, rho.dtype) for a in table)
    mid = 0.5 * (rho[..., 1:] + rho[..., :-1])
    edges = jnp.interp(mid, fine, cdf)
    zero = jnp.zeros(rho.shape[:-1] + (1,), rho.dtype)
    c = jnp.concatenate([zero, edges, zero + 1.0], -1)
    return jnp.log(jnp.maximum(jnp.diff(c, axis=-1), jnp.finfo(rho.dtype).tiny))


def centre_spread(rho, log_w, spread_max):
    """``(m (L,), s (L,))``: the mean and sd of log tau under the nodes' weights,
    each node's mass spread uniformly over its cell; s kept in [SPREAD_MIN,
    spread_max]."""
    w = jnp.exp(log_w)
    m = jnp.sum(w * rho, -1)
    h = rho[..., 1] - rho[..., 0]
    v = jnp.sum(w * (rho - m[..., None]) ** 2, -1) + h * h / 12.0
    return m, jnp.clip(jnp.sqrt(v), SPREAD_MIN, spread_max)


def node_fits(theta_c, chol_c, lam_c, lam):
    """Every node's MAP and Hessian factor from the centre's exact fit.

    Args:
        theta_c: (L, p) the centre's MAP; chol_c: (L, p, p) the factor of its
            Hessian ``HL + lam_c I``; lam_c: (L,) its ridge weight.
        lam: (L, J) the nodes' ridge weights.

    Returns:
        theta (L, J, p), chol (L, J, p, p): ``theta_c + (HL + lam_j I)^-1 (lam_c -
        lam_j) theta_c`` and the factor of ``HL + lam_j I``; and ``(U (L, p, p),
        D (L, p))``, HL's eigenvectors and eigenvalues.
    """
    p = theta_c.shape[-1]
    eye = jnp.eye(p, dtype=theta_c.dtype)
    H = chol_c @ jnp.swapaxes(chol_c, -1, -2)
    HL = H - lam_c[:, None, None] * eye
    D, U = jnp.linalg.eigh(0.5 * (HL + jnp.swapaxes(HL, -1, -2)))
    D = jnp.maximum(D, 0.0)
    Hj = jnp.einsum("lik,ljk,lmk->ljim", U, D[:, None, :] + lam[..., None], U)
    chol = jnp.linalg.cholesky(0.5 * (Hj + jnp.swapaxes(Hj, -1, -2)))
    ut = jnp.einsum("lpk,lp->lk", U, theta_c)  # theta_c in HL's eigenbasis
    coef = (lam_c[:, None] - lam)[..., None] / (D[:, None, :] + lam[..., None])
    step = jnp.einsum("lpk,ljk->ljp", U, coef * ut[:, None, :])
    return theta_c[:, None, :] + step, chol, (U, D)


def node_loglik(link: str, x, y, n, theta, eig=None, centre=None):
    """The log-likelihood of the rows held at every node's theta (L, J, p), in one
    pass over the buffer (in the Newton search's blocks, the blocks not yet filled
    skipped): ``lik (L, J)``. With ``eig = (U, D)`` (:func:`node_fits`) and the
    centre node's index, also the first-order change of ``log det H_j`` from the
    likelihood's curvature at node j rather than at the centre, ``sum_i (W_ij -
    W_ic) x_i^T (HL + lam_j I)^-1 x_i``, over ``1 / (D + lam_j)`` given as
    ``eig[2]`` (L, J, p): ``(lik, dlogdet (L, J))``."""
    L, n_max, _ = x.shape
    ll, derivs = loglik(link), link_derivatives(link)
    block = _block(n_max) or n_max
    held = jnp.minimum(n, n_max)

    def step(k, acc):
        start = jnp.minimum(k * block, n_max - block)
        xs = jax.lax.dynamic_slice_in_dim(x, start, block, 1)
        ys = jax.lax.dynamic_slice_in_dim(y, start, block, 1)[:, None, :]
        # the last block may start early: its rows before k * block are counted once
        rows = start + jnp.arange(block)
        m = ((rows[None, :] < held[:, None]) & (rows >= k * block)[None, :])[:, None, :]
        eta = jnp.einsum("lnp,ljp->ljn", xs, theta)
        lik = acc[0] + jnp.sum(jnp.where(m, ll(eta, ys), 0.0), -1)
        if eig is None:
            return lik, acc[1]
        U, _, inv = eig
        W = jnp.where(m, derivs(eta, ys)[1], 0.0)  # (L, J, b)
        z2 = jnp.einsum("lnp,lpk->lnk", xs, U) ** 2  # rows in HL's eigenbasis
        lev = jnp.einsum("lnk,ljk->ljn", z2, inv)  # x^T (HL + lam_j I)^-1 x
        dW = W - W[:, centre:centre + 1]
        return lik, acc[1] + jnp.sum(dW * lev, -1)

    zero = (jnp.zeros(theta.shape[:2], x.dtype), jnp.zeros(theta.shape[:2], x.dtype))
    out = jax.lax.fori_loop(0, (jnp.max(held) + block - 1) // block, step, zero)
    return out if eig is not None else out[0]


def log_evidence(lik, theta, chol, rho, dlogdet=0.0):
    """(L, J) Laplace's log evidence at every node (up to a constant common to
    them): ``lik - lam |theta|^2 / 2 - p rho - 1/2 (log det H + dlogdet)``."""
    p = theta.shape[-1]
    half_logdet = (jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), -1)
                   + 0.5 * dlogdet)
    return (lik - 0.5 * jnp.sum(theta**2, -1) * jnp.exp(-2.0 * rho) - p * rho
            - half_logdet)
