"""RankTS (Algorithm 3 of the paper): Thompson sampling over the L-layered graph.

Each round draws theta^l once per position from the per-position posterior (not once
per graph vertex, as the authors' code did), scores every super-arm and decodes the best
list exactly. With the identity link the scores separate, ``s_l(i, j) = A_l[j] +
B_l[i]``, and the decode is O(L K); other links use the O(L K^2) DP, windows the
O(L K^S) DP.

Example:
    >>> import bayesrank as br, jax
    >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
    >>> ts = br.RankTS(model=br.GaussianLinear(), items=env.items, w=env.w, seed=0)
    >>> items = ts.select()
    >>> ts.update(items, env.sample(jax.random.key(0), items))
"""

from __future__ import annotations

import numpy as np

from bayesrank._validate import check_mask
from bayesrank.policies.base import Policy
from bayesrank.policies.parts.core import compose, PolicyCore
from bayesrank.policies.parts.estimate import Thompson
from bayesrank.policies.parts.features import pair_features, window_features
from bayesrank.policies.parts.keywords import keyword_only
from bayesrank.policies.parts.tables import DrawnWTables, LinearTables, WindowTables
from bayesrank.policies.runtime.checks import as_items_w_v0, refuse_non_model
from bayesrank.policies.runtime.model_config import model_config, model_from_config
from bayesrank.posteriors import GaussianLinear
from bayesrank.posteriors.latent import is_latent, latent_model
from bayesrank.posteriors.w_prior import is_distribution

__all__ = ["RankTS", "rank_ts", "rank_ts_latent_w"]


def rank_ts(model, items, W, *, distinct=False) -> PolicyCore:
    """The functional core of RankTS: a Thompson draw, linear or window tables.

    Args:
        model: a per-position posterior (see :mod:`bayesrank.posteriors.base`).
        items: (K, d) item vectors; W: (L, S-1) dependency weights.
        distinct: forbid repeated items.
    """
    L, S = W.shape[0], W.shape[1] + 1
    tables = LinearTables(W[:, 0], model.link) if S == 2 else WindowTables(W, model.link)
    return compose(
        model, window_features(W), Thompson(model), tables, items,
        L=L, p=items.shape[1], distinct=distinct,
    )


def rank_ts_latent_w(model, items, L: int, *, distinct=False) -> PolicyCore:
    """The functional core of RankTS with w latent: ``model`` is a
    :class:`~bayesrank.posteriors.latent.gaussian.LatentW` over the pair features; each draw
    is ``(theta, w)`` and the tables use the drawn w."""
    return compose(
        model, pair_features, Thompson(model), DrawnWTables(model.link), items,
        L=L, p=2 * items.shape[1], distinct=distinct,
    )


