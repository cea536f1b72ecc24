"""bayesrank: Bayesian online learning-to-rank with neighbour-aware GLM bandits.

    import bayesrank as br
    env = br.RankingEnv.paper(seed=0, K=100, L=4, d=10, w_max=10.0)
    policy = br.RankTS(model=br.GaussianLinear(), items=env.items, w=env.w, seed=0)
    items = policy.select(); policy.update(items, rewards)

ArviZ, matplotlib and Dask are imported only where diagnostics, plots or distributed
sweeps are made, so ``import bayesrank`` stays fast.
"""

from bayesrank import bounds, datasets, decode, links, noise, scores
from bayesrank.decode import best_list
from bayesrank.env import RankingEnv
from bayesrank.feedback import cascade_rewards
from bayesrank.experiments.simulate import simulate
from bayesrank.policies.baseline import RankedBaseline
from bayesrank.policies.gen_ucb import GenRankUCB
from bayesrank.policies.ts import RankTS
from bayesrank.policies.ucb import RankUCB
from bayesrank.policies.window_ucb import WindowRankUCB
from bayesrank.posteriors import GaussianLinear, GaussianLinearUnknownNoise, LaplaceGLM

__version__ = "0.1.0"


def __getattr__(name):
    # NumPyro is imported on first use of the NUTS models, keeping the import light.
    if name in ("BayesGLM", "NumPyroModel"):
        from bayesrank import posteriors

        return getattr(posteriors, name)
    raise AttributeError(f"module 'bayesrank' has no attribute {name!r}")


__all__ = [
    "BayesGLM",
    "GaussianLinear",
    "GaussianLinearUnknownNoise",
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
    "decode",
    "links",
    "noise",
    "scores",
    "simulate",
]
