"""winRankUCB (Appendix E of the paper): RankUCB with a window of S-1 previous items.

The feature of position l is ``x^l = v_{a^l} + sum_{i=1}^{S-1} w[l, i-1] v_{a^{l-i}}``
(``a^0`` is v0; earlier positions contribute nothing). Everything else is RankUCB:
the posterior's Gram factor per position, Lemma 1's width (or a constant alpha), the
exact identity-link UCB and the relaxed one for monotone links. The window tables
(:class:`bayesrank.policies.parts.bonus.WindowUCBTables`) are decoded by the window DP,
O(L K^S); with S = 2 the policy *is* RankUCB's core (one shared path).

Example:
    >>> import numpy as np, bayesrank as br
    >>> env = br.RankingEnv.paper(seed=0, K=6, L=4)
    >>> W = np.c_[np.asarray(env.w), 0.5 * np.ones(4)]          # S = 3
    >>> win = br.WindowRankUCB(items=env.items, w=W, alpha=2.0)
    >>> win.select().shape
    (4,)
"""

from __future__ import annotations

import numpy as np

from bayesrank.policies.parts.keywords import keyword_only
from bayesrank.policies.runtime.checks import as_items_w_v0
from bayesrank.policies.ucb import rank_ucb, UCBPolicy

__all__ = ["WindowRankUCB"]


class WindowRankUCB(UCBPolicy):
    """Ranking UCB with a window of S-1 previous items (winRankUCB, Appendix E).

    Args:
        items: (K, d) item vectors (the one positional argument; the rest are
            keyword-only).
        L: list length (taken from ``w`` if omitted).
        w: (L, S-1) window weights, ``w[l, i-1]`` for the item i positions back; an
            (L,) array means S = 2.
        v0: (d,) the default user's last item.
        model: per-position posterior (default as in RankUCB: learnt scales, or
            the ridge when ``lam``, ``alpha`` or ``m2`` is given).
        delta, lam, alpha, m2, c1: the width, as in :class:`~bayesrank.RankUCB`.
        distinct: forbid repeated items (S = 2 only); mask: (K,) bool.
        seed: kept for the common interface (nothing is drawn).

    Example:
        >>> import numpy as np, bayesrank as br
        >>> V = np.random.default_rng(0).normal(size=(6, 4))
        >>> W = np.full((3, 2), 0.5)                # L = 3, S = 3: two previous items
        >>> policy = br.WindowRankUCB(items=V, w=W, alpha=1.0)
        >>> policy.select().shape
        (3,)
    """

    @keyword_only("model", "items", "L", "w", "v0")
    def __init__(
        self,
        items=None,
        *,
        L=None,
        w=None,
        v0=None,
        model=None,
        delta: float = 0.1,
        lam: float | None = None,
        alpha: float | None = None,
        m2: float | None = None,
        c1: float | None = None,
        distinct: bool = False,
        mask=None,
        seed: int = 0,
    ):
        if w is None:
            raise ValueError(
                "w: expected an (L, S-1) array of window weights, got None"
            )
        V, W, v0a, L = as_items_w_v0(items, L, w, v0)
        W2 = W[:, None] if W.ndim == 1 else W
        self.K, self.L = V.shape[0], L
        self.items, self.w, self.v0 = V, W, v0a
        self.S = W2.shape[1] + 1
        if distinct and self.S > 2:
            raise ValueError(
                "distinct: only supported for S = 2 (w of shape (L,) or (L, 1))"
            )
        self._init_common(model, delta, lam, alpha, m2, c1, distinct, mask)
        x_max = (1.0 + np.abs(W2).sum(axis=1).max()) * self._norm_max()
        args = self._width_args(x_max)
        self._setup(rank_ucb(self.model, V, W2, distinct=self.distinct, **args), seed)
