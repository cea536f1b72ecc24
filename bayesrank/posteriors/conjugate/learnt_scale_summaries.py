"""The posterior summaries of :class:`~bayesrank.posteriors.conjugate.learnt_scale.LearntScaleLinear`:
the grid posterior of g, theta's mean and covariance, the noise's mean and sd, all
exact mixtures over the grid from each position's eigendecomposition
(:func:`bayesrank.posteriors.conjugate.scale_grid.grid_terms`; the draws take the cheaper tridiagonal route).

Example:
    >>> import jax.numpy as jnp
    >>> from bayesrank.posteriors import GaussianLinear
    >>> model = GaussianLinear()
    >>> state = model.update(model.init(L=1, p=2), jnp.ones((1, 2)), jnp.ones(1))
    >>> g, weights = model.scale_posterior(state)
    >>> g.shape, weights.shape, model.mean(state).shape
    ((160,), (1, 160), (1, 2))
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from bayesrank.posteriors.conjugate.scale_grid import grid_terms

__all__ = ["LearntScaleSummaries"]


class LearntScaleSummaries:
    """Mixin of :class:`~bayesrank.posteriors.conjugate.learnt_scale.LearntScaleLinear`'s summaries
    (it reads ``log_g``, ``log_w0``, ``shape``, ``learn_noise``, ``_sf``,
    ``_units``, ``_to_theta`` and ``_fallback_var`` from the model). Everything is
    computed in the state's scaled units (:meth:`_units`) and mapped back to the
    rewards' units at the end; ``noise_mean`` and ``covariance`` are in squared
    units, which overflow to inf for rewards beyond 1.8e19 in float32 (``mean``,
    ``noise_sd`` and the draws do not)."""

    def _terms(self, state):
        """grid_terms for every position (vmapped) and the normalised log weights."""
        dtype = state.u.dtype
        m0, sfs, _ = self._units(state)
        log_g = jnp.asarray(self.log_g, dtype)

        A = None if self.shape is None else jnp.asarray(self.shape, dtype)

        def one(S, u, q, n, m, sf):
            return grid_terms(S, u, q, n, m, log_g, self.learn_noise, sf, A=A)

        U, D, z, denom, beta, loglik = jax.vmap(one)(
            state.S + state.S_lo, state.u + state.u_lo, state.q + state.q_lo, state.n,
            m0, sfs)
        logits = jnp.asarray(self.log_w0, dtype)[None, :] + loglik
        logw = logits - jax.scipy.special.logsumexp(logits, axis=-1, keepdims=True)
        return U, D, z, denom, beta, logw

    def scale_posterior(self, state):
        """The grid posterior of g per position: ``(g (G,), weights (L, G))``."""
        logw = self._terms(state)[-1]
        return jnp.exp(jnp.asarray(self.log_g, logw.dtype)), jnp.exp(logw)

    def mean(self, state) -> jax.Array:
        """Posterior mean of theta per position, (L, p) (averaged over g's grid)."""
        U, _, z, denom, _, logw = self._terms(state)
        w = jnp.exp(logw)  # (L, G)
        coef = jnp.einsum("lg,lgp->lp", w, z[:, None, :] / denom)
        return self._to_theta(jnp.einsum("lij,lj->li", U, coef), state)

    def noise_mean(self, state) -> jax.Array:
        """Posterior mean of the noise variance per position (L,): E[s^2 | data]
        (the known s^2 where the noise is known; inf where n <= 2)."""
        _, _, _, _, beta, logw = self._terms(state)
        if not self.learn_noise:
            return jnp.broadcast_to(self._sf(beta.dtype) ** 2, state.n.shape)
        e = jnp.sum(jnp.exp(logw) * beta, -1) / jnp.where(
            state.n > 2, state.n - 2.0, jnp.nan)
        out = self._units(state)[2]
        return jnp.where(state.n > 2, e * out * out, jnp.inf)

    def noise_sd(self, state) -> jax.Array:
        """The noise sd per position (L,) that the UCB width takes for Lemma 1's R:
        ``sqrt(E[s^2 | data])`` where a position has n > 2 observations, else the
        square root of the mean squared centred reward of all positions (1 before
        any reward); the known sd where ``noise_scale`` is a number. Homogeneous of
        degree 1 in the rewards, so a width scaled by it scales with their units."""
        sf = self._sf(state.u.dtype)
        if not self.learn_noise:
            return jnp.broadcast_to(sf, state.n.shape)
        _, _, _, _, beta, logw = self._terms(state)
        many = state.n > 2
        e = jnp.sum(jnp.exp(logw) * beta, -1) / jnp.where(many, state.n - 2.0, 1.0)
        out = self._units(state)[2]
        return out * jnp.sqrt(jnp.where(many, e, self._fallback_var(state)))

    def covariance(self, state) -> jax.Array:
        """Posterior covariance of theta per position, (L, p, p): the mixture over
        g of ``E[s^2 | g] (S + I/g^2)^-1`` plus the spread of the means (inf where
        the noise is learnt and n <= 2)."""
        U, _, z, denom, beta, logw = self._terms(state)
        w = jnp.exp(logw)
        out = self._units(state)[2]
        if self.learn_noise:
            es2 = beta / jnp.where(state.n > 2, state.n - 2.0, 1.0)[:, None]
            es2 = jnp.where((state.n > 2)[:, None], es2, jnp.inf)
        else:
            es2 = jnp.ones_like(beta)
        mk = z[:, None, :] / denom  # (L, G, p) in the eigenbasis
        mbar = jnp.einsum("lg,lgp->lp", w, mk)
        diag = jnp.einsum("lg,lgp->lp", w, es2[..., None] / denom)
        second = jnp.einsum("lg,lgp,lgq->lpq", w, mk, mk) - mbar[:, :, None] * mbar[:, None, :]
        inner = jax.vmap(jnp.diag)(diag) + second
        if self.shape is not None:
            U = jnp.asarray(self.shape, U.dtype) @ U
        U = out[:, None, None] * U  # one factor of out on each side
        return jnp.einsum("lij,ljk,lmk->lim", U, inner, U)
