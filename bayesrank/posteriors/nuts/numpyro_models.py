"""NumPyro models for one position's posterior over theta (all models live here).

The model contract used by :class:`bayesrank.posteriors.nuts.NumPyroModel` and
:class:`bayesrank.posteriors.nuts.BayesGLM`:

* signature ``model(x, y=None)``: ``x`` is an (n, p) array, the features of the
  super-arms shown at this position (``v_{a^l} + w_l v_{a^{l-1}}``), ``y`` the (n,)
  rewards (``None`` when sampling from the prior predictive);
* a latent sample site (or a deterministic site) named ``"theta"`` (configurable)
  whose value has shape (p,): the draw handed to the policy;
* the likelihood factorises over observations, with the observation index as the
  rightmost batch dimension of each observed site (e.g. inside
  ``numpyro.plate("obs", n)``). The sampler feeds zero-padded (n_max, p) buffers and
  masks padded rows on observed sites only, so the prior is never masked.

Write models for one position and any ``p`` (take it from ``x.shape[-1]``). Positions
are independent posteriors: a hierarchical prior shared *across* positions does not fit
this contract; :func:`hierarchical_glm` is hierarchical *within* a position (the p
coefficients of theta share a learned mean and scale).

Example:
    >>> import numpyro, numpyro.distributions as dist
    >>> def my_model(x, y=None):
    ...     theta = numpyro.sample("theta", dist.Laplace(0.0, 1.0).expand([x.shape[-1]]).to_event(1))
    ...     with numpyro.plate("obs", x.shape[0]):
    ...         numpyro.sample("y", dist.Normal(x @ theta, 1.0), obs=y)
"""

from __future__ import annotations

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import log_ndtr

__all__ = [
    "GLM_LINKS",
    "glm",
    "glm_likelihood",
    "hierarchical_glm",
    "latent_w_glm",
    "student_t_glm",
]

GLM_LINKS = ("identity", "logistic", "probit", "exp")


def glm_likelihood(eta, link: str, noise_scale: float = 1.0) -> dist.Distribution:
    """The reward distribution of a GLM given linear predictors.

    Args:
        eta: (n,) linear predictors ``<theta, x_i>``.
        link: "identity" (Gaussian, sd ``noise_scale``), "logistic" or "probit"
            (Bernoulli clicks), "exp" (Poisson counts).
        noise_scale: Gaussian noise sd for the identity link.

    Returns:
        A distribution with batch shape (n,).
    """
    if link == "identity":
        return dist.Normal(eta, noise_scale)
    if link == "logistic":
        return dist.Bernoulli(logits=eta)
    if link == "probit":
        # logit(Phi(eta)) = log Phi(eta) - log Phi(-eta): stable in both tails.
        return dist.Bernoulli(logits=log_ndtr(eta) - log_ndtr(-eta))
    if link == "exp":
        return dist.Poisson(jnp.exp(eta))
    raise ValueError(f"link: expected one of {GLM_LINKS}, got {link!r}")


def _theta_prior(prior, prior_scale: float, p: int) -> dist.Distribution:
    if prior is None:
        return dist.Normal(0.0, prior_scale).expand([p]).to_event(1)
    shape = tuple(prior.batch_shape) + tuple(prior.event_shape)
    if shape == ():
        return prior.expand([p]).to_event(1)
    if shape != (p,):
        raise ValueError(
            f"prior: expected a scalar distribution or one of shape ({p},), "
            f"got batch_shape {prior.batch_shape} and event_shape {prior.event_shape}"
        )
    return prior.to_event(len(prior.batch_shape)) if prior.batch_shape else prior


