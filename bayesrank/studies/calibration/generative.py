"""What SBC simulates: a design of features, the model's prior and its likelihood.

The design (stated in every report): the items, dependency weights and user vector of
``RankingEnv.paper(seed, K, L, d, w_max)``, and per simulation ``n`` lists of L items
drawn uniformly at random (repeats allowed, as in the paper), turned into features
``x^l = v_{a^l} + w_l v_{a^{l-1}}`` by :func:`bayesrank.model.scores.list_features`.

A :class:`Generative` holds pure functions ``prior(key, L, p) -> params`` and
``rewards(key, params, x) -> y``; :func:`generative_for` reads them off a model's public
hyper-parameters (``prior_mean``, ``prior_scale``, ``noise_scale``, ``a0``, ``b0``,
``link``), so the simulated truth is the model's own prior and likelihood.

Example:
    >>> import jax
    >>> from bayesrank.posteriors import GaussianLinear
    >>> gen = generative_for(GaussianLinear(prior_scale=2.0))
    >>> params = gen.prior(jax.random.key(0), 2, 3)
    >>> params["theta"].shape
    (2, 3)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank.model import scores
from bayesrank.posteriors.conjugate import LearntScaleLinear
from bayesrank.posteriors.hyperprior import default_hyperprior
from bayesrank.simulation.env import RankingEnv

__all__ = [
    "Design",
    "Generative",
    "design_arrays",
    "design_features",
    "gaussian_generative",
    "generative_for",
    "glm_generative",
    "laplace_learnt_generative",
    "learnt_generative",
    "nig_generative",
]


class Design(NamedTuple):
    """The feature design: ``RankingEnv.paper(seed, K, L, d, w_max)``'s items and w.

    Example:
        >>> import jax
        >>> Design()
        Design(K=20, L=2, d=5, w_max=1.0, seed=0)
        >>> design_features(jax.random.key(0), 4, Design(K=6, L=3, d=2)).shape
        (4, 3, 2)
    """

    K: int = 20
    L: int = 2
    d: int = 5
    w_max: float = 1.0
    seed: int = 0


class Generative(NamedTuple):
    """Prior sampler and reward simulator of one model (pure JAX functions).

    Example:
        A known truth (theta = 1, noise-free rewards), e.g. to pass to
        ``run_sbc(..., generative=gen)``:

        >>> import jax, jax.numpy as jnp
        >>> gen = Generative(
        ...     prior=lambda key, L, p: {"theta": jnp.ones((L, p))},
        ...     rewards=lambda key, params, x: jnp.sum(x * params["theta"], axis=-1),
        ...     description="theta = 1, y = <theta, x>",
        ... )
        >>> params = gen.prior(jax.random.key(0), 2, 3)
        >>> x = jnp.arange(6.0).reshape(1, 2, 3)
        >>> gen.rewards(jax.random.key(1), params, x).tolist()
        [[3.0, 12.0]]
    """

    prior: Callable  # (key, L, p) -> dict with "theta" (L, p) and any nuisances
    rewards: Callable  # (key, params, x (..., L, p)) -> y (..., L)
    description: str
    features: Callable | None = None  # (key, n, design) -> x; None: design_features


@functools.lru_cache(maxsize=16)
def design_arrays(design: Design):
    """items (K, d), W (L, 1), v0 (d,) of the design's paper instance (NumPy)."""
    with jax.ensure_compile_time_eval():
        env = RankingEnv.paper(
            seed=design.seed, K=design.K, L=design.L, d=design.d, w_max=design.w_max
        )
        return np.asarray(env.items), np.asarray(env.W), np.asarray(env.v0)


def design_features(key, n: int, design: Design):
    """Features of ``n`` uniformly random lists: (n, L, d)."""
    items, W, v0 = design_arrays(design)
    lists = jax.random.randint(key, (n, design.L), 0, design.K)
    return scores.list_features(
        jnp.asarray(items), jnp.asarray(W), jnp.asarray(v0), lists
    )


def _prior_chol(prior_scale, p: int):
    """Lower Cholesky factor of the prior covariance from a scalar, (p,) or (p, p)."""
    scale = jnp.asarray(prior_scale, jnp.result_type(float))
    if scale.ndim == 2:
        return jnp.linalg.cholesky(scale)
    return jnp.diag(jnp.broadcast_to(scale, (p,)))


def _eta(params, x):
    return jnp.sum(x * params["theta"], axis=-1)


def gaussian_generative(prior_mean=0.0, prior_scale=1.0, noise_scale=1.0) -> Generative:
    """theta ~ N(m0, S0) per position, y = <theta, x> + N(0, noise_scale^2)."""

    def prior(key, L, p):
        C = _prior_chol(prior_scale, p)
        m0 = jnp.broadcast_to(jnp.asarray(prior_mean, C.dtype), (p,))
        z = jax.random.normal(key, (L, p), C.dtype)
        return {"theta": m0 + z @ C.T}

    def rewards(key, params, x):
        eta = _eta(params, x)
        return eta + noise_scale * jax.random.normal(key, eta.shape, eta.dtype)

    return Generative(
        prior,
        rewards,
        f"theta ~ N({prior_mean}, {np.asarray(prior_scale).tolist()}^2), "
        f"y ~ N(<theta, x>, {noise_scale}^2)",
    )


