"""GenRankTS: Thompson sampling over the paper's 2d relaxation, when w is unknown.

The Thompson twin of genRankUCB (Appendix B of the paper): position l's reward is
linear in ``phi^l = (theta^l, w_l theta^l)`` over the pair features ``(v_{a^l},
v_{a^{l-1}})`` (position 1: ``(v_j, v0)``), so any per-position posterior over R^{2d}
learns it (conjugate, Laplace GLM, NUTS). Each round draws phi once per position and
decodes the exact best list of the scores ``f(<phi_1, v_j> + <phi_2, v_i>)``
(:class:`~bayesrank.policies.parts.tables.PairTables`: separable for the identity link).

The relaxation ignores that phi_2 is a multiple of phi_1, which costs regret against a
model that knows it (``RankTS(w=<prior>)``, :mod:`bayesrank.posteriors.latent.gaussian`), but it
works with every posterior family. ``w_hat`` is the plug-in
``<phi_1, phi_2> / ||phi_1||^2`` of the posterior mean, and ``posterior(l)`` holds a
``w`` variable derived from every draw of phi in the same way.

Example:
    >>> import bayesrank as br
    >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
    >>> ts = br.GenRankTS(env.items, L=4, seed=0)
    >>> ts.select().shape
    (4,)
"""

from __future__ import annotations

import numpy as np

from bayesrank._validate import check_mask
from bayesrank.policies.base import Policy
from bayesrank.policies.gen_ucb import relaxation_model, w_hat
from bayesrank.policies.parts.core import compose, PolicyCore
from bayesrank.policies.parts.estimate import Thompson
from bayesrank.policies.parts.features import pair_features
from bayesrank.policies.parts.keywords import keyword_only
from bayesrank.policies.parts.tables import PairTables
from bayesrank.policies.runtime.checks import as_items_w_v0, refuse_non_model
from bayesrank.policies.runtime.model_config import model_config, model_from_config

__all__ = ["GenRankTS", "gen_rank_ts"]


def gen_rank_ts(model, items, L: int, *, distinct=False) -> PolicyCore:
    """The functional core of GenRankTS: a Thompson draw of phi (L, 2d)."""
    return compose(
        model, pair_features, Thompson(model), PairTables(model.link), items,
        L=L, p=2 * items.shape[1], distinct=distinct,
    )


class GenRankTS(Policy):
    """Ranking Thompson sampling that learns the dependency weights (2d relaxation).

    Args:
        items: (K, d) item vectors (the one positional argument; the rest are
            keyword-only).
        L: list length.
        v0: (d,) the default user's last item (zeros if omitted).
        model: per-position posterior over phi in R^{2d} (default
            :func:`~bayesrank.policies.gen_ucb.relaxation_model`, the scales learnt
            under a HalfNormal(1) hyperprior); any bayesrank posterior.
        distinct: forbid repeated items; mask: (K,) bool, items that may be shown.
        seed: the seed of the Thompson draws.

    Example:
        >>> import jax, bayesrank as br
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> policy = br.GenRankTS(env.items, L=4, seed=0)       # w is not given
        >>> items = policy.select()
        >>> policy.update(items, env.sample(jax.random.key(0), items))
        >>> policy.w_hat.shape                                 # the learnt w
        (4,)
    """

    _array_args = ("items", "v0")

    @keyword_only("items", "L", "v0")
    def __init__(self, items=None, *, L=None, v0=None, model=None,
                 distinct: bool = False, mask=None, seed: int = 0):
        if L is None:
            raise ValueError("L: expected a positive integer list length, got None")
        if model is None:
            model = relaxation_model()
        refuse_non_model(model, ("init", "update", "draw", "mean", "link"))
        V, W, v0a, L = as_items_w_v0(items, L, None, v0)
        self.K, self.L = V.shape[0], L
        if distinct and self.K < L:
            raise ValueError(f"distinct: needs K >= L, got K={self.K} and L={L}")
        self.mask = check_mask(mask, self.K, L, distinct)
        self.model = model
        self.items, self.w, self.v0 = V, W, v0a
        self.distinct = bool(distinct)
        self.vmappable = bool(getattr(model, "vmappable", True))
        self._setup(gen_rank_ts(model, V, L, distinct=self.distinct), seed)

    @property
    def w_hat(self) -> np.ndarray:
        """(L,) the plug-in estimate ``<phi_1, phi_2> / ||phi_1||^2`` of the
        posterior mean of phi."""
        return np.asarray(w_hat(self.model.mean(self.state.model)))

    def posterior(self, position: int, **kwargs):
        """The posterior of phi at a 0-based position, with a derived ``w`` variable
        (``<phi_1, phi_2> / ||phi_1||^2`` of each draw) in the posterior group."""
        dt = super().posterior(position, **kwargs)
        theta = dt["posterior"]["theta"]
        d = theta.sizes["theta_dim"] // 2
        phi1 = theta.isel(theta_dim=slice(0, d)).values
        phi2 = theta.isel(theta_dim=slice(d, 2 * d)).values
        w = np.asarray(w_hat(np.concatenate([phi1, phi2], axis=-1)))
        post = dt["posterior"].to_dataset().assign(w=(("chain", "draw"), w))
        dt["posterior"] = post
        return dt

    def _config(self) -> dict:
        return {"model": model_config(self.model), "distinct": self.distinct,
                "L": self.L}

    @classmethod
    def _from_config(cls, cfg, args, seed, overrides):
        model = model_from_config(cfg["model"], overrides.pop("model", None))
        return cls(items=args["items"], L=cfg["L"], v0=args["v0"], model=model,
                   distinct=cfg["distinct"], mask=args.get("mask"), seed=seed,
                   **overrides)
