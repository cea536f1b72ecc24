"""Reward noise families of the reward model (Eq. 1 of the paper).

Every family draws rewards around a given expected reward with ``sample(key, mean)``.
Draws use common random numbers where the family allows it (the same key gives the same
standard-normal or uniform variates whatever the means), so two policies simulated with
the same keys see the same noise.

Example:
    >>> import jax
    >>> from bayesrank.model import noise
    >>> noise.Gaussian(1.0).sample(jax.random.key(0), jax.numpy.zeros(4)).shape
    (4,)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from bayesrank._validate import check_real
from bayesrank.model.links import Link

__all__ = ["Bernoulli", "Gaussian", "Laplace", "Noise", "Poisson", "default_noise"]


def _float_mean(mean):
    """The expected rewards as a JAX array of a floating dtype."""
    mean = jnp.asarray(mean)
    if not jnp.issubdtype(mean.dtype, jnp.floating):
        mean = mean.astype(jnp.result_type(float))
    return mean


def _valid_scale(value, name: str, *, allow_zero: bool = True) -> float:
    return check_real(value, name, low=0, inclusive="both" if allow_zero else "neither")


class Noise(ABC):
    """Base class: a reward distribution around an expected reward.

    A family of your own subclasses it and implements ``sample`` and ``variance``.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from bayesrank.model.noise import Noise
        >>> class Uniform(Noise):
        ...     name = "uniform"
        ...     def sample(self, key, mean):      # mean + U(-1, 1)
        ...         return mean + jax.random.uniform(key, jnp.shape(mean), minval=-1.0)
        ...     def variance(self, mean):
        ...         return jnp.full_like(mean, 1.0 / 3.0)
        >>> Uniform().sample(jax.random.key(0), jnp.zeros(3)).shape
        (3,)
    """

    name = "noise"

    @abstractmethod
    def sample(self, key, mean):
        """Rewards with expectation ``mean`` (any shape), drawn with ``key``."""

    @abstractmethod
    def variance(self, mean):
        """The reward variance at expectation ``mean``."""

    def check_link(self, link: Link) -> None:
        """Raise ValueError if this family cannot follow ``link``'s mean range."""

    @property
    def support(self) -> str:
        """'real', 'binary' or 'count'."""
        return "real"


@dataclass(frozen=True)
class Gaussian(Noise):
    """Gaussian noise with standard deviation ``sd`` (the paper's 1-subgaussian case).

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from bayesrank.model.noise import Gaussian
        >>> noise = Gaussian(0.5)
        >>> noise.sample(jax.random.key(0), jnp.zeros(4)).shape
        (4,)
        >>> float(noise.variance(0.0))
        0.25
    """

    sd: float = 1.0
    name = "gaussian"

    def __post_init__(self):
        object.__setattr__(self, "sd", _valid_scale(self.sd, "Gaussian.sd"))

    def sample(self, key, mean):
        mean = _float_mean(mean)
        return mean + self.sd * jax.random.normal(key, mean.shape, mean.dtype)

    def variance(self, mean):
        return jnp.full_like(jnp.asarray(mean, float), self.sd**2)


@dataclass(frozen=True)
class Laplace(Noise):
    """Gaussian(sd) plus ``eps`` times a Laplace(0, 1) draw: the robustness study.

    The variance is ``sd**2 + 2 * eps**2``.

    Example:
        >>> from bayesrank.model.noise import Laplace
        >>> float(Laplace(eps=1.0, sd=1.0).variance(0.0))
        3.0
    """

    eps: float = 0.1
    sd: float = 1.0
    name = "laplace"

    def __post_init__(self):
        object.__setattr__(self, "eps", _valid_scale(self.eps, "Laplace.eps"))
        object.__setattr__(self, "sd", _valid_scale(self.sd, "Laplace.sd"))

    def sample(self, key, mean):
        mean = _float_mean(mean)
        k1, k2 = jax.random.split(key)
        gauss = jax.random.normal(k1, mean.shape, mean.dtype)
        lap = jax.random.laplace(k2, mean.shape, mean.dtype)
        return mean + self.sd * gauss + self.eps * lap

    def variance(self, mean):
        return jnp.full_like(jnp.asarray(mean, float), self.sd**2 + 2 * self.eps**2)


@dataclass(frozen=True)
class Bernoulli(Noise):
    """Clicks: reward 1 with probability ``mean``; needs a link with range in [0, 1].

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from bayesrank.model.noise import Bernoulli
        >>> Bernoulli().sample(jax.random.key(0), jnp.array([0.0, 1.0])).tolist()
        [0.0, 1.0]
    """

    name = "bernoulli"

    def sample(self, key, mean):
        mean = _float_mean(mean)
        u = jax.random.uniform(key, mean.shape, mean.dtype)
        return (u < mean).astype(mean.dtype)

    def variance(self, mean):
        mean = _float_mean(mean)
        return mean * (1.0 - mean)

    def check_link(self, link: Link) -> None:
        lo, hi = link.range
        if lo < 0.0 or hi > 1.0:
            raise ValueError(
                f"noise: Bernoulli clicks need a link whose range lies in [0, 1] "
                f"(logistic, probit); link {link.name!r} has range {link.range}"
            )

    @property
    def support(self) -> str:
        return "binary"


@dataclass(frozen=True)
class Poisson(Noise):
    """Counts: Poisson(mean); needs a link with non-negative range (exp).

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from bayesrank.model.noise import Poisson
        >>> counts = Poisson().sample(jax.random.key(0), jnp.full(5, 3.0))
        >>> counts.shape, bool((counts >= 0).all()), Poisson().support
        ((5,), True, 'count')
    """

    name = "poisson"

    def sample(self, key, mean):
        mean = _float_mean(mean)
        return jax.random.poisson(key, mean, mean.shape).astype(mean.dtype)

    def variance(self, mean):
        return jnp.asarray(mean)

    def check_link(self, link: Link) -> None:
        if link.range[0] < 0.0:
            raise ValueError(
                f"noise: Poisson counts need a link with non-negative range "
                f"(exp, logistic, probit); link {link.name!r} has range {link.range}"
            )

    @property
    def support(self) -> str:
        return "count"


def default_noise(link: Link) -> Noise:
    """The default noise family of each link: identity -> Gaussian(1), logistic/probit ->
    Bernoulli, exp -> Poisson; a custom link gets Gaussian(1).

    Example:
        >>> from bayesrank.model.links import get_link
        >>> from bayesrank.model.noise import default_noise
        >>> [default_noise(get_link(n)).name for n in ("identity", "probit", "exp")]
        ['gaussian', 'bernoulli', 'poisson']
    """
    if link.name in ("logistic", "probit"):
        return Bernoulli()
    if link.name == "exp":
        return Poisson()
    return Gaussian(1.0)