def glm(
    x,
    y=None,
    *,
    link: str = "logistic",
    prior_scale: float = 1.0,
    prior: dist.Distribution | None = None,
    noise_scale: float = 1.0,
    theta_site: str = "theta",
):
    """GLM for one position: theta ~ prior, y_i ~ F(f(<theta, x_i>)).

    Args:
        x: (n, p) features.
        y: (n,) rewards, or None.
        link: see :func:`glm_likelihood`.
        prior_scale: sd of the default prior N(0, prior_scale^2 I), or a NumPyro
            distribution on (0, inf): a hyperprior, sampled as the site
            ``"prior_scale"`` with theta non-centred (``theta = prior_scale * z``, z
            the site ``"<theta_site>_z"``; with the noise learnt too, theta's sd is
            ``prior_scale * noise_scale``, so the reward's units cancel).
        prior: a NumPyro distribution for theta replacing the default: scalar
            (applied i.i.d. to the p coordinates) or of shape (p,).
        noise_scale: Gaussian noise sd (identity link only), or a NumPyro
            distribution on (0, inf), sampled as the site ``"noise_scale"``.
        theta_site: the name of the coefficient site.
    """
    n, p = x.shape[-2], x.shape[-1]
    if isinstance(noise_scale, dist.Distribution):
        noise_scale = numpyro.sample("noise_scale", noise_scale)
        unit = noise_scale
    else:
        unit = 1.0
    if isinstance(prior_scale, dist.Distribution):
        g = numpyro.sample("prior_scale", prior_scale)
        z = numpyro.sample(f"{theta_site}_z", dist.Normal(0.0, 1.0).expand([p]).to_event(1))
        theta = numpyro.deterministic(theta_site, g * unit * z)
    else:
        theta = numpyro.sample(theta_site, _theta_prior(prior, prior_scale, p))
    with numpyro.plate("obs", n):
        numpyro.sample("y", glm_likelihood(x @ theta, link, noise_scale), obs=y)


def student_t_glm(
    x,
    y=None,
    *,
    df: float = 3.0,
    scale: float = 1.0,
    link: str = "identity",
    noise_scale: float = 1.0,
):
    """Example: a heavy-tailed prior, theta_j ~ StudentT(df, 0, scale) i.i.d.

    Use as ``NumPyroModel(functools.partial(student_t_glm, df=5.0), link=...)``.
    """
    p = x.shape[-1]
    prior = dist.StudentT(df, 0.0, scale).expand([p]).to_event(1)
    theta = numpyro.sample("theta", prior)
    with numpyro.plate("obs", x.shape[-2]):
        numpyro.sample("y", glm_likelihood(x @ theta, link, noise_scale), obs=y)


def hierarchical_glm(
    x,
    y=None,
    *,
    link: str = "identity",
    noise_scale: float = 1.0,
    mu_scale: float = 1.0,
    tau_scale: float = 1.0,
):
    """Example: a hierarchical prior within one position.

    mu ~ N(0, mu_scale^2), tau ~ HalfNormal(tau_scale), theta_j = mu + tau z_j with
    z_j ~ N(0, 1): the p coefficients shrink towards a common, learned mean. The
    non-centred form avoids the funnel NUTS struggles with when data are few; theta is
    then a deterministic site, which the sampler supports. Positions stay independent
    (each has its own mu and tau).
    """
    p = x.shape[-1]
    mu = numpyro.sample("mu", dist.Normal(0.0, mu_scale))
    tau = numpyro.sample("tau", dist.HalfNormal(tau_scale))
    z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([p]).to_event(1))
    theta = numpyro.deterministic("theta", mu + tau * z)
    with numpyro.plate("obs", x.shape[-2]):
        numpyro.sample("y", glm_likelihood(x @ theta, link, noise_scale), obs=y)


def latent_w_glm(
    x,
    y=None,
    *,
    w_prior: dist.Distribution,
    link: str = "logistic",
    prior_scale: float = 1.0,
    noise_scale: float = 1.0,
    theta_site: str = "theta",
):
    """GLM for one position with the dependency weight w latent.

    theta ~ N(0, prior_scale^2 I_d), w ~ ``w_prior``, and
    ``y_i ~ F(f(<theta, a_i + w p_i>))`` over the pair features ``x_i = (a_i, p_i)``
    (shape (n, 2d): the item shown and the item before it). The site ``"w"`` makes
    :class:`~bayesrank.posteriors.NumPyroModel` treat the model as latent-w; a user
    model does the same by declaring a scalar ``numpyro.sample("w", ...)``.

    Example:
        >>> import jax.numpy as jnp, numpyro, numpyro.distributions as dist
        >>> tr = numpyro.handlers.trace(numpyro.handlers.seed(latent_w_glm, 0)).get_trace(
        ...     jnp.ones((5, 4)), w_prior=dist.Normal(0.0, 5.0))
        >>> tr["theta"]["value"].shape, tr["w"]["value"].shape
        ((2,), ())
    """
    n, d = x.shape[-2], x.shape[-1] // 2
    theta = numpyro.sample(theta_site, _theta_prior(None, prior_scale, d))
    w = numpyro.sample("w", w_prior)
    eta = x[..., :d] @ theta + w * (x[..., d:] @ theta)
    with numpyro.plate("obs", n):
        numpyro.sample("y", glm_likelihood(eta, link, noise_scale), obs=y)
