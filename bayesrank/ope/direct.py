"""The direct method: a reward model fitted on the log, evaluated on the target's lists.

The model is Eq. 1 with the identity link in its 2d relaxation: per position l,

    E[r^l] = <beta_l, (v_{a^l}, v_{a^{l-1}})>,      v_{a^0} = v0 (the request's context),

a linear regression on the pair features (beta_l = (theta^l, w_l theta^l) when the
rewards follow :class:`bayesrank.RankingEnv` with the identity link, so the fit needs
no known w). Each position is fitted by ridge regression, i.e. the posterior mean of a
conjugate Gaussian model with prior beta_l ~ N(0, sigma^2 / ridge I); NaN rewards
(positions not observed) are skipped.

The direct-method (DM) value of a target is the mean over the log's rounds of the
predicted total reward of the target's list in that round's context (for a random
target, averaged over its Monte Carlo draws). Unlike the IPS estimators it counts every
position (a NaN reward is treated as missing at random, not as 0).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bayesrank._validate import check_real
from bayesrank.ope._common import Z95, Estimate, valid_items

__all__ = ["RewardModel", "dm", "fit_reward_model"]


class RewardModel(NamedTuple):
    """A fitted pair-feature reward model (:func:`fit_reward_model`).

    Attributes:
        coef: (L, 2d) the posterior mean of beta_l: ``coef[l, :d]`` multiplies the
            item at l, ``coef[l, d:]`` the previous item (v0 at l = 0).
        precision_inv: (L, 2d, 2d) (X_l^T X_l + ridge I)^{-1} of each position.
        items: (K, d) the item vectors.
        ridge: the ridge penalty (prior precision / noise precision).

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import fit_reward_model
        >>> items = np.eye(2)
        >>> m = fit_reward_model(np.array([[0], [1]]), np.array([[1.0], [0.0]]),
        ...                      np.zeros(2), items, ridge=1.0)
        >>> m.predict(np.array([[0], [1]]), np.zeros(2))
        array([[0.5],
               [0. ]])
    """

    coef: np.ndarray  # (L, 2d)
    precision_inv: np.ndarray  # (L, 2d, 2d)
    items: np.ndarray  # (K, d)
    ridge: float

    def features(self, lists, v0) -> np.ndarray:
        """(n, L, 2d) the pair features (v_{a^l}, v_{a^{l-1}}) of lists (n, L)."""
        lists = np.asarray(lists)
        v0s = np.broadcast_to(np.asarray(v0, float), (lists.shape[0], self.items.shape[1]))
        cur = self.items[lists]
        prev = np.concatenate([v0s[:, None, :], cur[:, :-1]], axis=1)
        return np.concatenate([cur, prev], axis=-1)

    def predict(self, lists, v0) -> np.ndarray:
        """(n, L) the predicted reward of each position of lists (n, L) in contexts
        v0 (n, d) or (d,)."""
        return np.einsum("nlp,lp->nl", self.features(lists, v0), self.coef)


class _Design(NamedTuple):
    """The log's pair features, one row per distinct (previous, current) pair."""

    X: list  # per position l: (P_l, 2d) distinct feature rows (V[cur], U[prev])
    inv: list  # per position l: (n,) the row of each round
    cur: list  # per position l: (P_l,) the current item of each row
    prev: list  # per position l: (P_l,) the previous item (context group at l = 0)
    U: list  # per position l: the previous vectors (contexts (G, d) or items (K, d))
    V: np.ndarray  # (K, d) items
    obs: np.ndarray  # (n, L) bool, reward observed
    r: np.ndarray  # (n, L) rewards, NaN -> 0
    dense: bool = False  # one row per round (X_l (n, p)); the Gram by dense products


