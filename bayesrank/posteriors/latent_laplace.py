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
``(b_a, b_p) = g``, so the rest is :class:`~bayesrank.posteriors.latent_w.LatentW`'s:
the prior ``theta ~ N(0, s0^2 I)`` and ``p(w)``, theta integrated out in closed form,
w drawn by the slice chain on its collapsed marginal (or on a grid), theta | w
Gaussian. The only approximation is the quadratic likelihood in phi, the Laplace
approximation itself; the bilinear shape of the posterior in (theta, w), which a joint
Gaussian at the MAP of (theta, w) cannot represent, is kept exactly.

**A learnt prior scale** (``LaplaceGLM()``, ``prior_scale=None`` or a hyperprior on
tau, theta ~ N(0, tau^2 I)): tau becomes one more coordinate of the collapse, on the
grid of :class:`~bayesrank.posteriors.scaled.LearntScaleLinear` with the noise known
(sd 1): ``LatentW`` over ``GaussianLinear(prior_scale=<the hyperprior>,
noise_scale=1)`` integrates theta out given (w, tau) in closed form, tau on its grid
of 160 nodes and w by the slice chain (or its grid), exactly as for a Gaussian
likelihood. The quadratic likelihood is expanded once per round, at the ridge MAP
with ``prior_scale=1`` (the fit only locates the expansion: g carries the score
there, so the expansion does not depend on that ridge) and is written as a Gaussian
pseudo-likelihood, the IRLS working response ``z_i = eta_i + d1_i / W_i`` with
weights ``W_i``: ``sum_i W_i (z_i - <phi, x_i>)^2 / 2`` has exactly the Hessian
``H_L`` and linear term ``g`` above, and its constant ``sum_i W_i z_i^2`` (the
``yy`` the grid's known-noise evidence subtracts from) keeps every residual sum of
squares non-negative. Why this scheme and not one Laplace fit per tau node
(:class:`~bayesrank.posteriors.laplace_scaled.LearntScaleLaplace`'s): the collapse in
w needs the likelihood in closed form in phi; with one expansion, every (w, tau)
pair costs one small eigendecomposition and O(160 d) on the grid, where a fit per
node would multiply the Newton passes by 24 and give 24 different expansions to mix.
The price is the expansion point: at a small tau the posterior sits nearer 0 than
the ``prior_scale=1`` MAP, where the logistic log-likelihood is still close to its
quadratic (``bayesrank calibrate``'s ``LatentLaplace-logistic-learnt`` case checks
the whole scheme).

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

from bayesrank.posteriors.gaussian import GaussianLinear
from bayesrank.posteriors.laplace import LaplaceGLM, LaplaceState, _derivs
from bayesrank.posteriors.laplace_scaled import LearntScaleLaplace
from bayesrank.posteriors.latent_w import SLICE_STEPS, LatentW

__all__ = ["LatentLaplace", "LatentLaplaceState"]


class LatentLaplaceState(NamedTuple):
    """The statistics :class:`LatentW` reads (from the quadratic likelihood), the
    slice chain's position and the Laplace fit over the pair features.

    Example:
        >>> import numpyro.distributions as dist
        >>> from bayesrank.posteriors import LaplaceGLM, LatentLaplace
        >>> m = LatentLaplace(LaplaceGLM("logistic", n_max=20), dist.Normal(0.0, 1.0))
        >>> state = m.init(L=3, p=4)
        >>> state.Saa.shape, state.fit.x.shape
        ((3, 2, 2), (3, 20, 4))
    """

    Saa: jax.Array  # (L, d, d) the a-a block of H_L
    Sap: jax.Array  # (L, d, d) the a-p block of H_L
    Spp: jax.Array  # (L, d, d) the p-p block of H_L
    ba: jax.Array  # (L, d) the first half of g = H phi_hat
    bp: jax.Array  # (L, d) the second half of g
    yy: jax.Array  # (L,) zeros; a learnt scale: the pseudo-likelihood's sum W z^2
    n: jax.Array  # (L,) observations held
    w: jax.Array  # (L,) the chain's current w
    width: jax.Array  # (L,) the slice width
    fit: LaplaceState  # the ridge MAP and Hessian factor over the pair features


class LatentLaplace(LatentW):
    """Posterior over (theta, w) per position for a GLM link (see the module doc).

    Args:
        base: a :class:`LaplaceGLM` with link "logistic", "probit" or "exp": the
            likelihood, the prior scale s0 (theta ~ N(0, s0^2 I)), the buffer
            ``n_max`` and the Newton settings of the fit; or its learnt-scale form
            (``LaplaceGLM()``, a
            :class:`~bayesrank.posteriors.laplace_scaled.LearntScaleLaplace`): tau
            then integrated on a grid with theta (see the module docstring).
        w_prior: a NumPyro distribution over the reals (or an interval), batch shape
            ``()`` or ``(L,)``.
        slice_steps: slice-sampler transitions per draw.

    ``RankTS(model=LaplaceGLM("logistic"), items=V, L=L, w=dist.Normal(0, 5))``
    builds this model. The identity link is exact: it gets :class:`LatentW`.

    Example:
        >>> import numpyro.distributions as dist
        >>> from bayesrank.posteriors import LaplaceGLM, LatentLaplace
        >>> LatentLaplace(LaplaceGLM("probit"), dist.Normal(0.0, 5.0)).link.name
        'probit'
    """

    def __init__(self, base=None, w_prior=None, *, slice_steps: int = SLICE_STEPS):
        learnt = isinstance(base, LearntScaleLaplace)
        if not (learnt or isinstance(base, LaplaceGLM)) or base.link.name == "identity":
            raise TypeError(
                "model: LatentLaplace needs a LaplaceGLM with a logistic, probit or exp "
                f"link, got {base!r} (the identity link is exact: LatentW)"
            )
        if learnt:  # tau on LearntScaleLinear's grid, noise known (sd 1)
            prior = GaussianLinear(prior_scale=base.hyperprior, noise_scale=1.0)
        else:
            prior = GaussianLinear(prior_scale=base.prior_scale, noise_scale=1.0)
        super().__init__(prior, w_prior, slice_steps=slice_steps)
        #: the model as given (``config`` saves it)
        self.glm = base
        #: the Laplace fit over the pair features (a learnt scale: one per tau node;
        #: the expansion is taken at the modal node's MAP)
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
        return LatentLaplaceState(*stats, fit=self.laplace.init(L, p))

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
        learnt scale: the modal tau node's MAP, Hessian and ridge)."""
        d = state.ba.shape[1]
        dtype = state.ba.dtype
        if self.learnt:
            k = jnp.argmax(self.laplace.log_weights(fit), -1)
            pos = jnp.arange(k.shape[0])
            theta, chol = fit.theta[pos, k], fit.chol[pos, k]
            lam = self.laplace.map_node(fit)[1][:, None, None]
        else:
            theta, chol, lam = fit.theta, fit.chol, self.laplace.lam
        H = chol @ jnp.swapaxes(chol, -1, -2)
        g = jnp.einsum("lij,lj->li", H, theta)
        HL = H - lam * jnp.eye(2 * d, dtype=dtype)
        HL = 0.5 * (HL + jnp.swapaxes(HL, -1, -2))
        new = state._replace(
            Saa=HL[:, :d, :d], Sap=HL[:, :d, d:], Spp=HL[:, d:, d:],
            ba=g[:, :d], bp=g[:, d:], n=fit.n.astype(dtype), fit=fit,
        )
        return new._replace(yy=self._pseudo_yy(fit, theta)) if self.learnt else new

    def _pseudo_yy(self, fit, theta):
        """(L,) ``sum_i W_i z_i^2`` over the rows held, with the IRLS working
        response ``z_i = eta_i + d1_i / W_i`` at ``theta`` (L, p): the constant of
        the Gaussian pseudo-likelihood whose Hessian and linear term are H_L and g."""
        n_max = fit.x.shape[1]
        mask = jnp.arange(n_max) < jnp.minimum(fit.n, n_max)[:, None]
        eta = jnp.einsum("lnp,lp->ln", fit.x, theta)
        d1, W = _derivs(self.link.name)(eta.ravel(), fit.y.ravel())
        d1, W = d1.reshape(eta.shape), W.reshape(eta.shape)
        W = jnp.maximum(W, jnp.finfo(eta.dtype).tiny)
        terms = W * eta * eta + 2.0 * eta * d1 + d1 * d1 / W
        return jnp.sum(jnp.where(mask, terms, 0.0), -1)

    def check_rewards(self, y) -> None:
        """Host-side check: rewards in the likelihood's support."""
        self.laplace.check_rewards(y)

    def config(self) -> dict:
        """JSON-able description: the Laplace model and the prior on w."""
        cfg = super().config()
        cfg["base"] = {"class": "LaplaceGLM", "config": self.glm.config()}
        return cfg

    BASES: dict = {"LaplaceGLM": LaplaceGLM}
