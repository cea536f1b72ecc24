"""RankUCB (Algorithm 1 of the paper) and the machinery shared by the UCB policies.

Each position l keeps a Gram matrix ``V^l = lam I + sum_s x_s x_s^T`` as a lower
Cholesky factor (rank-one update, O(d^2) per impression) and its log-determinant,
updated with the determinant lemma ``log det(V + x x^T) = log det V + log(1 +
||x||^2_{V^-1})``. The estimate ``theta_hat^l`` is the posterior mean of a per-position
model; the default ``GaussianLinear(prior_scale=1/sqrt(lam), noise_scale=1)`` makes it
the ridge estimate ``V^-1 sum_s r_s x_s`` of the paper.

Confidence width (per position, round t):

* ``alpha=None`` (default): Lemma 1,
  ``sqrt(beta_t) = sqrt(lam) m2 + sqrt(2 log(1/delta) + log(det V_t / lam^d))``, with
  ``m2`` a bound on ``||theta^l||`` (an argument, 1.0 by default);
* ``alpha=<float>``: that constant width, as in the authors' experiments, which used
  ``alpha = 1 + sqrt(log(2/delta)/2)``.

Optimistic scores. For the identity link the UCB of a super-arm is exact:
``max_{||theta - theta_hat||_V <= width} <theta, x> = <theta_hat, x> + width
||x||_{V^-1}`` (attained at ``theta_hat + width V^-1 x / ||x||_{V^-1}``). For a
monotone non-linear link f the paper's confidence set ``{theta: ||g_t(theta) -
sum r x||_{V^-1} <= sqrt(beta)}`` lies inside the ellipsoid ``||theta -
theta_hat||_V <= sqrt(beta)/c1`` (Lemma 3, ``c1 = min f'``), so we use the relaxed,
still optimistic ``f(<theta_hat, x> + (width/c1) ||x||_{V^-1})``. ``c1`` defaults to
``min(1, f'(-z), f'(0), f'(z))`` at ``z = m2 * max ||x||`` (exact for the logistic,
probit and exp links) and may be given.

All K^2 bonuses of a position come from the Gram matrix of the whitened items,
``G = items V^-1 items^T`` (one triangular solve of the (d, K) block):
``||v_j + w v_i||^2_{V^-1} = g_jj + 2 w g_ij + w^2 g_ii``. The bonuses do not separate
over (i, j), so the decode is the dense O(L K^2) DP; with ``w = 0`` everywhere (the
ranked-bandits baseline) the scores separate and the O(L K) decode is used.

Example:
    >>> import bayesrank as br, jax
    >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
    >>> ucb = br.RankUCB(items=env.items, w=env.w, seed=0)
    >>> items = ucb.select()
    >>> ucb.update(items, env.sample(jax.random.key(0), items))
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank import decode, scores
from bayesrank.bounds import lemma1_width, link_constants
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
from bayesrank.posteriors.linalg import chol_update, logdet_increment, whiten

__all__ = [
    "RankUCB",
    "UCBParams",
    "UCBState",
    "default_model",
    "gram_bonus_sq",
    "gram_init",
    "gram_update",
    "rank_ucb",
    "resolve_c1",
    "ucb_core",
    "ucb_pair_scores",
    "whitened_gram",
]


class UCBState(NamedTuple):
    model: Any  # the posterior model's state, batched over the L positions
    chol: Any  # (L, p, p) lower Cholesky factor of V^l = lam I + sum x x^T
    logdet: Any  # (L,) log det V^l, updated incrementally


class UCBParams(NamedTuple):
    """What a UCB selection was built from (enough to rebuild its scores)."""

    theta: Any  # (L, p) the estimate theta_hat (posterior mean)
    width: Any  # (L,) the radius used, already divided by c1
    chol: Any  # (L, p, p) the Cholesky factor of V at selection time


# ------------------------------------------------------------------------- Gram state
def gram_init(L: int, p: int, lam: float, dtype=None):
    """``chol`` (L, p, p) = sqrt(lam) I and ``logdet`` (L,) = p log lam."""
    dtype = dtype or jnp.result_type(float)
    chol = jnp.broadcast_to(math.sqrt(lam) * jnp.eye(p, dtype=dtype), (L, p, p))
    return chol, jnp.full((L,), p * math.log(lam), dtype)


def gram_update(chol, logdet, x):
    """Add ``x^l x^l^T`` to every position's V: x (L, p). Returns (chol, logdet)."""
    x = jnp.asarray(x, chol.dtype)
    inc = jax.vmap(logdet_increment)(chol, x)
    return jax.vmap(chol_update)(chol, x), logdet + inc