class RankTS(Policy):
    """Ranking Thompson sampling with per-position Bayesian posteriors.

    Args:
        items: (K, d) item vectors (the one positional argument; the rest are
            keyword-only: ``RankTS(V, w=w)`` or ``RankTS(items=V, w=w)``).
        L: list length (taken from ``w`` if omitted).
        w: (L,) dependency on the previous item, or (L, S-1) for a window; zeros if
            omitted (the ranked-bandits assumption). Or a NumPyro distribution (batch
            shape () or (L,)): the prior of an unknown w, learnt jointly with theta
            (:func:`bayesrank.posteriors.latent_model` picks the posterior: exact
            draws for the conjugate models, a Laplace likelihood in the 2d
            relaxation for ``LaplaceGLM``, joint NUTS for ``BayesGLM``; a
            ``NumPyroModel`` whose model declares a ``"w"`` site learns w with
            ``w=None``). ``model=LatentW(base, prior)`` is the same.
        v0: (d,) the default user's last item (zeros if omitted); each request may
            give its own to ``select``/``update``.
        model: a per-position posterior: ``GaussianLinear()`` (exact, the default),
            ``BayesGLM(link=...)`` or ``NumPyroModel(user_model)`` (NUTS).
        distinct: forbid repeated items in a list.
        mask: (K,) bool, True where an item may be shown by default.
        seed: the seed of the Thompson draws.

    Example:
        >>> import jax, bayesrank as br
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> ts = br.RankTS(model=br.GaussianLinear(), items=env.items, w=env.w, seed=0)
        >>> items = ts.select()
        >>> items.shape, bool(((items >= 0) & (items < 10)).all())
        ((4,), True)
        >>> ts.update(items, env.sample(jax.random.key(0), items))
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
        distinct: bool = False,
        mask=None,
        seed: int = 0,
    ):
        if is_distribution(w) or is_latent(model):
            self._init_latent(model, items, L, w, v0, distinct, mask, seed)
            return
        if model is None:
            model = GaussianLinear()
        refuse_non_model(model, ("init", "update", "draw", "mean", "link"))
        V, W, v0a, L = as_items_w_v0(items, L, w, v0)
        self.K, self.L = V.shape[0], L
        W2 = W[:, None] if W.ndim == 1 else W
        if distinct and self.K < L:
            raise ValueError(f"distinct: needs K >= L, got K={self.K} and L={L}")
        if distinct and W2.shape[1] > 1:
            raise ValueError("distinct: not supported with a window of S > 2 items")
        self.mask = check_mask(mask, self.K, L, distinct)
        self.model = model
        self.items, self.w, self.v0 = V, W, v0a
        self.distinct = bool(distinct)
        self.vmappable = bool(getattr(model, "vmappable", True))
        self._setup(rank_ts(model, V, W2, distinct=self.distinct), seed)

    def _init_latent(self, model, items, L, w, v0, distinct, mask, seed):
        if is_latent(model):
            if w is not None:
                raise ValueError(
                    "w: the model already learns w (a latent-w model); give the prior "
                    "of w once, as w= or in the model"
                )
            latent = model
        else:
            latent = latent_model(model, w)
        if L is None:
            prior = getattr(latent, "w_prior", None)
            batch = () if prior is None else tuple(prior.batch_shape)
            if not batch:
                raise ValueError(
                    "L: give the list length L (the prior on w has batch shape ())"
                )
            L = batch[0]
        V, _, v0a, L = as_items_w_v0(items, L, None, v0)
        check_positions = getattr(latent, "check_positions", None)
        if check_positions is not None:
            check_positions(L)
        self.K, self.L = V.shape[0], L
        if distinct and self.K < L:
            raise ValueError(f"distinct: needs K >= L, got K={self.K} and L={L}")
        self.mask = check_mask(mask, self.K, L, distinct)
        self.model = latent
        self.items, self.v0 = V, v0a
        self.w = None
        self._array_args = ("items", "v0")
        self.distinct = bool(distinct)
        self.vmappable = bool(getattr(latent, "vmappable", True))
        self._setup(rank_ts_latent_w(latent, V, L, distinct=self.distinct), seed)

    @property
    def latent_w(self) -> bool:
        """Whether w is learnt (a prior was given) rather than known."""
        return self.w is None

    @property
    def w_hat(self) -> np.ndarray:
        """(L,) the posterior mean of w (exact quadrature for the conjugate and
        Laplace models, the chains' running mean for NUTS); the given w if known."""
        if self.latent_w:
            return np.asarray(self.model.w_mean(self.state.model))
        W = np.asarray(self.w)
        return W if W.ndim == 1 else W[:, 0]

    def _config(self) -> dict:
        return {"model": model_config(self.model), "distinct": self.distinct,
                "L": self.L}

    @classmethod
    def _from_config(cls, cfg, args, seed, overrides):
        model = model_from_config(cfg["model"], overrides.pop("model", None))
        return cls(
            model=model,
            items=args["items"],
            L=cfg.get("L"),
            w=args.get("w"),
            v0=args["v0"],
            distinct=cfg["distinct"],
            mask=args.get("mask"),
            seed=seed,
            **overrides,
        )
