"""The sites of a NUTS model: masking the observed ones, tracing the theta site.

A :class:`~bayesrank.posteriors.nuts.NumPyroModel` reads its user model once on dummy
data (:func:`trace_theta_site`, one abstract pass): the theta site must be a (p,)-shaped
latent or deterministic site; a scalar latent ``w`` site makes it a latent-w model on
pair features; whether every latent support is parameter-free decides how the kernel's
start is computed (:func:`bayesrank.posteriors.nuts.numpyro_compat.build_kernel`); a single
observed site gives the reward support (:mod:`~bayesrank.posteriors.nuts.model_link`, which also infers the link).
:class:`MaskObserved` masks the padded rows of the data buffers on the observed sites
only.

Example:
    >>> import functools
    >>> from bayesrank.posteriors.nuts import numpyro_models as models
    >>> site = trace_theta_site(functools.partial(models.glm, link="logistic"),
    ...                         "theta", "w", 3)
    >>> site.latent_w, site.support
    (False, 'binary')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpyro
from numpyro.distributions import constraints
from numpyro.primitives import Messenger

from bayesrank.posteriors.nuts.model_link import support_of

__all__ = ["MaskObserved", "SiteInfo", "trace_theta_site"]


class MaskObserved(Messenger):
    """Mask observed sample sites only (the prior is left alone).

    A site is masked when it is observed and the last dim of its batch shape equals
    the mask length (the observation axis). ``numpyro.handlers.mask`` would mask
    every site, the prior included.

    Args:
        fn: a model, or None to use as a context manager.
        mask: (n,) bool, True for the rows that count.

    Example:
        >>> import jax.numpy as jnp, numpyro, numpyro.distributions as dist
        >>> from numpyro.handlers import seed, trace
        >>> from bayesrank.posteriors import MaskObserved
        >>> def model(y=None):
        ...     mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        ...     numpyro.sample("y", dist.Normal(mu, 1.0).expand([3]), obs=y)
        >>> masked = MaskObserved(model, mask=jnp.array([True, False, True]))
        >>> tr = trace(seed(masked, 0)).get_trace(y=jnp.zeros(3))
        >>> (tr["y"]["fn"].log_prob(jnp.zeros(3)) != 0).tolist()   # row 2 dropped
        [True, False, True]
    """

    def __init__(self, fn: Callable | None = None, mask=None):
        if mask is None:
            raise ValueError("mask: expected an (n,) boolean array, got None")
        self.mask = mask
        super().__init__(fn)

    def process_message(self, msg):
        if msg["type"] != "sample" or not msg["is_observed"]:
            return
        batch = tuple(msg["fn"].batch_shape)
        if batch and batch[-1] == self.mask.shape[-1]:
            msg["fn"] = msg["fn"].mask(self.mask)


def _base_support(fn):
    """A distribution's support without its ``independent`` wrappers."""
    support = fn.support
    while isinstance(support, constraints.independent):
        support = support.base_constraint
    return support


class SiteInfo(NamedTuple):
    """What tracing a model's sites found (see :func:`trace_theta_site`)."""

    param_free: bool  # every latent site's support is parameter-free
    latent_w: bool  # the model declares a scalar latent w site (pair features)
    support: str | None  # the single observed site's reward support, else None


def trace_theta_site(model: Callable, theta_site: str, w_site: str, p: int) -> SiteInfo:
    """Trace ``model(x, y)`` once on dummy data (abstractly) and check its sites.

    Args:
        model: a NumPyro model ``model(x, y=None)``.
        theta_site: the (p,)-shaped (or (p/2,) for latent w) site to draw.
        w_site: the name of a scalar latent site that makes a latent-w model.
        p: the feature dimension of the dummy data.

    Returns:
        :class:`SiteInfo`.

    Raises:
        ValueError: the model fails on the dummy data, has no such theta site, or a
            site has the wrong shape.
    """
    x = jnp.zeros((3, p))
    y = jnp.zeros(3)
    box = {}

    def run(x, y):  # traced, not computed: one abstract pass, no op-by-op work
        box["tr"] = numpyro.handlers.trace(
            numpyro.handlers.seed(model, 0)
        ).get_trace(x, y)
        return {k: s["value"] for k, s in box["tr"].items() if "value" in s}

    try:
        shapes = jax.eval_shape(run, x, y)
    except Exception as err:  # the user's model failed on dummy data
        raise ValueError(
            f"model: tracing model(x, y) on dummy data x {x.shape}, y {y.shape} "
            f"failed ({type(err).__name__}: {err}); models must accept any "
            "feature dimension p, or pass dim= the p they expect"
        ) from err
    tr = {k: dict(s, value=shapes.get(k)) for k, s in box["tr"].items()}
    # Every latent site's support without parameters: the kernel's start can
    # then be computed as one compiled program (numpyro_compat.build_kernel).
    param_free = all(
        isinstance(_base_support(s["fn"]), constraints.ParameterFreeConstraint)
        for s in tr.values()
        if s["type"] == "sample" and not s["is_observed"]
    )
    site = tr.get(theta_site)
    w = tr.get(w_site)
    latent_w = w is not None and w["type"] == "sample" and not w["is_observed"]
    if latent_w:
        if p % 2 or jnp.shape(w["value"]) != ():
            raise ValueError(
                f"model: a latent-w model (site {w_site!r}) takes pair features "
                f"x (n, 2d) and a scalar {w_site!r}; got x of shape (n, {p}) "
                f"and {w_site!r} of shape {jnp.shape(w['value'])}"
            )
        p = p // 2
    ok = site is not None and (
        (site["type"] == "sample" and not site["is_observed"])
        or site["type"] == "deterministic"
    )
    if not ok:
        raise ValueError(
            f"model: expected a latent sample or deterministic site named "
            f"{theta_site!r}; found sites {sorted(tr)}"
        )
    if tuple(jnp.shape(site["value"])) != (p,):
        want = f"(d,) = ({p},) for pair" if latent_w else f"(p,) = ({p},) for"
        raise ValueError(
            f"model: site {theta_site!r} must have shape {want} "
            f"features x of shape {tuple(x.shape)}; got {jnp.shape(site['value'])}"
        )
    observed = [s for s in tr.values() if s["type"] == "sample" and s["is_observed"]]
    support = support_of(observed[0]["fn"]) if len(observed) == 1 else None
    return SiteInfo(bool(param_free), bool(latent_w), support)