def whitened_gram(chol, items, v0):
    """Entries of ``G^l = items V_l^-1 items^T`` and its v0 terms, one triangular solve.

    With ``Z^l = C_l^-1 [items^T, v0]`` (d, K+1) every inner product in the V^-1
    metric is a dot product of whitened columns.

    Args:
        chol: (L, d, d) lower factors of V; items: (K, d); v0: (d,).

    Returns:
        g: (L, K) diagonal ``g_jj``; G: (L-1, K, K) for positions 2..L;
        gv0: (L, K) ``v_j V^-1 v0``; g00: (L,) ``v0 V^-1 v0``.
    """
    K = items.shape[0]
    rhs = jnp.concatenate([items.T, v0[:, None]], axis=1)  # (d, K+1)
    Zall = jax.vmap(whiten, in_axes=(0, None))(chol, rhs)  # (L, d, K+1)
    Z, z0 = Zall[:, :, :K], Zall[:, :, K]
    g = jnp.sum(Z * Z, axis=1)
    G = jnp.einsum("lpi,lpj->lij", Z[1:], Z[1:])
    gv0 = jnp.einsum("lp,lpk->lk", z0, Z)
    g00 = jnp.sum(z0 * z0, axis=1)
    return g, G, gv0, g00


def gram_bonus_sq(chol, items, w, v0):
    """Squared V^-1 norms of every super-arm feature, by the Gram trick.

    ``||v_j + w_l v_i||^2_{V_l^-1} = g_jj + 2 w_l g_ij + w_l^2 g_ii`` with
    ``G^l = items V_l^-1 items^T`` (:func:`whitened_gram`); position 1 uses v0.
    No per-pair loop: O(L K^2 d) for the Gram matrices, O(L K^2) for the rest.

    Args:
        chol: (L, d, d) lower factors of V; items: (K, d); w: (L,); v0: (d,).

    Returns:
        first_sq: (K,); pairs_sq: (L-1, K, K) with ``pairs_sq[l-2, i, j]`` for item j
        at position l after item i. Clipped at 0 against round-off.
    """
    g, G, gv0, g00 = whitened_gram(chol, items, v0)
    first_sq = g[0] + 2.0 * w[0] * gv0[0] + w[0] ** 2 * g00[0]
    wl = w[1:, None, None]
    pairs_sq = g[1:, None, :] + 2.0 * wl * G + wl**2 * g[1:, :, None]
    return jnp.maximum(first_sq, 0.0), jnp.maximum(pairs_sq, 0.0)


def ucb_pair_scores(params: UCBParams, items, w, v0, links):
    """UCB scores of every super-arm: ``first`` (K,) and ``pairs`` (L-1, K, K).

    ``f(<theta_hat, x> + width ||x||_{V^-1})`` for ``x = v_j + w_l v_i``.
    """
    mean_first, A, B = scores.linear_parts(params.theta, items, w, v0)
    b_first, b_pairs = gram_bonus_sq(params.chol, items, w, v0)
    first = links[0].mean(mean_first + params.width[0] * jnp.sqrt(b_first))
    z = A[:, None, :] + B[:, :, None] + params.width[1:, None, None] * jnp.sqrt(b_pairs)
    return first, _apply(links[1:], z)


