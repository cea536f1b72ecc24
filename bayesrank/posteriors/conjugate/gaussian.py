"""Exact conjugate Bayesian linear regression, one posterior per position.

Identity link, Gaussian noise. For each position l independently,

    theta^l ~ N(m0, S0),   r = <theta^l, x> + eps,   eps ~ N(0, s^2)          (known s)

gives the posterior N(m_n, P_n^{-1}) with

    P_n = P0 + X^T X / s^2,   b_n = P0 m0 + X^T y / s^2,   m_n = P_n^{-1} b_n,

where P0 = S0^{-1}. Each observation is a rank-one update of P_n *and* of its lower
Cholesky factor (O(p^2), :func:`~bayesrank.posteriors.linalg.chol_update`, rotations
applied to the factor as in a QR update); nothing is ever inverted after
construction. ``log det P_n`` is carried incrementally (matrix determinant lemma).

Numerics. P_n and b_n are also accumulated as compensated sums (``prec + prec_lo``,
``b + b_lo``: Knuth's TwoSum keeps each addition's rounding error), so they stay exact
to a few units in the last place however many observations arrive. The mean is the
factor's two triangular solves plus one step of iterative refinement against these
sums (``m += P^{-1}(b - P m)`` through the same factor, O(p^2)). Neither the running
factor nor the plain float64 sums alone is accurate in every design: after 100,000
updates at condition number 4e9 (tests/posteriors/conjugate/test_gaussian_numerics.py), a design
that never excites one direction (prior scale 100) defeats the factor, and a
full-rank design with tiny singular values (prior scale 1e4) the plain sums. The
refined mean is within 1e-7 (relative, against an extended-precision solve) in both
(the measured errors: docs/performance.md, "Why the code is written this way"); draws
keep the running factor, whose error is far below a draw's spread.

Non-stationarity: ``discount=gamma < 1`` is *stabilised* exponential forgetting
(Kulhavy & Zarrop 1993, "On a general concept of forgetting"; the prior is the
stabilising alternative): each observed update first shrinks the data part towards the
prior,

    P <- gamma P + (1 - gamma) P0,      b <- gamma b + (1 - gamma) P0 m0,

so ``P_n = P0 + sum_k gamma^(n-k) x_k x_k^T / s^2``: the prior keeps its full weight
(the posterior never drifts away from it), the data weigh at most ``1 / (1 - gamma)``
observations (it never collapses to a point), and a position that is not shown
(``valid`` False) is left exactly as it was.

``GaussianLinear(...)`` holds :class:`FixedScaleLinear` (the update above) where both
scales are numbers, else :class:`~bayesrank.posteriors.conjugate.learnt_scale.LearntScaleLinear`.

The Normal-Inverse-Gamma model (noise variance learnt),
:class:`~bayesrank.posteriors.conjugate.unknown_noise.GaussianLinearUnknownNoise`, lives in
:mod:`~bayesrank.posteriors.conjugate.unknown_noise` (re-exported here); what both share (prior, forgetting, shape
guards) in :mod:`~bayesrank.posteriors.conjugate.linear`, the compensated sums in :mod:`.linalg`, the host sampler
of ``to_datatree`` in :mod:`.host_sampler`.

States are NamedTuples of arrays only, batched over positions; L and p come from the
array shapes, so every method is pure, jittable and vmappable over runs.

Example:
    >>> import jax, jax.numpy as jnp
    >>> model = GaussianLinear(prior_scale=1.0, noise_scale=0.5)
    >>> state = model.init(L=3, p=2)
    >>> state = model.update(state, jnp.ones((3, 2)), jnp.array([1.0, 0.0, 2.0]))
    >>> theta, state = model.draw(jax.random.key(0), state)
    >>> theta.shape
    (3, 2)
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank.posteriors import linalg
from bayesrank.posteriors.base import ScaleHolder
from bayesrank.posteriors.conjugate.learnt_scale import LearntScaleLinear
from bayesrank.posteriors.conjugate.linear import (
    _ConjugateLinear,
    config_kwargs,
    reward_bound,
    select_valid,
)
from bayesrank.posteriors.datatree import make_datatree
from bayesrank.posteriors.host_sampler import host_draws, host_rng
from bayesrank.posteriors.linalg import accumulate
from bayesrank.posteriors.prior_checks import is_learnt, jsonable, valid_positive_scalar

__all__ = [
    "FixedScaleLinear",
    "GaussianLinear",
    "GaussianState",
]


class GaussianState(NamedTuple):
    """Posterior of :class:`GaussianLinear`, batched over the L positions.

    Example:
        >>> from bayesrank.posteriors import GaussianLinear
        >>> state = GaussianLinear(prior_scale=1.0, noise_scale=1.0).init(L=4, p=3)
        >>> state.prec.shape, state.n.tolist()
        ((4, 3, 3), [0, 0, 0, 0])
    """

    prec: jax.Array  # (L, p, p) posterior precision P_n = P0 + X^T X / s^2
    chol: jax.Array  # (L, p, p) lower Cholesky factor of prec
    b: jax.Array  # (L, p) P0 m0 + X^T y / s^2 (so the mean is prec^{-1} b)
    n: jax.Array  # (L,) int32, number of observations folded in
    logdet: jax.Array  # (L,) log det prec, carried incrementally
    prec_lo: jax.Array  # (L, p, p) rounding error of the sum prec (compensated sum)
    b_lo: jax.Array  # (L, p) rounding error of the sum b


# ------------------------------------------------------------------- known noise
class FixedScaleLinear(_ConjugateLinear):
    """The part :class:`GaussianLinear` holds when both scales are numbers: the
    conjugate Gaussian posterior per position with a fixed prior and a known noise
    scale (the module docstring). It describes itself as a ``GaussianLinear``
    (``repr``, ``config``, DataTree attributes).

    Args:
        prior_mean: scalar or (p,) prior mean m0 of theta.
        prior_scale: scalar or (p,) prior standard deviation(s), or a (p, p) prior
            covariance matrix S0 (symmetric positive definite).
        noise_scale: the known reward-noise standard deviation s > 0.
        discount: gamma in (0, 1], stabilised exponential forgetting for drifting
            rewards (1, the default, forgets nothing; 0.99 weighs about the last 100
            observations of a position). See the module docstring.

    Raises:
        ValueError: non-finite or non-positive scales, wrong or inconsistent shapes
            (the message names the argument).

    Example:
        >>> model = FixedScaleLinear(prior_mean=0.0, prior_scale=[1.0, 2.0])
        >>> state = model.init(L=4, p=2)
        >>> model.mean(state).shape
        (4, 2)
    """

    learnt_scale = False

    def __init__(self, prior_mean=0.0, prior_scale=1.0, noise_scale=1.0, *,
                 discount=1.0):
        super().__init__(prior_mean, prior_scale, discount)
        self.noise_scale = valid_positive_scalar(noise_scale, "noise_scale")

    def __repr__(self) -> str:
        return (
            f"GaussianLinear(prior_mean={self.prior_mean!r}, "
            f"prior_scale={self.prior_scale!r}, noise_scale={self.noise_scale!r}"
            + (f", discount={self.discount!r})" if self.discount != 1.0 else ")")
        )

    def reward_bound(self, dtype=None) -> tuple[float, str]:
        """The largest reward magnitude taken: b sums ``x r / s^2``
        (``conjugate.reward_bound`` with ``over=s^2``; docs/units.md)."""
        return reward_bound(dtype, over=float(self.noise_scale) ** 2)

    def init(self, L: int, p: int) -> GaussianState:
        """The prior, repeated for the L positions.

        Args:
            L: number of positions; p: feature dimension.

        Returns:
            GaussianState with shapes prec/chol (L, p, p), b (L, p), n/logdet (L,).
        """
        args = self._init_common(L, p)
        return GaussianState(*args, *self._zero_lo(args))

    def update(self, state: GaussianState, x, y, valid=None) -> GaussianState:
        """Fold one observation per position into the posterior, O(L p^2).

        Args:
            state: current posterior.
            x: (L, p) features of the shown items.
            y: (L,) rewards.
            valid: (L,) bool, False where the position is left unchanged; None = all.

        Returns:
            The updated state.
        """
        x, y, valid = self._valid_update_args(state, x, y, valid)
        inv_s = 1.0 / jnp.asarray(self.noise_scale, state.b.dtype)
        xs = x * inv_s
        prec, b, prec_lo, b_lo = self._forget(
            state.prec, state.b, state.prec_lo, state.b_lo
        )
        prec, prec_lo = accumulate(prec, prec_lo, xs[:, :, None] * xs[:, None, :])
        b, b_lo = accumulate(b, b_lo, xs * (y * inv_s)[:, None])
        if self.discount == 1.0:
            chol = jax.vmap(linalg.chol_update)(state.chol, xs)
            logdet = state.logdet + jax.vmap(linalg.logdet_increment)(state.chol, xs)
        else:  # forgetting rescales every direction: re-factorise (O(p^3))
            chol = jnp.linalg.cholesky(prec + prec_lo)
            logdet = linalg.chol_logdet(chol)
        new = GaussianState(
            prec=prec,
            chol=chol,
            b=b,
            n=state.n + 1,
            logdet=logdet,
            prec_lo=prec_lo,
            b_lo=b_lo,
        )
        return select_valid(valid, new, state)

    def draw(self, key, state: GaussianState) -> tuple[jax.Array, GaussianState]:
        """One theta per position from N(m_n, P_n^{-1}) (Cholesky of P_n, no inverse).

        Returns:
            theta (L, p), and the state unchanged.
        """
        return linalg.sample_per_position(key, self.mean(state), state.chol), state

    def draw_batch(self, key, state: GaussianState, n: int) -> jax.Array:
        """n independent draws of theta at once: (n, L, p) (a batch of requests)."""
        return linalg.sample_many_from_precision(key, self.mean(state), state.chol, n)

    def covariance(self, state: GaussianState) -> jax.Array:
        """Posterior covariance P_n^{-1} per position, (L, p, p) (for inspection)."""
        eye = jnp.eye(state.b.shape[1], dtype=state.b.dtype)
        return jax.vmap(lambda c: linalg.chol_solve(c, eye))(state.chol)

    def to_datatree(
        self,
        state: GaussianState,
        position: int,
        *,
        key,
        data=None,
        draws: int = 1000,
        chains: int = 4,
    ):
        """The exact posterior at one position, summarised as independent draws.

        Args:
            state: the posterior state.
            position: 0-based position.
            key: JAX PRNG key seeding the draws (keyword-only, required); the
                draws are made on the host with NumPy.
            draws, chains: the draws are ``chains`` x ``draws`` exact i.i.d. samples.
            data: ``(X (n, p), y (n,))``, every observation folded into this
                position (policies pass their history). The state keeps only
                sufficient statistics, so without data (or with no observations
                yet) the groups log_likelihood, observed_data and constant_data are
                left out: ``arviz.summary``, ``rhat`` and ``ess`` still work,
                ``psense_summary`` needs them (see
                :func:`bayesrank.posteriors.datatree.require_groups`).

        Returns:
            ``xarray.DataTree`` with posterior (theta), sample_stats (diverging),
            log_prior and, with data, log_likelihood, observed_data, constant_data.

        Raises:
            ValueError: bad position, or data whose length differs from the count
                of observations in the state.
        """
        position = self._valid_position(state, position)
        draws, chains = self._valid_draws(draws, chains)
        data = self._valid_data(data, state, position)
        theta = host_draws(
            host_rng(key),
            state.chol[position],
            state.b[position],
            np.ones(chains * draws),
        ).reshape(chains, draws, -1)
        p = theta.shape[-1]
        m0, _, C0, logdet0 = (np.asarray(a, float) for a in self.prior(p))
        r = (theta - m0) @ C0
        log_prior = (
            -0.5 * p * math.log(2 * math.pi) + 0.5 * logdet0 - 0.5 * np.sum(r * r, -1)
        )
        ll = obs = const = None
        if data is not None and data[0].shape[0] > 0:
            X, y = data
            s = float(self.noise_scale)
            resid = y - theta @ X.T
            ll = -0.5 * math.log(2 * math.pi * s * s) - 0.5 * (resid / s) ** 2
            obs, const = y, {"X": X}
        return make_datatree(
            theta,
            log_likelihood=ll,
            log_prior=log_prior,
            observed=obs,
            constant_data=const,
            attrs={"model": "GaussianLinear", "position": position,
                   **self._data_attrs(data, state, position)},
        )

    def config(self) -> dict:
        """JSON-able constructor arguments, with ``class`` (``"GaussianLinear"``)."""
        return {
            "class": "GaussianLinear",
            "prior_mean": jsonable(self.prior_mean),
            "prior_scale": jsonable(self.prior_scale),
            "noise_scale": jsonable(self.noise_scale),
            "discount": self.discount,
        }

    @classmethod
    def from_config(cls, cfg: dict) -> FixedScaleLinear:
        """Rebuild from :meth:`config` output."""
        return cls(**config_kwargs(cfg, "GaussianLinear"))


# ------------------------------------------------------------------ the model
class GaussianLinear(ScaleHolder):
    """Conjugate Gaussian linear posterior per position (identity link): by default
    it learns theta's prior scale and the noise's; numbers fix them.

    The scales choose the part the model holds, :attr:`scale_model`: a
    :class:`FixedScaleLinear` where both are numbers (exact conjugate update, known
    noise), else a :class:`~bayesrank.posteriors.conjugate.learnt_scale.LearntScaleLinear` (exact on
    a grid of the scale: :mod:`~bayesrank.posteriors.conjugate.learnt_scale`). The contract's methods run the held part's;
    every other attribute is the held part's too (``gram``, ``covariance``,
    ``draw_scales``, ``learn_noise``, ...), so ``hasattr`` says what it offers.
    :attr:`learnt_scale` says which part it is.

    Args:
        prior_mean: scalar or (p,) prior mean m0 of theta.
        prior_scale: None (learnt under
            :func:`~bayesrank.posteriors.hyperprior.default_hyperprior`), a NumPyro
            distribution on (0, inf) (the hyperprior of theta's prior sd over the
            noise sd), or a fixed scalar or (p,) prior sd or (p, p) covariance.
        noise_scale: None (learnt under Jeffreys' prior) or the known noise sd > 0.
        discount: gamma in (0, 1], stabilised exponential forgetting (1, the
            default, forgets nothing; 0.99 weighs about the last 100 observations of
            a position). See the module docstring.

    Raises:
        ValueError: non-finite or non-positive scales, wrong or inconsistent shapes,
            a hyperprior that is not a positive scalar distribution (the message
            names the argument).
        TypeError: a distribution as ``noise_scale``, a scale of another type.

    Example:
        >>> model = GaussianLinear()                      # both scales learnt
        >>> type(model).__name__, model.learnt_scale
        ('GaussianLinear', True)
        >>> fixed = GaussianLinear(prior_scale=1.0, noise_scale=0.5)
        >>> type(fixed.scale_model).__name__, fixed.learnt_scale
        ('FixedScaleLinear', False)
        >>> model.mean(model.init(L=4, p=2)).shape
        (4, 2)
    """

    reward_support = "real"
    vmappable = True

    def __init__(self, prior_mean=0.0, prior_scale=None, noise_scale=None, *,
                 discount=1.0):
        part = (LearntScaleLinear if is_learnt(prior_scale) or is_learnt(noise_scale)
                else FixedScaleLinear)
        #: the part doing the maths, FixedScaleLinear or LearntScaleLinear
        self.scale_model = part(prior_mean, prior_scale, noise_scale,
                                discount=discount)

    def reward_bound(self, dtype=None) -> tuple[float, str]:
        """The largest reward magnitude taken, and why (docs/units.md)."""
        return self.scale_model.reward_bound(dtype)

    # ---------------------------------------------------------- persistence
    #: The parts a config may name (its ``class``), looked up here, never imported.
    PARTS: dict = {"GaussianLinear": FixedScaleLinear,
                   "LearntScaleLinear": LearntScaleLinear}
    #: "GaussianLinear" configs go through the constructor (a scale left out is learnt)
    CONSTRUCTED = "GaussianLinear"
