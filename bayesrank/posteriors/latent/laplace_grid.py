"""Latent w under a GLM link with theta's prior scale tau learnt: one Laplace
expansion per tau node, mixed by the nodes' evidence (the maths of
:class:`~bayesrank.posteriors.LatentLaplace` built on ``LaplaceGLM()``).

The fit over the pair features is a
:class:`~bayesrank.posteriors.laplace.learnt_scale.LearntScaleLaplace`: at every node k of
its grid of tau (24 nodes) a MAP ``phi_k`` and Hessian ``H_k`` of the 2d relaxation.
Node k expands the log-likelihood at its own MAP::

    log p(D | phi) ~ c_k + g_k^T phi - 1/2 phi^T HL_k phi,
    HL_k = sum_i W_i x_i x_i^T,   s_k = sum_i d1_i x_i,   g_k = s_k + HL_k phi_k,
    c_k = loglik(phi_k) - s_k^T phi_k - 1/2 phi_k^T HL_k phi_k

(``d1``, ``W``: the log-likelihood's first and minus second derivative in eta at
``phi_k``; HL_k and s_k recomputed from the rows held, so HL_k is positive
semi-definite by construction, where ``H_k - I / tau_k^2`` would cancel at a small
tau)

and with ``phi = (theta, w theta)``, ``theta | tau_k ~ N(0, tau_k^2 I_d)``, theta
integrates out in closed form::

    log p(D | w, tau_k) ~ c_k - d log tau_k - 1/2 log det P_k(w)
                          + 1/2 b_k(w)^T P_k(w)^-1 b_k(w),
    P_k(w) = I / tau_k^2 + S_k(w),   S_k(w), b_k(w) as in LatentW with node k's blocks

so ``log p(w | D) = log p(w) + logsumexp_k(log pi_k + log p(D | w, tau_k))`` (pi_k the
hyperprior's cell masses), and a draw of theta given w picks node k with probability
proportional to its term, then theta from ``N(P_k^-1 b_k, P_k^-1)``. Each node's
expansion sits at the MAP of its own prior scale, where the posterior at that scale
has its mass: a large tau (nearly separable clicks) keeps the small curvature of a
large MAP, which one expansion shared by all nodes would not (``bayesrank
calibrate``'s ``LatentLaplace-logistic-learnt``: p = 0.004 with one expansion at the
modal node, theta over-confident).

The per-position arrays are stored in :class:`LatentLaplaceState`'s fields with a node
axis: ``Saa, Sap, Spp (L, G, d, d)``, ``ba, bp (L, G, d)`` and ``yy (L, G)``, which
holds ``log pi_k + c_k - d log tau_k`` less its smallest value per position.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from bayesrank.posteriors.laplace import link_derivatives, loglik
from bayesrank.posteriors.linalg import half_logdet_quad

__all__ = ["log_marginal", "node_stats", "theta_given_w", "theta_mean_given_w",
           "theta_node_given_w"]


def node_stats(laplace, fit, d: int):
    """``(Saa, Sap, Spp, ba, bp, yy)`` with a node axis from a learnt-scale fit."""
    dtype = fit.theta.dtype
    n_max = fit.x.shape[1]
    mask = jnp.arange(n_max) < jnp.minimum(fit.n, n_max)[:, None]
    eta = jnp.einsum("lnp,lgp->lgn", fit.x, fit.theta)  # (L, G, n_max)
    y = jnp.broadcast_to(fit.y[:, None, :], eta.shape)
    d1, W = link_derivatives(laplace.link.name)(eta.ravel(), y.ravel())
    d1 = jnp.where(mask[:, None, :], d1.reshape(eta.shape), 0.0)
    W = jnp.where(mask[:, None, :], W.reshape(eta.shape), 0.0)
    # the likelihood's own Hessian and score at each node's MAP, from the rows held
    # (positive semi-definite by construction; H - I / tau^2 would cancel)
    HL = jnp.einsum("lgn,lni,lnj->lgij", W, fit.x, fit.x)
    score = jnp.einsum("lgn,lni->lgi", d1, fit.x)
    g = score + jnp.einsum("lgij,lgj->lgi", HL, fit.theta)
    lik = jnp.sum(jnp.where(mask[:, None, :],
                            loglik(laplace.link.name)(eta, fit.y[:, None, :]), 0.0), -1)
    c = (lik - jnp.sum(score * fit.theta, -1)
         - 0.5 * jnp.einsum("lgi,lgij,lgj->lg", fit.theta, HL, fit.theta))
    yy = (jnp.asarray(laplace.log_w0, dtype) + c
          - d * jnp.asarray(laplace.log_tau, dtype))
    # less its smallest node per position (a constant in w and in the node's choice):
    # non-negative, as a saved state's yy must be
    yy = yy - jnp.min(yy, axis=-1, keepdims=True)
    return (HL[..., :d, :d], HL[..., :d, d:], HL[..., d:, d:], g[..., :d], g[..., d:],
            yy)


def _nodes(stats, yy, w, lams):
    """Per node of one position at a scalar w: ``(log term (G,), P (G, d, d),
    b (G, d))``."""
    Saa, Sap, Spp, ba, bp = stats
    d = ba.shape[-1]
    eye = jnp.eye(d, dtype=ba.dtype)
    P = lams[:, None, None] * eye + Saa + w * (Sap + jnp.swapaxes(Sap, -1, -2)) \
        + (w * w) * Spp
    b = ba + w * bp
    half, quad = jax.vmap(half_logdet_quad)(P, b)
    term = yy - half + 0.5 * quad
    return jnp.where(jnp.isfinite(term), term, -jnp.inf), P, b


def log_marginal(stats, yy, w, lams):
    """log p(D | w) for one position and a scalar w, up to a constant in w."""
    term, _, _ = _nodes(stats, yy, w, lams)
    out = jax.scipy.special.logsumexp(term)
    return jnp.where(jnp.isfinite(out), out, -jnp.inf)


def theta_given_w(key, stats, yy, w, lams):
    """One theta (d,) of one position given w: node k by its term, then
    ``N(P_k^-1 b_k, P_k^-1)``."""
    return theta_node_given_w(key, stats, yy, w, lams)[0]


def theta_node_given_w(key, stats, yy, w, lams):
    """:func:`theta_given_w` and the node k it drew (tau_k | w, D): ``(theta (d,),
    k ())``."""
    term, P, b = _nodes(stats, yy, w, lams)
    k_node, k_eps = jax.random.split(key)
    k = jax.random.categorical(k_node, term)
    C = jnp.linalg.cholesky(P[k])
    mean = jax.scipy.linalg.cho_solve((C, True), b[k])
    eps = jax.random.normal(k_eps, b[k].shape, b.dtype)
    return mean + jax.scipy.linalg.solve_triangular(C, eps, lower=True, trans="T"), k


def theta_mean_given_w(stats, yy, w, lams):
    """E[theta | w, D] (d,) of one position: the nodes' means by their terms."""
    term, P, b = _nodes(stats, yy, w, lams)
    wts = jnp.exp(term - jax.scipy.special.logsumexp(term))
    means = jax.vmap(lambda PP, bb: jnp.linalg.solve(PP, bb))(P, b)
    return jnp.sum(wts[:, None] * means, 0)
