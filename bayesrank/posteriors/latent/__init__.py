"""The latent-w forms: posteriors over (theta, w) when the dependency weights are
unknown, one per family, above the families they extend (each imported through its
face).

:func:`latent_model` (:mod:`~bayesrank.posteriors.latent.factory`) says which form a
model becomes: :class:`LatentW` (:mod:`~bayesrank.posteriors.latent.gaussian`, exact
draws; its collapsed density and summaries beside it), :class:`LatentLaplace`
(:mod:`~bayesrank.posteriors.latent.laplace`, on a grid of w) or ``LatentBayesGLM``
(:mod:`~bayesrank.posteriors.latent.nuts`, NUTS; imported on first access, so that
this face does not import NumPyro's inference code).

Example:
    >>> import numpyro.distributions as dist
    >>> from bayesrank.posteriors.latent import latent_model
    >>> type(latent_model(None, dist.Normal(0.0, 5.0))).__name__
    'LatentW'
"""

import importlib

from bayesrank.posteriors.latent.factory import is_latent, latent_model
from bayesrank.posteriors.latent.gaussian import LatentW, LatentWState
from bayesrank.posteriors.latent.laplace import LatentLaplace, LatentLaplaceState

__all__ = ["LatentBayesGLM", "LatentLaplace", "LatentLaplaceState", "LatentW",
           "LatentWState", "is_latent", "latent_model"]


def __getattr__(name: str):
    if name == "LatentBayesGLM":
        value = importlib.import_module("bayesrank.posteriors.latent.nuts").LatentBayesGLM
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
