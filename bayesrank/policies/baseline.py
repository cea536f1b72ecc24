"""The paper's baseline: ranked bandits (Radlinski et al., 2008), linear version.

One linear bandit per position that ignores the previous item: position l learns
``theta^l`` from the features ``v_{a^l}`` alone (``w`` treated as 0), so under a real
neighbour dependence its model is misspecified and it settles on a suboptimal list
(Figure 1, right). With ``w = 0`` it is the right model and converges.

* ``kind="ucb"``: LinUCB per position, the RankUCB core with ``w = 0`` (the scores
  separate, so the decode is O(L K): each position's best item, or the exact distinct
  assignment with ``distinct=True``);
* ``kind="ts"``: linear Thompson sampling per position, the RankTS core with ``w = 0``
  and the conjugate ``GaussianLinear(prior_scale=1/sqrt(lam), noise_scale=1)``
  posterior (``delta`` and ``alpha`` are not used).

Example:
    >>> import bayesrank as br
    >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
    >>> base = br.RankedBaseline(env.items, L=4, alpha=2.0)
    >>> base.select().shape
    (4,)
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from bayesrank import scores
from bayesrank.policies.base import check_items_w_v0
from bayesrank.policies.ts import rank_ts
from bayesrank.policies.ucb import UCBPolicy, rank_ucb, ucb_separable_parts

__all__ = ["RankedBaseline"]

_KINDS = ("ucb", "ts")


class RankedBaseline(UCBPolicy):
    """Per-position linear bandits ignoring the previous item (the paper's baseline).

    Args:
        items: (K, d) item vectors.
        L: list length.
        v0: (d,) the user's last item (unused by the model: w is taken as 0; kept
            for the common interface).
        delta, lam, alpha: the UCB width, as in :class:`~bayesrank.RankUCB`
            (``kind="ucb"``); ``lam`` also sets the TS prior scale ``1/sqrt(lam)``.
        kind: "ucb" (LinUCB per position) or "ts" (linear Thompson sampling).
        distinct: forbid repeated items; mask: (K,) bool, items that may be shown.
        seed: the seed of the Thompson draws (``kind="ts"``).
        m2: bound on ``||theta^l||`` in Lemma 1's width.
    """

    _array_args = ("items", "v0")
    _extra_config = ("L", "kind")
    _takes_model = False

    def __init__(
        self,
        items=None,
        L=None,
        v0=None,
        *,
        delta: float = 0.1,
        lam: float = 1.0,
        alpha: float | None = None,
        kind: str = "ucb",
        distinct: bool = False,
        mask=None,
        seed: int = 0,
        m2: float = 1.0,
    ):
        if L is None:
            raise ValueError("L: expected a positive integer list length, got None")
        if kind not in _KINDS:
            raise ValueError(f"kind: expected one of {_KINDS}, got {kind!r}")
        V, W, v0a, L = check_items_w_v0(items, L, None, v0)
        self.K, self.L = V.shape[0], L
        self.items, self.w, self.v0 = V, W, v0a
        self.kind = kind
        self._init_common(None, delta, lam, alpha, m2, None, distinct, mask)
        self.c1 = 1.0
        if kind == "ucb":
            core = rank_ucb(self.model, V, W, v0a, m2=self.m2, **self._core_kwargs())
        else:
            core = rank_ts(
                self.model, V, W[:, None], v0a, distinct=self.distinct, mask=self.mask
            )
        self._setup(core, seed)

    def _gram_state(self):
        if self.kind == "ts":
            raise AttributeError("logdet/width: only defined for kind='ucb'")
        return self.state

    def logdet(self) -> np.ndarray:
        """(L,) log det V^l (``kind="ucb"`` only)."""
        return np.asarray(self._gram_state().logdet)

    def width(self) -> np.ndarray:
        """(L,) the next UCB width (``kind="ucb"`` only)."""
        self._gram_state()
        return super().width()

    def scores(self):
        """Per-position scores behind the last selection, ``(first (K,), pairs
        (L-1, K, K))``; ``pairs[l-2, i, j]`` does not depend on i."""
        if self._last is None:
            raise RuntimeError("scores: call select() first")
        items = jnp.asarray(self.items)
        if self.kind == "ucb":
            s = ucb_separable_parts(self._last.params, items, self._links)
        else:
            s = self._last.params @ items.T  # the Thompson draw, identity link
        pairs = jnp.broadcast_to(s[1:, None, :], (self.L - 1, self.K, self.K))
        return s[0], pairs

    def features(self, lists) -> np.ndarray:
        """(..., L, d) the features the baseline learns from: the shown items."""
        return np.asarray(
            scores.list_features(
                jnp.asarray(self.items),
                jnp.zeros((self.L, 1)),
                jnp.asarray(self.v0),
                jnp.asarray(lists),
            )
        )
