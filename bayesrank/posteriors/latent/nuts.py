"""Unknown w with NUTS: a joint posterior over (theta, w) per position.

:class:`LatentBayesGLM` is :class:`~bayesrank.posteriors.BayesGLM` with a latent
dependency weight: the NumPyro model :func:`~bayesrank.posteriors.nuts.numpyro_models.latent_w_glm`
(theta ~ N(0, s0^2 I), w ~ the given prior, rewards through the GLM link of
``<theta, v_{a^l} + w v_{a^{l-1}}>``) on the pair features, sampled by the same
warm-started NUTS chains. Nothing is approximated: the chains target the exact joint
posterior, bilinear ridge included (NUTS follows the curved ridge that slows a
two-block Gibbs sampler). A user model gets the same by declaring a scalar sample
site ``"w"`` (see :class:`~bayesrank.posteriors.NumPyroModel`'s ``w_site``).

The prior on w must have batch shape ``()`` here: the chains of all positions share
one model function (a per-position prior needs a per-position model; the conjugate
and Laplace models take batch shape ``(L,)``).

Example:
    >>> import jax, jax.numpy as jnp, numpyro.distributions as dist
    >>> from bayesrank.posteriors import BayesGLM, LatentBayesGLM
    >>> model = LatentBayesGLM(BayesGLM("logistic", n_max=20, num_warmup=10),
    ...                        dist.Normal(0.0, 5.0))
    >>> state = model.init(L=2, p=4)
    >>> (theta, w), state = model.draw(jax.random.key(0), state)
    >>> theta.shape, w.shape
    ((2, 2), (2,))
"""

from __future__ import annotations

import functools

from bayesrank.posteriors.nuts import BayesGLM, latent_w_glm, NumPyroModel
from bayesrank.posteriors.w_prior import prior_config, prior_from_config, valid_w_prior

__all__ = ["LatentBayesGLM"]


class LatentBayesGLM(NumPyroModel):
    """:class:`BayesGLM` over (theta, w): w latent with prior ``w_prior``.

    Args:
        base: the BayesGLM whose link, prior scale, noise scale and sampler options
            are used (its custom ``prior`` on theta, if any, is not supported).
        w_prior: a NumPyro distribution over the reals (or an interval) with batch
            shape ``()``.

    Example:
        >>> import numpyro.distributions as dist
        >>> from bayesrank.posteriors import BayesGLM, LatentBayesGLM
        >>> LatentBayesGLM(BayesGLM("probit"), dist.Normal(0.0, 5.0)).latent_w
        True
    """

    def __init__(self, base=None, w_prior=None):
        if not isinstance(base, BayesGLM):
            raise TypeError(
                f"model: LatentBayesGLM needs a BayesGLM, got {type(base).__name__}"
            )
        if base.prior is not None:
            raise TypeError(
                "model: a BayesGLM with a custom prior on theta has no latent-w form; "
                "write a NumPyroModel with a 'w' site"
            )
        prior = valid_w_prior(w_prior, None)
        if tuple(prior.batch_shape) != ():
            raise ValueError(
                "w: NUTS models take a prior on w with batch shape () (one prior for "
                f"every position), got {tuple(prior.batch_shape)}"
            )
        self.base, self.w_prior = base, prior
        fn = functools.partial(
            latent_w_glm, w_prior=prior, link=base.link.name,
            prior_scale=base.prior_scale, noise_scale=base.noise_scale,
            theta_site=base.theta_site,
        )
        super().__init__(fn, base.theta_site, link=base.link.name,
                         reward_support=base.reward_support, **base._options())

    def check_positions(self, L: int) -> None:
        """The prior's batch shape is () (checked at construction)."""
        del L

    def label(self) -> str:
        """The model's name in DataTree attributes."""
        return f"LatentBayesGLM({self.link.name})"

    def config(self) -> dict:
        """JSON-able description: the BayesGLM and the prior on w."""
        return {"type": "LatentBayesGLM", "base": self.base.config(),
                "w_prior": prior_config(self.w_prior)}

    @classmethod
    def from_config(cls, cfg: dict) -> LatentBayesGLM:
        """Rebuild from :meth:`config` (bayesrank's own classes only)."""
        if not isinstance(cfg, dict) or cfg.get("type") != "LatentBayesGLM":
            raise ValueError("cfg: expected a LatentBayesGLM config")
        return cls(BayesGLM.from_config(cfg["base"]), prior_from_config(cfg["w_prior"]))

    def __repr__(self) -> str:
        return f"LatentBayesGLM({self.base!r}, {type(self.w_prior).__name__}(...))"
