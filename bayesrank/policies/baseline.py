"""The paper's baseline: ranked bandits (Radlinski et al., 2008), linear version.

One linear bandit per position that ignores the previous item: position l learns
``theta^l`` from the features ``v_{a^l}`` alone (``w`` treated as 0), so under a real
neighbour dependence its model is misspecified and it settles on a suboptimal list
(Figure 1, right). With ``w = 0`` it is the right model and converges.

* ``kind="ucb"``: LinUCB per position: the RankUCB parts with the item features and
  separable tables (O(L K) decode, or the exact distinct assignment);
* ``kind="ts"``: linear Thompson sampling per position: the RankTS parts with the
  conjugate ``GaussianLinear(prior_scale=1/sqrt(lam), noise_scale=1)`` posterior
  (``delta`` and ``alpha`` are not used, and it has no ``width`` or ``logdet``:
  ``hasattr`` says False).

Example:
    >>> import bayesrank as br
    >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
    >>> base = br.RankedBaseline(env.items, L=4, alpha=2.0)
    >>> base.select().shape
    (4,)
"""

from __future__ import annotations

import functools
import types

import numpy as np

from bayesrank.policies.base import Policy
from bayesrank.policies.parts.bonus import UCBTables
from bayesrank.policies.parts.core import compose
from bayesrank.policies.parts.estimate import Optimistic, Thompson
from bayesrank.policies.parts.features import item_features
from bayesrank.policies.parts.keywords import keyword_only
from bayesrank.policies.parts.tables import LinearTables
from bayesrank.policies.runtime.checks import as_items_w_v0
from bayesrank.policies.ucb import LinearConfig, UCBWidth

__all__ = ["RankedBaseline"]

_KINDS = ("ucb", "ts")


class _ucb_only:
    """A method that a ``kind="ucb"`` baseline has and a ``kind="ts"`` one lacks:
    on the latter the attribute is missing, so ``hasattr`` says False and the
    AttributeError says why (scikit-learn's ``available_if``, for one condition)."""

    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self.fn
        if obj.kind != "ucb":
            raise AttributeError(
                f"{self.name}: only a kind='ucb' baseline has a confidence width; "
                f"this one has kind={obj.kind!r} (Thompson sampling)"
            )
        return types.MethodType(self.fn, obj)


class RankedBaseline(LinearConfig, UCBWidth, Policy):
    """Per-position linear bandits ignoring the previous item (the paper's baseline).

    Args:
        items: (K, d) item vectors (the one positional argument; the rest are
            keyword-only).
        L: list length.
        v0: (d,) the user's last item (unused by the model: w is taken as 0; kept
            for the common interface).
        delta, lam, alpha: the UCB width, as in :class:`~bayesrank.RankUCB`
            (``kind="ucb"``); ``lam`` also sets the TS prior scale ``1/sqrt(lam)``.
        m2: bound on ``||theta^l||`` in Lemma 1's width.
        kind: "ucb" (LinUCB per position) or "ts" (linear Thompson sampling).
        distinct: forbid repeated items; mask: (K,) bool, items that may be shown.
        seed: the seed of the Thompson draws (``kind="ts"``).

    Example:
        >>> import jax, bayesrank as br
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> baseline = br.RankedBaseline(env.items, L=4, kind="ts", seed=0)
        >>> items = baseline.select()
        >>> baseline.update(items, env.sample(jax.random.key(0), items))
        >>> items.shape
        (4,)
    """

    _array_args = ("items", "v0")
    _extra_config = ("L", "kind")
    _takes_model = False
    _learns_scales = False  # the paper's baseline keeps its ridge model

    @keyword_only("items", "L", "v0")
    def __init__(
        self,
        items=None,
        *,
        L=None,
        v0=None,
        delta: float = 0.1,
        lam: float | None = None,
        alpha: float | None = None,
        m2: float = 1.0,
        kind: str = "ucb",
        distinct: bool = False,
        mask=None,
        seed: int = 0,
    ):
        if L is None:
            raise ValueError("L: expected a positive integer list length, got None")
        if kind not in _KINDS:
            raise ValueError(f"kind: expected one of {_KINDS}, got {kind!r}")
        V, W, v0a, L = as_items_w_v0(items, L, None, v0)
        self.K, self.L = V.shape[0], L
        self.items, self.w, self.v0 = V, W, v0a
        self.kind = kind
        self._init_common(None, delta, lam, alpha, m2, None, distinct, mask)
        args = self._width_args(self._norm_max())
        zeros = np.zeros(L)
        if kind == "ucb":
            estimate = Optimistic(self.model, **args)
            tables = UCBTables(zeros, self.model.link, separable=True)
        else:
            estimate = Thompson(self.model)
            tables = LinearTables(zeros, self.model.link)
        core = compose(self.model, item_features, estimate, tables, V, L=L,
                       p=V.shape[1], distinct=self.distinct)
        self._setup(core, seed)

    #: (L,) log det V^l of the current Gram matrices (``kind="ucb"`` only).
    logdet = _ucb_only(UCBWidth.logdet)
    #: (L,) the confidence width the next selection uses (``kind="ucb"`` only).
    width = _ucb_only(UCBWidth.width)
