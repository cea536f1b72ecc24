"""genRankUCB (Appendix B of the paper): RankUCB with the dependency weights learned.

The reward of position l is rewritten as a linear model in R^{2d}:

    <theta^l, v_j + w_l v_i> = <phi^l, (v_j, v_i)>,     phi^l = (theta^l, w_l theta^l)

so each position keeps a 2d x 2d Gram matrix ``V~ = lam I + sum x~ x~^T`` over the
features ``x~ = (v_{a^l}, v_{a^{l-1}})`` (position 1 uses ``(v_j, v0)``), and the UCB of
super-arm (i, j) is ``f(<phi_hat, (v_j, v_i)> + (width/c1) ||(v_j, v_i)||_{V~^-1})``.
The width is Lemma 1's with the parameter bound ``||phi|| <= m2 sqrt(1 + m3^2)``
(Theorem 2), or a constant ``alpha``.

Bonuses without per-pair loops: whitening the two halves separately,
``a_j = C^-1 (v_j, 0)`` and ``b_i = C^-1 (0, v_i)`` (one triangular solve of a
(2d, 2K+1) block), gives ``||(v_j, v_i)||^2 = |a_j|^2 + 2 <a_j, b_i> + |b_i|^2``.

The estimate of w: phi_hat is unconstrained in R^{2d}, so ``w_hat`` is the
least-squares ratio of its halves, ``argmin_w ||phi_2 - w phi_1||^2 = <phi_1, phi_2> /
||phi_1||^2`` (0 while phi_1 = 0). It is consistent when theta^l != 0 and the features
excite both halves.

Example:
    >>> import bayesrank as br
    >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
    >>> gen = br.GenRankUCB(env.items, L=4, alpha=2.0)
    >>> gen.select().shape
    (4,)
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank import decode
from bayesrank.policies.base import PolicyCore, check_items_w_v0
from bayesrank.policies.ucb import (
    UCBParams,
    UCBPolicy,
    _apply,
    real_arg,
    resolve_c1,
    ucb_core,
)
from bayesrank.posteriors.linalg import whiten

__all__ = ["GenRankUCB", "gen_features", "gen_pair_scores", "gen_rank_ucb", "w_hat"]


def gen_features(items, v0, chosen):
    """(L, 2d) features ``(v_{a^l}, v_{a^{l-1}})`` of a shown list (a^0 -> v0)."""
    shown = items[chosen]  # (L, d)
    prev = jnp.concatenate([v0[None, :], shown[:-1]], axis=0)
    return jnp.concatenate([shown, prev], axis=1)


def gen_bonus_sq(chol, items, v0):
    """Squared V~^-1 norms of all features: first (K,), pairs (L-1, K, K).

    ``pairs[l-2, i, j] = ||(v_j, v_i)||^2`` in position l's metric.
    """
    K, d = items.shape
    zeros = jnp.zeros((d, K), items.dtype)
    rhs = jnp.concatenate(
        [
            jnp.concatenate([items.T, zeros], axis=0),  # (v_j, 0)
            jnp.concatenate([zeros, items.T], axis=0),  # (0, v_i)
            jnp.concatenate([jnp.zeros(d, items.dtype), v0])[:, None],  # (0, v0)
        ],
        axis=1,
    )  # (2d, 2K+1)
    Z = jax.vmap(whiten, in_axes=(0, None))(chol, rhs)  # (L, 2d, 2K+1)
    a, b, b0 = Z[:, :, :K], Z[:, :, K : 2 * K], Z[:, :, 2 * K]
    na = jnp.sum(a * a, axis=1)  # (L, K)
    nb = jnp.sum(b * b, axis=1)  # (L, K)
    first = na[0] + 2.0 * (b0[0] @ a[0]) + b0[0] @ b0[0]
    cross = jnp.einsum("lpi,lpj->lij", b[1:], a[1:])  # (L-1, K_prev, K_next)
    pairs = na[1:, None, :] + 2.0 * cross + nb[1:, :, None]
    return jnp.maximum(first, 0.0), jnp.maximum(pairs, 0.0)


def gen_pair_scores(params: UCBParams, items, v0, links):
    """UCB scores ``first`` (K,) and ``pairs`` (L-1, K, K) of genRankUCB."""
    d = items.shape[1]
    phi1, phi2 = params.theta[:, :d], params.theta[:, d:]
    p1 = phi1 @ items.T  # (L, K) current-item part
    p2 = phi2 @ items.T  # (L, K) previous-item part
    b_first, b_pairs = gen_bonus_sq(params.chol, items, v0)
    first = links[0].mean(p1[0] + phi2[0] @ v0 + params.width[0] * jnp.sqrt(b_first))
    z = (
        p1[1:, None, :]
        + p2[1:, :, None]
        + params.width[1:, None, None] * jnp.sqrt(b_pairs)
    )
    return first, _apply(links[1:], z)


def w_hat(phi):
    """(L,) least-squares estimate of w from phi (L, 2d) = (theta, w theta)."""
    d = phi.shape[-1] // 2
    phi1, phi2 = phi[..., :d], phi[..., d:]
    n = jnp.sum(phi1 * phi1, axis=-1)
    safe = jnp.where(n > 0, n, 1.0)
    return jnp.where(n > 0, jnp.sum(phi1 * phi2, axis=-1) / safe, 0.0)


def gen_rank_ucb(
    model,
    items,
    L: int,
    v0,
    *,
    lam=1.0,
    delta=0.1,
    alpha=None,
    m_phi=1.0,
    c1=1.0,
    distinct=False,
    mask=None,
) -> PolicyCore:
    """The functional core of genRankUCB (pure, jittable, vmappable).

    Args:
        model: per-position posterior over phi in R^{2d}.
        items: (K, d); L: list length; v0: (d,).
        lam, delta, alpha: the width; m_phi: bound on ``||phi^l||``.
        c1: the link's lower derivative bound; distinct, mask: as in RankUCB.

    ``select`` returns ``Selection(items, value, UCBParams(phi_hat (L, 2d), ...))``.
    """
    items = jnp.asarray(items)
    v0 = jnp.asarray(v0)
    links = (model.link,) * L
    mask_j = None if mask is None else jnp.asarray(mask)

    def choose(params):
        first, pairs = gen_pair_scores(params, items, v0, links)
        return decode.decode_in_jit(first, pairs, distinct=distinct, mask=mask_j)

    return ucb_core(
        model,
        L,
        2 * items.shape[1],
        lambda chosen: gen_features(items, v0, chosen),
        choose,
        lam=lam,
        delta=delta,
        alpha=alpha,
        m2=m_phi,
        c1=c1,
        dtype=items.dtype,
    )


class GenRankUCB(UCBPolicy):
    """genRankUCB: ranking UCB that learns the dependency weights w (Appendix B).

    Args:
        items: (K, d) item vectors.
        L: list length.
        v0: (d,) the user's last item (zeros if omitted).
        delta, lam, alpha: the width, as in :class:`~bayesrank.RankUCB`.
        distinct: forbid repeated items; mask: (K,) bool, items that may be shown.
        seed: kept for the common interface (nothing is drawn).
        model: per-position posterior over phi (default
            ``GaussianLinear(prior_scale=1/sqrt(lam), noise_scale=1)``, ridge).
        m2: bound on ``||theta^l||``; m3: bound on ``|w_l|``; Lemma 1's width uses
            ``||phi|| <= m2 sqrt(1 + m3^2)``.
        c1: the link's lower derivative bound (non-identity links).
    """

    _array_args = ("items", "v0")
    _extra_config = ("L", "m3")

    def __init__(
        self,
        items=None,
        L=None,
        v0=None,
        *,
        delta: float = 0.1,
        lam: float = 1.0,
        alpha: float | None = None,
        distinct: bool = False,
        mask=None,
        seed: int = 0,
        model=None,
        m2: float = 1.0,
        m3: float = 1.0,
        c1: float | None = None,
    ):
        if L is None:
            raise ValueError("L: expected a positive integer list length, got None")
        V, W, v0a, L = check_items_w_v0(items, L, None, v0)
        self.K, self.L = V.shape[0], L
        self.items, self.w, self.v0 = V, W, v0a
        m3 = real_arg(m3, "m3")
        if not (math.isfinite(m3) and m3 >= 0):
            raise ValueError(f"m3: expected a finite number >= 0, got {m3!r}")
        self._init_common(model, delta, lam, alpha, m2, c1, distinct, mask)
        self.m3 = m3
        x_max = math.sqrt(2.0) * self._norm_max()
        self.c1 = resolve_c1(self.model.link, self._c1_arg, self._m2_width(), x_max)
        core = gen_rank_ucb(
            self.model, V, L, v0a, m_phi=self._m2_width(), **self._core_kwargs()
        )
        self._setup(core, seed)

    def _m2_width(self) -> float:
        return self.m2 * math.sqrt(1.0 + getattr(self, "m3", 1.0) ** 2)

    @property
    def w_hat(self) -> np.ndarray:
        """(L,) the current estimate of w: ``<phi_1, phi_2> / ||phi_1||^2``."""
        return np.asarray(w_hat(self.model.mean(self.state.model)))

    def phi_hat(self) -> np.ndarray:
        """(L, 2d) the current estimate of phi = (theta, w theta)."""
        return self.theta_hat()

    def features(self, lists) -> np.ndarray:
        """(..., L, 2d) the features ``(v_{a^l}, v_{a^{l-1}})`` of shown lists."""
        lists = jnp.asarray(lists, jnp.int32)
        flat = lists.reshape(-1, self.L)
        fn = jax.vmap(
            lambda c: gen_features(jnp.asarray(self.items), jnp.asarray(self.v0), c)
        )
        return np.asarray(fn(flat)).reshape(lists.shape + (-1,))

    def scores(self):
        """UCB scores behind the last selection: ``(first (K,), pairs (L-1, K, K))``."""
        return gen_pair_scores(
            self._last_params(),
            jnp.asarray(self.items),
            jnp.asarray(self.v0),
            self._links,
        )
