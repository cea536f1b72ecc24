"""Per-position posterior models; :mod:`bayesrank.posteriors.base` is the contract.

One sub-package per inference family, each with a face (its ``__init__``), and the
maths they share at the top:

* :mod:`~bayesrank.posteriors.conjugate`: the exact Gaussian models
  (``GaussianLinear`` holding a fixed- or learnt-scale part, the
  Normal-Inverse-Gamma ``GaussianLinearUnknownNoise``);
* :mod:`~bayesrank.posteriors.laplace`: ``LaplaceGLM`` (a fixed or learnt prior
  scale; Newton fits on buffered data);
* :mod:`~bayesrank.posteriors.nuts`: the NumPyro/NUTS models, imported on first
  access (``posteriors.BayesGLM``), so that importing the others does not import
  NumPyro's inference code;
* :mod:`~bayesrank.posteriors.latent`: the posteriors over (theta, w) when w is
  unknown, one per family, and :func:`latent_model`, which picks one.

Shared: :mod:`~bayesrank.posteriors.linalg` (Cholesky updates, compensated sums; the
UCB policies use it too), :mod:`~bayesrank.posteriors.datatree` (ArviZ DataTree
builder), :mod:`~bayesrank.posteriors.host_sampler`,
:mod:`~bayesrank.posteriors.buffers` (the refitting models' ring buffers),
:mod:`~bayesrank.posteriors.hyperprior` (a scale's hyperprior and its grid),
:mod:`~bayesrank.posteriors.w_prior` and :mod:`~bayesrank.posteriors.positive_quantiles`
(priors on w and their ranges), :mod:`~bayesrank.posteriors.prior_checks`.
conjugate and nuts never import each other; laplace imports conjugate's face
(its identity link is the exact Gaussian model); latent imports the faces below it.
"""

import importlib

from bayesrank._validate import check_reward_support
from bayesrank.posteriors import linalg
from bayesrank.posteriors.base import PosteriorModel, update_many
from bayesrank.posteriors.conjugate import (
    GaussianLinear,
    GaussianLinearUnknownNoise,
    GaussianState,
    LearntScaleLinear,
    LearntScaleState,
    NIGState,
)
from bayesrank.posteriors.laplace import (
    LaplaceGLM,
    LaplaceState,
    LearntScaleLaplace,
    LearntScaleLaplaceState,
)
from bayesrank.posteriors.latent import (
    latent_model,
    LatentLaplace,
    LatentLaplaceState,
    LatentW,
    LatentWState,
)

_LAZY = {
    "BayesGLM": "bayesrank.posteriors.nuts",
    "LatentBayesGLM": "bayesrank.posteriors.latent",
    "MaskObserved": "bayesrank.posteriors.nuts",
    "NumPyroModel": "bayesrank.posteriors.nuts",
    "NutsState": "bayesrank.posteriors.nuts",
    "register_model": "bayesrank.posteriors.nuts",
    "resolve_model": "bayesrank.posteriors.nuts",
}

__all__ = [
    "BayesGLM",
    "GaussianLinear",
    "GaussianLinearUnknownNoise",
    "GaussianState",
    "LaplaceGLM",
    "LaplaceState",
    "LatentBayesGLM",
    "LatentLaplace",
    "LatentLaplaceState",
    "LatentW",
    "LatentWState",
    "LearntScaleLaplace",
    "LearntScaleLaplaceState",
    "LearntScaleLinear",
    "LearntScaleState",
    "MaskObserved",
    "NIGState",
    "NumPyroModel",
    "NutsState",
    "PosteriorModel",
    "check_reward_support",
    "latent_model",
    "linalg",
    "register_model",
    "resolve_model",
    "update_many",
]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