def nig_generative(prior_mean=0.0, prior_scale=1.0, a0=2.0, b0=1.0) -> Generative:
    """s^2 ~ InvGamma(a0, b0), theta | s ~ N(m0, s^2 S0), y ~ N(<theta, x>, s^2)."""

    def prior(key, L, p):
        k1, k2 = jax.random.split(key)
        C = _prior_chol(prior_scale, p)
        m0 = jnp.broadcast_to(jnp.asarray(prior_mean, C.dtype), (p,))
        sigma2 = b0 / jax.random.gamma(k1, a0, (L,), C.dtype)
        s = jnp.sqrt(sigma2)
        z = jax.random.normal(k2, (L, p), C.dtype)
        return {"theta": m0 + s[:, None] * (z @ C.T), "sigma": s}

    def rewards(key, params, x):
        eta = _eta(params, x)
        return eta + params["sigma"] * jax.random.normal(key, eta.shape, eta.dtype)

    return Generative(
        prior,
        rewards,
        f"s^2 ~ InvGamma({a0}, {b0}), theta | s ~ N({prior_mean}, "
        f"s^2 {np.asarray(prior_scale).tolist()}^2), y ~ N(<theta, x>, s^2)",
    )


def glm_generative(
    link: str, prior_scale=1.0, noise_scale=1.0, prior_mean=0.0
) -> Generative:
    """theta ~ N(prior_mean, prior_scale^2 I), y from the link's GLM family.

    identity: Gaussian(noise_scale); logistic/probit: Bernoulli; exp: Poisson.
    """
    if link not in ("identity", "logistic", "probit", "exp"):
        raise ValueError(
            f"link: expected 'identity', 'logistic', 'probit' or 'exp', got {link!r}"
        )

    def prior(key, L, p):
        C = _prior_chol(prior_scale, p)
        m0 = jnp.broadcast_to(jnp.asarray(prior_mean, C.dtype), (p,))
        return {"theta": m0 + jax.random.normal(key, (L, p), C.dtype) @ C.T}

    def rewards(key, params, x):
        eta = _eta(params, x)
        if link == "identity":
            return eta + noise_scale * jax.random.normal(key, eta.shape, eta.dtype)
        if link == "logistic":
            return jax.random.bernoulli(key, jax.nn.sigmoid(eta)).astype(eta.dtype)
        if link == "probit":
            prob = jax.scipy.stats.norm.cdf(eta)
            return jax.random.bernoulli(key, prob).astype(eta.dtype)
        return jax.random.poisson(key, jnp.exp(eta)).astype(eta.dtype)

    family = {"identity": "Gaussian", "logistic": "Bernoulli", "probit": "Bernoulli",
              "exp": "Poisson"}[link]
    return Generative(
        prior,
        rewards,
        f"theta ~ N({np.asarray(prior_mean).tolist()}, "
        f"{np.asarray(prior_scale).tolist()}^2 I), y ~ {family} "
        f"({link} link)",
    )


def _sample_g(model, key, L: int, dtype):
    """g from the model's hyperprior (its fixed value where it is a number)."""
    if model.fixed_scale is not None and model.shape is None:
        return jnp.full((L,), model.fixed_scale, dtype)
    if model.fixed_scale is not None:
        return jnp.ones((L,), dtype)
    prior = model.hyperprior if model.hyperprior is not None else default_hyperprior()
    return prior.sample(key, (L,)).astype(dtype)


def learnt_generative(model: LearntScaleLinear, *, with_scales: bool = False) -> Generative:
    """The truth a learnt-scale model (``GaussianLinear()``) assumes: ``g`` from its
    hyperprior, the noise sd s (1 where it is learnt under Jeffreys' prior: the model
    is scale-equivariant, so its posterior ranks have the same law at every s; else
    the model's number), ``theta ~ N(m0, g^2 s^2 I)``, ``y ~ N(<theta, x>, s^2)``.

    ``params["theta"]`` is (L, p), or with ``with_scales`` (L, p + 1 or p + 2): theta
    with log g (and log s, where the noise is learnt) appended.
    """
    s_true = 1.0 if model.noise_scale is None else float(model.noise_scale)
    extra = 1 + (model.noise_scale is None)

    def prior(key, L, p):
        k_g, k_z = jax.random.split(key)
        dtype = jnp.result_type(float)
        g = _sample_g(model, k_g, L, dtype)
        z = jax.random.normal(k_z, (L, p), dtype)
        if model.shape is not None:
            z = z @ jnp.asarray(model.shape, dtype).T
        m0 = jnp.broadcast_to(jnp.asarray(model.prior_mean, dtype), (p,))
        theta = m0 + (g * s_true)[:, None] * z
        if not with_scales:
            return {"theta": theta}
        cols = [theta, jnp.log(g)[:, None]]
        if extra == 2:
            cols.append(jnp.zeros((L, 1), dtype))  # log s = 0
        return {"theta": jnp.concatenate(cols, -1)}

    def rewards(key, params, x):
        p = x.shape[-1]
        eta = jnp.sum(x * params["theta"][:, :p], axis=-1)
        return eta + s_true * jax.random.normal(key, eta.shape, eta.dtype)

    hyper = ("HalfCauchy(1)" if model.hyperprior is None and model.fixed_scale is None
             else type(model.hyperprior).__name__ if model.hyperprior is not None
             else np.asarray(model.fixed_scale).tolist())
    return Generative(
        prior, rewards,
        f"g ~ {hyper}, s = {s_true} ({'learnt under 1/s' if extra == 2 else 'known'}), "
        f"theta ~ N({np.asarray(model.prior_mean).tolist()}, g^2 s^2 I), "
        "y ~ N(<theta, x>, s^2)")


