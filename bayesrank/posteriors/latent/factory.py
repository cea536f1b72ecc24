"""Which latent-w posterior a model becomes when w is given as a prior.

``RankTS(model=..., w=<distribution>)`` calls :func:`latent_model`:

========================================  =========================================
model                                     posterior over (theta, w)
========================================  =========================================
GaussianLinear, GaussianLinearUnknownNoise :class:`bayesrank.posteriors.latent.gaussian.LatentW` (exact draws)
LaplaceGLM, identity link                  LatentW on the same prior and noise (exact)
LaplaceGLM, logistic / probit / exp        :class:`bayesrank.posteriors.latent.laplace.LatentLaplace`
BayesGLM                                   :class:`bayesrank.posteriors.latent.nuts.LatentBayesGLM` (NUTS)
NumPyroModel                               declare a ``"w"`` site in the model instead
========================================  =========================================

Example:
    >>> import numpyro.distributions as dist, bayesrank as br
    >>> type(latent_model(br.LaplaceGLM("logistic"), dist.Normal(0.0, 5.0))).__name__
    'LatentLaplace'
"""

from __future__ import annotations

from bayesrank.posteriors.conjugate import (
    GaussianLinear,
    GaussianLinearUnknownNoise,
    LearntScaleLinear,
)
from bayesrank.posteriors.laplace import LaplaceGLM, LearntScaleLaplace
from bayesrank.posteriors.latent.gaussian import LatentW
from bayesrank.posteriors.latent.laplace import LatentLaplace

__all__ = ["is_latent", "latent_model"]


def is_latent(model) -> bool:
    """Whether ``model`` is already a posterior over (theta, w)."""
    return isinstance(model, LatentW) or bool(getattr(model, "latent_w", False))


def latent_model(model, w_prior):
    """The posterior over (theta, w) for ``model``'s likelihood and the prior
    ``w_prior`` on w (see the table above).

    Raises:
        TypeError: a model with no latent-w form (the message names the way out), or
            a prior that is not a NumPyro distribution (the message names ``w``).
        ValueError: an unusable prior distribution (the message names ``w``).

    Example:
        >>> import numpyro.distributions as dist, bayesrank as br
        >>> latent_model(br.GaussianLinear(), dist.Normal(0.0, 5.0))
        LatentW(GaussianLinear(prior_mean=0.0, prior_scale=None, noise_scale=None), Normal(...))
    """
    if model is None:
        model = GaussianLinear()
    if isinstance(model, (GaussianLinear, GaussianLinearUnknownNoise, LearntScaleLinear)):
        return LatentW(model, w_prior)
    if isinstance(model, LaplaceGLM):
        if model.link.name != "identity":  # a learnt tau: on a grid with theta
            return LatentLaplace(model, w_prior)
        if model.learnt_scale:  # the GaussianLinear it holds
            return LatentW(model.scale_model, w_prior)
        base = GaussianLinear(prior_scale=model.prior_scale,
                              noise_scale=model.noise_scale)
        return LatentW(base, w_prior)
    if isinstance(model, LearntScaleLaplace):  # the part on its own
        return LatentLaplace(model, w_prior)
    from bayesrank.posteriors.nuts import BayesGLM, NumPyroModel  # deferred: numpyro

    if isinstance(model, BayesGLM):
        from bayesrank.posteriors.latent.nuts import LatentBayesGLM  # deferred: numpyro

        return LatentBayesGLM(model, w_prior)
    if isinstance(model, NumPyroModel):
        raise TypeError(
            "model: a NumPyroModel learns w when its model declares a scalar sample "
            "site 'w' (pair features x = (v_a, v_prev)); pass w=None then"
        )
    raise TypeError(
        f"model: {type(model).__name__} has no latent-w form; use GaussianLinear, "
        "LaplaceGLM, BayesGLM, a NumPyroModel with a 'w' site, or GenRankTS"
    )
