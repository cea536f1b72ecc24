"""The reward model :func:`bayesrank.ope.evaluate` gives the model-based estimators
(``dm``, ``pair_dr``, ``cascade_dr``): a ridge regression of the log's rewards on the
pair features (:mod:`.direct`), with its predictions of the logged lists (``q_logged``) and of the
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
from bayesrank.ope._common import Z95, Estimate, valid_items
from bayesrank.ope.direct import aggregate, design, q_logged, solve, target_features
from bayesrank.ope.examination import exam_value
from bayesrank.ope.target import (
    TargetDraws,
    _frequencies,
    n_batches_of,
    probabilities_from_draws,
)

__all__ = ["fit_inputs_model", "prefix_means"]


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

    def __init__(self, lists, rewards, v0s, draws, items, ridge, B, context=None,
                 examined=None, feedback=None):
        self.exam = None
        self._cache = {}  # shared with the batch copies: Cascade-DR's Q terms
        self._args = (lists, draws, items, B, context)
        if feedback == "cascade" and context is not None:
            raise ValueError("context: dm and pair_dr under feedback 'cascade' do not take "
                             "a log's context (per-round features) yet")
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
        if feedback == "cascade":
            self.exam = _Exam(self, lists, v0s, draws, items, examined, B)
            self.q_target, self.q_target_b = self.exam.q_target, self.exam.q_target_b
            self.batch_values = self.q_target_b.sum(axis=2).mean(axis=1)

    def cascade_terms(self):
        """``(q_logged, q_expected)`` (n, L) of
        :func:`~bayesrank.ope.ips.cascade_dr`: the model's expected reward from
        position l to the end (the examination part's E_l q_l summed under
        feedback "cascade"), averaged over the target's draws that share the logged
        a^1..a^l, and over those that share a^1..a^{l-1}; this Monte Carlo batch's
        draws for a batch's model. Without a context each position's prediction is
        clipped to the range of the rewards observed there (any Q keeps the
        estimator unbiased; a linear model's extrapolation past the rewards only
        adds variance). Computed once per model."""
        if "cdr" not in self._cache:
            lists, draws, items, B, context = self._args
            d2 = 2 * items.shape[1]
            if self.exam is not None:
                eq = self.exam.eq
            else:
                X = _draw_features(draws.lists, draws.contexts, items)
                eq = np.einsum("gmlp,lp->gml", X, self.coef[:, :d2])
                if context is None:  # within the range of the rewards seen at l
                    r = np.where(self.D.obs, self.D.r, np.nan)
                    eq = np.clip(eq, np.nanmin(r, axis=0), np.nanmax(r, axis=0))
            V = np.flip(np.cumsum(np.flip(eq, -1), axis=-1), -1)  # from l to the end
            at, above, at_b, above_b = prefix_means(lists, draws, V, B)
            if context is not None:  # the context's part of every draw's prediction
                c = context @ self.coef[:, d2:].T  # (n, L)
                c = np.flip(np.cumsum(np.flip(c, -1), axis=-1), -1)
                pi = probabilities_from_draws(lists, draws, B)
                seen = np.concatenate([np.ones((len(lists), 1)), pi[0]["cascade"]], 1)
                seen_b = np.concatenate(
                    [np.ones((B, len(lists), 1)), pi[1]["cascade"]], 2)
                at, above = at + c * (seen[:, 1:] > 0), above + c * (seen[:, :-1] > 0)
                at_b = at_b + c * (seen_b[..., 1:] > 0)
                above_b = above_b + c * (seen_b[..., :-1] > 0)
            self._cache["cdr"] = (at, above, at_b, above_b)
        at, above, at_b, above_b = self._cache["cdr"]
        if self.batch_of is None:
            return at, above
        return at_b[self.batch_of], above_b[self.batch_of]

    def batch(self, b: int) -> _Model:
        """The model with the target's features of Monte Carlo batch b."""
        out = copy.copy(self)
        out.feats, out.q_target = self.feats_b[b], self.q_target_b[b]
        out.batch_of = b
        return out


def fit_inputs_model(lists, rewards, v0s, draws: TargetDraws, items, ridge=1.0,
                     n_batches: int = 1, context=None, *, examined=None,
                     feedback=None) -> _Model:
    """The reward model of :class:`EstimatorInputs` (``reward_model``, with its
    ``q_logged`` and ``q_target``) for a log's arrays and the target's draws;
    ``context`` (n, c): extra features of every position. ``examined`` (n, L) and
    ``feedback`` as checked by
    :func:`~bayesrank.ope.examination.valid_examination`: under ``"cascade"`` the
    predictions are multiplied by the probability of examining the position
    (:class:`_Exam`); otherwise the model is as before."""
    return _Model(np.asarray(lists), np.asarray(rewards, float), np.asarray(v0s, float),
                  draws, items, ridge, n_batches, context, examined, feedback)


