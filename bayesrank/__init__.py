"""bayesrank: Bayesian online learning-to-rank with neighbour-aware GLM bandits."""

from bayesrank import links, noise
from bayesrank.decode import best_list
from bayesrank.env import RankingEnv

__version__ = "0.1.0"

__all__ = [
    "RankingEnv",
    "best_list",
    "links",
    "noise",
    "__version__",
]
