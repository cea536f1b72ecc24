"""Laplace-approximate GLM posterior per position (Chapelle & Li 2011, "An empirical
evaluation of Thompson sampling", Algorithm 3): :class:`LaplaceGLM`.

For each position l independently, with prior theta ~ N(0, s0^2 I) and rewards
r_i ~ F(f(<theta, x_i>)) (logistic or probit: Bernoulli; exp: Poisson; identity:
Gaussian, exact), the posterior is approximated by N(theta_hat, H^{-1}) at the
regularised MLE. ``LaplaceGLM(...)`` holds one part (:attr:`LaplaceGLM.scale_model`),
chosen by ``prior_scale`` and the link:

    a number s0                     :class:`bayesrank.posteriors.laplace.fixed_scale.FixedScaleLaplace` (the
                                    fit, buffers, forgetting: its module docstring)
    None or a distribution          :class:`bayesrank.posteriors.laplace.learnt_scale.LearntScaleLaplace`
    (logistic, probit, exp)         (s0 learnt on a grid by the Laplace evidence)
    None or a distribution          :class:`~bayesrank.posteriors.GaussianLinear`'s
    (identity)                      exact learnt scale

Either way the model is a ``LaplaceGLM``.

Example:
    >>> import jax, jax.numpy as jnp
    >>> model = LaplaceGLM(link="logistic", prior_scale=1.0, n_max=100)  # fixed s0
    >>> type(model.scale_model).__name__, model.learnt_scale
    ('FixedScaleLaplace', False)
    >>> state = model.init(L=2, p=3)
    >>> state = model.update(state, jnp.ones((2, 3)), jnp.array([1.0, 0.0]))
    >>> theta, state = model.draw(jax.random.key(0), state)
    >>> theta.shape
    (2, 3)
"""

from __future__ import annotations


from bayesrank.posteriors.base import ScaleHolder
from bayesrank._validate import check_real
from bayesrank.model.links import Link
from bayesrank.posteriors.conjugate import GaussianLinear
from bayesrank.posteriors.laplace.fixed_scale import FixedScaleLaplace
from bayesrank.posteriors.laplace.learnt_scale import (
    default_tau_hyperprior,
    LearntScaleLaplace,
)
from bayesrank.posteriors.prior_checks import is_learnt

__all__ = ["LaplaceGLM"]


class LaplaceGLM(ScaleHolder):
    """GLM posterior per position by the Laplace approximation at the regularised MLE.

    The part it holds, :attr:`scale_model`, does the maths (see the module
    docstring); the contract's methods run the part's, and every other attribute is
    the part's too (``gram``, ``covariance``, ``lam``, ``map_node``, ``n_max``, ...),
    so ``hasattr`` says what it offers. :attr:`learnt_scale` says which part it is.

    Args:
        link: "logistic" or "probit" (Bernoulli rewards in {0, 1}), "exp" (Poisson
            counts), "identity" (Gaussian rewards with sd ``noise_scale``: exact,
            the same as :class:`~bayesrank.posteriors.conjugate.gaussian.GaussianLinear`).
        prior_scale: None (the default) or a NumPyro distribution on (0, inf): s0
            is learnt (HalfNormal(1) for None, ``default_tau_hyperprior``: the
            Laplace fit is over-confident at large s0) by the Laplace evidence on a
            grid (:class:`~bayesrank.posteriors.laplace.learnt_scale.LearntScaleLaplace`;
            the identity link: ``GaussianLinear``'s exact learnt scale). A number
            s0 > 0: the prior N(0, s0^2 I), ridge weight 1 / s0^2
            (:class:`~bayesrank.posteriors.laplace.fixed_scale.FixedScaleLaplace`;
            ``prior_scale=1.0`` is the default before issue 44: the same lists and
            files).
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
        >>> model = LaplaceGLM(link="exp", prior_scale=2.0, n_max=500)
        >>> state = model.init(L=4, p=10)
        >>> model.mean(state).shape
        (4, 10)
        >>> type(LaplaceGLM()).__name__, LaplaceGLM().learnt_scale
        ('LaplaceGLM', True)
    """

    vmappable = True

    def __init__(self, link: str | Link = "logistic", prior_scale=None, noise_scale=1.0,
                 *, n_max: int = 2000, tol=1e-10, max_iter: int = 50, hessian_tol=None):
        kwargs = {"n_max": n_max, "tol": tol, "max_iter": max_iter,
                  "hessian_tol": hessian_tol}
        if not is_learnt(prior_scale):
            part = FixedScaleLaplace(link, prior_scale, noise_scale, **kwargs)
        elif (link.name if isinstance(link, Link) else link) == "identity":
            # exact: the conjugate learnt-scale model
            part = GaussianLinear(prior_scale=prior_scale, noise_scale=noise_scale)
        else:
            # checked as for a fixed scale, though only the identity link reads it
            check_real(noise_scale, "noise_scale", low=0, inclusive="neither")
            if prior_scale is None:  # HalfNormal(1): where the Laplace fit holds
                prior_scale = default_tau_hyperprior()
            part = LearntScaleLaplace(link, prior_scale, **kwargs)
        #: the part doing the maths, FixedScaleLaplace, LearntScaleLaplace or (the
        #: identity link with a learnt scale) GaussianLinear
        self.scale_model = part

    def __repr__(self) -> str:
        text = repr(self.scale_model)
        if self.learnt_scale and self.link.name == "identity":  # a GaussianLinear
            text = "LaplaceGLM(link='identity', " + text.split("(", 1)[1]
        return text

    # ---------------------------------------------------------- persistence
    #: The parts a config may name (its ``class``), looked up here, never imported.
    PARTS: dict = {"LaplaceGLM": FixedScaleLaplace,
                   "LearntScaleLaplace": LearntScaleLaplace,
                   "LearntScaleLinear": GaussianLinear}