def design(lists, rewards, v0s, items, groups=None, context=None) -> _Design:
    """The pair features of a log, deduplicated per position (no loop over rounds).

    ``groups``: ``(contexts (G, d), inverse (n,))`` of v0s when already known.
    ``context``: (n, c) a user context appended to every position's features
    (v_{a^l}, v_{a^{l-1}}, context); the rows are then one per round (dense)."""
    lists = np.asarray(lists)
    r = np.asarray(rewards, float)
    L = lists.shape[1]
    K = items.shape[0]
    if groups is None:
        groups = np.unique(np.asarray(v0s, float), axis=0, return_inverse=True)
    contexts, g = groups[0], np.asarray(groups[1]).reshape(-1)
    if context is not None:
        ctx = np.asarray(context, float)
        X, inv, cur, prev, U = [], [], [], [], []
        for l in range(L):
            before = g if l == 0 else lists[:, l - 1]
            U.append(contexts if l == 0 else items)
            cur.append(lists[:, l])
            prev.append(before)
            X.append(np.concatenate([items[lists[:, l]], U[l][before], ctx], axis=1))
            inv.append(np.arange(lists.shape[0]))
        obs = ~np.isnan(r)
        return _Design(X, inv, cur, prev, U, items, obs, np.where(obs, r, 0.0), True)
    X, inv, cur, prev, U = [], [], [], [], []
    for l in range(L):
        before = g if l == 0 else lists[:, l - 1]
        keys, ix = np.unique(before.astype(np.int64) * K + lists[:, l], return_inverse=True)
        U.append(contexts if l == 0 else items)
        cur.append(keys % K)
        prev.append(keys // K)
        X.append(np.concatenate([items[cur[l]], U[l][prev[l]]], axis=1))
        inv.append(ix.reshape(-1))
    obs = ~np.isnan(r)
    return _Design(X, inv, cur, prev, U, items, obs, np.where(obs, r, 0.0))


def _sparse(rows, cols, vals, shape):
    from scipy import sparse

    return sparse.csr_matrix((vals, (rows, cols)), shape=shape)


def aggregate(counts_t, idx, P: int, weights=None) -> np.ndarray:
    """(b, P) sums of round weights (times weights (n,)) over rounds with equal idx,
    as one sparse product; counts_t (n, b) holds the b weight vectors as columns."""
    n = idx.shape[0]
    w = np.ones(n) if weights is None else np.asarray(weights, float)
    return np.asarray(_sparse(idx, np.arange(n), w, (P, n)) @ counts_t).T


def _gram(cnt, X) -> np.ndarray:
    """(b, p, p) sum_k cnt[:, k] x_k x_k^T as matrix products (memory bounded)."""
    (b, P), p = cnt.shape, X.shape[1]
    if P * p * p <= 2**22:
        return (cnt @ (X[:, :, None] * X[:, None, :]).reshape(P, p * p)).reshape(b, p, p)
    step = max(1, 2**22 // (P * p))
    return np.concatenate([np.matmul(X.T[None] * cnt[s:s + step, None, :], X)
                           for s in range(0, b, step)])  # chunks of replicates


def _pair_gram(D: _Design, l: int, cnt) -> np.ndarray:
    """(b, 2d, 2d) Gram of position l's rows (V[cur], U[prev]) with weights cnt (b, P),
    by blocks: the item and previous-vector blocks over K (resp. G) rows only, the
    cross block through one sparse product (b P d work instead of b P (2d)^2)."""
    V, U, cur, prev = D.V, D.U[l], D.cur[l], D.prev[l]
    (b, P), d = cnt.shape, V.shape[1]
    ct = np.ascontiguousarray(cnt.T)
    cc = _gram(np.asarray(_sparse(cur, np.arange(P), np.ones(P), (len(V), P)) @ ct).T, V)
    pp = _gram(np.asarray(_sparse(prev, np.arange(P), np.ones(P), (len(U), P)) @ ct).T, U)
    # W[b, i] = sum over rows k with prev_k = i of cnt[b, k] V[cur_k]
    rows = np.repeat(np.arange(P), d)
    cols = (prev[:, None] * d + np.arange(d)[None, :]).ravel()
    B = _sparse(rows, cols, V[cur].ravel(), (P, len(U) * d))
    W = np.asarray(B.T @ ct).T.reshape(b, len(U), d)
    cp = np.matmul(W.transpose(0, 2, 1), U)  # (b, d, d): sum_k cnt_k v_cur u_prev^T
    return np.concatenate([np.concatenate([cc, cp], axis=2),
                           np.concatenate([cp.transpose(0, 2, 1), pp], axis=2)], axis=1)


def solve(D: _Design, ridge: float, counts=None):
    """Ridge coefficients (b, L, 2d) and precisions (b, L, 2d, 2d) with round
    weights counts (b, n) (None: every round once, b = 1)."""
    L = D.r.shape[1]
    counts_t = None if counts is None else np.ascontiguousarray(counts.T, dtype=float)
    coefs, precs = [], []
    for l in range(L):
        X, P = D.X[l], D.X[l].shape[0]
        if counts is None:
            cnt = np.bincount(D.inv[l], weights=D.obs[:, l], minlength=P)[None]
            sr = np.bincount(D.inv[l], weights=D.r[:, l], minlength=P)[None]
        else:
            cnt = aggregate(counts_t, D.inv[l], P, D.obs[:, l])
            sr = aggregate(counts_t, D.inv[l], P, D.r[:, l])
        A = (_gram(cnt, X) if D.dense else _pair_gram(D, l, cnt)) + ridge * np.eye(X.shape[1])
        coefs.append(np.linalg.solve(A, (sr @ X)[..., None])[..., 0])
        precs.append(A)
    return np.stack(coefs, axis=1), np.stack(precs, axis=1)


def target_features(lists, contexts, items, batch_ids=None, n_batches=1):
    """Mean pair features of the target's lists per context group.

    Args:
        lists: (G, m, L) the target's lists per group.
        contexts: (G, d) each group's v0.
        items: (K, d).
        batch_ids: (m,) the Monte Carlo batch of each draw (None: one batch).
        n_batches: the number of batches B.

    Returns:
        ``(full, per_batch)``: (G, L, 2d) and (B, G, L, 2d).
    """
    G, m, L = lists.shape
    d = items.shape[1]
    if batch_ids is None:
        batch_ids = np.zeros(m, int)
    cur = np.zeros((n_batches, G, L, d))
    step = max(1, 2**22 // max(1, m * L * d))  # bound memory: groups per chunk
    for start in range(0, G, step):  # chunks of context groups, not rounds
        sl = slice(start, start + step)
        for b in range(n_batches):
            cur[b, sl] = items[lists[sl][:, batch_ids == b]].mean(axis=1)
    sizes = np.bincount(batch_ids, minlength=n_batches).astype(float)
    ctx = np.broadcast_to(contexts[None, :, None, :], (n_batches, G, 1, d))
    per = np.concatenate([cur, np.concatenate([ctx, cur[:, :, :-1]], axis=2)], axis=-1)
    full = np.einsum("b,bglp->glp", sizes / sizes.sum(), per)
    return full, per


def q_logged(D: _Design, coef) -> np.ndarray:
    """(n, L) the model's prediction of each logged position."""
    return np.stack([D.X[l][D.inv[l]] @ coef[l] for l in range(len(D.X))], axis=1)


def dm_estimate(D: _Design, coef, prec, feats, inverse) -> Estimate:
    """The DM estimate and its first-order stderr.

    Args:
        D: the log's design; coef (L, p), prec (L, p, p) its fit.
        feats: (G, L, p) the target's mean features per context group.
        inverse: (n,) each round's group.

    The stderr is the delta-method (sandwich) standard error: each round's influence
    is (V_i - V) / n, the spread of the predictions over the log's contexts, plus
    c^T A^{-1} x_i e_i, its effect through the fitted coefficients (heteroskedasticity-
    robust). It assumes the linear pair model is right: misspecification bias is not
    covered.
    """
    n = inverse.shape[0]
    Vg = np.einsum("glp,lp->g", feats, coef)
    V = Vg[inverse]
    est = float(V.mean())
    cbar = np.einsum("g,glp->lp", np.bincount(inverse, minlength=len(Vg)) / n, feats)
    h = np.linalg.solve(prec, cbar[..., None])[..., 0]  # (L, p)
    e = np.where(D.obs, D.r - q_logged(D, coef), 0.0)
    u = np.stack([D.X[l][D.inv[l]] @ h[l] for l in range(len(D.X))], axis=1)
    infl = (V - est) / n + (u * e).sum(axis=1)
    se = float(np.sqrt((infl**2).sum() * n / (n - 1))) if n > 1 else float("nan")
    return Estimate(est, se, est - Z95 * se, est + Z95 * se)


def dm_bootstrap(D: _Design, ridge: float, feats, inverse, counts) -> np.ndarray:
    """(b,) DM values refitted on each resample (round weights counts (b, n))."""
    n = inverse.shape[0]
    coef, _ = solve(D, ridge, counts)  # (b, L, p)
    cg = aggregate(np.ascontiguousarray(counts.T, dtype=float), inverse,
                   feats.shape[0]) / n  # (b, G)
    cbar = np.einsum("bg,glp->blp", cg, feats)
    return np.einsum("blp,blp->b", cbar, coef)


def _prepare(lists, rewards, v0, items):
    lists = np.asarray(lists)
    if lists.ndim != 2 or lists.dtype.kind not in "iu" or lists.size == 0:
        raise ValueError(f"lists: expected a non-empty (n, L) int array, got {lists.shape}")
    n, L = lists.shape
    r = np.asarray(rewards, float)
    if r.shape != (n, L):
        raise ValueError(f"rewards: expected shape {(n, L)} (as lists), got {r.shape}")
    if np.isinf(r).any():
        raise ValueError("rewards: expected finite values or NaN (not observed), found inf")
    if np.isnan(r).all():
        raise ValueError("rewards: every reward is NaN (no position observed): the reward "
                         "model has nothing to fit")
    v0 = np.asarray(v0, float)
    if v0.ndim not in (1, 2) or (v0.ndim == 2 and v0.shape[0] != n):
        raise ValueError(f"v0: expected shape (d,) or ({n}, d), got {v0.shape}")
    if not np.isfinite(v0).all():
        raise ValueError("v0: expected finite values, found NaN or inf")
    v0s = np.broadcast_to(v0, (n, v0.shape[-1]))
    if lists.min() < 0:
        raise ValueError(f"lists: item indices must be >= 0, got min {lists.min()}")
    items = valid_items(items, v0s.shape[1], None, int(lists.max()) + 1)
    return lists, r, v0s, items


def fit_reward_model(lists, rewards, v0, items, *, ridge=1.0) -> RewardModel:
    """Fit the pair-feature reward model (Eq. 1, identity link, 2d relaxation).

    Per position, ridge regression of r^l on (v_{a^l}, v_{a^{l-1}}) (v0 before the
    first position); NaN rewards are skipped.

    Args:
        lists: (n, L) int logged lists.
        rewards: (n, L) rewards; NaN = not observed.
        v0: (n, d) or (d,) the contexts.
        items: (K, d) the item vectors.
        ridge: the ridge penalty > 0 (the prior precision relative to the noise's).

    Returns:
        :class:`RewardModel`.

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import fit_reward_model
        >>> rng = np.random.default_rng(0)
        >>> items = rng.normal(size=(4, 2))
        >>> lists = rng.integers(0, 4, (500, 2))
        >>> beta = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.5, 0.0]])
        >>> m0 = fit_reward_model(lists, np.zeros((500, 2)), np.zeros(2), items)
        >>> x = m0.features(lists, np.zeros(2))
        >>> m = fit_reward_model(lists, np.einsum("nlp,lp->nl", x, beta), np.zeros(2),
        ...                      items, ridge=1e-6)
        >>> bool(np.allclose(m.coef[1], beta[1], atol=1e-4))
        True
    """
    lists, r, v0s, items = _prepare(lists, rewards, v0, items)
    ridge = check_real(ridge, "ridge", low=0, inclusive="neither")
    coef, prec = solve(design(lists, r, v0s, items), ridge)
    return RewardModel(coef[0], np.linalg.inv(prec[0]), items, ridge)


def dm(lists, rewards, v0, items, target_lists, *, ridge=1.0) -> Estimate:
    """Direct-method estimate of a target's expected total reward per round.

    Fits :func:`fit_reward_model` on the log and averages the predicted total
    reward of the target's lists over the rounds.

    The stderr is a first-order (delta-method) standard error: each round's
    influence is (V_i - V) / n, the spread of the predicted values over the log's
    contexts (0 with one shared v0), plus c^T A^{-1} x_i e_i, its effect through the
    fitted coefficients (A the ridge precision, c the target's mean features, e_i
    the residual; heteroskedasticity-robust). It ignores model error: if the
    rewards are not linear in the pair features (e.g. a bump on a few pairs, or a
    strongly non-linear link), the estimate is biased and the interval does not
    cover the truth. ``pair_dr`` does not have this weakness.

    Args:
        lists: (n, L) int logged lists.
        rewards: (n, L) rewards; NaN = not observed (skipped in the fit).
        v0: (n, d) or (d,) the contexts.
        items: (K, d) the item vectors.
        target_lists: (n, L) the target's list in each round, or (n, m, L) m draws
            of a random target per round.
        ridge: the ridge penalty > 0.

    Returns:
        :class:`Estimate`.

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import dm
        >>> rng = np.random.default_rng(0)
        >>> items = np.c_[rng.normal(size=(5, 2)), np.ones(5)]
        >>> lists = rng.integers(0, 5, (2000, 2))
        >>> rewards = items[lists][..., 0] + rng.normal(0, 0.1, (2000, 2))
        >>> est = dm(lists, rewards, np.zeros(3), items, np.tile([3, 1], (2000, 1)))
        >>> bool(abs(est.estimate - items[[3, 1], 0].sum()) < 0.02)
        True
    """
    lists, r, v0s, items = _prepare(lists, rewards, v0, items)
    ridge = check_real(ridge, "ridge", low=0, inclusive="neither")
    t = np.asarray(target_lists)
    if t.ndim == 2:
        t = t[:, None, :]
    if t.ndim != 3 or t.shape[0] != lists.shape[0] or t.shape[2] != lists.shape[1]:
        raise ValueError(
            f"target_lists: expected shape {lists.shape} or ({lists.shape[0]}, m, "
            f"{lists.shape[1]}), got {np.shape(target_lists)}"
        )
    if t.dtype.kind not in "iu" or t.min() < 0 or t.max() >= items.shape[0]:
        raise ValueError(f"target_lists: expected int item indices in [0, {items.shape[0]})")
    D = design(lists, r, v0s, items)
    coef, prec = solve(D, ridge)
    feats, _ = target_features(t, v0s, items)
    return dm_estimate(D, coef[0], prec[0], feats, np.arange(lists.shape[0]))
