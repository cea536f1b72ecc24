"""Conjugate Normal-Inverse-Gamma linear regression: theta and the noise variance,
one posterior per position.

:class:`GaussianLinearUnknownNoise` puts a Normal-Inverse-Gamma prior on (theta, s^2):

    s^2 ~ InvGamma(a0, b0),   theta | s^2 ~ N(m0, s^2 Lambda0^{-1}),

so that Lambda_n = Lambda0 + X^T X, m_n = Lambda_n^{-1}(Lambda0 m0 + X^T y),
a_n = a0 + n / 2 and b_n = b0 + (y^T y + m0^T Lambda0 m0 - m_n^T Lambda_n m_n) / 2.
b_n is carried by the exact one-step recursion
``b_{n+1} = b_n + (y - x^T m_n)^2 / (2 (1 + x^T Lambda_n^{-1} x))``, which avoids the
cancellation of the batch formula. The precision, its factor and the compensated sums
are updated as in :mod:`bayesrank.posteriors.conjugate.gaussian` (its module docstring).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank.posteriors import linalg
from bayesrank.posteriors.conjugate.linear import (
    _ConjugateLinear,
    config_kwargs,
    reward_bound,
    select_valid,
)
from bayesrank.posteriors.datatree import make_datatree
from bayesrank.posteriors.host_sampler import host_draws, host_rng
from bayesrank.posteriors.linalg import accumulate
from bayesrank.posteriors.prior_checks import jsonable, valid_positive_scalar

__all__ = ["GaussianLinearUnknownNoise", "NIGState"]


class NIGState(NamedTuple):
    """Posterior of :class:`GaussianLinearUnknownNoise`, batched over positions.

    Example:
        >>> from bayesrank.posteriors import GaussianLinearUnknownNoise
        >>> state = GaussianLinearUnknownNoise(b0=2.0).init(L=2, p=3)
        >>> state.rate.tolist()
        [2.0, 2.0]
    """

    prec: jax.Array  # (L, p, p) Lambda_n = Lambda0 + X^T X
    chol: jax.Array  # (L, p, p) lower Cholesky factor of prec
    b: jax.Array  # (L, p) Lambda0 m0 + X^T y
    n: jax.Array  # (L,) int32, number of observations folded in
    logdet: jax.Array  # (L,) log det prec, carried incrementally
    rate: jax.Array  # (L,) b_n, the inverse-gamma rate of s^2 (shape: a0 + n / 2)
    prec_lo: jax.Array  # (L, p, p) rounding error of the sum prec (compensated sum)
    b_lo: jax.Array  # (L, p) rounding error of the sum b


class GaussianLinearUnknownNoise(_ConjugateLinear):
    """Normal-Inverse-Gamma posterior per position: theta and the noise variance.

    ``s^2 ~ InvGamma(a0, b0)``, ``theta | s^2 ~ N(m0, s^2 Lambda0^{-1})`` with
    ``Lambda0^{-1}`` built from ``prior_scale`` (relative to s).

    Args:
        prior_mean: scalar or (p,) prior mean m0.
        prior_scale: scalar or (p,) standard deviations, or a (p, p) covariance, of
            theta in units of s.
        a0: inverse-gamma shape > 0 (the prior mean of s^2 exists for a0 > 1).
        b0: inverse-gamma rate > 0; the default 1.0 with a0 = 2 gives E[s^2] = 1.

    Raises:
        ValueError: non-finite or non-positive hyper-parameters, bad shapes.

    Example:
        >>> import jax.numpy as jnp, numpy as np
        >>> model = GaussianLinearUnknownNoise(a0=3.0, b0=2.0)
        >>> state = model.init(L=2, p=3)
        >>> state = model.update(state, jnp.ones((2, 3)), jnp.array([1.0, 2.0]))
        >>> np.round(model.mean(state)[1], 4).tolist()
        [0.5, 0.5, 0.5]
        >>> shape, rate = model.noise_posterior(state)   # s^2 ~ InvGamma(shape, rate)
        >>> np.round(rate, 4).tolist()
        [2.125, 2.5]
    """

    def __init__(self, prior_mean=0.0, prior_scale=1.0, a0=2.0, b0=1.0):
        super().__init__(prior_mean, prior_scale)
        self.a0 = valid_positive_scalar(a0, "a0")
        self.b0 = valid_positive_scalar(b0, "b0")

    def __repr__(self) -> str:
        return (
            f"GaussianLinearUnknownNoise(prior_mean={self.prior_mean!r}, "
            f"prior_scale={self.prior_scale!r}, a0={self.a0!r}, b0={self.b0!r})"
        )

    def reward_bound(self, dtype=None) -> tuple[float, str]:
        """The largest reward magnitude taken: the rate sums squared residuals
        (``conjugate.reward_bound`` with ``square_unit=1``; docs/units.md)."""
        return reward_bound(dtype, square_unit=1.0)

    def init(self, L: int, p: int) -> NIGState:
        """The prior for L positions.

        Returns:
            NIGState: prec/chol (L, p, p), b (L, p), n/logdet/rate (L,).
        """
        args = self._init_common(L, p)
        rate = jnp.full((int(L),), self.b0, dtype=args[2].dtype)
        return NIGState(*args, rate, *self._zero_lo(args))

    def update(self, state: NIGState, x, y, valid=None) -> NIGState:
        """Fold one observation per position into the posterior, O(L p^2).

        Args:
            state: current posterior.
            x: (L, p) features; y: (L,) rewards.
            valid: (L,) bool, False where the position is left unchanged; None = all.

        Returns:
            The updated state.
        """
        x, y, valid = self._valid_update_args(state, x, y, valid)

        def one(chol, m, x_l, y_l):
            z = linalg.whiten(chol, x_l)
            q = jnp.dot(z, z)
            resid = y_l - jnp.dot(x_l, m)
            return 0.5 * resid**2 / (1.0 + q)

        drate = jax.vmap(one)(state.chol, self.mean(state), x, y)
        prec, prec_lo = accumulate(state.prec, state.prec_lo,
                                   x[:, :, None] * x[:, None, :])
        b, b_lo = accumulate(state.b, state.b_lo, x * y[:, None])
        new = NIGState(
            prec,
            jax.vmap(linalg.chol_update)(state.chol, x),
            b,
            state.n + 1,
            state.logdet + jax.vmap(linalg.logdet_increment)(state.chol, x),
            state.rate + drate,
            prec_lo,
            b_lo,
        )
        return select_valid(valid, new, state)

    def noise_posterior(self, state: NIGState) -> tuple[jax.Array, jax.Array]:
        """Inverse-gamma parameters of s^2 per position.

        Returns:
            shape a_n (L,), rate b_n (L,).
        """
        return self.a0 + 0.5 * state.n.astype(state.rate.dtype), state.rate

    def draw(self, key, state: NIGState) -> tuple[jax.Array, NIGState]:
        """Draw s^2 ~ InvGamma(a_n, b_n), then theta ~ N(m_n, s^2 Lambda_n^{-1}).

        Returns:
            theta (L, p), and the state unchanged.
        """
        L = state.b.shape[0]
        k_var, k_theta = jax.random.split(key)
        shape, rate = self.noise_posterior(state)
        sigma2 = rate / jax.random.gamma(k_var, shape, (L,), state.b.dtype)
        theta = linalg.sample_per_position(
            k_theta, self.mean(state), state.chol, jnp.sqrt(sigma2)
        )
        return theta, state

    def draw_batch(self, key, state: NIGState, n: int) -> jax.Array:
        """n independent draws of (s^2, theta), theta returned: (n, L, p)."""
        L = state.b.shape[0]
        k_var, k_theta = jax.random.split(key)
        shape, rate = self.noise_posterior(state)
        sigma2 = rate / jax.random.gamma(k_var, shape, (n, L), state.b.dtype)
        return linalg.sample_many_from_precision(
            k_theta, self.mean(state), state.chol, n, jnp.sqrt(sigma2)
        )

    def covariance(self, state: NIGState) -> jax.Array:
        """Marginal posterior covariance of theta, ``b_n / (a_n - 1) Lambda_n^{-1}``.

        (L, p, p); infinite where a_n <= 1 (the Student-t has no variance there).
        """
        shape, rate = self.noise_posterior(state)
        factor = jnp.where(shape > 1, rate / (shape - 1), jnp.inf)
        eye = jnp.eye(state.b.shape[1], dtype=state.b.dtype)
        scale = jax.vmap(lambda c: linalg.chol_solve(c, eye))(state.chol)
        return factor[:, None, None] * scale

    def to_datatree(
        self,
        state: NIGState,
        position: int,
        *,
        key,
        data=None,
        draws: int = 1000,
        chains: int = 4,
    ):
        """Exact posterior draws of theta and sigma at one position, as a DataTree.

        Posterior variables ``theta`` (chain, draw, theta_dim) and ``sigma`` (the noise
        sd). ``log_prior`` holds two terms whose sum is the joint prior density:
        ``theta``: log N(theta | m0, sigma^2 Lambda0^{-1}) and ``sigma``:
        log InvGamma(sigma^2 | a0, b0) (the density of the variance, as specified).
        See :meth:`GaussianLinear.to_datatree` for ``data`` and the other arguments.
        """
        position = self._valid_position(state, position)
        draws, chains = self._valid_draws(draws, chains)
        data = self._valid_data(data, state, position)
        rng = host_rng(key)
        shape, rate = (float(a[position]) for a in self.noise_posterior(state))
        sigma2 = rate / rng.gamma(shape, 1.0, chains * draws)
        theta = host_draws(
            rng, state.chol[position], state.b[position], np.sqrt(sigma2)
        ).reshape(chains, draws, -1)
        sigma2 = sigma2.reshape(chains, draws)
        p = theta.shape[-1]
        m0, _, C0, logdet0 = (np.asarray(a, float) for a in self.prior(p))
        r = (theta - m0) @ C0
        a0, b0 = float(self.a0), float(self.b0)
        log_prior_theta = (
            -0.5 * p * np.log(2 * math.pi * sigma2)
            + 0.5 * logdet0
            - 0.5 * np.sum(r * r, -1) / sigma2
        )
        log_prior_sigma2 = (
            a0 * math.log(b0)
            - math.lgamma(a0)
            - (a0 + 1.0) * np.log(sigma2)
            - b0 / sigma2
        )
        ll = obs = const = None
        if data is not None and data[0].shape[0] > 0:
            X, y = data
            resid = y - theta @ X.T
            s2 = sigma2[..., None]
            ll = -0.5 * np.log(2 * math.pi * s2) - 0.5 * resid**2 / s2
            obs, const = y, {"X": X}
        return make_datatree(
            {"theta": theta, "sigma": np.sqrt(sigma2)},
            log_likelihood=ll,
            log_prior={"theta": log_prior_theta, "sigma": log_prior_sigma2},
            observed=obs,
            constant_data=const,
            attrs={"model": "GaussianLinearUnknownNoise", "position": position,
                   **self._data_attrs(data, state, position)},
        )

    def config(self) -> dict:
        """JSON-able constructor arguments, with ``class``."""
        return {
            "class": type(self).__name__,
            "prior_mean": jsonable(self.prior_mean),
            "prior_scale": jsonable(self.prior_scale),
            "a0": jsonable(self.a0),
            "b0": jsonable(self.b0),
        }

    @classmethod
    def from_config(cls, cfg: dict) -> GaussianLinearUnknownNoise:
        """Rebuild from :meth:`config` output."""
        return cls(**config_kwargs(cfg, cls.__name__))
