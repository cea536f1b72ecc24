"""Optimistic (UCB) score tables: point estimate plus a width times a V^-1 norm.

For a feature x the UCB of ``<theta, x>`` over the ellipsoid ``||theta -
theta_hat||_V <= width`` is ``<theta_hat, x> + width ||x||_{V^-1}`` (exact); for a
monotone link f the policies use ``f(<theta_hat, x> + (width / c1) ||x||_{V^-1})``.

Every V^-1 norm comes from whitened vectors ``Z = C^-1 [items^T]`` (C the lower
Cholesky factor of V, one triangular solve of the (p, K) block per position): with
``x = u_j + u'_i``, ``||x||^2_{V^-1} = |Ua_j|^2 + 2 <Ua_j, Ub_i> + |Ub_i|^2``.
RankUCB has ``Ua = Z``, ``Ub = w_l Z``; GenRankUCB (features ``(v_j, v_i)`` in R^{2d})
whitens the two halves separately. The "bonus" kind keeps positions 2..L in this
factored form, ``BonusRest(A, B, Ua, Ub, c)``, so tables are built in O(L K^2) only
when a decoder needs them dense.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from bayesrank.decoding.spec import (
    apply_link,
    BonusTables,
    dense_bonus as _dense_bonus,
    SeparableTables,
    WindowScores,
)
from bayesrank.model import scores
from bayesrank.policies.parts.tables import TablesPart
from bayesrank.posteriors.linalg import whiten
from bayesrank.theorems import lemma1_width

__all__ = [
    "BonusRest",
    "GenUCBTables",
    "UCBParams",
    "UCBTables",
    "WindowUCBTables",
    "ucb_width",
    "gram_bonus_sq",
]


class UCBParams(NamedTuple):
    """What a UCB selection is built from (enough to rebuild its scores).

    Example:
        >>> import jax, bayesrank as br
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> core = br.RankUCB(items=env.items, w=env.w, alpha=1.0).core
        >>> ctx = br.policies.Context(v0=env.v0, mask=jax.numpy.ones(10, bool))
        >>> state, selection = core.select(jax.random.key(0), core.init(), ctx)
        >>> params = selection.params                                  # UCBParams
        >>> params.theta.shape, params.width.shape, params.chol.shape
        ((4, 10), (4,), (4, 10, 10))
    """

    theta: Any  # (L, p) the estimate theta_hat
    width: Any  # (L,) the radius used, already divided by c1
    chol: Any  # (L, p, p) lower Cholesky factor of V at selection time


class BonusRest(NamedTuple):
    """Positions 2..L of the bonus kind, plus what position 1 reuses.

    Example:
        >>> import jax, bayesrank as br
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> core = br.RankUCB(items=env.items, w=env.w, alpha=1.0).core
        >>> ctx = br.policies.Context(v0=env.v0, mask=jax.numpy.ones(10, bool))
        >>> state, selection = core.select(jax.random.key(0), core.init(), ctx)
        >>> rest = core.tables.rest(selection.params, state.items)     # BonusRest
        >>> rest.A.shape, rest.Ua.shape, rest.c.shape
        ((3, 10), (3, 10, 10), (3,))
    """

    A: Any  # (L-1, K) estimate part of the item at position l
    B: Any  # (L-1, K) estimate part of the item before it
    Ua: Any  # (L-1, q, K) whitened vectors of the item at position l
    Ub: Any  # (L-1, q, K) whitened vectors of the item before it
    c: Any  # (L-1,) widths
    first_part: Any  # (K,) position 1's estimate part without v0
    Z1: Any  # (q, K) position 1's whitened item vectors


def ucb_width(logdet_ratio, *, lam, delta, m2, alpha):
    """(L,) radius: Lemma 1 from ``log det V - p log lam``, or the constant alpha."""
    if alpha is not None:
        return jnp.full(logdet_ratio.shape, float(alpha), logdet_ratio.dtype)
    return lemma1_width(logdet_ratio, lam=lam, delta=delta, m2=m2)


def _whiten_all(chol, rhs):
    """(L, q, n) whitened columns of rhs (q, n) in each position's metric."""
    return jax.vmap(whiten, in_axes=(0, None))(chol, rhs)


def dense_bonus(rest: BonusRest, link):
    """(L-1, K, K) optimistic tables from the factored form."""
    return _dense_bonus(BonusTables(rest.A, rest.B, rest.Ua, rest.Ub, rest.c), link)


def _first_bonus(rest: BonusRest, params: UCBParams, z0, mean, link):
    """Position 1: ``f(mean_j + width_1 ||Z1_j + z0||)``."""
    sq = jnp.sum(rest.Z1 * rest.Z1, axis=0) + 2.0 * (z0 @ rest.Z1) + z0 @ z0
    return apply_link(link, mean + params.width[0] * jnp.sqrt(jnp.maximum(sq, 0.0)))


