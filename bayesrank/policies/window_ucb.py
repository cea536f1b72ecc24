"""winRankUCB (Appendix E of the paper): RankUCB with a window of S-1 previous items.

The feature of position l is ``x^l = v_{a^l} + sum_{i=1}^{S-1} w[l, i-1] v_{a^{l-i}}``
(``a^0`` is v0; earlier positions contribute nothing). Everything else is RankUCB:
the Gram matrix per position, Lemma 1's width (or a constant alpha), the exact
identity-link UCB and the relaxed one for monotone links.

Bonuses come from the same whitened Gram matrix ``G = items V^-1 items^T``: with the
window's terms ``u_k`` (the item at position l, its predecessors, v0) and weights
``c_k``, ``||x||^2_{V^-1} = sum_{k,k'} c_k c_k' <u_k, u_k'>_{V^-1}``, each inner product
an entry of G, of ``items V^-1 v0`` or ``v0 V^-1 v0``, broadcast over the table axes
(the layout of :func:`bayesrank.scores.window_scores`). Decoding is the window DP,
O(L K^S); for S = 2 the tables are exactly RankUCB's and go to the same decoder, so
the two policies choose the same lists.

Example:
    >>> import numpy as np, bayesrank as br
    >>> env = br.RankingEnv.paper(seed=0, K=6, L=4)
    >>> W = np.c_[np.asarray(env.w), 0.5 * np.ones(4)]          # S = 3
    >>> win = br.WindowRankUCB(items=env.items, w=W, alpha=2.0)
    >>> win.select().shape
    (4,)
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from bayesrank import decode, scores
from bayesrank.links import get_link
from bayesrank.policies.base import PolicyCore, check_items_w_v0
from bayesrank.policies.ucb import (
    UCBParams,
    UCBPolicy,
    resolve_c1,
    ucb_core,
    whitened_gram,
)

__all__ = ["WindowRankUCB", "window_rank_ucb", "window_ucb_tables"]

_IDENTITY = get_link("identity")


def _window_bonus_sq(l: int, W, g, G, gv0, g00):
    """Squared norms for position l over its table axes (oldest first, current last).

    g (K,), G (K, K), gv0 (K,), g00 (): position l's Gram entries.
    """
    S = W.shape[1] + 1
    n_axes = min(l, S - 1) + 1
    K = g.shape[0]

    def on_axis(vec, axis):
        shape = [1] * n_axes
        shape[axis] = K
        return vec.reshape(shape)

    def on_axes(mat, ax1, ax2):  # G is symmetric, the order of the axes is free
        shape = [1] * n_axes
        shape[min(ax1, ax2)] = K
        shape[max(ax1, ax2)] = K
        return mat.reshape(shape)

    cur = n_axes - 1
    terms = []  # (kind, axis, coefficient) of the previous items in the window
    for i, (kind, axis) in enumerate(scores.window_lookback(l, S), start=1):
        if kind != "none":
            terms.append((kind, axis, W[l, i - 1]))
    total = on_axis(g, cur)
    for t, (kind, axis, c) in enumerate(terms):
        if kind == "item":
            total = total + 2.0 * c * on_axes(G, axis, cur)
            total = total + c**2 * on_axis(g, axis)
        else:  # v0
            total = total + 2.0 * c * on_axis(gv0, cur)
            total = total + c**2 * g00
        for kind2, axis2, c2 in terms[:t]:
            if kind == "item" and kind2 == "item":
                cross = on_axes(G, axis, axis2)
            else:
                item_axis = axis if kind == "item" else axis2
                cross = on_axis(gv0, item_axis)
            total = total + 2.0 * c * c2 * cross
    return jnp.maximum(total, 0.0)


def window_ucb_tables(params: UCBParams, items, W, v0, links):
    """UCB tables in the layout of :func:`bayesrank.scores.window_scores`.

    Returns:
        A list of L arrays; entry l has ``min(l, S-1) + 1`` axes of length K.
    """
    L = W.shape[0]
    means = scores.window_scores(params.theta, items, W, v0, (_IDENTITY,) * L)
    g, G, gv0, g00 = whitened_gram(params.chol, items, v0)
    out = []
    for l in range(L):
        Gl = G[l - 1] if l > 0 else None
        b = _window_bonus_sq(l, W, g[l], Gl, gv0[l], g00[l])
        out.append(links[l].mean(means[l] + params.width[l] * jnp.sqrt(b)))
    return out


def window_rank_ucb(
    model,
    items,
    W,
    v0,
    *,
    lam=1.0,
    delta=0.1,
    alpha=None,
    m2=1.0,
    c1=1.0,
    distinct=False,
    mask=None,
) -> PolicyCore:
    """The functional core of winRankUCB (pure, jittable, vmappable).

    Args:
        model: per-position posterior; items: (K, d); W: (L, S-1); v0: (d,).
        The rest as in :func:`bayesrank.policies.ucb.rank_ucb` (``distinct`` only
        for S = 2).
    """
    items = jnp.asarray(items)
    W = jnp.asarray(W)
    v0 = jnp.asarray(v0)
    L, S, d = W.shape[0], W.shape[1] + 1, items.shape[1]
    links = (model.link,) * L
    mask_j = None if mask is None else jnp.asarray(mask)

    def choose(params):
        tables = window_ucb_tables(params, items, W, v0, links)
        if S == 2:
            K = items.shape[0]
            pairs = (
                jnp.stack(tables[1:]) if L > 1 else jnp.zeros((0, K, K), items.dtype)
            )
            return decode.decode_in_jit(
                tables[0], pairs, distinct=distinct, mask=mask_j
            )
        return decode.window_decode(tables, mask=mask_j)

    return ucb_core(
        model,
        L,
        d,
        lambda chosen: scores.list_features(items, W, v0, chosen),
        choose,
        lam=lam,
        delta=delta,
        alpha=alpha,
        m2=m2,
        c1=c1,
        dtype=items.dtype,
    )


class WindowRankUCB(UCBPolicy):
    """Ranking UCB with a window of S-1 previous items (winRankUCB, Appendix E).

    Args:
        model: per-position posterior (default ridge, as in RankUCB).
        items: (K, d) item vectors.
        L: list length (taken from ``w`` if omitted).
        w: (L, S-1) window weights, ``w[l, i-1]`` for the item i positions back; an
            (L,) array means S = 2.
        v0: (d,) the user's last item.
        delta, lam, alpha, m2, c1: the width, as in :class:`~bayesrank.RankUCB`.
        distinct: forbid repeated items (S = 2 only); mask: (K,) bool.
        seed: kept for the common interface (nothing is drawn).
    """

    def __init__(
        self,
        model=None,
        items=None,
        L=None,
        w=None,
        v0=None,
        *,
        delta: float = 0.1,
        lam: float = 1.0,
        alpha: float | None = None,
        distinct: bool = False,
        mask=None,
        seed: int = 0,
        m2: float = 1.0,
        c1: float | None = None,
    ):
        if w is None:
            raise ValueError(
                "w: expected an (L, S-1) array of window weights, got None"
            )
        V, W, v0a, L = check_items_w_v0(items, L, w, v0)
        W2 = W[:, None] if W.ndim == 1 else W
        self.K, self.L = V.shape[0], L
        self.items, self.w, self.v0 = V, W, v0a
        self.S = W2.shape[1] + 1
        if distinct and self.S > 2:
            raise ValueError(
                "distinct: only supported for S = 2 (w of shape (L,) or (L, 1))"
            )
        self._init_common(model, delta, lam, alpha, m2, c1, distinct, mask)
        self._W2 = W2
        x_max = (1.0 + np.abs(W2).sum(axis=1).max()) * self._norm_max()
        self.c1 = resolve_c1(self.model.link, self._c1_arg, self.m2, x_max)
        core = window_rank_ucb(
            self.model, V, W2, v0a, m2=self.m2, **self._core_kwargs()
        )
        self._setup(core, seed)

    def scores(self):
        """UCB tables behind the last selection (layout of ``window_scores``)."""
        return window_ucb_tables(
            self._last_params(),
            jnp.asarray(self.items),
            jnp.asarray(self._W2),
            jnp.asarray(self.v0),
            self._links,
        )
