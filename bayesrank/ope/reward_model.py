"""The reward model :func:`bayesrank.ope.evaluate` gives the model-based estimators
(``dm``, ``pair_dr``): a ridge regression of the log's rewards on the pair features
(:mod:`.direct`), with its predictions of the logged lists (``q_logged``) and of the
target's (``q_target``, per Monte Carlo batch too), and where its item vectors and
context come from.

Example:
    >>> import numpy as np
    >>> from bayesrank.ope.target import TargetDraws
    >>> lists = np.array([[0, 1], [1, 0]])
    >>> draws = TargetDraws(lists=np.array([[[0, 1]]]), contexts=np.zeros((1, 2)),
    ...                     inverse=np.array([0, 0]), deterministic=True)
    >>> m = fit_inputs_model(lists, np.ones((2, 2)), np.zeros((2, 2)), draws,
    ...                      np.eye(2))
    >>> m.q_logged.shape, m.q_target.shape
    ((2, 2), (2, 2))
"""

from __future__ import annotations

import copy

import numpy as np

from bayesrank._validate import check_array
from bayesrank.ope._common import valid_items
from bayesrank.ope.direct import design, q_logged, solve, target_features
from bayesrank.ope.target import TargetDraws

__all__ = ["fit_inputs_model"]


def _items_for(log, target, items) -> np.ndarray:
    """The item vectors: ``items``, else the log's, else the target's."""
    if items is None:
        if "items" in log:
            items = log["items"].values
        elif getattr(target, "items", None) is not None:
            items = np.asarray(target.items)
        else:
            raise ValueError(
                "items: dm and pair_dr need the item vectors; pass items=, store them in "
                "the log (as_log(..., items=)) or use a target with an .items attribute"
            )
    K = log.attrs.get("K")
    return valid_items(items, log.sizes["dim"], None if K is None else int(K),
                       int(log["lists"].values.max()) + 1)


class _Model:
    """The reward model of a log and the target's predictions (for dm, pair_dr).

    Attributes: D (the log's design), coef, prec, ridge, inv (each round's context
    group), feats (G, L, p) the target's mean features, q_logged, q_target (n, L)
    and per Monte Carlo batch feats_b, q_target_b (B, ...)."""

    def __init__(self, lists, rewards, v0s, draws, items, ridge, B, context=None):
        self.D = design(lists, rewards, v0s, items, groups=(draws.contexts, draws.inverse),
                        context=context)
        coef, prec = solve(self.D, ridge)
        self.coef, self.prec, self.ridge, self.inv = coef[0], prec[0], ridge, draws.inverse
        bid = np.arange(draws.lists.shape[1]) % B
        self.feats, self.feats_b = target_features(draws.lists, draws.contexts, items, bid, B)
        if context is not None:  # groups of (v0, context): the context appended
            keys = np.concatenate([draws.inverse[:, None].astype(float), context], axis=1)
            uniq, inv = np.unique(keys, axis=0, return_inverse=True)
            g, ctx = uniq[:, 0].astype(np.int64), uniq[:, 1:]
            L = self.feats.shape[1]
            c = np.broadcast_to(ctx[:, None, :], (len(g), L, ctx.shape[1]))
            self.feats = np.concatenate([self.feats[g], c], axis=-1)
            self.feats_b = np.concatenate(
                [self.feats_b[:, g], np.broadcast_to(c, (B, *c.shape))], axis=-1)
            self.inv = inv.reshape(-1)
        self.q_target = np.einsum("glp,lp->gl", self.feats, self.coef)[self.inv]
        self.q_target_b = np.einsum("bglp,lp->bgl", self.feats_b, self.coef)[:, self.inv]
        self.q_logged = q_logged(self.D, self.coef)
        self.batch_of = None  # the batch index of a batch's model
        self.batch_values = self.q_target_b.sum(axis=2).mean(axis=1)  # (B,) dm per batch

    def batch(self, b: int) -> _Model:
        """The model with the target's features of Monte Carlo batch b."""
        out = copy.copy(self)
        out.feats, out.q_target = self.feats_b[b], self.q_target_b[b]
        out.batch_of = b
        return out


def fit_inputs_model(lists, rewards, v0s, draws: TargetDraws, items, ridge=1.0,
                     n_batches: int = 1, context=None) -> _Model:
    """The reward model of :class:`EstimatorInputs` (``reward_model``, with its
    ``q_logged`` and ``q_target``) for a log's arrays and the target's draws;
    ``context`` (n, c): extra features of every position."""
    return _Model(np.asarray(lists), np.asarray(rewards, float), np.asarray(v0s, float),
                  draws, items, ridge, n_batches, context)


def _context_of(log):
    """The log's ``context`` (n, c) float array, checked, or None."""
    if "context" not in log:
        return None
    da = log["context"]
    if da.ndim != 2 or da.dims[0] != "round":
        raise ValueError(f"context: expected dims ('round', context_dim), got {da.dims}")
    a = check_array(da.values, "context", finite=None)
    if not np.isfinite(a).all():
        raise ValueError("context: expected finite values, found NaN or inf")
    return a
