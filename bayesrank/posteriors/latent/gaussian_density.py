"""The collapsed marginal of w in :class:`~bayesrank.posteriors.LatentW`: theta (and
the noise, or a learnt scale) integrated out in closed form.

Given w the design is ``a + w p`` and theta is conjugate, so ``log p(w | D)`` is known up
to a constant in w (the formulas: :mod:`bayesrank.posteriors.latent.gaussian`). The class is a
mixin: it reads the model's settings (``learnt``, ``known_noise``, ``base``) and prior
(``_theta_prior``, ``log_prior``), defined by
:class:`~bayesrank.posteriors.latent.gaussian.LatentW`; the slice chain and the exact
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
from bayesrank.posteriors.conjugate import centred_sums, evidence_terms, grid_loglik
from bayesrank.posteriors.linalg import half_logdet_quad

__all__ = ["CollapsedDensity"]


class CollapsedDensity:
    """The collapsed density of w and the conditionals it is built from (mixed into
    :class:`~bayesrank.posteriors.latent.gaussian.LatentW`).

    The statistics (``_stats``) are those of a design ``c + v p`` with ``v = w +
    shift``: :class:`LatentW` keeps the sums of the pair's difference ``c = a - p``
    (``shift = 1``), so that what a and p share (the items' constant coordinate, an
    item shown twice in a row) cancels exactly in every row rather than between
    float32 sums near w = -1; :class:`LatentLaplace` keeps its Hessian's (a, p)
    blocks (``shift = 0``). Far from 0 the sums are evaluated divided by ``v^2``
    (:meth:`_design`): their entries then stay O(n) at any w, where ``S(w)``'s would
    grow as w^2 and bury the a-part under float32 rounding.
    """

    #: v = w + shift is the coefficient of p in the statistics' design ``c + v p``
    shift = 1.0

    def _design(self, stats, w, scaled: bool = True):
        """``(S, u, s)``: the sums of the design ``c + v p`` (v = w + shift) divided
        by ``s^2`` and ``s``, with ``s = max(1, |v|)`` (``scaled``) or 1.

        Dividing the design by s multiplies theta by s: the likelihood at (w, g) is
        the one of the divided sums at ``(w, g s)`` (prior mean ``s m0``), and a
        fixed prior precision P0 becomes ``P0 / s^2`` with ``log det`` shifted by
        ``d log s``.
        """
        S0, S1, S2, b0, b1 = stats
        v = w + self.shift
        s = jnp.maximum(1.0, jnp.abs(v)) if scaled else jnp.ones_like(v)
        i, r = 1.0 / s, v / s
        S = (i * i) * S0 + (i * r) * (S1 + S1.T) + (r * r) * S2
        return S, i * b0 + r * b1, s

    def _conditional(self, stats, w, m0, P0):
        """(chol of P(w), b(w)) for one position and a scalar w."""
        S, u, _ = self._design(stats, w, scaled=False)
        return jnp.linalg.cholesky(P0 + S), P0 @ m0 + u

    def _log_marginal(self, stats, yy, n, w, m0, P0):
        """log p(w | D) - log p(w), up to a constant in w (one position, scalar w)."""
        S, u, s = self._design(stats, w)
        if self.learnt:  # g (and s) integrated on the base's grid
            base = self.base
            A = None if base.shape is None else jnp.asarray(base.shape, S.dtype)
            log_g = jnp.asarray(base.log_g, S.dtype) + jnp.log(s)
            _, loglik = grid_loglik(S, u, yy, n, s * m0, log_g, base.learn_noise,
                                    base._sf(S.dtype), A=A)
            out = jax.scipy.special.logsumexp(jnp.asarray(base.log_w0, S.dtype)
                                              + loglik)
            return jnp.where(jnp.isfinite(out), out, -jnp.inf)
        d = u.shape[0]
        half_logdet, quad = half_logdet_quad(P0 / (s * s) + S, (P0 @ m0) / s + u)
        half_logdet = half_logdet + d * jnp.log(s)
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
        ``S(w) + c I`` (the fixed-scale model's cost)."""
        base = self.base
        S, u, s = self._design(stats, w)
        d = u.shape[0]
        A = None if base.shape is None else jnp.asarray(base.shape, S.dtype)
        S, uc, qc = centred_sums(S, u, yy, s * base._m0(d, S.dtype), base._sf(S.dtype), A,
                             jnp)
        half, quad = half_logdet_quad(S + (c / (s * s)) * jnp.eye(d, dtype=S.dtype), uc)
        _, out = evidence_terms(half + d * jnp.log(s), quad, qc, n, base.learn_noise, jnp)
        return jnp.where(jnp.isfinite(out), out, -jnp.inf)

    def _stats(self, state):
        return (state.Scc, state.Scp, state.Spp, state.bc, state.bp)

    def log_density(self, state, w):
        """Unnormalised log p(w_l | D) for every position: w (L,) or (G, L) -> same."""
        d = state.bp.shape[1]
        m0, P0 = self._theta_prior(d, state.bp.dtype)
        w = jnp.asarray(w, state.bp.dtype)
        stats = self._stats(state)

        def one_pos(st, yy, n, wl):
            return self._log_marginal(st, yy, n, wl, m0, P0)

        def row(wrow):
            lm = jax.vmap(one_pos)(stats, state.yy, state.n, wrow)
            return lm + self.log_prior(wrow)

        return row(w) if w.ndim == 1 else jax.vmap(row)(w)

    def _relaxed_w(self, stats, m0, P0):
        """The 2d relaxation's estimate of w for one position: ridge phi over the
        statistics' features (c, p) (prior precision P0 on both halves), ``v =
        <phi_1, phi_2> / ||phi_1||^2`` and w = v - shift (0 while phi_1 = 0)."""
        S0, S1, S2, b0, b1 = stats
        d = b0.shape[0]
        S2x = jnp.block([[S0 + P0, S1], [S1.T, S2 + P0]])
        phi = linalg.chol_solve(jnp.linalg.cholesky(S2x),
                                jnp.concatenate([b0 + P0 @ m0, b1]))
        n1 = jnp.dot(phi[:d], phi[:d])
        v = jnp.dot(phi[:d], phi[d:]) / jnp.where(n1 > 0, n1, 1.0)
        return jnp.where(n1 > 0, v - self.shift, 0.0)
