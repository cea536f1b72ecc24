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

**Exact on a grid.** theta and s^2 integrate out in closed form given g (the
Normal-Inverse-Gamma evidence), and g is one more coordinate integrated on a fixed
grid of ``GRID`` nodes, uniform in log g over the hyperprior's 1e-6 to 1 - 1e-6
quantiles. With running sums ``S = sum x x^T``, ``u = sum r x``, ``q = sum r^2`` and
``n`` (centred at m0) and the eigendecomposition ``S = U diag(D) U^T``, ``z = U^T u``::

    log p(y | g) = -1/2 sum_i log(1 + g^2 D_i) - n/2 log beta(g)     (s learnt)
                 = -1/2 sum_i log(1 + g^2 D_i) - beta(g) / (2 s^2)   (s known)
    beta(g) = q - sum_i z_i^2 / (D_i + 1/g^2)

one O(p^3) eigendecomposition per position and round, then O(G p). A draw picks g
from its grid posterior, s^2 ~ InvGamma(n/2, beta(g)/2) (s learnt), and
``theta = m0 + U (z / (D + 1/g^2) + s eps / sqrt(D + 1/g^2))``. A position with no
observation yet (n = 0: Jeffreys' prior is improper there) draws with s^2 the mean
squared (centred) reward of all positions, or 1 before any reward: a common factor of
every theta, so its value does not change the list before data arrive.

``discount=gamma < 1`` multiplies the sums (and n) by gamma before each observed
update: the prior keeps its full weight, the data weigh about 1 / (1 - gamma) rounds.

Example:
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from bayesrank.posteriors import GaussianLinear
    >>> model = GaussianLinear()                      # both scales learnt
    >>> type(model).__name__
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
from bayesrank._validate import check_position, check_reward_support
from bayesrank.model.links import get_link
from bayesrank.posteriors import gaussian
from bayesrank.posteriors.datatree import make_datatree
from bayesrank.posteriors.gaussian import (
    _ConjugateLinear,
    _host_rng,
    _jsonable,
    _valid_discount,
    _valid_L_p,
    _valid_positive_scalar,
    _valid_prior,
    accumulate,
    is_learnt,
)
from bayesrank.posteriors.w_prior import (
    _refuse_bad_parameters,
    is_distribution,
    prior_config,
    prior_from_config,
    prior_range,
)

__all__ = [
    "GRID",
    "LearntScaleLinear",
    "LearntScaleState",
    "default_hyperprior",
    "is_learnt",
    "valid_hyperprior",
]

#: Grid nodes of log g (uniform in log g over the hyperprior's central 1 - 2e-6 mass).
GRID = 160
#: Quantiles of the hyperprior that bound the grid.
TAIL = 1e-6


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


class LearntScaleLinear(Part):
    """Conjugate Gaussian posterior per position whose prior scale (and noise scale)
    are learnt: see the module docstring. Built by ``GaussianLinear(...)`` when a
    scale is None or a distribution.

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
        self.prior_mean, _, self._p = _valid_prior(prior_mean, 1.0)
        self.fixed_scale = None
        # None, or (p, p): theta = m0 + shape z (a fixed per-coordinate prior scale)
        self.shape = None
        if prior_scale is None or is_distribution(prior_scale):
            self.hyperprior = valid_hyperprior(prior_scale, "prior_scale")
            log_g, logw = _hyper_grid(self.hyperprior)
        else:  # fixed: only the noise is learnt (Normal-Inverse-Gamma, Jeffreys)
            _, scale, p_scale = _valid_prior(0.0, prior_scale)
            self._p = self._p if p_scale is None else p_scale
            if self._p is not None and np.ndim(self.prior_mean) == 1 \
                    and np.shape(self.prior_mean)[0] != self._p:
                raise ValueError(f"prior_scale: its dimension {p_scale} does not match "
                                 f"prior_mean's {np.shape(self.prior_mean)[0]}")
            self.hyperprior = None
            self.fixed_scale = _jsonable(scale)
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
                            else _valid_positive_scalar(noise_scale, "noise_scale"))
        self.discount = _valid_discount(discount)
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
        L, p = _valid_L_p(L, p, self._p)
        dtype = jnp.result_type(float)
        S = jnp.zeros((L, p, p), dtype)
        u = jnp.zeros((L, p), dtype)
        q = jnp.zeros((L,), dtype)
        return LearntScaleState(S, u, q, q, S, u, q)

    def update(self, state: LearntScaleState, x, y, valid=None) -> LearntScaleState:
        """Fold one observation per position in, O(L p^2): x (L, p), y (L,),
        valid (L,) bool (False leaves the position exactly as it was)."""
        x, y, valid = _ConjugateLinear._valid_update_args(_Shim(state), x, y, valid)
        old = state
        if self.discount != 1.0:
            g = jnp.asarray(self.discount, state.u.dtype)
            state = LearntScaleState(*(g * a for a in state))
        S, S_lo = accumulate(state.S, state.S_lo, x[:, :, None] * x[:, None, :])
        u, u_lo = accumulate(state.u, state.u_lo, x * y[:, None])
        q, q_lo = accumulate(state.q, state.q_lo, y * y)
        new = LearntScaleState(S, u, q, state.n + 1.0, S_lo, u_lo, q_lo)
        return _ConjugateLinear._select(valid, new, old)

    def check_rewards(self, y) -> None:
        """Host-side check: finite real rewards (raises ValueError/TypeError)."""
        check_reward_support(y, "real", name="rewards")

    def refresh(self, key, state):
        """Closed form: :meth:`mean` is always current (no-op)."""
        del key
        return state

    # ------------------------------------------------------------------ maths
    def _m0(self, p: int, dtype):
        return jnp.broadcast_to(jnp.asarray(self.prior_mean, dtype), (p,))

    def _sf(self, dtype):
        return jnp.asarray(1.0 if self.noise_scale is None else self.noise_scale, dtype)

    def _terms(self, state: LearntScaleState):
        """grid_terms for every position (vmapped) and the normalised log weights."""
        dtype = state.u.dtype
        p = state.u.shape[-1]
        m0, sf = self._m0(p, dtype), self._sf(dtype)
        log_g = jnp.asarray(self.log_g, dtype)

        A = None if self.shape is None else jnp.asarray(self.shape, dtype)

        def one(S, u, q, n):
            return grid_terms(S, u, q, n, m0, log_g, self.learn_noise, sf, A=A)

        U, D, z, denom, beta, loglik = jax.vmap(one)(
            state.S + state.S_lo, state.u + state.u_lo, state.q + state.q_lo, state.n)
        logits = jnp.asarray(self.log_w0, dtype)[None, :] + loglik
        logw = logits - jax.scipy.special.logsumexp(logits, axis=-1, keepdims=True)
        return U, D, z, denom, beta, logw

    def _fallback_var(self, state):
        """The variance used where a position has no data: the mean squared centred
        reward over all positions (over sf^2), or 1 before any reward."""
        dtype = state.u.dtype
        p = state.u.shape[-1]
        m0, sf = self._m0(p, dtype), self._sf(dtype)
        qc = (state.q - 2.0 * state.u @ m0 + jnp.einsum("lij,i,j->l", state.S, m0, m0))
        tot_n = jnp.sum(state.n)
        return jnp.where(tot_n > 0, jnp.sum(qc) / jnp.maximum(tot_n, 1e-30) / sf**2,
                         jnp.ones((), dtype))

    def _draw_parts(self, key, state, shape):
        """Grid index, noise variance (over sf^2) and standard normals for draws of
        the given leading shape (e.g. () or (n,)); arrays (*shape, L[, p])."""
        U, _, z, denom, beta, logw = self._terms(state)
        L, p = state.u.shape
        dtype = state.u.dtype
        k_g, k_s, k_e = jax.random.split(key, 3)
        k = jax.random.categorical(k_g, logw, axis=-1, shape=(*shape, L))
        if self.learn_noise:
            a = 0.5 * state.n
            b = 0.5 * jnp.take_along_axis(
                jnp.broadcast_to(beta, (*shape, *beta.shape)), k[..., None], -1)[..., 0]
            gam = jax.random.gamma(k_s, jnp.maximum(a, 1e-3), (*shape, L), dtype)
            s2 = jnp.where(state.n > 0, b / gam, self._fallback_var(state))
        else:
            s2 = jnp.ones((*shape, L), dtype)
        eps = jax.random.normal(k_e, (*shape, L, p), dtype)
        S = state.S + state.S_lo
        if self.shape is not None:
            A = jnp.asarray(self.shape, dtype)
            S = jnp.swapaxes(A, -1, -2) @ S @ A
        return (U, z, denom, S), k, s2, eps

    def _theta(self, parts, k, s2, eps):
        """theta from the grid index k, s^2 and standard normals eps (..., L, p).

        The mean ``(S + I/g^2)^-1 u`` comes from the eigenpairs (unique whatever
        their signs); the spread is drawn through the Cholesky factor of ``S + I/g^2``,
        so a draw does not depend on the arbitrary signs or the basis of repeated
        eigenvalues that an eigendecomposition returns (they differ between
        programs, devices and JAX versions)."""
        U, z, denom, S = parts
        den = jnp.take_along_axis(
            jnp.broadcast_to(denom, (*k.shape[:-1], *denom.shape)),
            k[..., None, None], axis=-2)[..., 0, :]  # (..., L, p)
        mean = jnp.einsum("lij,...lj->...li", U, z / den)
        inv_g2 = jnp.exp(-2.0 * jnp.asarray(self.log_g, S.dtype))[k]  # (..., L)
        p = S.shape[-1]
        P = S + inv_g2[..., None, None] * jnp.eye(p, dtype=S.dtype)
        C = jnp.linalg.cholesky(P)
        spread = jax.lax.linalg.triangular_solve(
            C, eps[..., None], left_side=True, lower=True, transpose_a=True)[..., 0]
        return self._to_theta(mean + jnp.sqrt(s2)[..., None] * spread)

    def _to_theta(self, zeta):
        """theta = m0 + sf A zeta for whitened coordinates zeta (..., p)."""
        dtype = zeta.dtype
        p = zeta.shape[-1]
        if self.shape is not None:
            zeta = zeta @ jnp.asarray(self.shape, dtype).T
        return self._m0(p, dtype) + self._sf(dtype) * zeta

    def draw(self, key, state: LearntScaleState):
        """One theta per position: g from its grid posterior, s^2 | g, theta | g, s.

        Returns:
            theta (L, p), and the state unchanged.
        """
        parts, k, s2, eps = self._draw_parts(key, state, ())
        return self._theta(parts, k, s2, eps), state

    def draw_batch(self, key, state: LearntScaleState, n: int) -> jax.Array:
        """n independent draws at once: (n, L, p)."""
        parts, k, s2, eps = self._draw_parts(key, state, (int(n),))
        return self._theta(parts, k, s2, eps)

    def draw_scales(self, key, state: LearntScaleState, n: int):
        """n independent draws with their scales: ``theta (n, L, p)``, ``g (n, L)``
        (theta's prior sd over the noise sd) and ``s (n, L)`` (the noise sd: the
        known one where it is a number)."""
        parts, k, s2, eps = self._draw_parts(key, state, (int(n),))
        g = jnp.exp(jnp.asarray(self.log_g, s2.dtype))[k]
        return self._theta(parts, k, s2, eps), g, jnp.sqrt(s2) * self._sf(s2.dtype)

    def scale_posterior(self, state: LearntScaleState):
        """The grid posterior of g per position: ``(g (G,), weights (L, G))``."""
        logw = self._terms(state)[-1]
        return jnp.exp(jnp.asarray(self.log_g, logw.dtype)), jnp.exp(logw)

    def mean(self, state: LearntScaleState) -> jax.Array:
        """Posterior mean of theta per position, (L, p) (averaged over g's grid)."""
        U, _, z, denom, _, logw = self._terms(state)
        w = jnp.exp(logw)  # (L, G)
        coef = jnp.einsum("lg,lgp->lp", w, z[:, None, :] / denom)
        return self._to_theta(jnp.einsum("lij,lj->li", U, coef))

    def noise_mean(self, state: LearntScaleState) -> jax.Array:
        """Posterior mean of the noise variance per position (L,): E[s^2 | data]
        (the known s^2 where the noise is known; inf where n <= 2)."""
        _, _, _, _, beta, logw = self._terms(state)
        if not self.learn_noise:
            return jnp.broadcast_to(self._sf(beta.dtype) ** 2, state.n.shape)
        e = jnp.sum(jnp.exp(logw) * beta, -1) / jnp.where(
            state.n > 2, state.n - 2.0, jnp.nan)
        return jnp.where(state.n > 2, e, jnp.inf)

    def noise_sd(self, state: LearntScaleState) -> jax.Array:
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
        return sf * jnp.sqrt(jnp.where(many, e, self._fallback_var(state)))

    def covariance(self, state: LearntScaleState) -> jax.Array:
        """Posterior covariance of theta per position, (L, p, p): the mixture over
        g of ``E[s^2 | g] (S + I/g^2)^-1`` plus the spread of the means (inf where
        the noise is learnt and n <= 2)."""
        U, _, z, denom, beta, logw = self._terms(state)
        w = jnp.exp(logw)
        sf2 = self._sf(z.dtype) ** 2
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
        return sf2 * jnp.einsum("lij,ljk,lmk->lim", U, inner, U)

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
        shim = _Shim(state)
        pos = check_position(position, shim.b.shape[0])
        draws, chains = _ConjugateLinear._valid_draws(draws, chains)
        data = _ConjugateLinear._valid_data(data, shim, pos)
        N = chains * draws
        S, u, q, n = (np.asarray(a, float)[pos] for a in (
            state.S + state.S_lo, state.u + state.u_lo, state.q + state.q_lo, state.n))
        p = u.shape[0]
        m0 = np.broadcast_to(np.asarray(self.prior_mean, float), (p,))
        sf = 1.0 if self.noise_scale is None else float(self.noise_scale)
        U, _, z, denom, beta, loglik = grid_terms(
            S, u, q, n, m0, self.log_g, self.learn_noise, sf, xp=np, A=self.shape)
        logits = self.log_w0 + loglik
        w = np.exp(logits - np.logaddexp.reduce(logits))
        rng = _host_rng(key)
        k = rng.choice(len(w), size=N, p=w / w.sum())
        if self.learn_noise:
            s2 = (0.5 * beta[k] / rng.gamma(0.5 * n, 1.0, N) if n > 0
                  else np.full(N, float(np.asarray(self._fallback_var(state)))))
        else:
            s2 = np.ones(N)
        eps = rng.standard_normal((N, p))
        den = denom[k]
        A = np.eye(p) if self.shape is None else self.shape
        Sw = A.T @ S @ A
        P = Sw[None] + np.exp(-2.0 * self.log_g[k])[:, None, None] * np.eye(p)[None]
        C = np.linalg.cholesky(P)  # the spread as in _theta: no eigenvector signs
        spread = np.linalg.solve(np.swapaxes(C, -1, -2), eps[..., None])[..., 0]
        zeta = (z / den) @ U.T + np.sqrt(s2)[:, None] * spread
        theta = m0 + sf * zeta @ A.T
        g = np.exp(self.log_g[k])
        sd = g * np.sqrt(s2) * sf  # theta's prior sd (in units of A) in reward units
        lp_theta = (-p * np.log(np.sqrt(2 * math.pi) * sd)
                    - np.sum(np.log(np.abs(np.diag(A))))
                    - 0.5 * np.sum(zeta**2, -1) * sf**2 / sd**2)
        variables = {"theta": theta.reshape(chains, draws, p)}
        log_prior = {"theta": lp_theta.reshape(chains, draws)}
        if self.fixed_scale is None:
            variables["prior_scale"] = g.reshape(chains, draws)
            log_prior["prior_scale"] = self._log_hyper(g).reshape(chains, draws)
        if self.learn_noise:
            variables["noise_scale"] = np.sqrt(s2).reshape(chains, draws)
            log_prior["noise_scale"] = -0.5 * np.log(s2).reshape(chains, draws)
        ll = obs = const = None
        if data is not None and data[0].shape[0] > 0:
            X, y = data
            resid = y - theta.reshape(chains, draws, p) @ X.T
            v = (s2 * sf * sf).reshape(chains, draws, 1)
            ll = -0.5 * np.log(2 * math.pi * v) - 0.5 * resid**2 / v
            obs, const = y, {"X": X}
        return make_datatree(
            variables, log_likelihood=ll, log_prior=log_prior, observed=obs,
            constant_data=const,
            attrs={"model": "GaussianLinear (learnt scales)", "position": pos,
                   **_ConjugateLinear._data_attrs(data, shim, pos)})

    def _log_hyper(self, g: np.ndarray) -> np.ndarray:
        """Log density of the hyperprior of g (host side)."""
        if self.hyperprior is None:
            return math.log(2 / math.pi) - np.log1p(g * g)
        with jax.ensure_compile_time_eval():
            return np.asarray(self.hyperprior.log_prob(jnp.asarray(g)), float)

    # ------------------------------------------------------------ persistence
    def config(self) -> dict:
        """JSON-able constructor arguments, with ``class``."""
        hyper = self.fixed_scale
        if self.hyperprior is not None:
            hyper = prior_config(self.hyperprior)
            if hyper["params"] is None:
                raise ValueError(f"prior_scale: cannot save the hyperprior: {hyper['why']}")
        return {"class": type(self).__name__,
                "prior_mean": _jsonable(self.prior_mean),
                "prior_scale": hyper,
                "noise_scale": None if self.noise_scale is None
                else _jsonable(self.noise_scale),
                "discount": self.discount}

    @classmethod
    def from_config(cls, cfg: dict) -> LearntScaleLinear:
        """Rebuild from :meth:`config` (the hyperprior by class name, never imported)."""
        kw = _ConjugateLinear._from_config_common.__func__(cls, cfg)
        if isinstance(kw.get("prior_scale"), dict):  # a hyperprior
            try:
                kw["prior_scale"] = prior_from_config(kw["prior_scale"])
            except ValueError as exc:
                raise ValueError(str(exc).replace("w_prior:", "prior_scale:", 1)) \
                    from None
        return cls(**kw)


class _Shim:
    """What the shared checks of :mod:`.gaussian` read from a state: ``b`` (its
    shape and dtype are u's) and ``n``."""

    def __init__(self, state):
        self.b = state.u
        self.n = state.n


gaussian.LEARNT_SCALE_CLASS = LearntScaleLinear  # GaussianLinear(...) builds it
