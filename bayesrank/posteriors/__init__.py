"""Per-position posterior models; :mod:`bayesrank.posteriors.base` is the contract.

Conjugate Gaussian models (exact, closed form) live in :mod:`.gaussian` (known noise)
and :mod:`.unknown_noise` (Normal-Inverse-Gamma), their shared core in
:mod:`.conjugate` and :mod:`.prior_checks`, their host-side sampler in
:mod:`.host_sampler`; the linear algebra (compensated sums included) they share with
the UCB policies in :mod:`.linalg`; the part that learns the
prior's and the noise's scale (:class:`LearntScaleLinear`, held by ``GaussianLinear()``,
the default) in :mod:`.scaled`, and ``LaplaceGLM()``'s (:class:`LearntScaleLaplace`) in
:mod:`.laplace_scaled`; the ArviZ DataTree
builder in :mod:`.datatree` (imports xarray lazily). The NumPyro/NUTS models of
:mod:`.nuts` are imported on first access (``posteriors.BayesGLM``), so importing the
conjugate models does not import NumPyro. :mod:`.laplace` holds the Laplace GLM
(pure JAX; its fixed-scale fit in :mod:`.laplace_fixed`); :mod:`.latent_w` the conjugate posterior over (theta, w) when the
dependency weights are unknown, :mod:`.latent_laplace` its GLM form, :mod:`.latent_nuts`
the NUTS form and :mod:`.latent` which one a model becomes; :func:`register_model` (:mod:`.registry`) names user model functions for
save/load.
"""

import importlib

from bayesrank.posteriors import linalg
from bayesrank.posteriors.base import PosteriorModel, check_reward_support, update_many
from bayesrank.posteriors.gaussian import GaussianLinear, GaussianState
from bayesrank.posteriors.laplace import LaplaceGLM, LaplaceState
from bayesrank.posteriors.laplace_scaled import LearntScaleLaplace, LearntScaleLaplaceState
from bayesrank.posteriors.latent import latent_model
from bayesrank.posteriors.latent_laplace import LatentLaplace, LatentLaplaceState
from bayesrank.posteriors.latent_w import LatentW, LatentWState
from bayesrank.posteriors.scaled import LearntScaleLinear, LearntScaleState
from bayesrank.posteriors.unknown_noise import GaussianLinearUnknownNoise, NIGState

_LAZY = {
    "BayesGLM": "bayesrank.posteriors.nuts",
    "LatentBayesGLM": "bayesrank.posteriors.latent_nuts",
    "MaskObserved": "bayesrank.posteriors.nuts",
    "NumPyroModel": "bayesrank.posteriors.nuts",
    "NutsState": "bayesrank.posteriors.nuts",
    "register_model": "bayesrank.posteriors.registry",
    "resolve_model": "bayesrank.posteriors.registry",
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
