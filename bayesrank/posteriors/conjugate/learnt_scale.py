# Over 450 lines because: one model, the learnt-scale conjugate posterior (state,
# update, draws, checks); its summaries and grid maths are modules of their own.
"""Conjugate linear posterior that learns its scales: the prior's and the noise's.

Identity link. For each position independently (p features, rewards in any units)::

    g ~ pi(g)                              signal-to-noise ratio (the hyperprior)
    s^2 ~ p(s^2) ∝ 1 / s^2                 noise variance (Jeffreys: no unit assumed)
    theta | g, s ~ N(m0, g^2 s^2 I)        theta's prior, scaled by the noise
    r = <theta, x> + eps,   eps ~ N(0, s^2)

Multiplying every reward by c multiplies s and theta - m0 by c and leaves g alone, so
the posterior of theta scales with the rewards and the lists a policy chooses do not
depend on the reward's units. With ``noise_scale`` a number s the noise is known and g
is theta's prior sd in reward units divided by s (``GaussianLinear(prior_scale=g s,
noise_scale=s)`` for a fixed g).

**Exact on a grid** (the hyperprior's grid and its maths: :mod:`~bayesrank.posteriors.conjugate.scale_grid`). theta and s^2 integrate out in closed form given g (the
Normal-Inverse-Gamma evidence), and g is one more coordinate integrated on a fixed
grid of ``GRID`` nodes, uniform in log g over the hyperprior's 1e-6 to 1 - 1e-6
quantiles. With running sums ``S = sum x x^T``, ``u = sum r x``, ``q = sum r^2`` and
``n`` (centred at m0) and the eigendecomposition ``S = U diag(D) U^T``, ``z = U^T u``::

    log p(y | g) = -1/2 sum_i log(1 + g^2 D_i) - n/2 log beta(g)     (s learnt)
                 = -1/2 sum_i log(1 + g^2 D_i) - beta(g) / (2 s^2)   (s known)
    beta(g) = q - sum_i z_i^2 / (D_i + 1/g^2)

The summaries (``mean``, ``covariance``, ``noise_mean``, DataTrees) use these
eigenpairs. A draw needs none: one O(p^3) Householder reduction per position and round
to tridiagonal form ``T = Q^T S Q`` (:func:`bayesrank.posteriors.conjugate.scale_grid.tridiagonal`, a quarter of an
eigendecomposition's time), then the LDL^T recurrence of ``T + I/g^2`` at every node,
O(G p), gives the same ``log p(y | g)``. A draw picks a node from the grid posterior
and spreads it uniformly over the node's cell in log g (the piecewise-constant
density the grid integrates: :func:`bayesrank.posteriors.hyperprior.grid_draw`), then
s^2 ~ InvGamma(n/2, beta(g)/2) (s learnt), and theta ~ N(m0 + (S + I/g^2)^-1 u,
s^2 (S + I/g^2)^-1) through the same factorisation of ``T + I/g^2``, whose pivots are
kept >= 1/g^2 (a Cholesky factor of S + I/g^2 meets negative pivots in float32 where
1/g^2 is below the rounding of S: NaN draws). A position with no
observation yet (n = 0: Jeffreys' prior is improper there) draws with s^2 the mean
squared (centred) reward of all positions, or 1 before any reward: a common factor of
every theta, so its value does not change the list before data arrive.

``discount=gamma < 1`` multiplies the sums (and n) by gamma before each observed
update: the prior keeps its full weight, the data weigh about 1 / (1 - gamma) rounds.

**Any reward magnitude.** u and q are kept in units of a running reward scale c, a
power of two shared by the positions (``2^(e-1)`` for the largest ``|r| = m 2^e``
seen), so that q never overflows (float32: r^2 does above 1.8e19) nor underflows
(below 1e-19); a larger reward rescales the sums by a power of two (exact). The
maths runs on the scaled sums and maps back by one product: rewards times a power
of two give the same grid posterior and lists, the mean times it exactly. The
bounds on the rewards: :meth:`LearntScaleLinear.reward_bound`, docs/units.md.

Example:
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from bayesrank.posteriors import GaussianLinear
    >>> model = GaussianLinear()                      # both scales learnt
    >>> type(model.scale_model).__name__              # the part it holds
    'LearntScaleLinear'
    >>> state = model.init(L=2, p=3)
    >>> state = model.update(state, jnp.ones((2, 3)), jnp.array([1.0, 2.0]))
    >>> theta, state = model.draw(jax.random.key(0), state)
    >>> theta.shape
    (2, 3)
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._static import Part
from bayesrank._validate import check_reward_support
from bayesrank.model.links import get_link
from bayesrank.posteriors.base import update_args
from bayesrank.posteriors.conjugate.learnt_scale_datatree import learnt_scale_datatree
from bayesrank.posteriors.conjugate.learnt_scale_summaries import LearntScaleSummaries
from bayesrank.posteriors.conjugate.linear import (
    config_kwargs,
    reward_bound,
    select_valid,
)
from bayesrank.posteriors.conjugate.scale_grid import (
    evidence_terms,
    tridiagonal,
    tridiagonal_draw,
    tridiagonal_loglik,
    tridiagonal_quad,
)
from bayesrank.posteriors.conjugate.variates import uniforms_normals_gamma
from bayesrank.posteriors.hyperprior import grid_draw_at, hyper_grid, valid_hyperprior
from bayesrank.posteriors.linalg import accumulate
from bayesrank.posteriors.prior_checks import (
    jsonable,
    valid_discount,
    valid_L_p,
    valid_positive_scalar,
    valid_prior,
)
from bayesrank.posteriors.w_prior import (
    is_distribution,
    prior_config,
    prior_from_config,
)

__all__ = ["LearntScaleLinear", "LearntScaleState"]


class LearntScaleState(NamedTuple):
    """Running sums per position (rewards in their own units).

    Example:
        >>> from bayesrank.posteriors import GaussianLinear
        >>> state = GaussianLinear().init(L=4, p=3)
        >>> state.S.shape, state.n.tolist()
        ((4, 3, 3), [0.0, 0.0, 0.0, 0.0])
    """

    S: jax.Array  # (L, p, p) sum x x^T
    u: jax.Array  # (L, p) sum r x
    q: jax.Array  # (L,) sum r^2
    n: jax.Array  # (L,) (discounted) number of observations
    S_lo: jax.Array  # (L, p, p) rounding error of the sum S (compensated sum)
    u_lo: jax.Array  # (L, p) rounding error of u
    q_lo: jax.Array  # (L,) rounding error of q
    #: the unit c of u, q and their errors (L,), a power of two, equal at every
    #: position; 0 (before a non-zero reward) or None (the sums of ``given_w``) read as 1
    scale: jax.Array | None = None


class LearntScaleLinear(LearntScaleSummaries, Part):
    """Conjugate Gaussian posterior per position whose prior scale (and noise scale)
    are learnt: see the module docstring. The part ``GaussianLinear(...)`` holds
    (``GaussianLinear.scale_model``) when a scale is None
    or a distribution; it describes itself as a ``GaussianLinear`` (``repr``).

    Args:
        prior_mean: scalar or (p,) prior mean m0 of theta.
        prior_scale: None (learnt under :func:`default_hyperprior`) or a NumPyro
            distribution on (0, inf): the hyperprior of g, theta's prior sd in units
            of the noise sd (with a known noise, of that number).
        noise_scale: None (learnt under Jeffreys' prior) or the known noise sd > 0.
        discount: gamma in (0, 1], stabilised forgetting (see the module docstring).

    Raises:
        ValueError: a hyperprior that is not a positive scalar distribution,
            non-finite or non-positive numbers (the message names the argument).
        TypeError: a scale that is neither None, a number, an array nor a
            distribution; a distribution as ``noise_scale``.

    Example:
        >>> import numpyro.distributions as dist
        >>> from bayesrank.posteriors import GaussianLinear
        >>> GaussianLinear(prior_scale=dist.HalfNormal(1.0), noise_scale=2.0)
        GaussianLinear(prior_mean=0.0, prior_scale=HalfNormal(...), noise_scale=2.0)
    """

    link = get_link("identity")
    reward_support = "real"
    vmappable = True
    learnt_scale = True

    def __init__(self, prior_mean=0.0, prior_scale=None, noise_scale=None, *,
                 discount=1.0):
        self.prior_mean, _, self._p = valid_prior(prior_mean, 1.0)
        self.fixed_scale = None
        # None, or (p, p): theta = m0 + shape z (a fixed per-coordinate prior scale)
        self.shape = None
        if prior_scale is None or is_distribution(prior_scale):
            self.hyperprior = valid_hyperprior(prior_scale, "prior_scale")
            log_g, logw = hyper_grid(self.hyperprior)
        else:  # fixed: only the noise is learnt (Normal-Inverse-Gamma, Jeffreys)
            _, scale, p_scale = valid_prior(0.0, prior_scale)
            self._p = self._p if p_scale is None else p_scale
            if self._p is not None and np.ndim(self.prior_mean) == 1 \
                    and np.shape(self.prior_mean)[0] != self._p:
                raise ValueError(f"prior_scale: its dimension {p_scale} does not match "
                                 f"prior_mean's {np.shape(self.prior_mean)[0]}")
            self.hyperprior = None
            self.fixed_scale = jsonable(scale)
            if np.ndim(scale) == 0:
                log_g = np.array([math.log(float(scale))])
            else:  # a (p,) or (p, p) shape; g = 1
                self.shape = np.asarray(np.diag(scale) if np.ndim(scale) == 1
                                        else np.linalg.cholesky(scale), float)
                log_g = np.zeros(1)
            logw = np.zeros(1)
        if is_distribution(noise_scale):
            raise TypeError(
                "noise_scale: the conjugate model learns the noise sd under Jeffreys' "
                "prior (noise_scale=None) or takes it as a number; for another "
                "hyperprior of the noise use BayesGLM(noise_scale=...)"
            )
        self.noise_scale = (None if noise_scale is None
                            else valid_positive_scalar(noise_scale, "noise_scale"))
        self.discount = valid_discount(discount)
        self.log_g = np.asarray(log_g, float)
        self.log_w0 = np.asarray(logw, float)

    @property
    def learn_noise(self) -> bool:
        """Whether the noise sd is learnt (``noise_scale=None``)."""
        return self.noise_scale is None

    def __repr__(self) -> str:
        ps = (f"{type(self.hyperprior).__name__}(...)" if self.hyperprior is not None
              else repr(self.fixed_scale))
        return (f"GaussianLinear(prior_mean={self.prior_mean!r}, prior_scale={ps}, "
                f"noise_scale={self.noise_scale!r}"
                + (f", discount={self.discount!r})" if self.discount != 1.0 else ")"))

    def label(self) -> str:
        """Short name for reports."""
        return "GaussianLinear(learnt scales)"

    # ----------------------------------------------------------------- state
    def init(self, L: int, p: int) -> LearntScaleState:
        """Empty sums for L positions: S (L, p, p), u (L, p), q and n (L,)."""
        L, p = valid_L_p(L, p, self._p)
        dtype = jnp.result_type(float)
        S = jnp.zeros((L, p, p), dtype)
        u = jnp.zeros((L, p), dtype)
        q = jnp.zeros((L,), dtype)
        return LearntScaleState(S, u, q, q, S, u, q, q)

    def update(self, state: LearntScaleState, x, y, valid=None) -> LearntScaleState:
        """Fold one observation per position in, O(L p^2): x (L, p), y (L,),
        valid (L,) bool (False leaves the position exactly as it was)."""
        x, y, valid = update_args(x, y, valid, *state.u.shape, state.u.dtype)
        state = self._rescaled(state, y, valid)  # every position: one scale
        old = state
        sums = state[:7]
        if self.discount != 1.0:
            g = jnp.asarray(self.discount, state.u.dtype)
            sums = tuple(g * a for a in sums)
        S, u, q, n, S_lo, u_lo, q_lo = sums
        y = y / self._unit(state)
        S, S_lo = accumulate(S, S_lo, x[:, :, None] * x[:, None, :])
        u, u_lo = accumulate(u, u_lo, x * y[:, None])
        q, q_lo = accumulate(q, q_lo, y * y)
        new = LearntScaleState(S, u, q, n + 1.0, S_lo, u_lo, q_lo, state.scale)
        return select_valid(valid, new, old)

    @staticmethod
    def _rescaled(state: LearntScaleState, y, valid) -> LearntScaleState:
        """The state with its scale raised to cover the observed ``y (L,)`` (at
        least the smallest normal number), u and q moved to it (powers of two)."""
        dtype = state.u.dtype
        old = (jnp.zeros(state.n.shape, dtype) if state.scale is None
               else state.scale)
        top = jnp.max(jnp.where(valid, jnp.abs(y), 0.0))
        e = jnp.frexp(top)[1]
        need = jnp.where(top > 0, jnp.maximum(jnp.ldexp(jnp.ones((), dtype), e - 1),
                                              jnp.finfo(dtype).tiny), 0.0)
        new = jnp.maximum(old, need)
        f = jnp.where(old > 0, old / jnp.where(new > 0, new, 1.0), 0.0)  # old 0: u = 0
        f2 = f * f  # q sums squares
        return state._replace(u=state.u * f[:, None], q=state.q * f2,
                              u_lo=state.u_lo * f[:, None], q_lo=state.q_lo * f2,
                              scale=new)

    def check_rewards(self, y) -> None:
        """Host-side check: finite real rewards within :meth:`reward_bound` (raises
        ValueError/TypeError naming ``rewards``)."""
        bound, why = self.reward_bound()
        check_reward_support(y, "real", name="rewards", bound=bound, why=why)

    def reward_bound(self, dtype=None) -> tuple[float, str]:
        """The largest reward magnitude taken (``conjugate.reward_bound``; a
        known noise sd s: the evidence sums squares in units of s)."""
        return reward_bound(dtype, square_unit=self.noise_scale)

    def refresh(self, key, state):
        """Closed form: :meth:`mean` is always current (no-op)."""
        del key
        return state

    # ------------------------------------------------------------------ maths
    def _m0(self, p: int, dtype):
        return jnp.broadcast_to(jnp.asarray(self.prior_mean, dtype), (p,))

    @staticmethod
    def _unit(state) -> jax.Array:
        """(L,) the unit of a state's u and q: its scale, 1 where 0 or None."""
        if state.scale is None:
            return jnp.ones(state.n.shape, state.u.dtype)
        return jnp.where(state.scale > 0, state.scale, 1.0).astype(state.u.dtype)

    def _sf(self, dtype):
        return jnp.asarray(1.0 if self.noise_scale is None else self.noise_scale, dtype)

    def _units(self, state):
        """``m0 / c (L, p)``, the unit ``sf' (L,)`` the maths whitens the scaled sums
        by (1, or ``sf / c`` with a known noise) and ``out (L,)`` (c, or sf): theta
        = m0 + out A zeta."""
        dtype, p = state.u.dtype, state.u.shape[-1]
        c = self._unit(state)
        m0 = self._m0(p, dtype)[None, :] / c[:, None]
        if self.learn_noise:
            return m0, jnp.ones_like(c), c
        sf = self._sf(dtype)
        return m0, sf / c, jnp.broadcast_to(sf, c.shape)

    def _fallback_var(self, state):
        """The variance used where a position has no data: the mean squared centred
        reward over all positions (over sf'^2: :meth:`_units`), or 1 before any."""
        dtype = state.u.dtype
        m0, sfs, _ = self._units(state)
        qc = (state.q - 2.0 * jnp.einsum("li,li->l", state.u, m0)
              + jnp.einsum("lij,li,lj->l", state.S, m0, m0)) / sfs**2
        tot_n = jnp.sum(state.n)
        return jnp.where(tot_n > 0, jnp.sum(qc) / jnp.maximum(tot_n, 1e-30),
                         jnp.ones((), dtype))

    def _tri(self, state: LearntScaleState):
        """Every position's :class:`~bayesrank.posteriors.conjugate.scale_grid.Tridiagonal` form of its sums (in
        the state's units: :meth:`_units`)."""
        dtype = state.u.dtype
        m0, sfs, _ = self._units(state)
        A = None if self.shape is None else jnp.asarray(self.shape, dtype)
        return jax.vmap(lambda S, u, q, m, sf: tridiagonal(S, u, q, m, sf, A))(
            state.S + state.S_lo, state.u + state.u_lo, state.q + state.q_lo, m0, sfs)

    def _grid_posterior(self, state: LearntScaleState):
        """:meth:`_tri`, ``beta (L, G)`` and the grid posterior's normalised log
        weights ``(L, G)`` (:func:`bayesrank.posteriors.conjugate.scale_grid.tridiagonal_loglik`: no eigh)."""
        tri = self._tri(state)
        log_g = jnp.asarray(self.log_g, state.u.dtype)
        beta, loglik = jax.vmap(
            lambda t, n: tridiagonal_loglik(t, n, log_g, self.learn_noise))(tri, state.n)
        logits = jnp.asarray(self.log_w0, state.u.dtype)[None, :] + loglik
        return tri, beta, logits - jax.scipy.special.logsumexp(logits, -1, keepdims=True)

    def _randomness(self, key, state, shape, n_uniform):
        """Uniforms, p normals and Gamma(n/2) variates from one generator call
        (:mod:`~bayesrank.posteriors.conjugate.variates`: on the CPU each ``jax.random`` call is a loop)."""
        return uniforms_normals_gamma(key, jnp.maximum(0.5 * state.n, 1e-3), shape,
                                      n_uniform=n_uniform, n_normal=state.u.shape[-1])

    def _noise(self, tri, state, log_g, gam):
        """s^2 | g, D over sf^2 from Gamma(n/2, 1) variates (1 with the noise known)."""
        if not self.learn_noise:
            return jnp.ones(log_g.shape, log_g.dtype)
        quad = tridiagonal_quad(tri, jnp.exp(-2.0 * log_g))
        beta = evidence_terms(0.0, quad, tri.qc, state.n, True, jnp)[0]
        return jnp.where(state.n > 0, 0.5 * beta / gam, self._fallback_var(state))

    def _draw_parts(self, key, state, shape):
        """log g (as :func:`bayesrank.posteriors.hyperprior.grid_draw`), s^2 | g over sf^2 and standard
        normals for draws of the given leading shape; arrays (*shape, L[, p])."""
        tri, _, logw = self._grid_posterior(state)
        u, eps, gam = self._randomness(key, state, shape, 1)
        log_g = grid_draw_at(u[..., 0], jnp.asarray(self.log_g, u.dtype), logw)
        return tri, log_g, self._noise(tri, state, log_g, gam), eps

    def draw_given_scale(self, key, state: LearntScaleState, log_g) -> jax.Array:
        """One theta per position given ``log g (L,)`` (a latent-w chain's node):
        s^2 | g, D, then theta | g, s, D; (L, p)."""
        tri = self._tri(state)
        _, eps, gam = self._randomness(key, state, (), 0)
        return self._theta(tri, log_g, self._noise(tri, state, log_g, gam), eps,
                           state)

    def _theta(self, tri, log_g, s2, eps, state):
        """theta from log g, s^2 and standard normals eps (..., L, p):
        N((S + I/g^2)^-1 u, s^2 (S + I/g^2)^-1) through the positions' shared
        tridiagonal form (:func:`bayesrank.posteriors.conjugate.scale_grid.tridiagonal_draw`: no Cholesky, whose
        pivots float32 rounding can make negative where 1/g^2 is tiny)."""
        return self._to_theta(tridiagonal_draw(tri, jnp.exp(-2.0 * log_g), jnp.sqrt(s2),
                                               eps), state)

    def _to_theta(self, zeta, state):
        """theta = m0 + out A zeta for whitened coordinates zeta (..., L, p) in the
        state's units (``out``: :meth:`_units`)."""
        dtype = zeta.dtype
        p = zeta.shape[-1]
        if self.shape is not None:
            zeta = zeta @ jnp.asarray(self.shape, dtype).T
        return self._m0(p, dtype) + self._units(state)[2][:, None] * zeta

    def draw(self, key, state: LearntScaleState):
        """One theta per position: g from its grid posterior, s^2 | g, theta | g, s.

        Returns:
            theta (L, p), and the state unchanged.
        """
        parts, k, s2, eps = self._draw_parts(key, state, ())
        return self._theta(parts, k, s2, eps, state), state

    def draw_batch(self, key, state: LearntScaleState, n: int) -> jax.Array:
        """n independent draws at once: (n, L, p)."""
        parts, k, s2, eps = self._draw_parts(key, state, (int(n),))
        return self._theta(parts, k, s2, eps, state)

    def draw_scales(self, key, state: LearntScaleState, n: int):
        """n independent draws with their scales: ``theta (n, L, p)``, ``g (n, L)``
        (theta's prior sd over the noise sd) and ``s (n, L)`` (the noise sd: the
        known one where it is a number)."""
        parts, log_g, s2, eps = self._draw_parts(key, state, (int(n),))
        return (self._theta(parts, log_g, s2, eps, state), jnp.exp(log_g),
                jnp.sqrt(s2) * self._units(state)[2])

    # ------------------------------------------------------------ host side
    def to_datatree(self, state: LearntScaleState, position: int, *, key, data=None,
                    draws: int = 1000, chains: int = 4):
        """Exact posterior draws at one position as an ArviZ DataTree.

        Posterior variables ``theta`` (chain, draw, theta_dim), ``prior_scale`` (g:
        theta's prior sd over the noise sd) and, where learnt, ``noise_scale``.
        ``log_prior`` holds theta's Gaussian term, the hyperprior of g and (learnt
        noise) Jeffreys' ``-log s`` (improper: defined up to a constant). See
        :meth:`GaussianLinear.to_datatree` for ``data`` and the other arguments.
        """
        return learnt_scale_datatree(self, state, position, key=key, data=data,
                                     draws=draws, chains=chains)

    # ------------------------------------------------------------ persistence
    def validate_loaded(self, state, name: str = "model") -> None:
        """Host-side check of a state read from a file (``load`` calls it), beside the
        loader's generic ones (finite, S PSD, q >= 0): without forgetting the counts
        are whole numbers; the reward unit ``scale`` is 0 or a positive power of two,
        the same at every position.

        Raises:
            ValueError: naming ``name.<field>`` and what was expected.
        """
        n = np.asarray(state.n, float)
        if self.discount == 1.0 and np.any(n != np.round(n)):
            bad = float(n[n != np.round(n)][0])
            raise ValueError(f"{name}.n: expected whole counts (no discount), got {bad}")
        if state.scale is not None:
            c = np.asarray(state.scale, float)
            mant = np.frexp(c)[0]
            if not (np.all(np.isfinite(c)) and np.all(c >= 0)
                    and np.all((c == 0) | (mant == 0.5)) and np.all(c == c.flat[0])):
                raise ValueError(f"{name}.scale: expected one power of two (or 0) for "
                                 f"every position, got {c.tolist()}")

    def config(self) -> dict:
        """JSON-able constructor arguments, with ``class``."""
        hyper = self.fixed_scale
        if self.hyperprior is not None:
            hyper = prior_config(self.hyperprior)
            if hyper["params"] is None:
                raise ValueError(f"prior_scale: cannot save the hyperprior: {hyper['why']}")
        return {"class": type(self).__name__,
                "prior_mean": jsonable(self.prior_mean),
                "prior_scale": hyper,
                "noise_scale": None if self.noise_scale is None
                else jsonable(self.noise_scale),
                "discount": self.discount}

    @classmethod
    def from_config(cls, cfg: dict) -> LearntScaleLinear:
        """Rebuild from :meth:`config` (the hyperprior by class name, never imported)."""
        kw = config_kwargs(cfg, cls.__name__)
        if isinstance(kw.get("prior_scale"), dict):  # a hyperprior
            try:
                kw["prior_scale"] = prior_from_config(kw["prior_scale"])
            except ValueError as exc:
                raise ValueError(str(exc).replace("w_prior:", "prior_scale:", 1)) \
                    from None
        return cls(**kw)
