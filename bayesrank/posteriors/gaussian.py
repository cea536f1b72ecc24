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
updates at condition number 4e9 (tests/posteriors/test_gaussian_numerics.py), a design
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

:class:`GaussianLinearUnknownNoise` puts a Normal-Inverse-Gamma prior on (theta, s^2):

    s^2 ~ InvGamma(a0, b0),   theta | s^2 ~ N(m0, s^2 Lambda0^{-1}),

so that Lambda_n = Lambda0 + X^T X, m_n = Lambda_n^{-1}(Lambda0 m0 + X^T y),
a_n = a0 + n / 2 and b_n = b0 + (y^T y + m0^T Lambda0 m0 - m_n^T Lambda_n m_n) / 2.
b_n is carried by the exact one-step recursion
``b_{n+1} = b_n + (y - x^T m_n)^2 / (2 (1 + x^T Lambda_n^{-1} x))``, which avoids the
cancellation of the batch formula.

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

from bayesrank._static import Part
from bayesrank._validate import (
    check_array,
    check_int,
    check_position,
    check_real,
    check_reward_support,
    is_tracer,
)
from bayesrank.model.links import get_link
from bayesrank.posteriors import linalg
from bayesrank.posteriors.datatree import make_datatree
from bayesrank.posteriors.w_prior import is_distribution

