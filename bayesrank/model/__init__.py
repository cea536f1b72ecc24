"""The paper's reward model (Eq. 1) and what is derived from it.

* :mod:`~bayesrank.simulation.env`: :class:`~bayesrank.simulation.env.RankingEnv`, the
  environment and the paper's instance generator (exact best list, pseudo-regret);
* :mod:`~bayesrank.model.links`: link functions ``f^l`` (identity, logistic, probit, exp);
* :mod:`~bayesrank.model.noise`: noise families (Gaussian, Laplace, Bernoulli, Poisson);
* :mod:`~bayesrank.model.feedback`: feedback helpers (cascade clicks);
* :mod:`~bayesrank.theorems`: the paper's regret bounds and link constants.

This package face imports nothing, so that the decoders (which use the links) and the
environment (which uses the decoders) import without a circle: import the module that
defines a name, e.g. ``from bayesrank.simulation.env import RankingEnv``.
"""
