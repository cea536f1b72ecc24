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

from typing import Any, NamedTuple

import jax.numpy as jnp

from bayesrank import decode, scores
from bayesrank.policies.base import (
    Policy,
    PolicyCore,
    Selection,
    check_items_w_v0,
    check_mask,
    check_model,
    model_config,
    model_from_config,
)

__all__ = ["RankTS", "TSState", "decode_scores", "model_from_config", "rank_ts"]


class TSState(NamedTuple):
    model: Any  # the posterior model's state, batched over positions


def decode_scores(theta, items, W, v0, links, *, distinct=False, mask=None):
    """Decode the best list under a point estimate theta (L, d); jittable.

    Chooses the separable O(L K) path for the identity link with pairwise dependence,
    the dense DP for other links, the window DP for S > 2.

    Returns:
        items (L,) int32, value ().
    """
    S = W.shape[1] + 1
    if S == 2:
        w = W[:, 0]
        if all(lk.name == "identity" for lk in links) and not distinct:
            first, A, B = scores.linear_parts(theta, items, w, v0)
            return decode.separable_in_jit(first, A, B, mask=mask)
        first, pairs = scores.pair_scores(theta, items, w, v0, links)
        return decode.decode_in_jit(first, pairs, distinct=distinct, mask=mask)
    if distinct:
        raise ValueError("distinct: not supported with a window of S > 2 items")
    tables = scores.window_scores(theta, items, W, v0, links)
    if mask is not None:
        m = jnp.asarray(mask)
        tables = [jnp.where(m, t, -jnp.inf) for t in tables]
    return decode.window_decode(tables)


def rank_ts(model, items, W, v0, *, distinct=False, mask=None) -> PolicyCore:
    """The functional core of RankTS.

    Args:
        model: a per-position posterior (see :mod:`bayesrank.posteriors.base`).
        items: (K, d) item vectors; W: (L, S-1) dependency weights; v0: (d,).
        distinct: forbid repeated items; mask: (K,) bool, items that may be shown.
    """
    items = jnp.asarray(items)
    W = jnp.asarray(W)
    v0 = jnp.asarray(v0)
    L, d = W.shape[0], items.shape[1]
    links = (model.link,) * L
    mask_j = None if mask is None else jnp.asarray(mask)

    def init():
        return TSState(model.init(L, d))

    def select(key, state):
        theta, mstate = model.draw(key, state.model)
        chosen, value = decode_scores(
            theta, items, W, v0, links, distinct=distinct, mask=mask_j
        )
        return TSState(mstate), Selection(chosen, value, theta)

    def update(state, chosen, rewards):
        x = scores.list_features(items, W, v0, chosen)
        return TSState(model.update(state.model, x, rewards))

    return PolicyCore(init, select, update)


class RankTS(Policy):
    """Ranking Thompson sampling with per-position Bayesian posteriors.

    Args:
        model: a per-position posterior: ``GaussianLinear()`` (exact, the default),
            ``BayesGLM(link=...)`` or ``NumPyroModel(user_model)`` (NUTS).
        items: (K, d) item vectors.
        L: list length (taken from ``w`` if omitted).
        w: (L,) dependency on the previous item, or (L, S-1) for a window; zeros if
            omitted (the ranked-bandits assumption).
        v0: (d,) the user's last item; zeros if omitted.
        distinct: forbid repeated items in a list.
        mask: (K,) bool, True where an item may be shown.
        seed: the seed of the Thompson draws.
    """

    def __init__(
        self,
        model=None,
        items=None,
        L=None,
        w=None,
        v0=None,
        *,
        distinct: bool = False,
        mask=None,
        seed: int = 0,
    ):
        if model is None:
            from bayesrank.posteriors import GaussianLinear

            model = GaussianLinear()
        check_model(model, ("init", "update", "draw", "mean", "link"))
        V, W, v0a, L = check_items_w_v0(items, L, w, v0)
        self.K, self.L = V.shape[0], L
        if distinct and self.K < L:
            raise ValueError(f"distinct: needs K >= L, got K={self.K} and L={L}")
        if distinct and W.ndim == 2 and W.shape[1] > 1:
            raise ValueError("distinct: not supported with a window of S > 2 items")
        self.mask = check_mask(mask, self.K, L, distinct)
        self.model = model
        self.items, self.w, self.v0 = V, W, v0a
        self.distinct = bool(distinct)
        W2 = W[:, None] if W.ndim == 1 else W
        self._W2 = W2
        self.vmappable = bool(getattr(model, "vmappable", True))
        self._setup(
            rank_ts(model, V, W2, v0a, distinct=self.distinct, mask=self.mask), seed
        )

    # ----------------------------------------------------------------------- extras
    def scores(self):
        """Per-position scores behind the last selection: ``(first, pairs)`` for
        pairwise dependence, the window tables otherwise. Built from the Thompson draw
        (O(L K^2) memory; meant for inspection at moderate K)."""
        if self._last is None:
            raise RuntimeError("scores: call select() first")
        theta = self._last.params
        links = (self.model.link,) * self.L
        items, v0 = jnp.asarray(self.items), jnp.asarray(self.v0)
        if self._W2.shape[1] == 1:
            w = jnp.asarray(self._W2[:, 0])
            return scores.pair_scores(theta, items, w, v0, links)
        return scores.window_scores(theta, items, jnp.asarray(self._W2), v0, links)

    # ------------------------------------------------------------------ persistence
    def _config(self) -> dict:
        return {
            "model": model_config(self.model),
            "distinct": self.distinct,
            "has_mask": self.mask is not None,
        }

    @classmethod
    def _from_config(cls, cfg, args, seed, overrides):
        model = model_from_config(cfg["model"], overrides.pop("model", None))
        return cls(
            model=model,
            items=args["items"],
            w=args["w"],
            v0=args["v0"],
            distinct=cfg["distinct"],
            mask=args.get("mask"),
            seed=seed,
            **overrides,
        )
