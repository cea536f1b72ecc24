"""The paper's reward model (Eq. 1): its pieces, below every other layer.

* :mod:`~bayesrank.model.links`: link functions ``f^l`` (identity, logistic, probit, exp);
* :mod:`~bayesrank.model.noise`: noise families (Gaussian, Laplace, Bernoulli, Poisson);
* :mod:`~bayesrank.model.scores`: per-position scores of every pair from a parameter;
* :mod:`~bayesrank.model.feedback`: feedback helpers (cascade clicks).

Built on them, in the layers above: the environment and the paper's instance generator
(:class:`~bayesrank.simulation.env.RankingEnv`, in :mod:`bayesrank.simulation`) and the
regret bounds with the links' constants (:mod:`bayesrank.theorems`).

This package face imports nothing, so that the decoders (which use the links) and the
environment (which uses the decoders) import without a circle: import the module that
defines a name, e.g. ``from bayesrank.simulation.env import RankingEnv``.
"""
