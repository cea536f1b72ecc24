"""Per-position posterior models (see :mod:`bayesrank.posteriors.base` for the contract).

Conjugate Gaussian models (exact, closed form) live in :mod:`.gaussian`; the linear
algebra they share with the UCB policies in :mod:`.linalg`; the ArviZ DataTree builder in
:mod:`.datatree` (imports xarray lazily).
"""

from bayesrank.posteriors import linalg
from bayesrank.posteriors.base import PosteriorModel, check_reward_support, update_many
from bayesrank.posteriors.gaussian import (
    GaussianLinear,
    GaussianLinearUnknownNoise,
    GaussianState,
    NIGState,
)

__all__ = [
    "GaussianLinear",
    "GaussianLinearUnknownNoise",
    "GaussianState",
    "NIGState",
    "PosteriorModel",
    "check_reward_support",
    "linalg",
    "update_many",
]