def _apply(links, z):
    """Per-position links over axis 0 of z (possibly empty)."""
    if z.shape[0] == 0:
        return z
    if all(lk is links[0] for lk in links):
        return links[0].mean(z)
    return jnp.stack([lk.mean(z[i]) for i, lk in enumerate(links)])


def ucb_separable_parts(params: UCBParams, items, links):
    """Scores with w = 0, (L, K).

    ``s_l(j) = f(<theta_hat^l, v_j> + width_l ||v_j||)``.
    """
    Z = jax.vmap(whiten, in_axes=(0, None))(params.chol, items.T)  # (L, d, K)
    bonus = jnp.sqrt(jnp.sum(Z * Z, axis=1))
    z = params.theta @ items.T + params.width[:, None] * bonus
    return _apply(links, z)


def confidence_width(logdet, p: int, *, lam, delta, m2, alpha):
    """(L,) radius: Lemma 1 from the log det, or the constant alpha."""
    if alpha is not None:
        return jnp.full(logdet.shape, float(alpha), logdet.dtype)
    return lemma1_width(logdet - p * math.log(lam), lam=lam, delta=delta, m2=m2)


# --------------------------------------------------------------------- functional core
def ucb_core(
    model, L: int, p: int, features, choose, *, lam, delta, alpha, m2, c1, dtype
) -> PolicyCore:
    """The init/select/update shared by the UCB cores (pure, jittable, vmappable).

    Args:
        model: a per-position posterior over R^p; its mean is the estimate.
        L, p: positions and feature dimension; dtype: of the Gram factors.
        features: ``chosen (L,) -> (L, p)`` the features of a shown list.
        choose: ``UCBParams -> (items (L,), value ())`` the optimistic decode.
        lam, delta, alpha, m2, c1: the confidence width (see the module docstring).
    """

    def init():
        chol, logdet = gram_init(L, p, lam, dtype)
        return UCBState(model.init(L, p), chol, logdet)

    def select(key, state):
        del key  # deterministic
        width = confidence_width(
            state.logdet, p, lam=lam, delta=delta, m2=m2, alpha=alpha
        )
        params = UCBParams(model.mean(state.model), width / c1, state.chol)
        chosen, value = choose(params)
        return state, Selection(chosen, value, params)

    def update(state, chosen, rewards):
        x = features(chosen)  # (L, p)
        chol, logdet = gram_update(state.chol, state.logdet, x)
        return UCBState(model.update(state.model, x, rewards), chol, logdet)

    return PolicyCore(init, select, update)


