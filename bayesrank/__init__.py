"""bayesrank: Bayesian online learning-to-rank with neighbour-aware GLM bandits.

    import bayesrank as br
    env = br.RankingEnv.paper(seed=0, K=100, L=4, d=10, w_max=10.0)
    policy = br.RankTS(model=br.GaussianLinear(), items=env.items, w=env.w, seed=0)
    items = policy.select(); policy.update(items, rewards)

Every public name is imported on first use (JAX with it), and ArviZ, matplotlib and
Dask only where diagnostics, plots or distributed sweeps are made, so ``import
bayesrank`` and ``bayesrank --help`` stay fast.
"""

import importlib

from bayesrank import _cache
from bayesrank._version import __version__

# Before JAX is imported: its persistent compilation cache (see bayesrank._cache).
_cache.configure_default()

#: public name -> the module that defines it. Imported on first use, so that
#: ``import bayesrank`` (and ``bayesrank --help``) does not import JAX.
_HOME = {
    "BayesGLM": "bayesrank.posteriors",
    "CascadeKLUCB": "bayesrank.policies.click.cascade_klucb",
    "CascadeLinTS": "bayesrank.policies.click.cascade_lin",
    "CascadeLinUCB": "bayesrank.policies.click.cascade_lin",
    "GaussianLinear": "bayesrank.posteriors",
    "GaussianLinearUnknownNoise": "bayesrank.posteriors",
    "GenRankTS": "bayesrank.policies.gen_ts",
    "GenRankUCB": "bayesrank.policies.gen_ucb",
    "LaplaceGLM": "bayesrank.posteriors",
    "NumPyroModel": "bayesrank.posteriors",
    "PBMUCB": "bayesrank.policies.click.pbm_ucb",
    "RankTS": "bayesrank.policies.ts",
    "RankUCB": "bayesrank.policies.ucb",
    "RankedBaseline": "bayesrank.policies.baseline",
    "RankingEnv": "bayesrank.simulation.env",
    "TopRank": "bayesrank.policies.click.toprank",
    "WindowRankUCB": "bayesrank.policies.window_ucb",
    "best_list": "bayesrank.decoding.api",
    "cascade_rewards": "bayesrank.model.feedback",
    "compilation_cache": "bayesrank._cache",
    "simulate": "bayesrank.simulation.simulate",
}
#: public submodules: ``br.noise.Gaussian(1.0)``, ``br.ope.evaluate(...)``
_MODULES = {
    "datasets": "bayesrank.datasets",
    "links": "bayesrank.model.links",
    "noise": "bayesrank.model.noise",
    "ope": "bayesrank.ope",
    "theorems": "bayesrank.theorems",
}


def __getattr__(name):
    if name in _HOME:
        value = getattr(importlib.import_module(_HOME[name]), name)
    elif name in _MODULES:
        value = importlib.import_module(_MODULES[name])
    elif name.startswith("_"):
        raise AttributeError(f"module 'bayesrank' has no attribute {name!r}")
    else:
        try:  # a subpackage, e.g. ``br.policies`` or ``br.posteriors``
            value = importlib.import_module(f"bayesrank.{name}")
        except ModuleNotFoundError:
            raise AttributeError(
                f"module 'bayesrank' has no attribute {name!r}"
            ) from None
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "PBMUCB",
    "BayesGLM",
    "CascadeKLUCB",
    "CascadeLinTS",
    "CascadeLinUCB",
    "GaussianLinear",
    "GaussianLinearUnknownNoise",
    "GenRankTS",
    "GenRankUCB",
    "LaplaceGLM",
    "NumPyroModel",
    "RankTS",
    "RankUCB",
    "RankedBaseline",
    "RankingEnv",
    "TopRank",
    "WindowRankUCB",
    "__version__",
    "best_list",
    "cascade_rewards",
    "compilation_cache",
    "datasets",
    "links",
    "noise",
    "ope",
    "simulate",
    "theorems",
]
