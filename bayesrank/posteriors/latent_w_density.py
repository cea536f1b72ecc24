"""The collapsed marginal of w in :class:`~bayesrank.posteriors.LatentW`: theta (and
the noise, or a learnt scale) integrated out in closed form.

Given w the design is ``a + w p`` and theta is conjugate, so ``log p(w | D)`` is known up
to a constant in w (the formulas: :mod:`bayesrank.posteriors.latent_w`). The class is a
mixin: it reads the model's settings (``learnt``, ``known_noise``, ``base``) and prior
(``_theta_prior``, ``log_prior``), defined by
:class:`~bayesrank.posteriors.latent_w.LatentW`; the slice chain and the exact
summaries evaluate it.

Example:
    >>> import jax.numpy as jnp, numpyro.distributions as dist
    >>> from bayesrank.posteriors import GaussianLinear, LatentW
    >>> model = LatentW(GaussianLinear(), dist.Normal(0.0, 5.0))
    >>> state = model.update(model.init(L=2, p=4), jnp.ones((2, 4)), jnp.ones(2))
    >>> model.log_density(state, jnp.zeros((5, 2))).shape      # (G, L) points of w
    (5, 2)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from bayesrank.posteriors import linalg
from bayesrank.posteriors.linalg import half_logdet_quad
from bayesrank.posteriors.scale_grid import _centred, _grid_loglik, grid_loglik

__all__ = ["CollapsedDensity"]


class CollapsedDensity:
    """The collapsed density of w and the conditionals it is built from (mixed into
    :class:`~bayesrank.posteriors.latent_w.LatentW`)."""

    def _conditional(self, stats, w, m0, P0):
        """(chol of P(w), b(w)) for one position and a scalar w."""
        Saa, Sap, Spp, ba, bp = stats
        P = P0 + Saa + w * (Sap + Sap.T) + (w * w) * Spp
        b = P0 @ m0 + ba + w * bp
        return jnp.linalg.cholesky(P), b

    def _log_marginal(self, stats, yy, n, w, m0, P0):
        """log p(w | D) - log p(w), up to a constant in w (one position, scalar w)."""
        Saa, Sap, Spp, ba, bp = stats
        if self.learnt:  # g (and s) integrated on the base's grid
            base = self.base
            S = Saa + w * (Sap + Sap.T) + (w * w) * Spp
            A = None if base.shape is None else jnp.asarray(base.shape, S.dtype)
            _, loglik = grid_loglik(S, ba + w * bp, yy, n, m0,
                                    jnp.asarray(base.log_g, S.dtype),
                                    base.learn_noise, base._sf(S.dtype), A=A)
            out = jax.scipy.special.logsumexp(jnp.asarray(base.log_w0, S.dtype)
                                              + loglik)
            return jnp.where(jnp.isfinite(out), out, -jnp.inf)
        P = P0 + Saa + w * (Sap + Sap.T) + (w * w) * Spp
        half_logdet, quad = half_logdet_quad(P, P0 @ m0 + ba + w * bp)
        if self.known_noise:
            out = -half_logdet + 0.5 * quad
        else:
            a_n = self.base.a0 + 0.5 * n
            b_n = self.base.b0 + 0.5 * (yy + m0 @ P0 @ m0 - quad)
            out = -half_logdet - a_n * jnp.log(jnp.maximum(b_n, 1e-300))
        return jnp.where(jnp.isfinite(out), out, -jnp.inf)

    def _log_marginal_given_g(self, stats, yy, n, w, c):
        """log p(y | w, g) (a learnt-scale base, c = 1/g^2), up to a constant in w:
        theta (and s) integrated out at that one g, by the fused Cholesky factor of
        ``S(w) + c I`` (the fixed-scale model's cost; the slice chain's move of w
        given g)."""
        base = self.base
        Saa, Sap, Spp, ba, bp = stats
        d = ba.shape[0]
        S = Saa + w * (Sap + Sap.T) + (w * w) * Spp
        A = None if base.shape is None else jnp.asarray(base.shape, S.dtype)
        S, uc, qc = _centred(S, ba + w * bp, yy, base._m0(d, S.dtype), base._sf(S.dtype),
                             A, jnp)
        half, quad = half_logdet_quad(S + c * jnp.eye(d, dtype=S.dtype), uc)
        _, out = _grid_loglik(half, quad, qc, n, base.learn_noise, jnp)
        return jnp.where(jnp.isfinite(out), out, -jnp.inf)

    def _stats(self, state):
        return (state.Saa, state.Sap, state.Spp, state.ba, state.bp)

    def log_density(self, state, w):
        """Unnormalised log p(w_l | D) for every position: w (L,) or (G, L) -> same."""
        d = state.ba.shape[1]
        m0, P0 = self._theta_prior(d, state.ba.dtype)
        w = jnp.asarray(w, state.ba.dtype)
        stats = self._stats(state)

        def one_pos(st, yy, n, wl):
            return self._log_marginal(st, yy, n, wl, m0, P0)

        def row(wrow):
            lm = jax.vmap(one_pos)(stats, state.yy, state.n, wrow)
            return lm + self.log_prior(wrow)

        return row(w) if w.ndim == 1 else jax.vmap(row)(w)

    def _relaxed_w(self, stats, m0, P0):
        """The 2d relaxation's estimate of w for one position: ridge phi over the
        pair features (prior precision P0 on both halves), ``<phi_1, phi_2> /
        ||phi_1||^2`` (0 while phi_1 = 0)."""
        Saa, Sap, Spp, ba, bp = stats
        d = ba.shape[0]
        S2 = jnp.block([[Saa + P0, Sap], [Sap.T, Spp + P0]])
        phi = linalg.chol_solve(jnp.linalg.cholesky(S2), jnp.concatenate([ba + P0 @ m0,
                                                                         bp]))
        n1 = jnp.dot(phi[:d], phi[:d])
        return jnp.where(n1 > 0, jnp.dot(phi[:d], phi[d:]) / jnp.where(n1 > 0, n1, 1.0),
                         0.0)
