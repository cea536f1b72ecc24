"""PBM-UCB (Lagree, Vernade and Cappe 2016, "Multiple-play bandits in the
position-based model"), with known examination probabilities kappa (L,).

Per item k: ``S_k`` clicks, ``N_k`` displays and the examination-weighted count
``Ntilde_k = sum over displays of kappa[position]``. Round t scores

    U_k(t) = S_k / Ntilde_k + sqrt(N_k / Ntilde_k) sqrt(delta / (2 Ntilde_k)),
    delta = log t

(the paper's ``delta = (1 + eps) log t`` at eps = 0) and shows the L items of largest
index, the largest at the position of largest kappa, and so on (ties: lower index,
earlier position). An item never displayed has an infinite index (shown first); the
round t is ``1 + (lists learnt so far)``. Every position with a click 1/0 counts;
NaN positions are not observed and count nothing.

Example:
    >>> import jax, bayesrank as br
    >>> env = br.simulation.PBMEnv.synthetic(K=8, L=3, seed=0)
    >>> policy = br.PBMUCB(8, L=3, examination=env.examination)
    >>> items = policy.select()
    >>> policy.update(items, env.sample(jax.random.key(0), items))
    >>> items.tolist()
    [0, 1, 2]
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from bayesrank._validate import check_probabilities
from bayesrank.policies.click.base import as_k_l, ClickCore, ClickPolicy
from bayesrank.policies.parts.keywords import keyword_only

__all__ = ["PBMUCB", "PBMStats", "pbm_ucb_index"]


class PBMStats(NamedTuple):
    """PBM-UCB's statistics (the ``model`` of its state).

    Example:
        >>> import bayesrank as br
        >>> br.PBMUCB(4, L=2, examination=[1.0, 0.5]).state.model.n.tolist()
        [0, 0, 0, 0]
    """

    n: Any  # (K,) int32, N_k: displays at an observed position
    clicks: Any  # (K,) int32, S_k
    weight: Any  # (K,) float, Ntilde_k = sum of kappa over the displays
    rounds: Any  # () int32, lists learnt from (round t = rounds + 1)


def pbm_ucb_index(clicks, n, weight, t):
    """The PBM-UCB index of every item (``+inf`` where never displayed).

    Example:
        >>> import jax.numpy as jnp
        >>> u = pbm_ucb_index(jnp.array([1.0, 0.0]), jnp.array([4.0, 0.0]),
        ...                   jnp.array([2.0, 0.0]), 10.0)
        >>> [round(float(x), 4) for x in u]
        [1.573, inf]
    """
    w = jnp.maximum(weight, 1e-30)
    delta = jnp.log(jnp.maximum(t, 1.0))
    u = clicks / w + jnp.sqrt(n / w) * jnp.sqrt(delta / (2.0 * w))
    return jnp.where(n > 0, u, jnp.inf)


class PBMCore(ClickCore):
    """PBM-UCB's functional core (see the module docstring).

    Example:
        >>> import bayesrank as br
        >>> br.PBMUCB(4, L=2, examination=[0.5, 1.0]).core.slots.tolist()  # best at 2
        [1, 0]
    """

    def __init__(self, items, L, examination):
        kappa = jnp.asarray(examination)
        super().__init__(items, L, slots=jnp.argsort(-kappa, stable=True))
        self.kappa = kappa

    def init_model(self) -> PBMStats:
        K = self.items0.shape[0]
        z = jnp.zeros(K, jnp.int32)
        return PBMStats(z, z, jnp.zeros(K, self.dtype), jnp.zeros((), jnp.int32))

    def index(self, key, model, items):
        dtype = self.dtype
        t = model.rounds.astype(dtype) + 1.0
        return pbm_ucb_index(model.clicks.astype(dtype), model.n.astype(dtype),
                             model.weight, t)

    def learn(self, model, items, lists, rewards):
        obs = jnp.isfinite(rewards)
        click = obs & (rewards > 0.5)
        return PBMStats(
            model.n.at[lists].add(obs.astype(jnp.int32)),
            model.clicks.at[lists].add(click.astype(jnp.int32)),
            model.weight.at[lists].add(jnp.where(obs, self.kappa, 0.0).astype(self.dtype)),
            model.rounds + 1,
        )


def as_examination(examination, L: int) -> np.ndarray:
    """(L,) examination probabilities in (0, 1]."""
    if examination is None:
        raise ValueError(f"examination: expected ({L},) probabilities, got None")
    return check_probabilities(examination, "examination", shape=(L,))


class PBMUCB(ClickPolicy):
    """PBM-UCB (Lagree et al. 2016) for the position-based model, kappa known.

    Args:
        K: the number of items (no item vectors: a per-item index).
        L: the list length (L <= K; lists show distinct items).
        examination: (L,) the probability that each position is examined, in (0, 1].

    Example:
        >>> import jax, bayesrank as br
        >>> env = br.simulation.PBMEnv.synthetic(K=10, L=3, seed=1)
        >>> policy = br.PBMUCB(10, L=3, examination=env.examination)
        >>> for t in range(20):
        ...     items = policy.select()
        ...     policy.update(items, env.sample(jax.random.key(t), items))
        >>> int(policy.state.model.n.sum())
        60
    """

    _array_args = ("examination",)

    @keyword_only("K", "L", "examination")
    def __init__(self, K: int, *, L: int, examination):
        K, L = as_k_l(K, L)
        self.examination = as_examination(examination, L)
        self._init_click(K, L)
        self._setup(PBMCore(self.items, L, self.examination), 0)

    @classmethod
    def _rebuild(cls, cfg, args, seed):
        return cls(cfg["K"], L=cfg["L"], examination=args["examination"])

    def _inconsistent(self, model):
        n, c, w = (np.asarray(x) for x in (model.n, model.clicks, model.weight))
        if np.any(c > n):
            return "the state has more clicks than displays for an item"
        if np.any(w < 0) or np.any(w > n * (1 + 1e-5)):
            return "the state's examination-weighted counts exceed the displays"
        return None