def _conditional(total, prob):
    """total / prob where prob > 0, else 0 (a prefix the target never shows)."""
    return np.where(prob > 0, total / np.where(prob > 0, prob, 1.0), 0.0)


def prefix_means(lists, draws: TargetDraws, values, n_batches: int = 10):
    """The target's conditional means of per-draw values given each logged prefix,
    the Q terms of Cascade-DR (:func:`~bayesrank.ope.ips.cascade_dr`).

    Args:
        lists: (n, L) the logged lists.
        draws: the target's draws (:func:`~bayesrank.ope.target.draw_target`), (G, m, L).
        values: (G, m, L) a value of each draw at each position (Cascade-DR: the
            reward model's expected rewards from position l to the end).
        n_batches: Monte Carlo batches (draw j in batch ``j % B``).

    Returns:
        ``(at, above, at_b, above_b)``: ``at`` (n, L) the mean of ``values[..., l]``
        over the draws that share the logged a^1..a^l, ``above`` (n, L) over those
        that share a^1..a^{l-1} (every draw at l = 0); 0 where no draw does. The
        ``_b`` arrays (B, n, L) are the same per batch.

    Example:
        >>> import numpy as np
        >>> draws = TargetDraws(np.zeros((1, 1)), np.zeros(1, np.int64),
        ...                     np.array([[[0, 1], [0, 2], [1, 2]]]), False)
        >>> at, above, _, _ = prefix_means(np.array([[0, 2]]), draws,
        ...                                np.array([[[3., 1.], [5., 2.], [7., 4.]]]), 1)
        >>> at.tolist(), above.tolist()  # draws 0, 1 share a^1 = 0; draw 1 a^2 = 2
        ([[4.0, 2.0]], [[5.0, 1.5]])
    """
    lists = np.asarray(lists)
    n, L = lists.shape
    B = n_batches_of(draws, n_batches)
    out = [np.zeros((n, L)), np.zeros((n, L)), np.zeros((B, n, L)), np.zeros((B, n, L))]
    bid = np.arange(draws.lists.shape[1]) % B
    for g, D in enumerate(draws.lists):
        rows = np.flatnonzero(draws.inverse == g)
        if rows.size == 0:
            continue
        for l in range(L):
            for k, cols in ((0, list(range(l + 1))), (1, list(range(l)))):
                p, p_b = _frequencies(D, lists[rows], cols, bid, B)
                s, s_b = _frequencies(D, lists[rows], cols, bid, B, values[g, :, l])
                out[k][rows, l] = _conditional(s, p)
                out[k + 2][:, rows, l] = _conditional(s_b, p_b)
    return tuple(out)


def _draw_features(lists, contexts, items) -> np.ndarray:
    """(G, m, L, 2d) the pair features of each target draw (lists (G, m, L))."""
    cur = items[lists]
    ctx = np.broadcast_to(contexts[:, None, None, :], (*lists.shape[:2], 1, items.shape[1]))
    return np.concatenate([cur, np.concatenate([ctx, cur[:, :, :-1]], axis=2)], axis=-1)


def _clipped(x):
    """x clipped to [0, 1] and where the clip is inactive (derivative 1)."""
    return np.clip(x, 0.0, 1.0), (x > 0.0) & (x < 1.0)


