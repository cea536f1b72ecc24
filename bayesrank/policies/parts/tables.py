"""Score tables: what a decoder maximises, built from a policy's estimate.

A tables part turns the estimate (a Thompson draw, or UCB parameters) into scores of
every super-arm. Its kind is fixed at trace time:

* ``"separable"``: ``s_l(i, j) = A_l[j] + B_l[i]`` (identity link with a point
  estimate; the baseline's per-item scores), decoded in O(L K);
* ``"monotone"``: ``s_l(i, j) = f(A_l[j] + B_l[i])`` with f increasing (a point
  estimate under a logistic, probit or exp link);
* ``"bonus"``: ``s_l(i, j) = f(A_l[j] + B_l[i] + c_l ||Ua_l[:, j] + Ub_l[:, i]||)``
  (the optimistic scores of RankUCB and GenRankUCB);
* ``"window"``: the O(L K^S) tables of a window of S-1 previous items.

Only position 1 depends on the request's ``v0`` in the pairwise kinds, so a part
splits its work in two: ``rest(params, items)`` builds positions 2..L once (shared by
a whole batch of requests), ``first(params, items, rest, v0)`` the (K,) scores of
position 1. ``dense(rest)`` materialises the (L-1, K, K) tables (for inspection and
for the dense DP at moderate K). Window parts build everything per request with
``window(params, items, v0)``.

What the decoder reads is arrays, not the part: ``spec(distinct)`` gives the static
:class:`~bayesrank.decoding.spec.DecodeSpec` and ``decodable(rest)`` (window parts:
``decodable(window(...))``) the table NamedTuple of :mod:`bayesrank.decoding.spec`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp

from bayesrank._static import Part
from bayesrank.decoding.spec import (
    apply_link,
    DecodeSpec,
    dense_pairs,
    MonotoneTables,
    SeparableTables,
    WindowScores,
)
from bayesrank.model import scores

__all__ = [
    "DrawnWTables",
    "LinearRest",
    "LinearTables",
    "PairTables",
    "TablesPart",
    "WindowTables",
    "apply_link",
]


class LinearRest(NamedTuple):
    """Positions 2..L of the separable and monotone kinds."""

    A: Any  # (L-1, K) the part of position l's score that depends on the item there
    B: Any  # (L-1, K) the part that depends on the item before it
    first_part: Any  # (K,) position 1's score without the v0 term (before the link)


class TablesPart(Part):
    """What every tables part shares: its decode spec and dense tables."""

    kind: str
    link: Any

    def spec(self, distinct: bool = False, method: str = "auto") -> DecodeSpec:
        """The static decode spec of this part (kind, link) with ``distinct``."""
        return DecodeSpec(self.kind, self.link, bool(distinct), method)

    def decodable(self, rest):
        """The table NamedTuple of :mod:`bayesrank.decoding.spec` the decoder reads."""
        raise NotImplementedError

    def dense(self, rest):
        """(L-1, K, K) tables, ``[l-2, i, j]`` for item j at position l after i."""
        return dense_pairs(self.spec(), self.decodable(rest))


class LinearTables(TablesPart):
    """Scores ``f(<theta^l, v_j + w_l v_i>)`` of a point estimate theta (L, p).

    Separable for the identity link, monotone otherwise. ``w`` (L,) is the known
    dependency on the previous item (zeros for the baseline).
    """

    def __init__(self, w, link):
        self.w = jnp.asarray(w)
        self.link = link
        self.kind = "separable" if link.name == "identity" else "monotone"

    def rest(self, theta, items) -> LinearRest:
        w = self.w.astype(items.dtype)
        proj = theta @ items.T  # (L, K)
        return LinearRest(proj[1:], w[1:, None] * proj[1:], proj[0])

    def first(self, theta, items, rest: LinearRest, v0):
        z = rest.first_part + self.w[0].astype(items.dtype) * (theta[0] @ v0)
        return apply_link(self.link, z)

    def separable(self, rest: LinearRest):
        """(A, B) of the separable kind (the identity link)."""
        return rest.A, rest.B

    def factors(self, rest: LinearRest):
        """(A, B), each (L-1, K): the tables are ``link(A[:, None, :] + B[:, :, None])``
        (what the decoders at catalogue scale read instead of :meth:`dense`)."""
        return rest.A, rest.B

    def decodable(self, rest: LinearRest):
        """:class:`~bayesrank.decoding.spec.SeparableTables` (identity link) or
        :class:`~bayesrank.decoding.spec.MonotoneTables` of positions 2..L."""
        tables = SeparableTables if self.kind == "separable" else MonotoneTables
        return tables(rest.A, rest.B)


class DrawnWTables(LinearTables):
    """Scores of a joint draw ``(theta (L, d), w (L,))`` when w is latent
    (``RankTS(w=<prior>)``): ``f(<theta^l, v_j> + w_l <theta^l, v_i>)``, separable for
    the identity link (for a fixed draw the pair score splits as for a known w)."""

    def __init__(self, link):
        super().__init__(jnp.zeros(1), link)

    def rest(self, params, items) -> LinearRest:
        theta, w = params
        proj = theta @ items.T  # (L, K)
        return LinearRest(proj[1:], w[1:, None].astype(proj.dtype) * proj[1:], proj[0])

    def first(self, params, items, rest: LinearRest, v0):
        theta, w = params
        z = rest.first_part + w[0].astype(items.dtype) * (theta[0] @ v0)
        return apply_link(self.link, z)


class PairTables(LinearTables):
    """Scores ``f(<phi_1^l, v_j> + <phi_2^l, v_i>)`` of a draw of phi (L, 2d), the
    2d relaxation of GenRankTS (separable for the identity link)."""

    def __init__(self, link):
        super().__init__(jnp.zeros(1), link)

    def rest(self, phi, items) -> LinearRest:
        d = items.shape[1]
        A = phi[:, :d] @ items.T  # (L, K): the item at position l
        B = phi[:, d:] @ items.T  # (L, K): the item before it
        return LinearRest(A[1:], B[1:], A[0])

    def first(self, phi, items, rest: LinearRest, v0):
        d = items.shape[1]
        return apply_link(self.link, rest.first_part + phi[0, d:] @ v0)


class WindowTables(TablesPart):
    """Scores of a point estimate with a window of S-1 previous items (S > 2)."""

    kind = "window"

    def __init__(self, W, link):
        self.W = jnp.asarray(W)
        self.link = link

    def window(self, theta, items, v0):
        L = self.W.shape[0]
        return scores.window_scores(
            theta, items, self.W.astype(items.dtype), v0, (self.link,) * L
        )

    def decodable(self, tabs) -> WindowScores:
        """The window tables (a list from :meth:`window`) for the decoder."""
        return WindowScores(tabs)
