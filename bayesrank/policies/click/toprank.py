"""TopRank (Lattimore, Kveton, Li and Szepesvari 2018, "TopRank: A practical
algorithm for online stochastic ranking", Algorithm 1).

A partial order over the K items: the relation G, where ``(i, j)`` in G means that
item j has been found better than item i (``better[i, j]`` in the state). Round t
partitions the items into blocks

    P_1 = min_G(items),  P_d = min_G(items without P_1, ..., P_{d-1}),

``min_G(A)`` being the items of A with no better item in A, and shows the blocks in
order, the items of each block in a uniformly random order (the permutation
``jax.random.permutation(key, K)`` of the round's key ``fold_in(key(seed), t)``:
within a block, the item placed earlier by that permutation goes first); the list is
the first L items of that ranking. After the clicks ``C`` (the paper's click
indicator of every item: an item not shown has ``C = 0``), for every pair (i, j) in
the same block

    U_ij = C_i - C_j,   S_ij += U_ij,   N_ij += |U_ij|

and G gains ``(j, i)`` (item i better than j) wherever

    N_ij > 0  and  S_ij >= sqrt(2 N_ij log(c / delta * sqrt(N_ij))),
    c = 4 sqrt(2 / pi) / erf(sqrt(2)),  delta = 1 / horizon

(the paper's constants; its Theorem takes delta = 1/n for the horizon n, here
``horizon=`` with default 10,000). A NaN click (not observed) makes its item carry
no information this round: the pairs with it are skipped.

The blocks are recomputed from G at the update (G does not change between a select
and its update). A ``mask`` only removes items from the list; the blocks, and the
zero clicks of the block's items not shown, are those of all K items, as in the
paper (which has no unavailable items).

Example:
    >>> import jax, bayesrank as br
    >>> env = br.simulation.PBMEnv.synthetic(K=8, L=3, seed=0)
    >>> policy = br.TopRank(8, L=3, seed=0)
    >>> items = policy.select()
    >>> policy.update(items, env.sample(jax.random.key(0), items))
    >>> sorted(policy.blocks().tolist()) == [0] * 8        # one block: G is empty
    True
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._validate import check_int
from bayesrank.policies.click.base import as_k_l, ClickCore, ClickPolicy
from bayesrank.policies.parts.keywords import keyword_only

__all__ = ["TOPRANK_C", "TopRank", "TopRankStats", "toprank_blocks",
           "toprank_threshold"]

#: The paper's constant c = 4 sqrt(2/pi) / erf(sqrt(2)) (about 3.3436).
TOPRANK_C = 4.0 * math.sqrt(2.0 / math.pi) / math.erf(math.sqrt(2.0))


class TopRankStats(NamedTuple):
    """TopRank's statistics (the ``model`` of its state): ``S = wins - wins.T`` and
    ``N = wins + wins.T`` (counts, so that every saved integer is >= 0).

    Example:
        >>> import bayesrank as br
        >>> br.TopRank(3, L=2).state.model.better.tolist()[0]
        [False, False, False]
    """

    wins: Any  # (K, K) int32, rounds with i, j in one block, C_i = 1 and C_j = 0
    better: Any  # (K, K) bool, better[i, j]: (i, j) in G, item j better than item i

    @property
    def s(self):
        """(K, K) S_ij, the sum of C_i - C_j over the rounds i, j shared a block."""
        return self.wins - self.wins.T

    @property
    def n(self):
        """(K, K) N_ij, the sum of |C_i - C_j| over the same rounds."""
        return self.wins + self.wins.T


def toprank_blocks(better):
    """(K,) int32: the block of each item (0 for P_1, 1 for P_2, ...) under G.

    Items on a cycle of G (which TopRank never builds) get block K.

    Example:
        >>> import jax.numpy as jnp
        >>> g = jnp.zeros((3, 3), bool).at[0, 2].set(True)  # item 2 better than 0
        >>> toprank_blocks(g).tolist()
        [1, 0, 0]
    """
    K = better.shape[0]

    def body(d, carry):
        rest, block = carry
        minimal = rest & ~jnp.any(better & rest[None, :], axis=1)
        return rest & ~minimal, jnp.where(minimal, d, block)

    init = (jnp.ones(K, bool), jnp.full(K, K, jnp.int32))
    return jax.lax.fori_loop(0, K, body, init)[1]


def toprank_threshold(n, horizon):
    """``sqrt(2 N log(c / delta * sqrt(N)))`` with ``delta = 1 / horizon``
    (``+inf`` where N = 0: no pair is decided without a difference).

    Example:
        >>> round(float(toprank_threshold(100.0, 10_000)), 4)
        50.4381
    """
    n = jnp.asarray(n)
    safe = jnp.maximum(n, 1.0)
    thr = jnp.sqrt(2.0 * safe * jnp.log(TOPRANK_C * horizon * jnp.sqrt(safe)))
    return jnp.where(n > 0, thr, jnp.inf)


class TopRankCore(ClickCore):
    """TopRank's functional core (see the module docstring): the score of item i is
    ``-(K * block_i + rank_i)``, ``rank`` the round's random permutation.

    Example:
        >>> import bayesrank as br
        >>> br.TopRank(4, L=2).core.random
        True
    """

    random = True

    def __init__(self, items, L, horizon):
        super().__init__(items, L)
        self.horizon = int(horizon)

    def init_model(self) -> TopRankStats:
        K = self.items0.shape[0]
        return TopRankStats(jnp.zeros((K, K), jnp.int32), jnp.zeros((K, K), bool))

    def index(self, key, model, items):
        K = items.shape[0]
        perm = jax.random.permutation(key, K)
        rank = jnp.zeros(K, jnp.int32).at[perm].set(jnp.arange(K, dtype=jnp.int32))
        block = toprank_blocks(model.better)
        return -(block * K + rank).astype(self.dtype)

    def learn(self, model, items, lists, rewards):
        K = items.shape[0]
        seen = jnp.isfinite(rewards)
        clicks = jnp.zeros(K, jnp.int32).at[lists].set(
            jnp.where(seen, rewards > 0.5, False).astype(jnp.int32))
        known = jnp.ones(K, bool).at[lists].set(seen)
        block = toprank_blocks(model.better)
        pair = (block[:, None] == block[None, :]) & known[:, None] & known[None, :]
        won = pair & (clicks[:, None] > clicks[None, :])  # C_i - C_j = +1
        new = TopRankStats(model.wins + won.astype(jnp.int32), model.better)
        s, n = new.s, new.n
        # i better than j (S_ij over the threshold) adds (j, i): better[j, i]
        decided = s.astype(self.dtype) >= toprank_threshold(n.astype(self.dtype),
                                                              self.horizon)
        return new._replace(better=model.better | decided.T)


class TopRank(ClickPolicy):
    """TopRank (Lattimore et al. 2018): K items, lists of L, any click model whose
    attraction order is the same at every position (cascade, PBM, ...).

    Args:
        K: the number of items (no item vectors: pairwise statistics, K x K).
        L: the list length (L <= K; lists show distinct items).
        horizon: T, the planned number of rounds; delta = 1 / T in the threshold
            (default 10,000).
        seed: the seed of the in-block permutations (round t draws with
            ``fold_in(key(seed), t)``).

    ``update(items, rewards)`` takes clicks 1/0 with NaN where not observed. See the
    module docstring for the blocks, the update and the threshold.

    Example:
        >>> import jax, bayesrank as br
        >>> env = br.simulation.CascadeEnv.synthetic(K=6, L=2, seed=1, p=0.7, delta=0.6)
        >>> policy = br.TopRank(6, L=2, horizon=100, seed=0)
        >>> for t in range(200):
        ...     items = policy.select()
        ...     policy.update(items, env.sample(jax.random.key(t), items))
        >>> policy.blocks().tolist()          # P_1: the two items of attraction 0.7
        [0, 1, 1, 1, 0, 1]
    """

    @keyword_only("K", "L")
    def __init__(self, K: int, *, L: int, horizon: int = 10_000, seed: int = 0):
        K, L = as_k_l(K, L)
        self.horizon = check_int(horizon, "horizon", low=1)
        self._init_click(K, L)
        self._setup(TopRankCore(self.items, L, self.horizon), seed)

    def _config(self) -> dict:
        return {**super()._config(), "horizon": self.horizon}

    @classmethod
    def _rebuild(cls, cfg, args, seed):
        return cls(cfg["K"], L=cfg["L"], horizon=cfg["horizon"], seed=seed)

    def blocks(self) -> np.ndarray:
        """(K,) the block of each item now (0: P_1, the items with no better one)."""
        return np.asarray(toprank_blocks(self.state.model.better))[: self.K]

    def _inconsistent(self, model):
        w, g = np.asarray(model.wins), np.asarray(model.better)
        if np.any(np.diag(w)):
            return "the state's pairwise statistics count an item against itself"
        if np.any(np.diag(g)) or np.any(g & g.T):
            return "the state's order relation is not a partial order"
        return None