class _Exam:
    """The examination part of a reward model under feedback "cascade".

    Three per-position linear models on the pair features: q (the click given
    examination: the reward model itself, fitted on examined positions), c1 and c0
    (going on past l after a click / after none, fitted on the examined rounds of
    each kind). A position whose log shows one outcome only (every clicked round
    stops: the cascade; every unclicked round goes on) takes that outcome as a
    constant, so the pure cascade has c1 = 0 and c0 = 1 exactly.
    """

    def __init__(self, m: _Model, lists, v0s, draws, items, examined, B):
        n, L = lists.shape
        r = m.D.r
        ex = examined
        click = m.D.obs & (r > 0)
        self.fits = {"q": (m.D, m.coef, m.prec, None)}
        const = {}
        for c, kind in ((1, "c1"), (0, "c0")):
            y = np.full((n, L), np.nan)
            fixed = np.full(L, np.nan)
            for l in range(L - 1):
                rows = ex[:, l] & (click[:, l] == bool(c))
                went = ex[rows, l + 1]
                if went.size == 0:
                    fixed[l] = 1.0 - c  # never seen: the cascade's step
                elif went.all() or not went.any():
                    fixed[l] = float(went[0])
                else:
                    y[rows, l] = went
            fixed[L - 1] = 1.0 - c
            const[kind] = fixed
            if np.isnan(fixed).any():
                D = design(lists, y, v0s, items, groups=(draws.contexts, draws.inverse))
                coef, prec = solve(D, m.ridge)
                self.fits[kind] = (D, coef[0], prec[0], fixed)
        self.const, self.inv, self.n = const, m.inv, n
        self.X = _draw_features(draws.lists, draws.contexts, items)  # (G, m, L, p)
        bid = np.arange(draws.lists.shape[1]) % B
        self.bid, self.B = bid, B
        vals, E, eq = self.values({k: f[1] for k, f in self.fits.items()})
        self.eq = eq  # (G, m, L) E_l q_l per draw
        self.Vg = vals.mean(axis=1)
        self.q_target = eq.mean(axis=1)[m.inv]
        self.q_target_b = np.stack([eq[:, bid == b].mean(axis=1) for b in range(B)])[
            :, m.inv]
        # pair_dr's weight of an examined position's residual: E_target / E_logged
        logged = {k: self._logged(k, f[1]) for k, f in self.fits.items()}
        for k in ("c1", "c0"):
            logged.setdefault(k, np.broadcast_to(const[k], (n, L)))
        q = np.clip(logged["q"], 0, 1)
        g = q * logged["c1"] + (1 - q) * logged["c0"]
        E_log = np.concatenate([np.ones((n, 1)), np.cumprod(g[:, :-1], axis=1)], axis=1)
        E_pi = E.mean(axis=1)[m.inv]
        self.dr_scale = np.where(E_log > 0, E_pi / np.where(E_log > 0, E_log, 1), 0.0)

    def _logged(self, kind, coef):
        D, _, _, fixed = self.fits[kind]
        out = q_logged(D, coef)
        return out if fixed is None else np.where(np.isnan(fixed), out, fixed)

    def _predict(self, coef, fixed):
        x = np.einsum("gmlp,lp->gml", self.X, coef)
        x, active = _clipped(x)
        if fixed is not None:
            x = np.where(np.isnan(fixed), x, fixed)
            active = active & np.isnan(fixed)
        return x, active

    def values(self, coefs, grads=False):
        """Per-draw values (G, m), E (G, m, L), E q (G, m, L) [, derivatives]."""
        pred, act = {}, {}
        for kind in ("q", "c1", "c0"):
            if kind in self.fits:
                pred[kind], act[kind] = self._predict(coefs[kind], self.fits[kind][3])
            else:
                pred[kind] = np.broadcast_to(self.const[kind], self.X.shape[:3])
                act[kind] = np.zeros(self.X.shape[:3], bool)
        v, E, dq, dc1, dc0 = exam_value(pred["q"], pred["c1"], pred["c0"])
        out = (v, E, E * pred["q"])
        if grads:
            d = {"q": dq, "c1": dc1, "c0": dc0}
            out += ({k: d[k] * act[k] for k in self.fits},)
        return out

    def estimate(self) -> Estimate:
        """The DM estimate with its delta-method stderr (each fitted model's
        coefficients through its sandwich term, as :func:`~bayesrank.ope.direct.dm`)."""
        n, inv = self.n, self.inv
        coefs = {k: f[1] for k, f in self.fits.items()}
        vals, _, _, d = self.values(coefs, grads=True)
        V = self.Vg[inv]
        est = float(V.mean())
        infl = (V - est) / n
        w = np.bincount(inv, minlength=len(self.Vg)) / n
        for kind, (D, coef, prec, _) in self.fits.items():
            cbar = np.einsum("g,gml,gmlp->lp", w, d[kind], self.X) / self.X.shape[1]
            h = np.linalg.solve(prec, cbar[..., None])[..., 0]
            e = np.where(D.obs, D.r - q_logged(D, coef), 0.0)
            u = np.stack([D.X[l][D.inv[l]] @ h[l] for l in range(len(D.X))], axis=1)
            infl = infl + (u * e).sum(axis=1)
        se = float(np.sqrt((infl**2).sum() * n / (n - 1))) if n > 1 else float("nan")
        return Estimate(est, se, est - Z95 * se, est + Z95 * se)

    def bootstrap(self, ridge, counts) -> np.ndarray:
        """(b,) DM values with every model refitted on each resample."""
        fitted = {k: solve(f[0], ridge, counts)[0] for k, f in self.fits.items()}
        cg = aggregate(np.ascontiguousarray(counts.T, dtype=float), self.inv,
                       len(self.Vg)) / self.n  # (b, G)
        out = np.empty(counts.shape[0])
        for b in range(counts.shape[0]):
            vals = self.values({k: c[b] for k, c in fitted.items()})[0]
            out[b] = cg[b] @ vals.mean(axis=1)
        return out


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
