"""The GLM per position by warm NUTS: :class:`BayesGLM`, a
:class:`~bayesrank.posteriors.nuts.model.NumPyroModel` on
:func:`bayesrank.posteriors.nuts.numpyro_models.glm` (its checks and configuration in
:mod:`~bayesrank.posteriors.nuts.config`).

Example:
    >>> BayesGLM("identity", prior_scale=2.0).reward_support
    'real'
"""

from __future__ import annotations

import functools

import numpyro

from bayesrank.posteriors.nuts import config as nuts_config, numpyro_models as models
from bayesrank.posteriors.nuts.config import SUPPORT_BY_LINK as _SUPPORT_BY_LINK
from bayesrank.posteriors.nuts.model import NumPyroModel

__all__ = ["BayesGLM"]


class BayesGLM(NumPyroModel):
    """GLM per position, theta ~ N(0, prior_scale^2 I) (or ``prior``), by warm NUTS.

    Rewards: identity -> Gaussian(noise_scale), logistic/probit -> Bernoulli,
    exp -> Poisson (see :func:`bayesrank.posteriors.nuts.numpyro_models.glm`).

    Args:
        link: "logistic", "probit", "identity" or "exp".
        prior_scale: sd of the default Normal prior, or a NumPyro distribution on
            (0, inf): the hyperprior of that sd, learnt with theta (a site
            ``"prior_scale"``, theta non-centred; relative to the noise sd when that
            is learnt too).
        prior: a NumPyro distribution for theta (scalar i.i.d. or shape (p,)).
        noise_scale: Gaussian noise sd (identity link only), or a NumPyro
            distribution on (0, inf): its hyperprior (a site ``"noise_scale"``).
        theta_site: name of the coefficient site.
        **options: the sampler options of :class:`NumPyroModel`.

    Example:
        >>> model = BayesGLM(link="probit", prior_scale=2.0, n_max=500)
        >>> state = model.init(L=4, p=10)
    """

    def __init__(
        self,
        link: str = "logistic",
        prior_scale: float = 1.0,
        prior=None,
        noise_scale: float = 1.0,
        *,
        theta_site: str = "theta",
        **options,
    ):
        name, self.prior_scale, self.noise_scale = nuts_config.valid_glm(
            link, prior_scale, prior, noise_scale)
        self.prior = prior
        model = functools.partial(
            models.glm,
            link=name,
            prior_scale=self.prior_scale,
            prior=prior,
            noise_scale=self.noise_scale,
            theta_site=theta_site,
        )
        for bad in ("link", "reward_support", "model"):
            if bad in options:
                raise TypeError(f"{bad}: not an option of BayesGLM")
        super().__init__(
            model,
            theta_site,
            link=name,
            reward_support=_SUPPORT_BY_LINK[name],
            **options,
        )

    def config(self) -> dict:
        """JSON-able description (a custom ``prior`` distribution cannot be saved)."""
        return nuts_config.glm_config(self)

    @classmethod
    def from_config(cls, cfg: dict) -> BayesGLM:
        """Rebuild from :meth:`config`'s output."""
        return nuts_config.glm_from_config(cls, cfg)

    def __repr__(self) -> str:
        def show(v):
            return (f"{type(v).__name__}(...)"
                    if isinstance(v, numpyro.distributions.Distribution) else repr(v))

        return (
            f"BayesGLM(link={self.link.name!r}, prior_scale={show(self.prior_scale)}, "
            f"n_max={self.n_max})"
        )