def rank_ucb(
    model,
    items,
    w,
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
    """The functional core of RankUCB (pure, jittable, vmappable).

    Args:
        model: a per-position posterior; its mean is theta_hat.
        items: (K, d); w: (L,) known dependency weights; v0: (d,).
        lam, delta, alpha, m2: the confidence width (see the module docstring).
        c1: the link's lower derivative bound (1 for the identity link).
        distinct: forbid repeated items; mask: (K,) bool, items that may be shown.

    ``select`` returns ``Selection(items (L,), value (), UCBParams)``.
    """
    items = jnp.asarray(items)
    w_np = np.asarray(w, dtype=float)
    w = jnp.asarray(w_np)
    v0 = jnp.asarray(v0)
    L, d = w.shape[0], items.shape[1]
    W2 = w[:, None]
    links = (model.link,) * L
    mask_j = None if mask is None else jnp.asarray(mask)
    separable = bool(np.all(w_np == 0.0))

    def choose(params):
        if separable:
            s = ucb_separable_parts(params, items, links)
            return decode.separable_in_jit(
                s[0], s[1:], jnp.zeros_like(s[1:]), distinct=distinct, mask=mask_j
            )
        first, pairs = ucb_pair_scores(params, items, w, v0, links)
        return decode.decode_in_jit(first, pairs, distinct=distinct, mask=mask_j)

    return ucb_core(
        model,
        L,
        d,
        lambda chosen: scores.list_features(items, W2, v0, chosen),
        choose,
        lam=lam,
        delta=delta,
        alpha=alpha,
        m2=m2,
        c1=c1,
        dtype=items.dtype,
    )


# ------------------------------------------------------------------------- helpers
def default_model(lam: float):
    """``GaussianLinear(prior_scale=1/sqrt(lam), noise_scale=1)``: mean = ridge."""
    from bayesrank.posteriors.gaussian import GaussianLinear

    return GaussianLinear(prior_scale=1.0 / math.sqrt(lam), noise_scale=1.0)


def real_arg(x, name: str) -> float:
    """``float(x)``, or TypeError naming the argument (bools are refused)."""
    if isinstance(x, bool):
        raise TypeError(f"{name}: expected a real number, got {x!r}")
    try:
        return float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected a real number, got {x!r}") from None


def check_ucb_args(delta, lam, alpha, m2, c1):
    """Validate the confidence-width arguments; returns them as floats."""
    num = real_arg
    delta, lam, m2 = num(delta, "delta"), num(lam, "lam"), num(m2, "m2")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta: expected a number in (0, 1), got {delta!r}")
    if not (math.isfinite(lam) and lam > 0):
        raise ValueError(f"lam: expected a finite number > 0, got {lam!r}")
    if not (math.isfinite(m2) and m2 >= 0):
        raise ValueError(f"m2: expected a finite number >= 0, got {m2!r}")
    if alpha is not None:
        alpha = num(alpha, "alpha")
        if not (math.isfinite(alpha) and alpha >= 0):
            raise ValueError(
                f"alpha: expected None or a finite number >= 0, got {alpha!r}"
            )
    if c1 is not None:
        c1 = num(c1, "c1")
        if not (math.isfinite(c1) and 0 < c1 <= 1):
            raise ValueError(f"c1: expected None or a number in (0, 1], got {c1!r}")
    return delta, lam, alpha, m2, c1


def resolve_c1(link, c1, m2: float, x_max: float) -> float:
    """c1 for the width: 1 for the identity link, else given or ``link_constants``."""
    if link.name == "identity":
        return 1.0
    if c1 is not None:
        return float(c1)
    return link_constants(link, m2 * x_max)[0]


# --------------------------------------------------------------------------- classes
class UCBPolicy(Policy):
    """Shared class machinery of the UCB policies (checks, scores, persistence).

    Subclasses set ``K``, ``L``, ``items``, ``w``, ``v0`` and call
    :meth:`_init_common`, then set ``c1`` and call ``_setup``.
    """

    #: Configuration entries besides the common ones, stored as attributes.
    _extra_config: tuple[str, ...] = ()
    #: Whether the constructor takes ``model`` and ``c1`` (not RankedBaseline).
    _takes_model: bool = True

    def _init_common(self, model, delta, lam, alpha, m2, c1, distinct, mask):
        delta, lam, alpha, m2, c1 = check_ucb_args(delta, lam, alpha, m2, c1)
        self.delta, self.lam, self.alpha, self.m2 = delta, lam, alpha, m2
        self._c1_arg = c1
        if model is None:
            model = default_model(lam)
        check_model(model)
        self.model = model
        self.distinct = bool(distinct)
        if self.distinct and self.K < self.L:
            raise ValueError(f"distinct: needs K >= L, got K={self.K} and L={self.L}")
        self.mask = check_mask(mask, self.K, self.L, self.distinct)
        self.vmappable = bool(getattr(model, "vmappable", True))
        self._links = (model.link,) * self.L

    def _core_kwargs(self) -> dict:
        """Keyword arguments every UCB core takes, besides the width's m2."""
        return {
            "lam": self.lam,
            "delta": self.delta,
            "alpha": self.alpha,
            "c1": self.c1,
            "distinct": self.distinct,
            "mask": self.mask,
        }

    def _norm_max(self) -> float:
        """The largest norm among the items and v0."""
        return float(
            max(np.linalg.norm(self.items, axis=1).max(), np.linalg.norm(self.v0))
        )

    def _last_params(self) -> UCBParams:
        if self._last is None:
            raise RuntimeError("scores: call select() first")
        return self._last.params

    def theta_hat(self) -> np.ndarray:
        """(L, p) the current estimate (posterior mean of the per-position model)."""
        return np.asarray(self.model.mean(self.state.model))

    def logdet(self) -> np.ndarray:
        """(L,) log det V^l of the current Gram matrices."""
        return np.asarray(self.state.logdet)

    def width(self) -> np.ndarray:
        """(L,) the confidence width the next selection uses (before 1/c1)."""
        p = self.state.chol.shape[-1]
        return np.asarray(
            confidence_width(
                self.state.logdet,
                p,
                lam=self.lam,
                delta=self.delta,
                m2=self._m2_width(),
                alpha=self.alpha,
            )
        )

    def _m2_width(self) -> float:
        return self.m2

    def _config(self) -> dict:
        cfg = {
            "model": model_config(self.model),
            "delta": self.delta,
            "lam": self.lam,
            "alpha": self.alpha,
            "m2": self.m2,
            "c1": self._c1_arg,
            "distinct": self.distinct,
        }
        cfg.update({name: getattr(self, name) for name in self._extra_config})
        return cfg

    @classmethod
    def _from_config(cls, cfg, args, seed, overrides):
        kwargs = {name: args[name] for name in cls._array_args}
        for name in ("delta", "lam", "alpha", "m2", "distinct", *cls._extra_config):
            kwargs[name] = cfg[name]
        if cls._takes_model:
            kwargs["model"] = model_from_config(
                cfg["model"], overrides.pop("model", None)
            )
            kwargs["c1"] = cfg["c1"]
        return cls(**kwargs, mask=args.get("mask"), seed=seed, **overrides)


class RankUCB(UCBPolicy):
    """Ranking UCB with known dependency weights (Algorithm 1).

    Args:
        model: per-position posterior whose mean is theta_hat; by default
            ``GaussianLinear(prior_scale=1/sqrt(lam), noise_scale=1)`` (ridge).
        items: (K, d) item vectors.
        L: list length (taken from ``w`` if omitted).
        w: (L,) dependency on the previous item (zeros if omitted).
        v0: (d,) the user's last item (zeros if omitted).
        delta: confidence level of Lemma 1, in (0, 1).
        lam: ridge parameter of ``V = lam I + sum x x^T``.
        alpha: None for Lemma 1's width (the default), a float for that constant
            width (the authors' experiments: ``1 + sqrt(log(2/delta)/2)``).
        distinct: forbid repeated items; mask: (K,) bool, items that may be shown.
        seed: kept for the common policy interface (RankUCB draws nothing).
        m2: bound on ``||theta^l||`` in Lemma 1's width.
        c1: lower bound on the link's derivative for non-identity links (default
            from the link at ``z = m2 max ||x||``); ignored for the identity link.
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
        V, W, v0a, L = check_items_w_v0(items, L, w, v0)
        if W.ndim == 2:
            if W.shape[1] != 1:
                raise ValueError(
                    f"w: RankUCB takes (L,) weights; for a window of shape {W.shape} "
                    "use WindowRankUCB"
                )
            W = W[:, 0]
        self.K, self.L = V.shape[0], L
        self.items, self.w, self.v0 = V, W, v0a
        self._init_common(model, delta, lam, alpha, m2, c1, distinct, mask)
        x_max = (1.0 + np.abs(W).max()) * self._norm_max()
        self.c1 = resolve_c1(self.model.link, self._c1_arg, self.m2, x_max)
        core = rank_ucb(self.model, V, W, v0a, m2=self.m2, **self._core_kwargs())
        self._setup(core, seed)

    def scores(self):
        """UCB scores behind the last selection: ``(first (K,), pairs (L-1, K, K))``."""
        return ucb_pair_scores(
            self._last_params(),
            jnp.asarray(self.items),
            jnp.asarray(self.w),
            jnp.asarray(self.v0),
            self._links,
        )
