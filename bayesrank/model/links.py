"""Link functions f^l of the reward model: mean function, derivative and range.

A link maps the linear predictor ``<theta^l, x>`` to the expected reward at a position.
The four named links cover the paper's GLM family; any callable is accepted too (its
derivative is then obtained with ``jax.grad``).

Example:
    >>> from bayesrank.model.links import get_link
    >>> float(get_link("logistic").mean(0.0))
    0.5
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr

from bayesrank._validate import check_real

__all__ = ["LINKS", "Link", "apply_links", "get_link", "link_constants", "resolve_links"]


class Link(NamedTuple):
    """A link function.

    Attributes:
        name: its name ("identity", "logistic", "probit", "exp" or "custom").
        mean: f, elementwise on arrays.
        deriv: f', elementwise on arrays.
        range: (low, high), the interval f maps into.

    Example:
        >>> from bayesrank.model.links import get_link
        >>> link = get_link("probit")
        >>> link.name, link.range, round(float(link.deriv(0.0)), 4)
        ('probit', (0.0, 1.0), 0.3989)
    """

    name: str
    mean: Callable
    deriv: Callable
    range: tuple[float, float]

    def __repr__(self) -> str:  # pragma: no cover - cosmetic
        return f"Link({self.name!r}, range={self.range})"


def _identity(z):
    return jnp.asarray(z)


def _ones(z):
    return jnp.ones_like(jnp.asarray(z, dtype=jnp.result_type(float)))


def _logistic_deriv(z):
    # sigma(z) sigma(-z), not s (1 - s): 1 - s rounds to 0 once s rounds to 1
    # (z > 17 in float32), where the slope is still about e^-z
    return jax.nn.sigmoid(z) * jax.nn.sigmoid(-z)


def _probit_deriv(z):
    return jnp.exp(-0.5 * jnp.square(z)) / math.sqrt(2.0 * math.pi)


#: The named links ("identity", "logistic", "probit" and "exp"), by name.
LINKS: dict[str, Link] = {
    "identity": Link("identity", _identity, _ones, (-math.inf, math.inf)),
    "logistic": Link("logistic", jax.nn.sigmoid, _logistic_deriv, (0.0, 1.0)),
    "probit": Link("probit", ndtr, _probit_deriv, (0.0, 1.0)),
    "exp": Link("exp", jnp.exp, jnp.exp, (0.0, math.inf)),
}


def get_link(link: str | Link | Callable, *, argname: str = "link") -> Link:
    """Look a link up by name, or wrap a user callable.

    Args:
        link: a name in ``LINKS``, a :class:`Link`, or a scalar callable ``f(z)``
            (vectorised with ``jnp`` operations; its derivative comes from
            ``jax.grad`` and its range is taken as the whole real line).
        argname: the argument name used in error messages.

    Raises:
        ValueError: unknown name.
        TypeError: neither a string, a Link nor a callable.

    Example:
        >>> import jax.numpy as jnp
        >>> from bayesrank.model.links import get_link
        >>> float(get_link("logistic").mean(0.0))
        0.5
        >>> custom = get_link(jnp.tanh)              # derivative from jax.grad
        >>> custom.name, float(custom.deriv(0.0))
        ('custom', 1.0)
    """
    if isinstance(link, Link):
        return link
    if isinstance(link, str):
        try:
            return LINKS[link]
        except KeyError:
            valid = ", ".join(repr(k) for k in LINKS)
            raise ValueError(
                f"{argname}: unknown link {link!r}; expected one of {valid} "
                "or a callable"
            ) from None
    if callable(link):
        fn = link
        grad = jax.grad(lambda z: jnp.sum(fn(z)))
        return Link("custom", fn, grad, (-math.inf, math.inf))
    raise TypeError(
        f"{argname}: expected a link name, a Link or a callable, got "
        f"{type(link).__name__}"
    )


def resolve_links(link, L: int, *, argname: str = "link") -> tuple[Link, ...]:
    """One link per position: a single link is repeated, a sequence must have L.

    Example:
        >>> from bayesrank.model.links import resolve_links
        >>> [lk.name for lk in resolve_links("logistic", 3)]
        ['logistic', 'logistic', 'logistic']
        >>> [lk.name for lk in resolve_links(["identity", "exp"], 2)]
        ['identity', 'exp']
    """
    if isinstance(link, (list, tuple)):
        if len(link) != L:
            raise ValueError(
                f"{argname}: expected one link or a sequence of L={L} links, "
                f"got {len(link)}"
            )
        return tuple(get_link(f, argname=f"{argname}[{i}]") for i, f in enumerate(link))
    return (get_link(link, argname=argname),) * L


def apply_links(links: tuple[Link, ...], z):
    """Apply the per-position links to z whose axis 0 is the position (L, ...).

    Example:
        >>> import jax.numpy as jnp
        >>> from bayesrank.model.links import apply_links, resolve_links
        >>> links = resolve_links(["identity", "logistic"], 2)
        >>> apply_links(links, jnp.array([2.0, 0.0])).tolist()
        [2.0, 0.5]
    """
    if all(lk is links[0] for lk in links):
        return links[0].mean(z)
    return jnp.stack([lk.mean(z[i]) for i, lk in enumerate(links)])


def link_constants(link: "str | Link", z_max: float) -> tuple[float, float]:
    """The constants of Assumption 2 over predictors ``|z| <= z_max``.

    ``c1 = min(1, min f')`` and ``c2 = max(1, max f')`` on ``[-z_max, z_max]``,
    evaluated at 0 and at the end points, which is exact when ``f'`` is monotone
    (exp) or unimodal at 0 (logistic, probit); the identity link gives (1, 1).

    Args:
        link: a link name or :class:`Link`.
        z_max: bound on ``|<theta, x>|`` (>= 0).

    Returns:
        ``(c1, c2)`` as floats.

    Example:
        >>> from bayesrank.model.links import link_constants
        >>> link_constants("identity", 3.0)
        (1.0, 1.0)
        >>> c1, c2 = link_constants("logistic", 2.0)    # min f' = f'(2) = 0.105
        >>> round(c1, 3), c2
        (0.105, 1.0)
    """
    lk = get_link(link)
    z = check_real(z_max, "z_max", low=0)
    vals = np.asarray(lk.deriv(jnp.asarray([-z, 0.0, z])), dtype=float)
    if not np.all(np.isfinite(vals)):
        raise ValueError(f"z_max: the link's derivative is not finite on [-{z}, {z}]")
    return float(min(1.0, vals.min())), float(max(1.0, vals.max()))
