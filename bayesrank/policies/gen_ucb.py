"""genRankUCB (Appendix B of the paper): RankUCB with the dependency weights learned.

The reward of position l is rewritten as a linear model in R^{2d}:

    <theta^l, v_j + w_l v_i> = <phi^l, (v_j, v_i)>,     phi^l = (theta^l, w_l theta^l)

so each position's model learns phi over the features ``x~ = (v_{a^l},
v_{a^{l-1}})`` (position 1 uses ``(v_j, v0)``, the request's v0), and the UCB of
super-arm (i, j) is ``f(<phi_hat, (v_j, v_i)> + (width/c1) ||(v_j, v_i)||_{V~^-1})``
(:class:`bayesrank.policies.parts.bonus.GenUCBTables`). The width is Lemma 1's with the
parameter bound ``||phi|| <= m2 sqrt(1 + m3^2)`` (Theorem 2), or a constant ``alpha``.

The estimate of w: phi_hat is unconstrained in R^{2d}, so ``w_hat`` is the
least-squares ratio of its halves, ``argmin_w ||phi_2 - w phi_1||^2 = <phi_1, phi_2> /
||phi_1||^2`` (0 while phi_1 = 0). It is consistent when theta^l != 0 and the features
excite both halves. w_1 multiplies v0 only: it is identifiable only when the requests'
v0 vary.

Example:
    >>> import bayesrank as br
    >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
    >>> gen = br.GenRankUCB(env.items, L=4, alpha=2.0)
    >>> gen.select().shape
    (4,)
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from bayesrank._validate import check_real
from bayesrank.policies.parts.bonus import GenUCBTables
from bayesrank.policies.parts.core import compose, PolicyCore
from bayesrank.policies.parts.estimate import Optimistic
from bayesrank.policies.parts.features import pair_features
from bayesrank.policies.parts.keywords import keyword_only
from bayesrank.policies.runtime.checks import as_items_w_v0
from bayesrank.policies.ucb import UCBPolicy
from bayesrank.posteriors.conjugate import GaussianLinear

__all__ = ["GenRankUCB", "gen_rank_ucb", "relaxation_model", "w_hat"]


def relaxation_model():
    """The learnt-scale default of the 2d relaxation's policies (GenRankTS, and
    GenRankUCB with none of ``model``/``lam``/``alpha``/``m2``):
    ``GaussianLinear(prior_scale=HalfNormal(1))``, the scales learnt as in
    ``GaussianLinear()`` under a lighter-tailed hyperprior on g.

    The relaxation's phi = (theta, w theta) may show one item twice in a row, where
    its two halves are not separately identified; under HalfCauchy(1) the first
    rounds' draws of g reach 10-16, the Thompson draws of phi run wild along those
    directions, and GenRankTS settles on lists it never leaves (regret 4,000-5,950
    against 465-850 in 1,000 rounds on the paper's instances; docs/design-choices.md).

    Example:
        >>> from bayesrank.policies.gen_ucb import relaxation_model
        >>> type(relaxation_model().hyperprior).__name__
        'HalfNormal'
    """
    import numpyro.distributions as dist

    return GaussianLinear(prior_scale=dist.HalfNormal(1.0))


def w_hat(phi):
    """(L,) least-squares estimate of w from phi (L, 2d) = (theta, w theta)."""
    d = phi.shape[-1] // 2
    phi1, phi2 = phi[..., :d], phi[..., d:]
    n = jnp.sum(phi1 * phi1, axis=-1)
    safe = jnp.where(n > 0, n, 1.0)
    return jnp.where(n > 0, jnp.sum(phi1 * phi2, axis=-1) / safe, 0.0)


def gen_rank_ucb(model, items, L: int, *, lam, delta, alpha, m2, c1,
                 distinct=False) -> PolicyCore:
    """The functional core of genRankUCB (``m2`` here bounds ``||phi||``)."""
    estimate = Optimistic(model, lam=lam, delta=delta, m2=m2, alpha=alpha, c1=c1)
    return compose(
        model, pair_features, estimate, GenUCBTables(model.link), items,
        L=L, p=2 * items.shape[1], distinct=distinct,
    )


class GenRankUCB(UCBPolicy):
    """genRankUCB: ranking UCB that learns the dependency weights w (Appendix B).

    Args:
        items: (K, d) item vectors (the one positional argument; the rest are
            keyword-only).
        L: list length.
        v0: (d,) the default user's last item (zeros if omitted).
        model: per-position posterior over phi (default: :func:`relaxation_model`,
            learnt scales under a HalfNormal(1) hyperprior; with
            ``lam``, ``alpha`` or ``m2`` given, the ridge
            ``GaussianLinear(prior_scale=1/sqrt(lam), noise_scale=1)``).
        delta, lam, alpha: the width, as in :class:`~bayesrank.RankUCB`.
        m2: bound on ``||theta^l||`` (None: 1.0; in units of the noise sd where
            the model learns it, as in RankUCB).
        m3: the declared bound on ``|w_l|`` (assumption (c) of the paper's
            Theorem 2); Lemma 1's width uses ``||phi|| <= m2 sqrt(1 + m3^2)``.
            The default, 10.0, is the largest range the paper's experiments draw
            w from (``w_l ~ U(-10, 10)``), so with the default m2 = 1 the width
            covers every instance of that generator. A value below the true
            ``max |w_l|`` voids Lemma 1's confidence statement (the radius is too
            small); a larger one only widens the radius, by ``sqrt(1 + m3^2)``.
            Only positions 2..L need it when v0 = 0 (w_1 multiplies v0). Unused
            when ``alpha`` is given.
        c1: the link's lower derivative bound (non-identity links).
        distinct: forbid repeated items; mask: (K,) bool, items that may be shown.
        seed: kept for the common interface (nothing is drawn).

    Example:
        >>> import jax, bayesrank as br
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> policy = br.GenRankUCB(env.items, L=4, alpha=2.224)
        >>> items = policy.select()
        >>> policy.update(items, env.sample(jax.random.key(0), items))
        >>> policy.w_hat.shape
        (4,)
    """

    _array_args = ("items", "v0")
    _extra_config = ("L", "m3")
    _learnt_model = staticmethod(relaxation_model)

    @keyword_only("items", "L", "v0")
    def __init__(
        self,
        items=None,
        *,
        L=None,
        v0=None,
        model=None,
        delta: float = 0.1,
        lam: float | None = None,
        alpha: float | None = None,
        m2: float | None = None,
        m3: float = 10.0,
        c1: float | None = None,
        distinct: bool = False,
        mask=None,
        seed: int = 0,
    ):
        if L is None:
            raise ValueError("L: expected a positive integer list length, got None")
        V, W, v0a, L = as_items_w_v0(items, L, None, v0)
        self.K, self.L = V.shape[0], L
        self.items, self.w, self.v0 = V, W, v0a
        m3 = check_real(m3, "m3", low=0)
        if not (math.isfinite(m3) and m3 >= 0):
            raise ValueError(f"m3: expected a finite number >= 0, got {m3!r}")
        self.m3 = m3
        self._init_common(model, delta, lam, alpha, m2, c1, distinct, mask)
        args = self._width_args(math.sqrt(2.0) * self._norm_max())
        self._setup(gen_rank_ucb(self.model, V, L, distinct=self.distinct, **args), seed)

    def _m2_width(self) -> float:
        return self.m2 * math.sqrt(1.0 + self.m3**2)

    @property
    def w_hat(self) -> np.ndarray:
        """The current estimate of w, shape (L,), ``<phi_1, phi_2> / ||phi_1||^2``."""
        return np.asarray(w_hat(self.model.mean(self.state.model)))

    def phi_hat(self) -> np.ndarray:
        """(L, 2d) the current estimate of phi = (theta, w theta)."""
        return self.theta_hat()
