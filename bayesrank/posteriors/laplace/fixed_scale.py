"""Laplace-approximate GLM posterior per position with a fixed prior scale (Chapelle & Li 2011, "An empirical
evaluation of Thompson sampling", Algorithm 3).

For each position l independently, with prior theta ~ N(0, s0^2 I) (lambda = 1/s0^2)
and rewards r_i ~ F(f(<theta, x_i>)):

    theta_hat = argmin_theta  lambda/2 ||theta||^2 - sum_i log p(r_i | <theta, x_i>)
    H         = lambda I + sum_i w_i x_i x_i^T,   w_i = -d^2 log p / d eta^2 at theta_hat

and the posterior is approximated by N(theta_hat, H^{-1}). theta_hat is the
lambda-regularised (quasi-)MLE of the paper's Lemma 3. Links and likelihoods:

    logistic  Bernoulli, log p = r eta - log(1 + e^eta)          (canonical)
    probit    Bernoulli, log p = r log Phi(eta) + (1 - r) log Phi(-eta)
    exp       Poisson,   log p = r eta - e^eta - log r!           (canonical)
    identity  Gaussian(noise_scale): exact, delegated to GaussianLinear (sufficient
              statistics; the Laplace approximation is the posterior itself)

Every log-likelihood above is concave in eta, so the objective is strongly convex and
the MAP unique. ``update`` writes one row per position into a fixed buffer and refits
the MAP by Newton's method warm-started at the previous MAP, inside a
``lax.while_loop`` (until the next step would move theta by at most ``tol``
relative, at most ``max_iter`` steps; each step has a backtracking (Armijo) line
search, which makes the exp/Poisson fit safe far from the optimum and costs one
evaluation once warm). The first step's matrix is the state's Hessian factor at the
previous MAP plus the new row's term there (a rank-one Cholesky update: the exact
Hessian at the previous MAP while the buffer has room); every later step, and the
result, use the Hessian at the current point. The Hessian at the final MAP is
kept as its lower Cholesky factor: ``draw`` is one triangular solve per position and
``gram`` hands the factor to UCB widths without a second copy. Cost of one update:
O(Hessians x n_max x p^2) per position.

``hessian_tol`` (float32 states: 1e-4 by default; float64: exact) lets the fit take its
last Newton step, once below that size, without computing the Hessian at the new
point: the MAP is then accurate to about the step's square (better than the exact
rule's, which stops *before* a step below ``tol``), and the kept factor is the Hessian
at the previous iterate, within ``hessian_tol`` (relative) of the MAP. Typically one
Hessian per warm update instead of two, so faster updates (figures:
docs/performance.md, "Why the code is written this way"; ``benchmarks/glm_rankts.py``).
Pass ``hessian_tol=0`` for the exact factor in float32 too.

Buffers and forgetting: the non-identity links keep the last ``n_max`` observations
per position in a ring buffer (``x (L, n_max, p)``, ``y (L, n_max)``) with a row mask.
When a buffer is full the oldest row is overwritten: the posterior then conditions on
a sliding window of the most recent ``n_max`` observations (the sliding-window
forgetting of issue 12). ``state.n`` keeps counting every observation, so the
truncation is visible (``n > n_max``). Pick ``n_max`` >= the horizon for the exact
full-data posterior.

Everything is a pure function of a NamedTuple of arrays: jittable, ``lax.scan``-able
over rounds and ``vmap``-able over runs. ``valid`` (L,) is applied with ``jnp.where``:
a position with ``valid`` False keeps its state bit for bit.

:class:`FixedScaleLaplace` is the part :class:`~bayesrank.posteriors.laplace.LaplaceGLM`
holds when ``prior_scale`` is a number (the learnt scale's part:
:mod:`~bayesrank.posteriors.laplace.learnt_scale`).

Example:
    >>> import jax, jax.numpy as jnp
    >>> model = FixedScaleLaplace(link="logistic", prior_scale=1.0, n_max=100)
    >>> state = model.init(L=2, p=3)
    >>> state = model.update(state, jnp.ones((2, 3)), jnp.array([1.0, 0.0]))
    >>> theta, state = model.draw(jax.random.key(0), state)
    >>> theta.shape
    (2, 3)
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._static import jit_method, Part
from bayesrank._validate import (
    check_int,
    check_position,
    check_real,
    check_reward_support,
)
from bayesrank.model.links import get_link, Link
from bayesrank.posteriors import linalg
from bayesrank.posteriors.buffers import append_rows, valid_update
from bayesrank.posteriors.conjugate import GaussianLinear
from bayesrank.posteriors.datatree import make_datatree
from bayesrank.posteriors.host_sampler import host_rng
from bayesrank.posteriors.laplace.glm_fit import (
    _block,
    _SUPPORT,
    LAPLACE_LINKS,
    LaplaceState,
    link_derivatives,
    loglik,
    newton_map,
    validate_loaded_fit,
)

__all__ = ["FixedScaleLaplace"]

# ----------------------------------------------------------------------- model
#: FixedScaleLaplace.update compiled once per model configuration (not per instance).
_UPDATE = jit_method("_update_core")


class FixedScaleLaplace(Part):
    """GLM posterior per position by the Laplace approximation at the regularised MLE,
    with a fixed prior scale: the part ``LaplaceGLM(prior_scale=<number>)`` holds. It
    describes itself as a ``LaplaceGLM`` (``repr``, ``config``, DataTrees).

    Args:
        link: "logistic" or "probit" (Bernoulli rewards in {0, 1}), "exp" (Poisson
            counts), "identity" (Gaussian rewards with sd ``noise_scale``: exact,
            the same as :class:`~bayesrank.posteriors.conjugate.gaussian.GaussianLinear`).
        prior_scale: s0 > 0: the prior N(0, s0^2 I), ridge weight 1 / s0^2.
        noise_scale: Gaussian noise sd (identity link only).
        n_max: rows kept per position (non-identity links); past it the posterior
            conditions on the most recent ``n_max`` observations (sliding window).
        tol: relative Newton step at which the MAP counts as found (floored at
            64 machine epsilons of the state's dtype).
        max_iter: most Newton steps per update.
        hessian_tol: the largest last Newton step (relative) taken without a fresh
            Hessian, which then comes from the previous iterate: a covariance error
            of about this order (relative), for a MAP accurate to about its square.
            None (default): 1e-4 for float32 states, where it saves one of the
            usual two Hessian passes of an update (faster), and exact (the
            factor is the Hessian at the returned MAP) for float64. 0: exact always.

    Raises:
        ValueError: unknown link, non-finite or non-positive hyper-parameters (the
            message names the argument).
        TypeError: non-real hyper-parameters (the message names the argument).

    Example:
        >>> model = FixedScaleLaplace(link="exp", prior_scale=2.0, n_max=500)
        >>> state = model.init(L=4, p=10)
        >>> model.mean(state).shape
        (4, 10)
    """

    vmappable = True
    learnt_scale = False

    def __init__(
        self,
        link: str | Link = "logistic",
        prior_scale=1.0,
        noise_scale=1.0,
        *,
        n_max: int = 2000,
        tol=1e-10,
        max_iter: int = 50,
        hessian_tol=None,
    ):
        name = link.name if isinstance(link, Link) else link
        if not isinstance(name, str) or name not in LAPLACE_LINKS:
            raise ValueError(f"link: expected one of {LAPLACE_LINKS}, got {link!r}")
        self.link = get_link(name)
        self.prior_scale = check_real(prior_scale, "prior_scale", low=0, inclusive="neither")
        self.noise_scale = check_real(noise_scale, "noise_scale", low=0, inclusive="neither")
        self.n_max = check_int(n_max, "n_max", low=1)
        self.tol = check_real(tol, "tol", low=0, inclusive="neither")
        self.max_iter = check_int(max_iter, "max_iter", low=1)
        if hessian_tol is not None:
            hessian_tol = check_real(hessian_tol, "hessian_tol")
            if not 0.0 <= hessian_tol < 1.0:
                raise ValueError(
                    f"hessian_tol: expected a relative step in [0, 1) or None, got "
                    f"{hessian_tol!r}"
                )
        self.hessian_tol = hessian_tol
        self.reward_support = _SUPPORT[name]
        self._exact = (
            GaussianLinear(prior_scale=self.prior_scale, noise_scale=self.noise_scale)
            if name == "identity"
            else None
        )

    def __repr__(self) -> str:
        return (
            f"LaplaceGLM(link={self.link.name!r}, prior_scale={self.prior_scale}, "
            f"n_max={self.n_max})"
        )

    def refresh_tol(self, dtype) -> float | None:
        """The ``hessian_tol`` in force for states of ``dtype`` (None: exact)."""
        tol = self.hessian_tol
        if tol is None:
            tol = 1e-4 if jnp.finfo(dtype).bits <= 32 else 0.0
        return tol or None

    @property
    def lam(self) -> float:
        """The ridge weight lambda = 1 / prior_scale^2."""
        return 1.0 / self.prior_scale**2

    # ------------------------------------------------------------------ contract
    def init(self, L: int, p: int):
        """The prior for L positions: MAP 0, Hessian lambda I, empty buffers.

        Returns:
            LaplaceState (GaussianState for the identity link).
        """
        if self._exact is not None:
            return self._exact.init(L, p)
        L = check_int(L, "L", low=1)
        p = check_int(p, "p", low=1)
        dtype = jnp.result_type(float)
        chol0 = jnp.eye(p, dtype=dtype) * math.sqrt(self.lam)
        return LaplaceState(
            x=jnp.zeros((L, self.n_max, p), dtype),
            y=jnp.zeros((L, self.n_max), dtype),
            n=jnp.zeros((L,), jnp.int32),
            theta=jnp.zeros((L, p), dtype),
            chol=jnp.broadcast_to(chol0, (L, p, p)),
        )

    def update(self, state, x, y, valid=None):
        """Add one observation per position and refit the MAP and Hessian.

        Args:
            state: current state.
            x: (L, p) features; y: (L,) rewards.
            valid: (L,) bool, False where the position is left unchanged; None = all.

        Returns:
            The updated state (``mean`` is current).
        """
        if self._exact is not None:
            return self._exact.update(state, x, y, valid)
        return _UPDATE(self, state, *valid_update(state, x, y, valid))

    def _update_core(self, state: LaplaceState, x, y, valid) -> LaplaceState:
        L = state.x.shape[0]
        x_buf, y_buf, n = append_rows(state, x, y, valid)
        # the first Newton step's matrix: the state's factor plus the new row's term
        # at the previous MAP (the exact Hessian there while the buffer has room)
        d2 = link_derivatives(self.link.name)(jnp.sum(x * state.theta, -1), y)[1]
        row = jnp.where(valid[:, None], jnp.sqrt(jnp.maximum(d2, 0.0))[:, None] * x, 0.0)
        chol0 = jax.vmap(linalg.chol_update)(state.chol, row)
        theta, chol = self._fit(x_buf, y_buf, n, state.theta, chol0)
        pick = lambda new, old: jnp.where(  # noqa: E731
            valid.reshape((L,) + (1,) * (new.ndim - 1)), new, old
        )
        return LaplaceState(
            x_buf, y_buf, n, pick(theta, state.theta), pick(chol, state.chol)
        )

    def _fit(self, x_buf, y_buf, n, theta0, chol0, lam=None):
        """Every position's MAP and Hessian factor at ridge weight ``lam`` (default
        this model's)."""
        n_max = x_buf.shape[1]
        mask = jnp.arange(n_max) < jnp.minimum(n, n_max)[:, None]
        dtype = x_buf.dtype
        # a scalar or one ridge weight per position
        lam = jnp.broadcast_to(jnp.asarray(self.lam if lam is None else lam, dtype),
                               n.shape)
        tol = max(self.tol, 64.0 * float(jnp.finfo(dtype).eps))
        refresh = self.refresh_tol(dtype)
        refresh = None if refresh is None else max(refresh, tol)

        rows = jnp.max(jnp.minimum(n, n_max))  # rows held, the same for all positions

        def one(x, y, m, t0, c0, lam):
            th, ch, _ = newton_map(
                self.link.name, lam, x, y, m, t0, tol,
                self.max_iter, chol0=c0, refresh_tol=refresh, rows=rows,
                block=_block(n_max),
            )
            return th, ch

        return jax.vmap(one)(x_buf, y_buf, mask, theta0, chol0, lam)

    def draw(self, key, state):
        """One theta per position from N(MAP, H^{-1}) (a triangular solve each).

        Returns:
            theta (L, p), and the state unchanged.
        """
        if self._exact is not None:
            return self._exact.draw(key, state)
        return linalg.sample_per_position(key, state.theta, state.chol), state

    def draw_batch(self, key, state, n: int) -> jax.Array:
        """n independent draws from N(MAP, H^{-1}) at once: (n, L, p)."""
        if self._exact is not None:
            return self._exact.draw_batch(key, state, n)
        return linalg.sample_many_from_precision(key, state.theta, state.chol, n)

    def mean(self, state) -> jax.Array:
        """(L, p) the MAP (regularised MLE), current after every ``update``."""
        if self._exact is not None:
            return self._exact.mean(state)
        return state.theta

    def refresh(self, key, state):
        """No-op: ``update`` already refits the MAP."""
        del key
        return state

    def gram(self, state):
        """Lower Cholesky factor of the Hessian at the MAP (L, p, p) and
        ``log det H - log det(lambda I)`` (L,)."""
        if self._exact is not None:
            return self._exact.gram(state)
        p = state.theta.shape[-1]
        logdet = jax.vmap(linalg.chol_logdet)(state.chol)
        return state.chol, logdet - p * math.log(self.lam)

    def covariance(self, state) -> jax.Array:
        """(L, p, p) the Laplace covariance H^{-1} (for inspection, not hot paths)."""
        if self._exact is not None:
            return self._exact.covariance(state)
        eye = jnp.eye(state.theta.shape[1], dtype=state.theta.dtype)
        return jax.vmap(lambda c: linalg.chol_solve(c, eye))(state.chol)

    def check_rewards(self, y) -> None:
        """Host-side check: rewards in the likelihood's support (raises)."""
        check_reward_support(y, self.reward_support)

    def validate_loaded(self, state, name: str = "model") -> None:
        """Host-side check of a state read from a file (``load`` calls it), naming
        ``name.<field>``: :func:`bayesrank.posteriors.laplace.glm_fit.validate_loaded_fit`."""
        if self._exact is None:  # identity: sufficient statistics, the loader's checks
            validate_loaded_fit(state, self.link.name, name)

    # -------------------------------------------------------------- host side
    def data(self, state, position: int) -> tuple[np.ndarray, np.ndarray]:
        """The observations the posterior at ``position`` conditions on, oldest first:
        x (m, p), y (m,) with m = min(n, n_max) (non-identity links)."""
        if self._exact is not None:
            raise TypeError(
                "data: the identity link keeps sufficient statistics only; pass "
                "data= to to_datatree"
            )
        position = check_position(position, state.x.shape[0])
        n = int(state.n[position])
        m = min(n, self.n_max)
        order = (np.arange(m) + (n - m)) % self.n_max
        return np.asarray(state.x[position])[order], np.asarray(state.y[position])[order]

    def to_datatree(
        self,
        state,
        position: int,
        *,
        key,
        data=None,
        draws: int = 1000,
        chains: int = 4,
    ):
        """Exact i.i.d. draws of the Laplace approximation at one position, as a
        DataTree (groups as :meth:`GaussianLinear.to_datatree`).

        Args:
            state: the state; position: 0-based position.
            key: JAX PRNG key seeding the host-side draws.
            data: identity link: ``(X (n, p), y (n,))`` as for GaussianLinear.
                Other links: ignored, the buffers hold exactly the observations the
                posterior conditions on (a policy's history may hold more).
            draws, chains: ``chains`` x ``draws`` draws.

        Returns:
            ``xarray.DataTree`` with posterior, sample_stats, log_prior and (once a
            position has data) log_likelihood, observed_data, constant_data.
        """
        if self._exact is not None:
            dt = self._exact.to_datatree(
                state, position, key=key, data=data, draws=draws, chains=chains
            )
            for node in dt.children.values():
                node.attrs["model"] = "LaplaceGLM"
            return dt
        from scipy.linalg import solve_triangular

        position = check_position(position, state.x.shape[0])
        draws = check_int(draws, "draws", low=1)
        chains = check_int(chains, "chains", low=1)
        rng = host_rng(key)
        chol = np.asarray(state.chol[position], float)
        mean = np.asarray(state.theta[position], float)
        p = mean.shape[0]
        z = rng.standard_normal((chains * draws, p))
        theta = mean + solve_triangular(chol, z.T, lower=True, trans="T").T
        theta = theta.reshape(chains, draws, p)
        s0 = self.prior_scale
        log_prior = -0.5 * p * math.log(2 * math.pi * s0 * s0) - 0.5 * np.sum(
            theta**2, -1
        ) / (s0 * s0)
        X, y = self.data(state, position)
        ll = obs = const = None
        if y.shape[0] > 0:
            ll = np.asarray(loglik(self.link.name)(theta @ X.T, y))
            obs, const = y, {"X": X}
        return make_datatree(
            theta,
            log_likelihood=ll,
            log_prior=log_prior,
            observed=obs,
            constant_data=const,
            attrs={
                "model": "LaplaceGLM",
                "link": self.link.name,
                "position": position,
            },
        )

    # ------------------------------------------------------------------ config
    def config(self) -> dict:
        """JSON-able constructor arguments, with ``class``."""
        return {
            "class": "LaplaceGLM",
            "link": self.link.name,
            "prior_scale": self.prior_scale,
            "noise_scale": self.noise_scale,
            "n_max": self.n_max,
            "tol": self.tol,
            "max_iter": self.max_iter,
            "hessian_tol": self.hessian_tol,
        }

    @classmethod
    def from_config(cls, cfg: dict) -> FixedScaleLaplace:
        """Rebuild from :meth:`config` output."""
        if not isinstance(cfg, dict):
            raise TypeError(f"cfg: expected a dict, got {type(cfg).__name__}")
        cfg = dict(cfg)
        # a fixed-scale LaplaceGLM's file: an absent prior_scale is the default it
        # was saved under, 1.0 (the default became the learnt scale in issue 44)
        cfg.setdefault("prior_scale", 1.0)
        name = cfg.pop("class", "LaplaceGLM")
        if name != "LaplaceGLM":
            raise ValueError(f"cfg: describes a {name!r}, not a 'LaplaceGLM'")
        allowed = {
            "link", "prior_scale", "noise_scale", "n_max", "tol", "max_iter", "hessian_tol"
        }
        unknown = sorted(set(cfg) - allowed)
        if unknown:
            raise ValueError(f"cfg: unknown LaplaceGLM options {unknown}")
        return cls(**cfg)