class UCBTables(TablesPart):
    """RankUCB's optimistic scores for known weights w (L,).

    With ``w = 0`` at positions 2..L the scores do not depend on the previous item
    and the part is separable (the baseline's LinUCB, O(L K) decode).
    """

    def __init__(self, w, link, *, separable: bool = False):
        self.w = jnp.asarray(w)
        self.link = link
        self.kind = "separable" if separable else "bonus"

    def rest(self, params: UCBParams, items) -> BonusRest:
        w = self.w.astype(items.dtype)
        Z = _whiten_all(params.chol, items.T)  # (L, d, K)
        proj = params.theta @ items.T  # (L, K)
        wl = w[1:, None, None]
        return BonusRest(
            proj[1:], w[1:, None] * proj[1:], Z[1:], wl * Z[1:], params.width[1:],
            proj[0], Z[0],
        )

    def first(self, params: UCBParams, items, rest: BonusRest, v0):
        w0 = self.w[0].astype(items.dtype)
        z0 = w0 * whiten(params.chol[0], v0[:, None])[:, 0]
        mean = rest.first_part + w0 * (params.theta[0] @ v0)
        return _first_bonus(rest, params, z0, mean, self.link)

    def separable(self, rest: BonusRest):
        """(A, B) when the previous item has no weight (w_l = 0 for l >= 2)."""
        bonus = jnp.sqrt(jnp.sum(rest.Ua * rest.Ua, axis=1))
        A = apply_link(self.link, rest.A + rest.c[:, None] * bonus)
        return A, jnp.zeros_like(A)

    def factors(self, rest: BonusRest):
        """(A, B, Ua, Ub, c): the tables are ``link(A_j + B_i + c ||Ua_j + Ub_i||)``
        (what the decoders at catalogue scale read instead of :meth:`dense`)."""
        return rest.A, rest.B, rest.Ua, rest.Ub, rest.c

    def decodable(self, rest: BonusRest):
        """:class:`~bayesrank.decoding.spec.BonusTables` of positions 2..L
        (:class:`~bayesrank.decoding.spec.SeparableTables` when separable)."""
        if self.kind == "separable":
            return SeparableTables(*self.separable(rest))
        return BonusTables(*self.factors(rest))


class GenUCBTables(TablesPart):
    """GenRankUCB's optimistic scores over phi = (theta, w theta) in R^{2d}."""

    kind = "bonus"

    def __init__(self, link):
        self.link = link

    def rest(self, params: UCBParams, items) -> BonusRest:
        K, d = items.shape
        zeros = jnp.zeros((d, K), items.dtype)
        rhs = jnp.concatenate(
            [jnp.concatenate([items.T, zeros]), jnp.concatenate([zeros, items.T])],
            axis=1,
        )  # (2d, 2K): (v_j, 0) then (0, v_i)
        Z = _whiten_all(params.chol, rhs)
        a, b = Z[:, :, :K], Z[:, :, K:]
        p1 = params.theta[:, :d] @ items.T  # (L, K) current-item part
        p2 = params.theta[:, d:] @ items.T  # (L, K) previous-item part
        return BonusRest(p1[1:], p2[1:], a[1:], b[1:], params.width[1:], p1[0], a[0])

    def first(self, params: UCBParams, items, rest: BonusRest, v0):
        d = items.shape[1]
        z0 = whiten(params.chol[0], jnp.concatenate([jnp.zeros_like(v0), v0])[:, None])
        mean = rest.first_part + params.theta[0, d:] @ v0
        return _first_bonus(rest, params, z0[:, 0], mean, self.link)

    def factors(self, rest: BonusRest):
        """(A, B, Ua, Ub, c): the tables are ``link(A_j + B_i + c ||Ua_j + Ub_i||)``
        (what the decoders at catalogue scale read instead of :meth:`dense`)."""
        return rest.A, rest.B, rest.Ua, rest.Ub, rest.c

    def decodable(self, rest: BonusRest) -> BonusTables:
        """:class:`~bayesrank.decoding.spec.BonusTables` of positions 2..L."""
        return BonusTables(*self.factors(rest))


# ------------------------------------------------------------------------- windows
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


def whitened_gram(chol, items, v0):
    """``g`` (L, K), ``G`` (L-1, K, K), ``gv0`` (L, K), ``g00`` (L,): the entries of
    ``items V^-1 items^T`` and its v0 terms, from one triangular solve per position."""
    K = items.shape[0]
    Zall = _whiten_all(chol, jnp.concatenate([items.T, v0[:, None]], axis=1))
    Z, z0 = Zall[:, :, :K], Zall[:, :, K]
    g = jnp.sum(Z * Z, axis=1)
    G = jnp.einsum("lpi,lpj->lij", Z[1:], Z[1:])
    gv0 = jnp.einsum("lp,lpk->lk", z0, Z)
    return g, G, gv0, jnp.sum(z0 * z0, axis=1)


def gram_bonus_sq(chol, items, w, v0):
    """Squared V^-1 norms of every pairwise feature ``v_j + w_l v_i`` (v0 at l = 1):
    ``first_sq`` (K,) and ``pairs_sq`` (L-1, K, K), by the Gram trick."""
    g, G, gv0, g00 = whitened_gram(chol, items, v0)
    first_sq = g[0] + 2.0 * w[0] * gv0[0] + w[0] ** 2 * g00[0]
    wl = w[1:, None, None]
    pairs_sq = g[1:, None, :] + 2.0 * wl * G + wl**2 * g[1:, :, None]
    return jnp.maximum(first_sq, 0.0), jnp.maximum(pairs_sq, 0.0)


class WindowUCBTables(TablesPart):
    """winRankUCB's optimistic tables for a window of S-1 > 1 previous items."""

    kind = "window"

    def __init__(self, W, link):
        self.W = jnp.asarray(W)
        self.link = link

    def window(self, params: UCBParams, items, v0):
        W = self.W.astype(items.dtype)
        L = W.shape[0]
        ident = _IdentityLink()
        means = scores.window_scores(params.theta, items, W, v0, (ident,) * L)
        g, G, gv0, g00 = whitened_gram(params.chol, items, v0)
        out = []
        for l in range(L):
            Gl = G[l - 1] if l > 0 else None
            b = _window_bonus_sq(l, W, g[l], Gl, gv0[l], g00[l])
            out.append(apply_link(self.link, means[l] + params.width[l] * jnp.sqrt(b)))
        return out

    def decodable(self, tabs) -> WindowScores:
        """The window tables (a list from :meth:`window`) for the decoder."""
        return WindowScores(tabs)


class _IdentityLink:
    name = "identity"

    @staticmethod
    def mean(z):
        return z
