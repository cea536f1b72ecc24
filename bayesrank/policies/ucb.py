"""RankUCB (Algorithm 1 of the paper) and the class machinery of the UCB family.

Each position's model is a per-position posterior whose mean is the estimate
``theta_hat^l``. Two defaults:

* **learnt scales** (no ``model``, ``lam``, ``alpha`` or ``m2`` given):
  ``GaussianLinear()``, which learns theta's prior scale and the noise sd (issue 44);
  theta_hat is its posterior mean, V the design Gram matrix ``lam I + sum_s x_s x_s^T``
  with lam = 1, and the width is Lemma 1's for R-sub-Gaussian noise with R the
  posterior's noise sd ``s_hat`` (``model.noise_sd``) and ``||theta^l|| <= m2 R``:
  ``s_hat (sqrt(lam) m2 + sqrt(2 log(1/delta) + log(det V_t / lam^d)))``. Multiply
  every reward by c and theta_hat and s_hat are multiplied by c, V does not move, so
  the lists do not depend on the reward's units. ``m2`` (1 by default) bounds
  theta's norm in units of the noise sd, its signal-to-noise norm.
* **ridge** (the paper's Algorithm 1; ``lam``, ``alpha`` or ``m2`` given without a
  model): ``GaussianLinear(prior_scale=1/sqrt(lam), noise_scale=1)``, whose mean is
  the ridge estimate ``V^-1 sum_s r_s x_s`` and whose posterior precision *is* ``V^l
  = lam I + sum_s x_s x_s^T`` (one copy of the matrix, read through ``model.gram``);
  Lemma 1 with noise sd 1 and ``||theta^l|| <= m2`` in the reward's units.

Confidence width (per position, round t):

* ``alpha=None`` (default): Lemma 1,
  ``sqrt(beta_t) = sqrt(lam) m2 + sqrt(2 log(1/delta) + log(det V_t / lam^d))``, with
  ``m2`` a bound on ``||theta^l||`` (an argument, 1.0 by default), times ``s_hat``
  where the model learns the noise;
* ``alpha=<float>``: that constant width, as in the authors' experiments, which used
  ``alpha = 1 + sqrt(log(2/delta)/2)`` (times ``s_hat`` where the model learns the
  noise).

Optimistic scores (:mod:`bayesrank.policies.parts.bonus`). For the identity link the UCB of
a super-arm is exact: ``max_{||theta - theta_hat||_V <= width} <theta, x> =
<theta_hat, x> + width ||x||_{V^-1}``. For a monotone non-linear link f the policies
use ``f(<theta_hat, x> + (width/c1) ||x||_{V^-1})`` with ``V`` the design Gram matrix
``lam I + sum x x^T`` (kept by the estimate itself for non-identity links) and
``c1 = min f'`` on the declared parameter set ``Theta = {||theta|| <= m2}``, i.e.
over ``|z| <= m2 max ||x||``; ``c1`` defaults to ``min(1, f'(-z), f'(0), f'(z))`` at
that ``z`` and may be given.

What is guaranteed for a non-linear link (GLM-UCB):

* with ``model=LaplaceGLM(link=...)`` the estimate is the lam-regularised MLE of the
  paper's Lemma 3 (the root of ``g_t(theta) = sum r x``, found by Newton's method
  after every update), and ``lam`` is the model's ``1 / prior_scale^2``. If the true
  theta lies in Theta and the MLE does too, Lemma 3 (Lemma 4 of the appendix: ``c1
  ||theta - theta'||_V <= ||g(theta) - g(theta')||_{V^-1}``) puts theta within
  ``width / c1`` of theta_hat in the V-norm with probability ``1 - delta``, so every
  score above is an upper confidence bound and Theorem 1's regret bound applies.
  The projection of the MLE onto Theta (Filippi et al. 2010) is *not* applied: when
  the MLE leaves Theta (early rounds, or m2 chosen too small) the statement above is
  not proven, though the scores stay finite and the policy keeps learning.
* with ``model=LaplaceGLM(link=...)`` and its prior scale learnt (the default,
  ``prior_scale=None``: tau on a grid, :mod:`bayesrank.posteriors.laplace.learnt_scale`)
  the estimate is the MAP at the grid's modal node k, the ``lam_k``-regularised MLE
  with ``lam_k = 1 / tau_k^2``, and V is ``lam_k I + sum x x^T`` with that same
  ``lam_k`` (per position, refactorised each round); Lemma 1's width takes ``lam_k``.
  The pairing is Lemma 3's; that lam_k is chosen from the data makes the statement
  above hold for each fixed node, not uniformly over the data-dependent choice.
* with a NUTS model (``BayesGLM``, ``NumPyroModel``) the estimate is the current
  posterior mean (the chains advance one round in every ``select`` through
  ``model.refresh``): a heuristic, with no confidence statement.

Example:
    >>> import bayesrank as br, jax
    >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
    >>> ucb = br.RankUCB(items=env.items, w=env.w, seed=0)
    >>> items = ucb.select()
    >>> ucb.update(items, env.sample(jax.random.key(0), items))
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from bayesrank._validate import check_mask, check_real
from bayesrank.model.links import link_constants
from bayesrank.policies.base import Policy
from bayesrank.policies.parts.bonus import UCBTables, WindowUCBTables
from bayesrank.policies.parts.core import compose, PolicyCore
from bayesrank.policies.parts.estimate import Optimistic
from bayesrank.policies.parts.features import window_features
from bayesrank.policies.parts.keywords import keyword_only
from bayesrank.policies.runtime.checks import as_items_w_v0, refuse_non_model
from bayesrank.policies.runtime.model_config import model_config, model_from_config
from bayesrank.posteriors.conjugate import GaussianLinear

__all__ = [
    "C1_MIN", "RankUCB", "UCBPolicy", "default_model", "learnt_default", "rank_ucb",
    "resolve_c1", "resolve_lam",
]


def rank_ucb(model, items, W, *, lam, delta, alpha, m2, c1, distinct=False,
             features=None) -> PolicyCore:
    """The functional core of RankUCB / WindowRankUCB (S = 2 is one shared path).

    Args:
        model: a per-position posterior; its mean is theta_hat.
        items: (K, d); W: (L, S-1) known dependency weights.
        lam, delta, alpha, m2: the width; c1: the link's lower derivative bound.
        distinct: forbid repeated items.
        features: the feature map (default: the window features of W).
    """
    W = np.asarray(W, dtype=float)
    L, S = W.shape
    S += 1
    if S == 2:
        tables = UCBTables(W[:, 0], model.link, separable=bool(np.all(W[1:] == 0)))
    else:
        tables = WindowUCBTables(W, model.link)
    estimate = Optimistic(model, lam=lam, delta=delta, m2=m2, alpha=alpha, c1=c1)
    feats = features or window_features(W)
    return compose(
        model, feats, estimate, tables, items, L=L, p=items.shape[1], distinct=distinct
    )


# ------------------------------------------------------------------------- helpers
def default_model(lam: float):
    """``GaussianLinear(prior_scale=1/sqrt(lam), noise_scale=1)``: mean = ridge."""

    return GaussianLinear(prior_scale=1.0 / math.sqrt(lam), noise_scale=1.0)


def learnt_default(model, lam, alpha, m2) -> bool:
    """Whether a UCB policy takes the learnt-scale default ``GaussianLinear()``: no
    model and none of ``lam``, ``alpha``, ``m2`` given (any of them given keeps the
    paper's ridge model, exactly as before the learnt default)."""
    return model is None and lam is None and alpha is None and m2 is None


def as_ucb_args(delta, lam, alpha, m2, c1):
    """Validate the confidence-width arguments; returns them as floats."""
    delta = check_real(delta, "delta", low=0, high=1, inclusive="neither")
    if lam is not None:  # None: the model's learnt regulariser (resolve_lam)
        lam = check_real(lam, "lam", low=0, inclusive="neither")
    m2 = check_real(m2, "m2", low=0)
    if alpha is not None:
        alpha = check_real(alpha, "alpha", low=0)
    if c1 is not None:
        c1 = check_real(c1, "c1", low=0, high=1, inclusive="right")
    return delta, lam, alpha, m2, c1


def resolve_lam(model, lam):
    """The ridge parameter of ``V = lam I + sum x x^T``.

    A model that declares its own regulariser (``LaplaceGLM.lam = 1 / prior_scale^2``,
    whose MAP is the lam-regularised MLE of Lemma 3) fixes it: ``lam=None`` takes the
    model's, a different value raises. A model that learns its prior scale (a
    ``map_node`` method: ``LaplaceGLM()``, the learnt-scale Laplace GLM) regularises
    with its own ``1 / tau^2`` each round: None (any number given raises).
    Otherwise ``None`` means 1.0.
    """
    if callable(getattr(model, "map_node", None)):
        if lam is not None:
            raise ValueError(
                f"lam: the model learns its prior scale tau and the confidence set "
                f"uses its own lam = 1/tau^2 (the modal grid node's); got lam={lam!r} "
                "(leave lam unset, or give the model a prior_scale number)")
        return None
    own = getattr(model, "lam", None) if model is not None else None
    if lam is None:
        return 1.0 if own is None else float(own)
    if own is not None and not math.isclose(check_real(lam, "lam"), float(own),
                                            rel_tol=1e-12):
        raise ValueError(
            f"lam: the model's MAP is regularised by lam = 1/prior_scale^2 = {own!r}; "
            f"the confidence set must use the same, got lam={lam!r} (leave lam unset)"
        )
    return lam


#: The smallest c1 the UCB policies derive for themselves: below it the bonus, the
#: width divided by c1, is over a million times the width and the estimate never
#: matters (GenRankUCB with the default m3 = 10 on the paper's logistic instances
#: has c1 of about 2e-9 and does not learn). An explicit ``c1=`` is taken as given.
C1_MIN = 1e-6


def resolve_c1(link, c1, m2: float, x_max: float) -> float:
    """c1 for the width: 1 for the identity link, else given or ``link_constants``
    (refused below :data:`C1_MIN`)."""
    if link.name == "identity":
        return 1.0
    if c1 is not None:
        return float(c1)
    z = m2 * x_max
    c1 = float(link_constants(link, z)[0])
    if not (math.isfinite(c1) and c1 >= C1_MIN):
        raise ValueError(
            f"c1: the {link.name} link's smallest slope on |z| <= m2 max||x|| = {z:.3g} "
            f"is {c1:.3g}, below {C1_MIN:g}: the width divided by c1 would swamp every "
            "estimate; give c1= (no guarantee then), a smaller m2 (m3 for GenRankUCB), "
            "or shorter item vectors"
        )
    return c1


# --------------------------------------------------------------------------- classes
class LinearConfig:
    """Constructor checks and persistence shared by the UCB policies and the
    baseline (both kinds): ``delta``, ``lam``, ``alpha``, ``m2``, ``c1``, the
    model, ``distinct`` and ``mask``.

    Subclasses set ``K``, ``L``, ``items``, ``w``, ``v0`` and call
    :meth:`_init_common`, then build their core.
    """

    #: Configuration entries besides the common ones, stored as attributes.
    _extra_config: tuple[str, ...] = ()
    #: Whether the constructor takes ``model`` and ``c1`` (not RankedBaseline).
    _takes_model: bool = True
    #: Whether no model (and no lam, alpha, m2) means the learnt-scale
    #: ``GaussianLinear()`` (the UCB policies) rather than the ridge (the baseline).
    _learns_scales: bool = True
    #: The learnt-scale default model (a factory).
    _learnt_model = staticmethod(GaussianLinear)

    def _init_common(self, model, delta, lam, alpha, m2, c1, distinct, mask):
        if self._learns_scales and learnt_default(model, lam, alpha, m2):
            model = self._learnt_model()
        m2 = 1.0 if m2 is None else m2
        lam = resolve_lam(model, lam)
        delta, lam, alpha, m2, c1 = as_ucb_args(delta, lam, alpha, m2, c1)
        self.delta, self.lam, self.alpha, self.m2 = delta, lam, alpha, m2
        self._c1_arg = c1
        if model is None:
            model = default_model(lam)
        refuse_non_model(model)
        self.model = model
        self.distinct = bool(distinct)
        if self.distinct and self.K < self.L:
            raise ValueError(f"distinct: needs K >= L, got K={self.K} and L={self.L}")
        self.mask = check_mask(mask, self.K, self.L, self.distinct)
        self.vmappable = bool(getattr(model, "vmappable", True))

    def theta_hat(self) -> np.ndarray:
        """(L, p) the current estimate (posterior mean of the per-position model)."""
        return self.posterior_mean()

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


class UCBWidth:
    """Lemma 1's width, read from the posterior's own Gram factor: the arguments of
    the :class:`~bayesrank.policies.parts.estimate.Optimistic` estimate, ``width`` and
    ``logdet``. Needs the attributes :class:`LinearConfig` sets."""

    def _width_args(self, x_max: float) -> dict:
        """The Optimistic estimate's arguments; sets ``self.c1``."""
        self.c1 = resolve_c1(self.model.link, self._c1_arg, self._m2_width(), x_max)
        return {
            "lam": self.lam, "delta": self.delta, "alpha": self.alpha,
            "m2": self._m2_width(), "c1": self.c1,
        }

    def _norm_max(self) -> float:
        """The largest norm among the items and v0."""
        return float(
            max(np.linalg.norm(self.items, axis=1).max(), np.linalg.norm(self.v0))
        )

    def _m2_width(self) -> float:
        return self.m2

    def _gram(self):
        est = self._core_estimate()
        return est.gram(self.state.model, self.state.est)

    def _core_estimate(self) -> Optimistic:
        return Optimistic(
            self.model, lam=self.lam, delta=self.delta, m2=self._m2_width(),
            alpha=self.alpha, c1=self.c1,
        )

    def logdet(self) -> np.ndarray:
        """(L,) log det V^l of the current Gram matrices (from their factors)."""
        chol = self._gram()[0]
        return np.asarray(2.0 * jnp.sum(jnp.log(jnp.diagonal(chol, 0, -2, -1)), -1))

    def width(self) -> np.ndarray:
        """(L,) the confidence width the next selection uses (before 1/c1; in the
        reward's units, times the posterior's noise sd, where the model learns it)."""
        return np.asarray(self._core_estimate().width(self.state.model, self.state.est))


class UCBPolicy(LinearConfig, UCBWidth, Policy):
    """Shared class machinery of the UCB policies: :class:`LinearConfig` (checks,
    persistence) and :class:`UCBWidth` (the width) over :class:`Policy`."""


class RankUCB(UCBPolicy):
    """Ranking UCB with known dependency weights (Algorithm 1).

    Args:
        items: (K, d) item vectors (the one positional argument; the rest are
            keyword-only).
        L: list length (taken from ``w`` if omitted).
        w: (L,) dependency on the previous item (zeros if omitted).
        v0: (d,) the default user's last item (zeros if omitted).
        model: per-position posterior whose mean is theta_hat. By default
            ``GaussianLinear()``, which learns the prior's and the noise's scale (the
            width is then in units of the learnt noise sd: the same lists whatever
            the reward's units); with ``lam``, ``alpha`` or ``m2`` given and no
            model, the paper's ridge ``GaussianLinear(prior_scale=1/sqrt(lam),
            noise_scale=1)``.
        delta: confidence level of Lemma 1, in (0, 1).
        lam: ridge parameter of ``V = lam I + sum x x^T``; None: the model's own
            regulariser (``LaplaceGLM``: ``1 / prior_scale^2``; a learnt prior scale
            tau: ``1 / tau^2`` at the grid's modal node, per position and round),
            else 1.0. Given
            without a model it selects the ridge model above with that lam; with a
            learnt-scale model it regularises only V in the width (the model learns
            its own shrinkage).
        alpha: None for Lemma 1's width (the default), a float for that constant
            width (the authors' experiments: ``1 + sqrt(log(2/delta)/2)``); in units
            of the noise sd where the model learns it.
        distinct: forbid repeated items; mask: (K,) bool, items that may be shown.
        seed: kept for the common policy interface (RankUCB draws nothing).
        m2: bound on ``||theta^l||`` in Lemma 1's width (None: 1.0): in the
            reward's units for a model with a fixed noise sd, in units of the noise
            sd (``||theta|| <= m2 s_hat``) for a model that learns it.
        c1: lower bound on the link's derivative for non-identity links (default
            from the link at ``z = m2 max ||x||``); ignored for the identity link.

    Example:
        >>> import jax, bayesrank as br
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> ucb = br.RankUCB(items=env.items, w=env.w)   # learnt scales, Lemma 1
        >>> type(ucb.model).__name__, ucb.model.learnt_scale
        ('GaussianLinear', True)
        >>> items = ucb.select()
        >>> ucb.update(items, env.sample(jax.random.key(0), items))
        >>> br.RankUCB(items=env.items, w=env.w, alpha=2.224).select().shape
        (4,)
    """

    @keyword_only("model", "items", "L", "w", "v0")
    def __init__(
        self,
        items=None,
        *,
        L=None,
        w=None,
        v0=None,
        model=None,
        delta: float = 0.1,
        lam: float | None = None,
        alpha: float | None = None,
        m2: float | None = None,
        c1: float | None = None,
        distinct: bool = False,
        mask=None,
        seed: int = 0,
    ):
        V, W, v0a, L = as_items_w_v0(items, L, w, v0)
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
        args = self._width_args(x_max)
        self._setup(rank_ucb(self.model, V, W[:, None], distinct=self.distinct, **args),
                    seed)