__all__ = [
    "GaussianLinear",
    "GaussianLinearUnknownNoise",
    "GaussianState",
    "NIGState",
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


#: The class ``GaussianLinear(...)`` builds when a scale is to be learnt (None or a
#: distribution): :class:`bayesrank.posteriors.scaled.LearntScaleLinear`, which sets
#: this when it is imported (``bayesrank.posteriors`` imports it), so that this module
#: stays below it in the import graph.
LEARNT_SCALE_CLASS = None


def is_learnt(value) -> bool:
    """Whether a scale argument asks for learning: None or a NumPyro distribution."""
    return value is None or is_distribution(value)


# --------------------------------------------------------------------- validation
def _to_float_array(value, name: str) -> np.ndarray:
    """Real numbers (Python, NumPy scalars or arrays) as float (a scalar as a
    Python float); bools, strings, complex and object values are refused."""
    arr = check_array(value, name)
    return arr.item() if arr.ndim == 0 else arr


def _valid_positive_scalar(value, name: str):
    if is_tracer(value):
        if jnp.ndim(value) != 0:
            raise ValueError(f"{name}: expected a scalar, got shape {jnp.shape(value)}")
        return value
    arr = _to_float_array(value, name)
    if np.ndim(arr) != 0:
        raise ValueError(f"{name}: expected a scalar, got shape {np.shape(arr)}")
    if arr <= 0:
        raise ValueError(f"{name}: expected a finite number > 0, got {value!r}")
    return arr


def _valid_prior(prior_mean, prior_scale):
    """Validate (prior_mean, prior_scale); return them and the implied p (or None)."""
    if is_tracer(prior_mean):
        mean = prior_mean
    else:
        mean = _to_float_array(prior_mean, "prior_mean")
    if jnp.ndim(mean) > 1 or (jnp.ndim(mean) == 1 and jnp.shape(mean)[0] == 0):
        raise ValueError(
            "prior_mean: expected a scalar or a (p,) vector, got shape "
            f"{jnp.shape(mean)}"
        )
    if is_tracer(prior_scale):
        scale = prior_scale
    else:
        scale = _to_float_array(prior_scale, "prior_scale")
    sshape = jnp.shape(scale)
    if len(sshape) > 2 or (len(sshape) == 2 and sshape[0] != sshape[1]):
        raise ValueError(
            "prior_scale: expected a scalar, a (p,) vector of standard deviations or a "
            f"(p, p) covariance matrix, got shape {sshape}"
        )
    if len(sshape) >= 1 and sshape[0] == 0:
        raise ValueError(f"prior_scale: expected p >= 1, got shape {sshape}")
    if not is_tracer(scale):
        if np.ndim(scale) < 2 and np.any(np.asarray(scale) <= 0):
            raise ValueError("prior_scale: expected standard deviations > 0")
        if np.ndim(scale) == 2:
            if not np.allclose(scale, scale.T, rtol=1e-10, atol=1e-12):
                raise ValueError("prior_scale: a (p, p) covariance must be symmetric")
            try:
                np.linalg.cholesky(scale)
            except np.linalg.LinAlgError:
                raise ValueError(
                    "prior_scale: a (p, p) covariance must be positive definite"
                ) from None
    dims = {}
    if jnp.ndim(mean) == 1:
        dims["prior_mean"] = jnp.shape(mean)[0]
    if len(sshape) >= 1:
        dims["prior_scale"] = sshape[0]
    if len(set(dims.values())) > 1:
        raise ValueError(
            f"prior_scale: its dimension {dims['prior_scale']} does not match "
            f"prior_mean's {dims['prior_mean']}"
        )
    p = next(iter(dims.values()), None)
    return mean, scale, p


def _valid_discount(discount) -> float:
    """gamma in (0, 1]: 1 keeps every observation at full weight."""
    return check_real(discount, "discount", low=0, high=1, inclusive="right")


def _jsonable(value):
    if is_tracer(value):
        raise TypeError("config: hyper-parameters are traced JAX values")
    arr = np.asarray(value, dtype=float)
    return float(arr) if arr.ndim == 0 else arr.tolist()


def _valid_L_p(L, p, p_prior) -> tuple[int, int]:
    L, p = check_int(L, "L", low=1), check_int(p, "p", low=1)
    if p_prior is not None and p != p_prior:
        raise ValueError(
            f"p: the prior has dimension {p_prior}, but init was asked for p={p}"
        )
    return int(L), int(p)


def _host_rng(key) -> np.random.Generator:
    """A NumPy generator seeded from a JAX key (``jax.random.key(0)`` if None)."""
    key = jax.random.key(0) if key is None else key
    seed = np.asarray(jax.random.key_data(key)).astype(np.uint32).ravel()
    return np.random.default_rng(seed.tolist())


def _host_draws(rng, chol, b, scale) -> np.ndarray:
    """Host-side draws of N(P^{-1} b, scale_i^2 P^{-1}) with P = C C^T (NumPy/SciPy).

    Used by ``to_datatree``, where thousands of draws are summarised once: NumPy
    avoids compiling a sampler (JAX's gamma sampler alone takes seconds to compile).

    Args:
        rng: NumPy generator; chol (p, p) lower factor of P; b (p,);
        scale: (N,) per-draw scale.

    Returns:
        (N, p) draws.
    """
    from scipy.linalg import cho_solve, solve_triangular

    chol = np.asarray(chol, dtype=float)
    mean = cho_solve((chol, True), np.asarray(b, dtype=float))
    z = rng.standard_normal((scale.shape[0], chol.shape[0]))
    return mean + scale[:, None] * solve_triangular(chol, z.T, lower=True, trans="T").T


# -------------------------------------------------------------------- shared core
def two_sum(a, b):
    """``a + b`` as ``(s, e)`` with ``s + e == a + b`` exactly (Knuth's TwoSum)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def accumulate(hi, lo, x):
    """Compensated running sum: ``(hi, lo) + x`` (``lo`` gathers the rounding errors)."""
    s, e = two_sum(hi, x)
    return s, lo + e


def refined_mean(chol, prec, prec_lo, b, b_lo):
    """``P^{-1} b`` for one position: the factor's solve plus one refinement step with
    the residual of the compensated sums ``(prec + prec_lo, b + b_lo)``."""
    m = linalg.chol_solve(chol, b)
    r = (b - prec @ m) + (b_lo - prec_lo @ m)
    return m + linalg.chol_solve(chol, r)


class _ConjugateLinear(Part):
    """Prior handling, shape guards and host-side helpers shared by both models."""

    link = get_link("identity")
    reward_support = "real"  # any finite reward
    vmappable = True

    def __init__(self, prior_mean, prior_scale, discount=1.0):
        self.prior_mean, self.prior_scale, self._p = _valid_prior(
            prior_mean, prior_scale
        )
        self.discount = _valid_discount(discount)

    def _forget(self, prec, b, prec_lo, b_lo):
        """Stabilised forgetting of the compensated sums (P, b) towards the prior
        (identity at gamma=1)."""
        if self.discount == 1.0:
            return prec, b, prec_lo, b_lo
        g = jnp.asarray(self.discount, b.dtype)
        m0, P0, _, _ = self.prior(b.shape[-1])
        P0, m0 = P0.astype(b.dtype), m0.astype(b.dtype)
        prec, e_p = two_sum(g * prec, (1.0 - g) * P0)
        b, e_b = two_sum(g * b, (1.0 - g) * (P0 @ m0))
        return prec, b, g * prec_lo + e_p, g * b_lo + e_b

    # ------------------------------------------------------------------ prior
    def prior(self, p: int):
        """The prior in precision form for dimension p.

        Returns:
            m0 (p,), P0 (p, p) prior precision (relative to s^2 for the NIG model),
            C0 (p, p) its lower Cholesky factor, logdet0 () = log det P0.
        """
        dtype = jnp.result_type(float)
        m0 = jnp.broadcast_to(jnp.asarray(self.prior_mean, dtype), (p,))
        scale = jnp.asarray(self.prior_scale, dtype)
        if scale.ndim < 2:
            sd = jnp.broadcast_to(scale, (p,))
            P0 = jnp.diag(1.0 / sd**2)
            C0 = jnp.diag(1.0 / sd)
        else:
            # The one O(p^3) step: the prior covariance is turned into a precision
            # once, at init; updates never invert anything.
            cov_chol = jnp.linalg.cholesky(scale)
            P0 = linalg.chol_solve(cov_chol, jnp.eye(p, dtype=dtype))
            P0 = 0.5 * (P0 + P0.T)
            C0 = jnp.linalg.cholesky(P0)
        return m0, P0, C0, linalg.chol_logdet(C0)

    def _init_common(self, L: int, p: int):
        L, p = _valid_L_p(L, p, self._p)
        m0, P0, C0, logdet0 = self.prior(p)
        tile = lambda a: jnp.broadcast_to(a, (L, *a.shape))
        return (
            tile(P0),
            tile(C0),
            tile(P0 @ m0),
            jnp.zeros((L,), jnp.int32),
            tile(logdet0),
        )

    @staticmethod
    def _zero_lo(state_args):
        """The compensation terms of a fresh state: zeros like prec and b."""
        prec, b = state_args[0], state_args[2]
        return jnp.zeros_like(prec), jnp.zeros_like(b)

    # ------------------------------------------------------------ shape guards
    @staticmethod
    def _valid_update_args(state, x, y, valid):
        L, p = state.b.shape
        dtype = state.b.dtype
        x = jnp.asarray(x, dtype)
        y = jnp.asarray(y, dtype)
        if x.shape != (L, p):
            raise ValueError(f"x: expected shape (L, p) = ({L}, {p}), got {x.shape}")
        if y.shape != (L,):
            raise ValueError(f"y: expected shape (L,) = ({L},), got {y.shape}")
        if valid is None:
            valid = jnp.ones((L,), bool)
        else:
            valid = jnp.asarray(valid)
            if valid.shape != (L,):
                raise ValueError(
                    f"valid: expected a (L,) = ({L},) bool array, got {valid.shape}"
                )
            valid = valid.astype(bool)
        return x, y, valid

    @staticmethod
    def _select(valid, new, old):
        def pick(a, b):
            v = valid.reshape(valid.shape + (1,) * (a.ndim - 1))
            return jnp.where(v, a, b)

        return jax.tree_util.tree_map(pick, new, old)

    # ------------------------------------------------------------ common maths
    def mean(self, state) -> jax.Array:
        """Posterior mean of theta per position, (L, p): ``prec^{-1} b``, refined
        against the compensated sums (see the module docstring)."""
        return jax.vmap(refined_mean)(
            state.chol, state.prec, state.prec_lo, state.b, state.b_lo
        )

    def check_rewards(self, y) -> None:
        """Host-side check: finite real rewards (raises ValueError/TypeError)."""
        check_reward_support(y, "real", name="rewards")

    def gram(self, state):
        """The posterior precision's lower Cholesky factor and its log det over the
        prior's, per position: ``chol`` (L, p, p) and ``logdet_ratio`` (L,).

        UCB widths read these (no second copy of the matrix): with the default UCB
        model ``GaussianLinear(prior_scale=1/sqrt(lam), noise_scale=1)`` the precision
        is exactly the paper's ``V_t = lam I + sum x x^T``.
        """
        p = state.b.shape[-1]
        logdet0 = self.prior(p)[3].astype(state.logdet.dtype)
        return state.chol, state.logdet - logdet0

    def refresh(self, key, state):
        """Make :meth:`mean` current; closed-form models already are (no-op)."""
        del key
        return state

    # ------------------------------------------------------------ host helpers
    @staticmethod
    def _valid_data(data, state, position: int):
        if data is None:
            return None
        try:
            X, y = data
        except (TypeError, ValueError):
            raise TypeError("data: expected a pair (X (n, p), y (n,))") from None
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=float)
        p = state.b.shape[1]
        if X.ndim != 2 or X.shape[1] != p:
            raise ValueError(f"data: expected X of shape (n, {p}), got {X.shape}")
        if y.shape != (X.shape[0],):
            raise ValueError(
                f"data: expected y of shape (n,) = ({X.shape[0]},), got {y.shape}"
            )
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
            raise ValueError("data: expected finite values, found NaN or inf")
        n_state = int(np.asarray(state.n)[position])
        if X.shape[0] > n_state:
            raise ValueError(
                f"data: the state of position {position} holds {n_state} observations, "
                f"but data has {X.shape[0]}; pass the observations folded into it"
            )
        # Fewer rows are allowed (a policy's bounded history keeps the most recent
        # ones): the posterior is still exact, the data groups cover what was kept.
        return X, y

    @staticmethod
    def _data_attrs(data, state, position: int) -> dict:
        """DataTree attributes saying how much of the data the groups hold."""
        n_state = int(np.asarray(state.n)[position])
        m = 0 if data is None else int(data[0].shape[0])
        return {"observations": n_state, "observations_in_data_groups": m}

    @staticmethod
    def _valid_draws(draws, chains) -> tuple[int, int]:
        return check_int(draws, "draws", low=1), check_int(chains, "chains", low=1)

    @classmethod
    def _from_config_common(cls, cfg: dict) -> dict:
        if not isinstance(cfg, dict):
            raise TypeError(f"cfg: expected a dict, got {type(cfg).__name__}")
        name = cfg.get("class", cls.__name__)
        if name != cls.__name__:
            raise ValueError(f"cfg: describes a {name!r}, not a {cls.__name__!r}")
        return {k: v for k, v in cfg.items() if k != "class"}


# ------------------------------------------------------------------- known noise
class GaussianLinear(_ConjugateLinear):
    """Conjugate Gaussian posterior per position with known noise scale.

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
        >>> model = GaussianLinear(prior_mean=0.0, prior_scale=[1.0, 2.0])
        >>> state = model.init(L=4, p=2)
        >>> model.mean(state).shape
        (4, 2)
    """

    def __new__(cls, prior_mean=0.0, prior_scale=None, noise_scale=None, *,
                discount=1.0):
        if cls is GaussianLinear and (is_learnt(prior_scale) or is_learnt(noise_scale)):
            return LEARNT_SCALE_CLASS(prior_mean, prior_scale, noise_scale,
                                      discount=discount)
        return super().__new__(cls)

    def __init__(self, prior_mean=0.0, prior_scale=None, noise_scale=None, *,
                 discount=1.0):
        # reached with a None only by a subclass: it keeps the fixed N(0, I), s = 1
        prior_scale = 1.0 if prior_scale is None else prior_scale
        noise_scale = 1.0 if noise_scale is None else noise_scale
        super().__init__(prior_mean, prior_scale, discount)
        self.noise_scale = _valid_positive_scalar(noise_scale, "noise_scale")

    def __repr__(self) -> str:
        return (
            f"GaussianLinear(prior_mean={self.prior_mean!r}, "
            f"prior_scale={self.prior_scale!r}, noise_scale={self.noise_scale!r}"
            + (f", discount={self.discount!r})" if self.discount != 1.0 else ")")
        )

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
        return self._select(valid, new, state)

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
        position = check_position(position, state.b.shape[0])
        draws, chains = self._valid_draws(draws, chains)
        data = self._valid_data(data, state, position)
        theta = _host_draws(
            _host_rng(key),
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
        """JSON-able constructor arguments, with ``class``."""
        return {
            "class": type(self).__name__,
            "prior_mean": _jsonable(self.prior_mean),
            "prior_scale": _jsonable(self.prior_scale),
            "noise_scale": _jsonable(self.noise_scale),
            "discount": self.discount,
        }

    @classmethod
    def from_config(cls, cfg: dict) -> GaussianLinear:
        """Rebuild from :meth:`config` output (also a learnt-scale model's)."""
        if isinstance(cfg, dict) and cfg.get("class") == "LearntScaleLinear":
            return LEARNT_SCALE_CLASS.from_config(cfg)
        return cls(**cls._from_config_common(cfg))


# ------------------------------------------------------------------ unknown noise
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
        self.a0 = _valid_positive_scalar(a0, "a0")
        self.b0 = _valid_positive_scalar(b0, "b0")

    def __repr__(self) -> str:
        return (
            f"GaussianLinearUnknownNoise(prior_mean={self.prior_mean!r}, "
            f"prior_scale={self.prior_scale!r}, a0={self.a0!r}, b0={self.b0!r})"
        )

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
        return self._select(valid, new, state)

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
        position = check_position(position, state.b.shape[0])
        draws, chains = self._valid_draws(draws, chains)
        data = self._valid_data(data, state, position)
        rng = _host_rng(key)
        shape, rate = (float(a[position]) for a in self.noise_posterior(state))
        sigma2 = rate / rng.gamma(shape, 1.0, chains * draws)
        theta = _host_draws(
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
            "prior_mean": _jsonable(self.prior_mean),
            "prior_scale": _jsonable(self.prior_scale),
            "a0": _jsonable(self.a0),
            "b0": _jsonable(self.b0),
        }

    @classmethod
    def from_config(cls, cfg: dict) -> GaussianLinearUnknownNoise:
        """Rebuild from :meth:`config` output."""
        return cls(**cls._from_config_common(cfg))
