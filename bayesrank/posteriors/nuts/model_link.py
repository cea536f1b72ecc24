"""Infer the link and reward support of a user NumPyro model from its observed site.

The model is traced on random features; its one observed site gives

* the reward support, from the distribution's support: boolean -> "binary",
  non-negative integers -> "count", real -> "real";
* the link, by checking which of identity / logistic / probit / exp maps
  ``eta = x @ theta`` (theta: the traced value of the theta site) to the site's mean
  ``E[y]``. So ``Bernoulli(logits=eta)`` gives logistic, ``Bernoulli(probs=Phi(eta))``
  probit, ``Poisson(exp(eta))`` exp, ``Normal(eta, s)`` identity; a mean that none of
  them reproduces (another link, an offset, a non-linear predictor) raises a
  ValueError asking for ``link=``. No model is silently scored with the identity link.

Example:
    >>> import numpyro, numpyro.distributions as dist
    >>> def clicks(x, y=None):
    ...     theta = numpyro.sample("theta", dist.Normal(0, 1).expand([x.shape[-1]]).to_event(1))
    ...     with numpyro.plate("obs", x.shape[0]):
    ...         numpyro.sample("y", dist.Bernoulli(logits=x @ theta), obs=y)
    >>> infer_link(clicks, "theta", 3)
    ('logistic', 'binary')
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
from numpyro.distributions import constraints

from bayesrank.model.links import LINKS

__all__ = ["infer_link", "support_of"]


def support_of(fn) -> str | None:
    """'binary', 'count' or 'real' for a distribution's support, else None."""
    support = fn.support
    while isinstance(support, constraints.independent):
        support = support.base_constraint
    if support is constraints.boolean:
        return "binary"
    if support is constraints.nonnegative_integer:
        return "count"
    if support is constraints.real:
        return "real"
    return None


def _trace(model, x, y):
    return numpyro.handlers.trace(numpyro.handlers.seed(model, 0)).get_trace(x, y)


def infer_link(
    model: Callable, theta_site: str, p: int, w_site: str | None = None
) -> tuple[str, str]:
    """(link name, reward support) of ``model``'s observed site (see module doc).

    With ``w_site`` (a latent-w model over pair features x = (a, p) in R^{2d}) the
    linear predictor is ``<theta, a + w p>``.

    Raises:
        ValueError: no or several observed sites, an unknown support, or a mean that
            no named link reproduces; the message asks for ``link=``.
    """
    rng = np.random.default_rng(0)
    n = 16
    x = jnp.asarray(rng.normal(size=(n, p)))
    tr = _trace(model, x, jnp.zeros(n))
    theta = np.asarray(tr[theta_site]["value"], float)
    spread = 1.0 if w_site is None else 1.0 + abs(float(tr[w_site]["value"]))
    # rescale the features so that eta spreads over about [-2, 2]
    scale = 1.0 / max(float(np.linalg.norm(theta)) * spread, 1e-3)
    x = x * scale
    tr = _trace(model, x, jnp.zeros(n))
    observed = [
        (name, s)
        for name, s in tr.items()
        if s["type"] == "sample" and s["is_observed"]
    ]
    ask = "pass link= (and reward_support=) to NumPyroModel"
    if len(observed) != 1:
        raise ValueError(
            f"model: found {len(observed)} observed sites "
            f"{[name for name, _ in observed]}; cannot infer the link, {ask}"
        )
    name, site = observed[0]
    support = support_of(site["fn"])
    if support is None:
        raise ValueError(
            f"model: observed site {name!r} has support {site['fn'].support}; "
            f"cannot infer the reward support, {ask}"
        )
    theta = jnp.asarray(tr[theta_site]["value"])
    if w_site is None:
        eta = np.asarray(x @ theta, float)
    else:
        d = p // 2
        w = tr[w_site]["value"]
        eta = np.asarray(x[:, :d] @ theta + w * (x[:, d:] @ theta), float)
    try:
        mean = np.asarray(site["fn"].mean, float)
    except (NotImplementedError, AttributeError):
        mean = None  # no analytic mean (NumPyro raises): no link matches, the error below
    if mean is not None and mean.shape == eta.shape:
        for link in ("identity", "logistic", "probit", "exp"):
            target = np.asarray(jax.device_get(LINKS[link].mean(eta)), float)
            if np.allclose(mean, target, rtol=1e-5, atol=1e-7):
                return link, support
    dist_name = type(site["fn"]).__name__
    raise ValueError(
        f"model: the mean of observed site {name!r} ({dist_name}) is not "
        f"f(x @ {theta_site}) for any link in ('identity', 'logistic', 'probit', "
        f"'exp'); {ask}"
    )