def laplace_learnt_generative(model, *,
                              with_scale: bool = True) -> Generative:
    """The truth a learnt-scale Laplace GLM assumes: ``tau`` from its hyperprior,
    ``theta ~ N(0, tau^2 I)``, rewards from the link's family; ``params["theta"]``
    is (L, p + 1): theta with log tau appended (``with_scale=False``: (L, p), theta
    alone)."""
    hyper = model.hyperprior if model.hyperprior is not None else default_hyperprior()
    family = glm_generative(model.link.name)

    def prior(key, L, p):
        k_t, k_z = jax.random.split(key)
        dtype = jnp.result_type(float)
        tau = hyper.sample(k_t, (L,)).astype(dtype)
        theta = tau[:, None] * jax.random.normal(k_z, (L, p), dtype)
        if not with_scale:
            return {"theta": theta}
        return {"theta": jnp.concatenate([theta, jnp.log(tau)[:, None]], -1)}

    def rewards(key, params, x):
        return family.rewards(key, {"theta": params["theta"][:, :x.shape[-1]]}, x)

    name = "HalfCauchy(1)" if model.hyperprior is None else type(hyper).__name__
    return Generative(prior, rewards, f"tau ~ {name}, theta ~ N(0, tau^2 I), "
                      + family.description.split("), ", 1)[1])


def generative_for(model) -> Generative:
    """The prior and likelihood a model assumes, from its public hyper-parameters.

    A model with a ``generative()`` method says so itself (the latent-w adapter of
    :mod:`bayesrank.studies.calibration.latent`). Otherwise supports models with ``a0``/``b0`` (Normal-Inverse-Gamma), ``noise_scale`` and
    ``prior_mean`` with the identity link (conjugate Gaussian), and GLMs with
    ``prior_scale`` (and ``prior_mean`` if present) and a named link (``BayesGLM``,
    ``LaplaceGLM``) whose prior is N(prior_mean, prior_scale^2 I).

    Raises:
        TypeError: a model whose prior cannot be read (e.g. a custom NumPyro prior).

    Example:
        >>> from bayesrank.posteriors import GaussianLinear, LaplaceGLM
        >>> generative_for(GaussianLinear(prior_scale=1.0, noise_scale=1.0)).description
        'theta ~ N(0.0, 1.0^2), y ~ N(<theta, x>, 1.0^2)'
        >>> generative_for(GaussianLinear()).description
        'g ~ HalfCauchy(1), s = 1.0 (learnt under 1/s), theta ~ N(0.0, g^2 s^2 I), y ~ N(<theta, x>, s^2)'
        >>> generative_for(LaplaceGLM(link="logistic", prior_scale=2.0)).description
        'theta ~ N(0.0, 2.0^2 I), y ~ Bernoulli (logistic link)'
    """
    if callable(getattr(model, "generative", None)):  # e.g. the latent-w adapter
        return model.generative()
    if getattr(model, "learnt_scale", False):  # GaussianLinear()'s learnt scales
        if model.link.name != "identity":  # LaplaceGLM()'s learnt tau
            return laplace_learnt_generative(model, with_scale=False)
        return learnt_generative(model)  # (also through a wrapper that delegates)
    link = getattr(getattr(model, "link", None), "name", None)
    if hasattr(model, "a0") and hasattr(model, "b0"):
        return nig_generative(model.prior_mean, model.prior_scale, model.a0, model.b0)
    if hasattr(getattr(model, "prior", None), "log_prob"):  # a custom distribution
        raise TypeError(
            "model: a custom prior distribution cannot be read; pass generative="
        )
    if hasattr(model, "prior_mean") and link == "identity":
        return gaussian_generative(
            model.prior_mean, model.prior_scale, getattr(model, "noise_scale", 1.0)
        )
    if hasattr(model, "prior_scale") and link in (
        "identity", "logistic", "probit", "exp"
    ):
        return glm_generative(
            link,
            model.prior_scale,
            float(getattr(model, "noise_scale", 1.0)),
            getattr(model, "prior_mean", 0.0),
        )
    raise TypeError(
        f"model: cannot read a prior and likelihood off {type(model).__name__}; "
        "pass generative="
    )
