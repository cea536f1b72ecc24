"""bayesrank: Bayesian online learning-to-rank with neighbour-aware GLM bandits.

    import bayesrank as br
    env = br.RankingEnv.paper(seed=0, K=100, L=4, d=10, w_max=10.0)
    policy = br.RankTS(model=br.GaussianLinear(), items=env.items, w=env.w, seed=0)
    items = policy.select(); policy.update(items, rewards)

ArviZ, matplotlib and Dask are imported only where diagnostics, plots or distributed
sweeps are made, so ``import bayesrank`` stays fast.
"""

from bayesrank import _moved, datasets, ope
from bayesrank._version import __version__
from bayesrank.decoding.api import best_list
from bayesrank.experiments.simulate import simulate
from bayesrank.model import bounds, links, noise
from bayesrank.model.env import RankingEnv
from bayesrank.model.feedback import cascade_rewards
from bayesrank.policies.baseline import RankedBaseline
from bayesrank.policies.gen_ts import GenRankTS
from bayesrank.policies.gen_ucb import GenRankUCB
from bayesrank.policies.ts import RankTS
from bayesrank.policies.ucb import RankUCB
from bayesrank.policies.window_ucb import WindowRankUCB
from bayesrank.posteriors import GaussianLinear, GaussianLinearUnknownNoise, LaplaceGLM

_moved.install()


def __getattr__(name):
    # NumPyro is imported on first use of the NUTS models, keeping the import light.
    if name in ("BayesGLM", "NumPyroModel"):
        from bayesrank import posteriors

        return getattr(posteriors, name)
    # Modules that moved (``br.decode``, ``br.scores``): import the old path, which
    # warns and forwards to the new module.
    if f"bayesrank.{name}" in _moved.MOVED:
        import importlib
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            module = importlib.import_module(f"bayesrank.{name}")
        _moved.warn_moved(f"bayesrank.{name}", stacklevel=3)
        return module
    raise AttributeError(f"module 'bayesrank' has no attribute {name!r}")


__all__ = [
    "BayesGLM",
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
    "WindowRankUCB",
    "__version__",
    "best_list",
    "cascade_rewards",
    "bounds",
    "datasets",
    "links",
    "noise",
    "ope",
    "simulate",
]
