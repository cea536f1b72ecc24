"""The Laplace family: GLM posteriors approximated at the regularised MLE.

:class:`LaplaceGLM` (:mod:`~bayesrank.posteriors.laplace.model`) is the face; it
holds one part: :class:`FixedScaleLaplace` (a fixed prior scale; Newton fits on the
buffered data, :mod:`~bayesrank.posteriors.laplace.fixed_scale`) or
:class:`LearntScaleLaplace` (the prior scale tau learnt on a grid by the Laplace
evidence, :mod:`~bayesrank.posteriors.laplace.learnt_scale`); on the identity link
with a learnt scale it holds the conjugate family's exact ``GaussianLinear`` (the
one import of a sibling family, through its face). The Newton fit and the links'
log likelihoods: :mod:`~bayesrank.posteriors.laplace.glm_fit`.

Example:
    >>> from bayesrank.posteriors.laplace import LaplaceGLM
    >>> type(LaplaceGLM("logistic")).__name__
    'LaplaceGLM'
"""

from bayesrank.posteriors.laplace.fixed_scale import FixedScaleLaplace
from bayesrank.posteriors.laplace.glm_fit import (
    LAPLACE_LINKS,
    LaplaceState,
    link_derivatives,
    loglik,
    newton_map,
)
from bayesrank.posteriors.laplace.learnt_scale import (
    default_tau_hyperprior,
    LearntScaleLaplace,
    LearntScaleLaplaceState,
)
from bayesrank.posteriors.laplace.model import LaplaceGLM

__all__ = ["LAPLACE_LINKS", "FixedScaleLaplace", "LaplaceGLM", "LaplaceState",
           "LearntScaleLaplace", "LearntScaleLaplaceState", "default_tau_hyperprior",
           "link_derivatives", "loglik", "newton_map"]
