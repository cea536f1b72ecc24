"""Unknown w under a GLM link: a Laplace likelihood in the 2d relaxation, w collapsed.

With a logistic, probit or exp link the likelihood of ``(theta, w_l)`` is not
conjugate. :class:`LatentLaplace` approximates it the way the Laplace GLM does, but in
the coordinates where the log-likelihood is concave: the paper's 2d relaxation
``phi = (theta, w theta)`` over the pair features ``x = (v_{a^l}, v_{a^{l-1}})``, for
which ``<phi, x> = <theta, v_{a^l} + w v_{a^{l-1}}>``. Each update refits the ridge MAP
``phi_hat`` of that convex problem (:class:`LaplaceGLM` on the pair features: the
same buffers, warm Newton steps and Hessian factor) and expands the log-likelihood to
second order there::

    log p(D | phi) ~ const + phi^T g - 1/2 phi^T H_L phi,
    H_L = sum_i W_i x_i x_i^T (H minus the ridge),   g = H phi_hat

(``g`` carries the score at the ridge MAP, so the expansion is of the likelihood
alone, whatever the ridge). Substituting ``phi = (theta, w theta)`` gives exactly the
statistics of the conjugate model, ``S_aa, S_ap, S_pp`` the blocks of ``H_L`` and
``(b_a, b_p) = g``, so the rest is :class:`~bayesrank.posteriors.latent.gaussian.LatentW`'s:
the prior ``theta ~ N(0, s0^2 I)`` and ``p(w)``, theta integrated out in closed form,
w drawn on a grid over its collapsed marginal (:meth:`LatentW.draw_w`), theta | w
Gaussian. The only approximation is the quadratic likelihood in phi, the Laplace
approximation itself; the bilinear shape of the posterior in (theta, w), which a joint
Gaussian at the MAP of (theta, w) cannot represent, is kept exactly.

**A learnt prior scale** (``LaplaceGLM()``, ``prior_scale=None`` or a hyperprior on
tau, theta ~ N(0, tau^2 I)): the fit over the pair features is the learnt-scale
Laplace model, with a MAP and Hessian at each of its 24 tau nodes; each node expands
the likelihood at its own MAP, theta integrates out given (w, tau_k) in closed form as
above, and the nodes are mixed by their evidence (:mod:`~bayesrank.posteriors.latent.laplace_grid`). Why
one expansion per node: one expansion shared by every tau (at the modal node's MAP,
with tau then integrated exactly on the quadratic) was over-confident about theta in
simulation-based calibration (p = 0.004, 200 simulations): at a large tau the clicks
are nearly separable and the posterior is wide, which only the curvature at that
tau's own, large MAP shows.

Why this and not a Laplace approximation at the joint MAP of ``(theta, w)``: the joint
posterior is curved along ``w theta = const`` and skewed in w whenever theta is poorly
determined; a Gaussian in ``(theta, w)`` makes w's interval symmetric and too narrow
there. ``bayesrank calibrate`` checks both: ``LatentLaplace-logistic`` passes
(p = 0.47, 1,000 simulations) and ``LatentJointMAP-logistic`` is flagged (p = 0.001);
details in ``docs/unknown-w.md``.

Example:
    >>> import jax, jax.numpy as jnp, numpyro.distributions as dist
    >>> from bayesrank.posteriors import LaplaceGLM, LatentLaplace
    >>> model = LatentLaplace(LaplaceGLM("logistic", n_max=50), dist.Normal(0.0, 2.0))
    >>> state = model.init(L=2, p=4)                   # p = 2d: (v_a, v_p)
    >>> state = model.update(state, jnp.ones((2, 4)), jnp.array([1.0, 0.0]))
    >>> (theta, w), state = model.draw(jax.random.key(0), state)
    >>> theta.shape, w.shape
    ((2, 2), (2,))
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank.posteriors.conjugate import GaussianLinear
from bayesrank.posteriors.hyperprior import cell_spread, log_density
from bayesrank.posteriors.laplace import LaplaceGLM, LaplaceState, LearntScaleLaplace
from bayesrank.posteriors.latent import laplace_grid as grid
from bayesrank.posteriors.latent.gaussian import LatentW

__all__ = ["LatentLaplace", "LatentLaplaceState"]


class LatentLaplaceState(NamedTuple):
    """The statistics :class:`LatentW` reads (from the quadratic likelihood), the
    last draw of w and the Laplace fit over the pair features.

    Example:
        >>> import numpyro.distributions as dist
        >>> from bayesrank.posteriors import LaplaceGLM, LatentLaplace
        >>> m = LatentLaplace(LaplaceGLM("logistic", n_max=20), dist.Normal(0.0, 1.0))
        >>> state = m.init(L=3, p=4)               # tau learnt: one set per grid node
        >>> state.Saa.shape, state.fit.x.shape
        ((3, 24, 2, 2), (3, 20, 4))
        >>> fixed = LatentLaplace(LaplaceGLM("logistic", 1.0, n_max=20), dist.Normal(0.0, 1.0))
        >>> fixed.init(L=3, p=4).Saa.shape
        (3, 2, 2)
    """

    Saa: jax.Array  # (L, d, d) the a-a block of H_L
    Sap: jax.Array  # (L, d, d) the a-p block of H_L
    Spp: jax.Array  # (L, d, d) the p-p block of H_L
    ba: jax.Array  # (L, d) the first half of g = H phi_hat
    bp: jax.Array  # (L, d) the second half of g
    yy: jax.Array  # (L,) zeros; a learnt scale: (L, G) each node's log offset
    n: jax.Array  # (L,) observations held
    w: jax.Array  # (L,) the last draw of w
    width: jax.Array  # (L,) the spread of w's posterior at the last draw
    fit: LaplaceState  # the ridge MAP and Hessian factor over the pair features


class LatentLaplace(LatentW):
    """Posterior over (theta, w) per position for a GLM link (see the module doc).

    Args:
        base: a :class:`LaplaceGLM` with link "logistic", "probit" or "exp": the
            likelihood, the prior scale s0 (theta ~ N(0, s0^2 I)), the buffer
            ``n_max`` and the Newton settings of the fit; or its learnt-scale form
            (``LaplaceGLM()``, a
            :class:`~bayesrank.posteriors.laplace.learnt_scale.LearntScaleLaplace`): tau
            then integrated on a grid with theta (see the module docstring).
        w_prior: a NumPyro distribution over the reals (or an interval), batch shape
            ``()`` or ``(L,)``.

    ``RankTS(model=LaplaceGLM("logistic"), items=V, L=L, w=dist.Normal(0, 5))``
    builds this model. The identity link is exact: it gets :class:`LatentW`.

    Example:
        >>> import numpyro.distributions as dist
        >>> from bayesrank.posteriors import LaplaceGLM, LatentLaplace
        >>> LatentLaplace(LaplaceGLM("probit"), dist.Normal(0.0, 5.0)).link.name
        'probit'
    """

    #: False, a learnt tau stays integrated out of w's density (one expansion
    #: per node, in :mod:`~bayesrank.posteriors.latent.laplace_grid`)
    moves_w_given_scale = False
    #: the statistics are the Hessian's blocks of a and p, so the design is ``a + w p``
    shift = 0.0

    def _stats(self, state):
        return (state.Saa, state.Sap, state.Spp, state.ba, state.bp)

    def __init__(self, base=None, w_prior=None):
        learnt = bool(getattr(base, "learnt_scale", False))
        if not isinstance(base, (LaplaceGLM, LearntScaleLaplace)) \
                or base.link.name == "identity":
            raise TypeError(
                "model: LatentLaplace needs a LaplaceGLM with a logistic, probit or exp "
                f"link, got {base!r} (the identity link is exact: LatentW)"
            )
        if getattr(base, "nodes", "grid") != "grid":
            raise ValueError("model: latent w needs the fixed grid of tau "
                             "(LearntScaleLaplace(..., nodes='grid')); the adaptive "
                             "nodes serve a known w only for now")
        if learnt:  # marks the learnt paths; the maths is .latent_laplace_grid's
            prior = GaussianLinear(prior_scale=base.hyperprior, noise_scale=1.0)
        else:
            prior = GaussianLinear(prior_scale=base.prior_scale, noise_scale=1.0)
        super().__init__(prior, w_prior)
        #: the model as given (``config`` saves it)
        self.glm = base
        #: the Laplace fit over the pair features (with a learnt scale, one fit per
        #: tau node, each expanded at its own MAP)
        self.laplace = base
        self.link = base.link
        self.reward_support = base.reward_support

    def __repr__(self) -> str:
        return f"LatentLaplace({self.glm!r}, {type(self.w_prior).__name__}(...))"

    def label(self) -> str:
        """The model's name in DataTree attributes."""
        return f"LatentLaplace({self.link.name})"

    def init(self, L: int, p: int) -> LatentLaplaceState:
        """The prior for L positions over pair features of dimension ``p = 2d``."""
        stats = super().init(L, p)
        fit = self.laplace.init(L, p)
        state = LatentLaplaceState(*stats, fit=fit)
        return self._expand(fit, state) if self.learnt else state

    def update(self, state: LatentLaplaceState, x, y, valid=None) -> LatentLaplaceState:
        """Refit the relaxation's MAP with one more observation per position and
        re-expand the likelihood there.

        Args:
            x: (L, 2d) pair features; y: (L,) rewards; valid: (L,) bool.
        """
        fit = self.laplace.update(state.fit, x, y, valid)
        return self._expand(fit, state)

    def _expand(self, fit, state):
        """The conjugate statistics of the quadratic likelihood at ``fit``'s MAP (a
        learnt scale: one expansion per tau node, :mod:`~bayesrank.posteriors.latent.laplace_grid`)."""
        d = state.ba.shape[-1]
        dtype = state.ba.dtype
        n = fit.n.astype(dtype)
        if self.learnt:
            Saa, Sap, Spp, ba, bp, yy = grid.node_stats(self.laplace, fit, d)
            return state._replace(Saa=Saa, Sap=Sap, Spp=Spp, ba=ba, bp=bp, yy=yy, n=n,
                                  fit=fit)
        H = fit.chol @ jnp.swapaxes(fit.chol, -1, -2)
        g = jnp.einsum("lij,lj->li", H, fit.theta)
        HL = H - self.laplace.lam * jnp.eye(2 * d, dtype=dtype)
        HL = 0.5 * (HL + jnp.swapaxes(HL, -1, -2))
        return state._replace(
            Saa=HL[:, :d, :d], Sap=HL[:, :d, d:], Spp=HL[:, d:, d:],
            ba=g[:, :d], bp=g[:, d:], n=n, fit=fit,
        )

    # ------------------------------------- a learnt scale: the nodes' mixture
    def _lams(self, dtype):
        return jnp.exp(-2.0 * jnp.asarray(self.laplace.log_tau, dtype))

    def _log_marginal(self, stats, yy, n, w, m0, P0):
        if not self.learnt:
            return super()._log_marginal(stats, yy, n, w, m0, P0)
        return grid.log_marginal(stats, yy, w, self._lams(yy.dtype))

    def _relaxed_w(self, stats, m0, P0):
        if self.learnt:  # a proposal's centre only: the nodes' average statistics
            stats = tuple(jnp.mean(s, axis=0) for s in stats)
            d = stats[3].shape[-1]  # (LatentW's d reads the node axis here)
            m0, P0 = jnp.zeros((d,), stats[3].dtype), jnp.eye(d, dtype=stats[3].dtype)
        return super()._relaxed_w(stats, m0, P0)

    def theta_given_w(self, key, state, w):
        if not self.learnt:
            return super().theta_given_w(key, state, w)
        L = w.shape[0]
        lams = self._lams(state.yy.dtype)
        return jax.vmap(lambda k, st, yy, wl: grid.theta_given_w(k, st, yy, wl, lams))(
            jax.random.split(key, L), self._stats(state), state.yy, w)

    def theta_scales_given_w(self, key, state, w):
        """theta | w (L, d) and, with a learnt tau, ``{"prior_scale": tau (L,)}``:
        the node tau_k | w, D that theta was drawn at, spread uniformly over its
        cell in log tau as the known-w model's DataTree reports it."""
        if not self.learnt:
            return super().theta_scales_given_w(key, state, w)
        L = w.shape[0]
        dtype = state.yy.dtype
        lams = self._lams(dtype)
        k_th, k_u = jax.random.split(key)
        theta, k = jax.vmap(
            lambda kk, st, yy, wl: grid.theta_node_given_w(kk, st, yy, wl, lams))(
            jax.random.split(k_th, L), self._stats(state), state.yy, w)
        log_tau = jnp.asarray(self.laplace.log_tau, dtype)
        frac = jax.random.uniform(k_u, k.shape, dtype)
        return theta, {"prior_scale": jnp.exp(cell_spread(log_tau, k, frac))}

    def _scales_log_prior(self, variables: dict) -> dict:
        """Host side, a learnt tau: its hyperprior and ``log N(theta | 0, tau^2 I)``
        (as the known-w model's DataTree); else :class:`LatentW`'s terms."""
        if not self.learnt:
            return super()._scales_log_prior(variables)
        theta, tau = variables["theta"], variables["prior_scale"]
        d = theta.shape[-1]
        return {"theta": (-0.5 * d * np.log(2 * np.pi * tau**2)
                          - 0.5 * np.sum(theta**2, -1) / tau**2),
                "prior_scale": log_density(self.laplace.hyperprior, tau)}

    def _mean(self, state):
        if not self.learnt:
            return super()._mean(state)
        ws, wts = self.w_grid(state)
        lams = self._lams(state.yy.dtype)

        def one_pos(st, yy, wrow, prow):
            m = jax.vmap(lambda wl: grid.theta_mean_given_w(st, yy, wl, lams))(wrow)
            return jnp.sum(prow[:, None] * m, axis=0)

        return jax.vmap(one_pos)(self._stats(state), state.yy, ws, wts)

    def check_rewards(self, y) -> None:
        """Host-side check: rewards in the likelihood's support."""
        self.laplace.check_rewards(y)

    def reward_bound(self, dtype=None) -> tuple[float, str]:
        """The Laplace fit's bound where it has one; else none of :class:`LatentW`'s
        (no sums of squared rewards are kept: the fit's buffers hold the rewards,
        checked against the link's support by :meth:`check_rewards`)."""
        own = getattr(self.laplace, "reward_bound", None)
        if own is not None:
            return own(dtype)
        return float("inf"), "the link's support (checked by the Laplace fit)"

    def validate_loaded(self, state, name: str = "model") -> None:
        """Host-side check of a state read from a file (``load`` calls it): the fit
        over the pair features as ``LaplaceGLM.validate_loaded`` checks it
        (``name.fit.y``: the rewards in the link's support, ...), and the counts
        ``n`` those of the fit, as every update sets them.

        Raises:
            ValueError: naming the field and what was expected.
        """
        parent = getattr(super(), "validate_loaded", None)  # LatentW's, if it has one
        if parent is not None:
            parent(state, name)
        self.laplace.validate_loaded(state.fit, f"{name}.fit")
        n, fit_n = np.asarray(state.n), np.asarray(state.fit.n)
        if n.shape != fit_n.shape or not np.array_equal(n, fit_n.astype(n.dtype)):
            raise ValueError(f"{name}.n: expected the fit's counts {name}.fit.n = "
                             f"{fit_n.tolist()}, got {n.tolist()}")

    def config(self) -> dict:
        """JSON-able description: the Laplace model and the prior on w."""
        cfg = super().config()
        cfg["base"] = {"class": "LaplaceGLM", "config": self.glm.config()}
        return cfg

    BASES: dict = {"LaplaceGLM": LaplaceGLM}
