"""The conjugate Gaussian family: exact posteriors of a linear model with Gaussian
noise.

:class:`GaussianLinear` (:mod:`~bayesrank.posteriors.conjugate.gaussian`) is the
face; it holds one part: :class:`FixedScaleLinear` (known prior and noise scales,
Cholesky updates) or :class:`LearntScaleLinear`
(:mod:`~bayesrank.posteriors.conjugate.learnt_scale`: the prior's and the noise's
scale learnt on a grid of the signal-to-noise ratio, the default).
:class:`GaussianLinearUnknownNoise` (:mod:`~bayesrank.posteriors.conjugate.unknown_noise`)
is the Normal-Inverse-Gamma model. Inside: the shared core
(:mod:`~bayesrank.posteriors.conjugate.linear`), the grid maths
(:mod:`~bayesrank.posteriors.conjugate.scale_grid`), the learnt part's summaries and
DataTree, and the draws' variates. Never imports the Laplace or NUTS families.

Example:
    >>> from bayesrank.posteriors.conjugate import GaussianLinear
    >>> type(GaussianLinear()).__name__
    'GaussianLinear'
"""

from bayesrank.posteriors.conjugate.gaussian import (
    FixedScaleLinear,
    GaussianLinear,
    GaussianState,
)
from bayesrank.posteriors.conjugate.learnt_scale import (
    LearntScaleLinear,
    LearntScaleState,
)
from bayesrank.posteriors.conjugate.linear import reward_bound
from bayesrank.posteriors.conjugate.scale_grid import (
    centred_sums,
    evidence_terms,
    grid_loglik,
)
from bayesrank.posteriors.conjugate.unknown_noise import (
    GaussianLinearUnknownNoise,
    NIGState,
)

__all__ = ["FixedScaleLinear", "GaussianLinear", "GaussianLinearUnknownNoise",
           "GaussianState", "LearntScaleLinear", "LearntScaleState", "NIGState",
           "centred_sums", "evidence_terms", "grid_loglik", "reward_bound"]
