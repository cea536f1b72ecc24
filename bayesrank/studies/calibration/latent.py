"""Simulation-based calibration of the latent-w models (theta and w unknown).

The simulated truth per simulation: ``w_l ~ p(w)`` (the model's prior on w),
``theta^l`` from the base model's prior (and ``s^2`` for the Normal-Inverse-Gamma
model), and rewards ``y^l = <theta^l, v_{a^l} + w_l v_{a^{l-1}}> + noise`` for
uniformly random lists of the design. The model sees the pair features
``(v_{a^l}, v_{a^{l-1}})`` (:func:`pair_features`) and must recover both.

:class:`LatentWDraws` adapts a :class:`bayesrank.posteriors.LatentW` to the SBC
protocol: a draw is one vector ``(theta^l, w_l)`` per position (``p = d + 1``
coordinates, the last one w), so the ranks, the band test and the report treat the w
margin like any coordinate of theta. Two samplers are checked:

* ``"grid"``: w from its exact collapsed marginal (inverse CDF on the quadrature grid
  of :meth:`LatentW.w_grid`), theta | w exactly: independent draws, expected exact;
* ``"chain"``: the draw RankTS makes each round (:meth:`LatentW.draw`: w on a small
  grid, then g | w and theta | w, g), fed its own state as in a run, checked with
  warm-up and thinning like NUTS (each draw is independent of the last: a cheaper grid
  than ``"grid"``'s, so its quadrature error is what this case measures).

The same adapter takes a :class:`~bayesrank.posteriors.LatentLaplace` (a GLM link: the
truth then draws Bernoulli or Poisson rewards). :class:`JointMAPDraws` is the
alternative that model was chosen over, kept here as the reference the calibration
report compares it with: the Laplace approximation at the joint MAP of ``(theta, w)``,
a Gaussian in d + 1 dimensions.

Example:
    >>> import jax, numpyro.distributions as dist
    >>> from bayesrank.studies.calibration.sbc import run_sbc
    >>> from bayesrank.posteriors import GaussianLinear, LatentW
    >>> m = LatentWDraws(LatentW(GaussianLinear(), dist.Normal(0.0, 1.0)))
    >>> res = run_sbc(jax.random.key(0), m, n_sims=4, draws=9, n_obs=10)
    >>> res.ranks.shape  # 4 simulations x (L = 2 positions x (d = 5 + w))
    (4, 12)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from bayesrank.policies.parts import features
from bayesrank.policies.gen_ucb import w_hat
from bayesrank.posteriors.laplace import loglik
from bayesrank.posteriors.latent import LatentW
from bayesrank.studies.calibration.generative import (
    Design,
    Generative,
    design_arrays,
    gaussian_generative,
    glm_generative,
    learnt_generative,
    nig_generative,
)
from bayesrank.studies.calibration.generative import laplace_learnt_generative

__all__ = ["JointMAPDraws", "LatentWDraws", "latent_w_generative", "pair_features"]

#: Damped Newton iterations and step halvings of :class:`JointMAPDraws`' MAP search.
NEWTON_ITERS, HALVINGS = 40, 12

SAMPLERS = ("grid", "chain")


def pair_features(key, n: int, design: Design):
    """Pair features ``(v_{a^l}, v_{a^{l-1}})`` of ``n`` uniformly random lists of the
    design (``a^0``: the design's v0): (n, L, 2d)."""
    items, _, v0 = design_arrays(design)
    lists = jax.random.randint(key, (n, design.L), 0, design.K)
    return features.pair_features(jnp.asarray(items), lists, jnp.asarray(v0))


def _sample_w(key, prior, L: int, dtype):
    shape = (L,) if tuple(prior.batch_shape) == () else ()
    return jnp.broadcast_to(prior.sample(key, shape), (L,)).astype(dtype)


def latent_w_generative(base: Generative, w_prior) -> Generative:
    """The joint truth of a latent-w model: ``base``'s prior and likelihood on
    theta given the features ``v_a + w v_p``, and ``w_l ~ w_prior``.

    ``params["theta"]`` is (L, d + 1): theta^l with w_l appended (the coordinates
    the SBC ranks are taken on); ``rewards`` takes pair features (..., L, 2d).
    """

    def prior(key, L, p):
        k_t, k_w = jax.random.split(key)
        params = base.prior(k_t, L, p)
        w = _sample_w(k_w, w_prior, L, params["theta"].dtype)
        return {**params, "theta": jnp.concatenate([params["theta"], w[:, None]], -1)}

    def rewards(key, params, x):
        d = x.shape[-1] // 2
        theta, w = params["theta"][:, :d], params["theta"][:, d]
        feats = x[..., :d] + w[:, None] * x[..., d:]
        return base.rewards(key, {**params, "theta": theta}, feats)

    return Generative(
        prior, rewards, f"w ~ {type(w_prior).__name__}; {base.description}",
        features=pair_features,
    )


class LatentWDraws:
    """A :class:`~bayesrank.posteriors.LatentW` seen by SBC: draws ``(theta, w)``
    stacked as (L, d + 1).

    Args:
        model: the latent-w posterior.
        sampler: ``"grid"`` (independent exact draws) or ``"chain"`` (the draw
            RankTS makes each round, state threaded as in a run).

    ``init(L, p)`` takes the design's item dimension ``p = d`` (the pair features have
    2d coordinates).
    """

    def __init__(self, model, sampler: str = "grid"):
        if not isinstance(model, LatentW):
            raise TypeError(f"model: expected a LatentW, got {type(model).__name__}")
        if sampler not in SAMPLERS:
            raise ValueError(f"sampler: expected one of {SAMPLERS}, got {sampler!r}")
        self.model, self.sampler = model, sampler
        self.link = model.link
        self.vmappable = True

    def generative(self) -> Generative:
        """The model's own prior and likelihood over (theta, w)."""
        base = self.model.base
        laplace = getattr(self.model, "laplace", None)
        if laplace is not None and self.model.learnt:  # a GLM link, tau learnt
            g = laplace_learnt_generative(self.model.glm, with_scale=False)
        elif laplace is not None:  # a GLM link (LatentLaplace)
            g = glm_generative(laplace.link.name, laplace.prior_scale)
        elif getattr(self.model, "learnt", False):  # theta's scale learnt
            g = learnt_generative(base)
        elif self.model.known_noise:
            g = gaussian_generative(base.prior_mean, base.prior_scale, base.noise_scale)
        else:
            g = nig_generative(base.prior_mean, base.prior_scale, base.a0, base.b0)
        return latent_w_generative(g, self.model.w_prior)

    def init(self, L, p):
        return self.model.init(L, 2 * p)

    def update(self, state, x, y, valid=None):
        return self.model.update(state, x, y, valid)

    @staticmethod
    def _stack(theta, w):
        return jnp.concatenate([theta, w[..., None]], -1)

    def draw(self, key, state):
        """One draw (L, d + 1) and the state (the chain moved, for ``"chain"``)."""
        if self.sampler == "chain":
            (theta, w), state = self.model.draw(key, state)
            return self._stack(theta, w), state
        return self.draws_at_once(key, state, 1)[0], state

    def draws_at_once(self, key, state, n: int):
        """n independent exact draws (n, L, d + 1) (the grid sampler only)."""
        if self.sampler != "grid":
            raise ValueError("sampler: only the grid sampler draws independently")
        theta, w = self.model.draw_exact(key, state, n)  # (n, L, d), (n, L)
        return self._stack(theta, w)

    def mean(self, state):
        """(L, d + 1): the posterior means of theta and w."""
        return self._stack(self.model.mean(state), self.model.w_mean(state))


class JointMAPDraws(LatentWDraws):
    """The Laplace approximation at the joint MAP of ``(theta, w)`` per position:
    ``N(u_hat, H(u_hat)^-1)`` over ``u = (theta, w)`` in R^{d+1}, the alternative to
    :class:`~bayesrank.posteriors.LatentLaplace` that ``bayesrank calibrate`` checks
    beside it.

    The buffers are those of the LatentLaplace ``model``; the MAP of the non-convex
    objective is found by damped Newton steps (the Hessian shifted to be positive
    definite, step halving until the objective decreases) from the 2d relaxation's
    estimate, and the covariance is the inverse Hessian there (shifted if the
    search stopped at a point where it is not positive definite).

    Example:
        >>> import jax, numpyro.distributions as dist
        >>> from bayesrank.posteriors import LaplaceGLM, LatentLaplace
        >>> m = JointMAPDraws(LatentLaplace(LaplaceGLM("logistic", 1.0, n_max=10),
        ...                                 dist.Normal(0.0, 1.0)))
        >>> m.draws_at_once(jax.random.key(0), m.init(L=2, p=3), 5).shape  # (theta, w)
        (5, 2, 4)
    """

    def __init__(self, model):
        super().__init__(model, "grid")
        if getattr(model, "laplace", None) is None or model.learnt:
            raise TypeError("model: JointMAPDraws needs a LatentLaplace with a fixed "
                            "prior scale")

        self._loglik = loglik(model.link.name)

    def _objective(self, u, x, y, mask, l):
        d = x.shape[1] // 2
        theta, w = u[:d], u[d]
        eta = x[:, :d] @ theta + w * (x[:, d:] @ theta)
        ll = jnp.sum(jnp.where(mask, self._loglik(eta, y), 0.0))
        lam = self.model.laplace.lam
        L = self.model.w_prior.batch_shape[0] if self.model.w_prior.batch_shape else 1
        lp_w = self.model.log_prior(jnp.broadcast_to(w, (L,)))[jnp.minimum(l, L - 1)]
        return -(ll - 0.5 * lam * theta @ theta + lp_w)

    def _laplace(self, state, l):
        """(u_hat (d+1,), lower Cholesky factor of the Hessian there) at position l."""
        fit = state.fit
        n_max = fit.x.shape[1]
        x, y = fit.x[l], fit.y[l]
        mask = jnp.arange(n_max) < jnp.minimum(fit.n[l], n_max)
        d = x.shape[1] // 2
        f = lambda u: self._objective(u, x, y, mask, l)  # noqa: E731
        grad, hess = jax.grad(f), jax.hessian(f)
        phi = fit.theta[l]
        w0 = w_hat(phi)  # the relaxation's estimate <phi_1, phi_2> / ||phi_1||^2
        eye = jnp.eye(d + 1, dtype=x.dtype)

        def damped(H):
            shift = jnp.maximum(0.0, 1e-6 - jnp.min(jnp.linalg.eigvalsh(H)))
            return jnp.linalg.cholesky(H + shift * eye)

        def step(u, _):
            C = damped(hess(u))
            delta = jax.scipy.linalg.cho_solve((C, True), grad(u))
            f0 = f(u)
            ts = 0.5 ** jnp.arange(HALVINGS, dtype=x.dtype)
            vals = jax.vmap(lambda t: f(u - t * delta))(ts)
            ok = vals < f0
            t = jnp.where(jnp.any(ok), ts[jnp.argmax(ok)], 0.0)
            return u - t * delta, None

        u, _ = jax.lax.scan(step, jnp.concatenate([phi[:d], w0[None]]), None,
                            length=NEWTON_ITERS)
        return u, damped(hess(u))

    def draws_at_once(self, key, state, n: int):
        """n draws (n, L, d + 1) from the joint Gaussian of every position."""
        L = state.w.shape[0]
        u, C = jax.vmap(lambda l: self._laplace(state, l))(jnp.arange(L))
        z = jax.random.normal(key, (n,) + u.shape, u.dtype)
        dev = jax.vmap(
            lambda c, zz: jax.scipy.linalg.solve_triangular(c, zz.T, lower=True,
                                                            trans="T").T,
            in_axes=(0, 1), out_axes=1,
        )(C, z)
        return u[None] + dev

    def draw(self, key, state):
        """One draw (L, d + 1); the state unchanged."""
        return self.draws_at_once(key, state, 1)[0], state

    def mean(self, state):
        """(L, d + 1): the joint MAP."""
        L = state.w.shape[0]
        return jax.vmap(lambda l: self._laplace(state, l)[0])(jnp.arange(L))
