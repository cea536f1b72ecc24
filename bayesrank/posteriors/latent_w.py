"""Unknown dependency weights: w as a latent variable, inferred jointly with theta.

Identity link, conjugate prior on theta per position l (:class:`GaussianLinear`:
known noise s; :class:`GaussianLinearUnknownNoise`: Normal-Inverse-Gamma), and any
prior ``p(w_l)`` (a NumPyro distribution). The model learns from the pair features
``x = (a, p) = (v_{a^l}, v_{a^{l-1}})`` in R^{2d} and keeps running sufficient
statistics only (constant memory, no history)::

    S_aa = sum a a^T,  S_ap = sum a p^T,  S_pp = sum p p^T,  b_a = sum r a,
    b_p = sum r p,     yy = sum r^2,      n                (divided by s^2 for known s)

Given w, the design is ``a + w p`` and theta is conjugate::

    P(w) = P0 + S_aa + w (S_ap + S_ap^T) + w^2 S_pp,      b(w) = P0 m0 + b_a + w b_p

and theta integrates out in closed form (up to a constant in w):

* known noise:   log p(w | D) = log p(w) - 1/2 log det P(w) + 1/2 b(w)^T P(w)^-1 b(w)
* unknown noise: log p(w | D) = log p(w) - 1/2 log det L(w) - a_n log b_n(w),
  ``L(w)`` as P(w) with Lambda0 and unscaled statistics, ``a_n = a0 + n/2`` and
  ``b_n(w) = b0 + (yy + m0^T Lambda0 m0 - b(w)^T L(w)^-1 b(w)) / 2``
  (the Normal-Inverse-Gamma evidence: ``det(Lambda0)^1/2 det(L(w))^-1/2
  b0^a0 Gamma(a_n) / (b_n(w)^a_n Gamma(a0))``, only the w-dependent factors kept).

**Draws** (:meth:`LatentW.draw`): each round moves w_l by a few steps of a univariate
slice sampler (Neal 2003: stepping out, then shrinkage) on that exact collapsed
marginal, from the previous round's w_l, with the width tracking the chain's own
steps; then theta | w_l is drawn exactly (and s^2 | w_l first for the NIG model).
Collapsing theta removes the bilinear ridge along which a two-block Gibbs sampler
(theta | w, w | theta) mixes slowly. All positions move at once (``vmap``), the state
is arrays only, and the whole step is jittable, scannable and vmappable over runs.

**Exact summaries** (:meth:`LatentW.w_grid`, used by ``w_hat``, ``mean`` and
``to_datatree``): the collapsed density on an adaptive grid (a wide grid over the
prior's range, then zooms onto mean +- 12 sd), i.e. quadrature to grid precision,
independent of the chain.

``discount < 1`` (the base model's stabilised forgetting) multiplies every statistic
by gamma before each observed update.

Example:
    >>> import jax, jax.numpy as jnp, numpyro.distributions as dist
    >>> from bayesrank.posteriors import GaussianLinear, LatentW
    >>> model = LatentW(GaussianLinear(), dist.Normal(0.0, 5.0))
    >>> state = model.init(L=2, p=4)                   # p = 2d: (v_a, v_p)
    >>> state = model.update(state, jnp.ones((2, 4)), jnp.array([1.0, 2.0]))
    >>> (theta, w), state = model.draw(jax.random.key(0), state)
    >>> theta.shape, w.shape
    ((2, 2), (2,))
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._static import Part, jit_method
from bayesrank._validate import check_int, check_position, check_reward_support
from bayesrank.model.links import get_link
from bayesrank.posteriors import linalg
from bayesrank.posteriors.datatree import make_datatree
from bayesrank.posteriors.gaussian import GaussianLinear, GaussianLinearUnknownNoise
from bayesrank.posteriors.scaled import LearntScaleLinear, LearntScaleState, grid_terms
from bayesrank.posteriors.w_prior import (
    prior_config,
    prior_from_config,
    prior_quantiles,
    prior_range,
    refuse_bad_w_batch,
    valid_w_prior,
)

__all__ = ["LatentW", "LatentWState", "half_logdet_quad"]

#: Slice-sampler transitions per draw (each: stepping out, then shrinkage).
SLICE_STEPS = 1
#: Stepping-out steps (both ends together) and shrinkage proposals per transition.
STEP_OUT = 3
SHRINK = 3
#: Grid nodes per zoom level and zoom levels of :meth:`LatentW.w_grid`.
GRID = 512
LEVELS = 3
#: The sinh grid's scale near its centre (w = centre + SINH_SCALE sinh(t)): nodes are
#: about this fine at the data's estimate of w and a fixed fraction of the distance
#: away from it, so 512 nodes span a prior range of 1e7 and still resolve sd 0.05.
SINH_SCALE = 1e-2


def half_logdet_quad(P, b):
    """``(1/2 log det P, b^T P^-1 b)`` of a small SPD matrix by a Cholesky
    factorisation unrolled over its columns, the forward solve carried along.

    Written with whole-column array operations so that XLA fuses it into one loop
    (about 25 % faster than LAPACK's per-matrix call for 10 x 10 matrices batched by
    ``vmap``); a non-positive pivot gives NaN, as a failed Cholesky does.
    """
    n = P.shape[-1]
    idx = jnp.arange(n)
    M, z = P, b
    half = jnp.zeros((), P.dtype)
    quad = jnp.zeros((), P.dtype)
    for k in range(n):
        piv = jnp.sqrt(M[k, k])
        col = jnp.where(idx > k, M[:, k] / piv, 0.0)
        zk = z[k] / piv
        half = half + jnp.log(piv)
        quad = quad + zk * zk
        z = z - col * zk
        M = M - col[:, None] * col[None, :]
    return half, quad


class LatentWState(NamedTuple):
    """Sufficient statistics per position (divided by s^2 for known noise) and the
    slice chain's position.

    Example:
        >>> import numpyro.distributions as dist, bayesrank as br
        >>> from bayesrank.posteriors import LatentW
        >>> state = LatentW(br.GaussianLinear(), dist.Normal(0.0, 5.0)).init(L=3, p=4)
        >>> state.Saa.shape, state.w.shape                       # p = 2d, d = 2
        ((3, 2, 2), (3,))
    """

    Saa: jax.Array  # (L, d, d) sum a a^T
    Sap: jax.Array  # (L, d, d) sum a p^T
    Spp: jax.Array  # (L, d, d) sum p p^T
    ba: jax.Array  # (L, d) sum r a
    bp: jax.Array  # (L, d) sum r p
    yy: jax.Array  # (L,) sum r^2
    n: jax.Array  # (L,) (discounted) number of observations
    w: jax.Array  # (L,) the chain's current w
    width: jax.Array  # (L,) the slice width, tracking the chain's steps


#: Jitted methods shared by every LatentW of one configuration (see ``jitted``).
_JITTED: dict = {}


class LatentW(Part):
    """A conjugate per-position posterior over (theta, w) with w latent.

    Args:
        base: :class:`GaussianLinear` or :class:`GaussianLinearUnknownNoise`: the
            prior on theta (and the noise), the discount.
        w_prior: a NumPyro distribution over the reals (or an interval), batch shape
            ``()`` or ``(L,)``: the prior on w (e.g. ``dist.Normal(0.0, 5.0)``).
        slice_steps: slice-sampler transitions per draw.

    The model's features are the pair features ``(v_{a^l}, v_{a^{l-1}})`` (p = 2d);
    ``draw`` returns ``((theta (L, d), w (L,)), state)``.

    Example:
        >>> import jax, numpyro.distributions as dist, bayesrank as br
        >>> from bayesrank.posteriors import LatentW
        >>> model = LatentW(br.GaussianLinear(), dist.Normal(0.0, 5.0))
        >>> (theta, w), state = model.draw(jax.random.key(0), model.init(L=3, p=4))
        >>> theta.shape, w.shape
        ((3, 2), (3,))

        ``br.RankTS(items=V, w=dist.Normal(0.0, 5.0))`` builds this model for you.
    """

    link = get_link("identity")
    reward_support = "real"
    vmappable = True

    def __init__(self, base=None, w_prior=None, *, slice_steps: int = SLICE_STEPS):
        if base is None:
            base = GaussianLinear()
        if not isinstance(base, (GaussianLinear, GaussianLinearUnknownNoise,
                                 LearntScaleLinear)):
            raise TypeError(
                "model: a latent w (w=<distribution>) needs GaussianLinear or "
                f"GaussianLinearUnknownNoise, got {type(base).__name__}; GenRankTS "
                "learns w with any posterior"
            )
        check_int(slice_steps, "slice_steps", low=1)
        self.base = base
        self.w_prior = valid_w_prior(w_prior, None)
        self.slice_steps = slice_steps
        self.known_noise = isinstance(base, GaussianLinear)
        # a learnt-scale base: g (and s) integrated on its grid with theta
        self.learnt = isinstance(base, LearntScaleLinear)
        self.discount = base.discount

    def __repr__(self) -> str:
        return f"LatentW({self.base!r}, {prior_config(self.w_prior)['class']}(...))"

    def label(self) -> str:
        """The model's name in DataTree attributes."""
        return f"LatentW({type(self.base).__name__})"

    def jitted(self, name: str):
        """``jax.jit`` of the method ``name`` (compiled once per model configuration): the exact summaries
        (:meth:`w_mean`, :meth:`w_sd`, :meth:`w_quantiles`, :meth:`mean`) evaluate
        thousands of small factorisations and are slow op by op."""
        fn = _JITTED.get(name)
        if fn is None:
            fn = _JITTED[name] = jit_method(name)
        return functools.partial(fn, self)

    # ----------------------------------------------------------------- the prior
    def _theta_prior(self, d: int, dtype):
        """(m0, P0); a learnt-scale base: m0 and the identity (the 2d relaxation's
        ridge, which only locates the posterior)."""
        if self.learnt:
            return self.base._m0(d, dtype), jnp.eye(d, dtype=dtype)
        m0, P0, _, _ = self.base.prior(d)
        return m0.astype(dtype), P0.astype(dtype)

    def check_positions(self, L: int) -> None:
        """The prior's batch shape must be () or (L,) (raises ValueError naming w;
        the rest of the prior was checked when the model was built)."""
        refuse_bad_w_batch(self.w_prior, L)

    def log_prior(self, w):
        """log p(w) for w (..., L) or broadcastable; -inf outside the support."""
        lp = self.w_prior.log_prob(w)
        inside = self.w_prior.support(w)
        return jnp.where(inside, lp, -jnp.inf)

    def _prior_range(self, L: int, dtype):
        """(lo (L,), hi (L,)): a range holding all but a negligible part of the prior
        (:func:`~bayesrank.posteriors.w_prior.prior_range`)."""
        lo, hi = self._host_range(L)
        return jnp.asarray(lo, dtype), jnp.asarray(hi, dtype)

    def _host_range(self, L: int, quantiles=None):
        """:meth:`_prior_range` as float64 NumPy arrays (no JAX operation); from
        ``quantiles`` (:func:`prior_quantiles`) when the caller has them."""
        if quantiles is None:
            lo, hi = prior_range(self.w_prior)
        else:
            lo, hi = quantiles[0], quantiles[2]
        lo, hi = np.broadcast_to(lo, (L,)), np.broadcast_to(hi, (L,))
        ok = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
        return np.where(ok, lo, -100.0), np.where(ok, hi, 100.0)

    def _start(self, L: int, dtype):
        """A starting w in the prior's support (its median) and a width (its spread)."""
        q = prior_quantiles(self.w_prior)
        lo, hi = self._host_range(L, q)
        if q is not None:
            med = q[1]
        else:  # an expansion, or StudentT's icdf without TFP: the mean
            with jax.ensure_compile_time_eval():
                try:
                    med = np.asarray(self.w_prior.mean, float)
                except (NotImplementedError, AttributeError):
                    med = np.asarray(np.nan)
        med = np.broadcast_to(med, (L,))
        med = np.where(np.isfinite(med), med, 0.5 * (lo + hi))
        return jnp.asarray(med, dtype), jnp.asarray((hi - lo) / 10.0, dtype)

    # ----------------------------------------------------------------- protocol
    def init(self, L: int, p: int) -> LatentWState:
        """The prior for L positions over pair features of dimension ``p = 2d``."""
        if check_int(p, "p", low=2) % 2:
            raise ValueError(f"p: expected an even feature dimension 2d >= 2, got {p!r}")
        check_int(L, "L", low=1)
        L, d = int(L), int(p) // 2
        self.check_positions(L)
        if self.learnt:
            self.base.init(L, d)  # checks the prior mean's dimension against d
        else:
            self.base.prior(d)  # checks the prior's dimension against d
        dtype = jnp.result_type(float)
        w, width = self._start(L, dtype)
        zm = jnp.zeros((L, d, d), dtype)
        zv = jnp.zeros((L, d), dtype)
        z = jnp.zeros((L,), dtype)
        return LatentWState(zm, zm, zm, zv, zv, z, z, w, width)

    def update(self, state: LatentWState, x, y, valid=None) -> LatentWState:
        """Fold one observation per position into the statistics, O(L d^2).

        Args:
            x: (L, 2d) pair features ``(v_{a^l}, v_{a^{l-1}})``; y: (L,) rewards;
            valid: (L,) bool, False where the position is left unchanged.
        """
        L, d = state.ba.shape
        dtype = state.ba.dtype
        x, y = jnp.asarray(x, dtype), jnp.asarray(y, dtype)
        if x.shape != (L, 2 * d):
            raise ValueError(f"x: expected shape (L, 2d) = ({L}, {2 * d}), got {x.shape}")
        if y.shape != (L,):
            raise ValueError(f"y: expected shape (L,) = ({L},), got {y.shape}")
        valid = jnp.ones((L,), bool) if valid is None else jnp.asarray(valid, bool)
        if valid.shape != (L,):
            raise ValueError(f"valid: expected a (L,) = ({L},) bool array, got {valid.shape}")
        a, p = x[:, :d], x[:, d:]
        inv = 1.0
        if self.known_noise:
            inv = 1.0 / jnp.asarray(self.base.noise_scale, dtype) ** 2
        g = jnp.asarray(self.discount, dtype)
        new = state._replace(
            Saa=g * state.Saa + inv * a[:, :, None] * a[:, None, :],
            Sap=g * state.Sap + inv * a[:, :, None] * p[:, None, :],
            Spp=g * state.Spp + inv * p[:, :, None] * p[:, None, :],
            ba=g * state.ba + inv * (y[:, None] * a),
            bp=g * state.bp + inv * (y[:, None] * p),
            yy=g * state.yy + inv * y * y,
            n=g * state.n + 1.0,
        )

        def pick(n_, o_):
            v = valid.reshape(valid.shape + (1,) * (n_.ndim - 1))
            return jnp.where(v, n_, o_)

        return jax.tree_util.tree_map(pick, new, state)

    def check_rewards(self, y) -> None:
        """Host-side check: finite real rewards."""
        check_reward_support(y, "real", name="rewards")

    # ------------------------------------------------------- the collapsed density
    def _conditional(self, stats, w, m0, P0):
        """(chol of P(w), b(w)) for one position and a scalar w."""
        Saa, Sap, Spp, ba, bp = stats
        P = P0 + Saa + w * (Sap + Sap.T) + (w * w) * Spp
        b = P0 @ m0 + ba + w * bp
        return jnp.linalg.cholesky(P), b

    def _log_marginal(self, stats, yy, n, w, m0, P0):
        """log p(w | D) - log p(w), up to a constant in w (one position, scalar w)."""
        Saa, Sap, Spp, ba, bp = stats
        if self.learnt:  # g (and s) integrated on the base's grid
            base = self.base
            S = Saa + w * (Sap + Sap.T) + (w * w) * Spp
            *_, loglik = grid_terms(S, ba + w * bp, yy, n, m0,
                                    jnp.asarray(base.log_g, S.dtype),
                                    base.learn_noise, base._sf(S.dtype))
            out = jax.scipy.special.logsumexp(jnp.asarray(base.log_w0, S.dtype)
                                              + loglik)
            return jnp.where(jnp.isfinite(out), out, -jnp.inf)
        P = P0 + Saa + w * (Sap + Sap.T) + (w * w) * Spp
        half_logdet, quad = half_logdet_quad(P, P0 @ m0 + ba + w * bp)
        if self.known_noise:
            out = -half_logdet + 0.5 * quad
        else:
            a_n = self.base.a0 + 0.5 * n
            b_n = self.base.b0 + 0.5 * (yy + m0 @ P0 @ m0 - quad)
            out = -half_logdet - a_n * jnp.log(jnp.maximum(b_n, 1e-300))
        return jnp.where(jnp.isfinite(out), out, -jnp.inf)

    def _stats(self, state):
        return (state.Saa, state.Sap, state.Spp, state.ba, state.bp)

    def log_density(self, state: LatentWState, w):
        """Unnormalised log p(w_l | D) for every position: w (L,) or (G, L) -> same."""
        d = state.ba.shape[1]
        m0, P0 = self._theta_prior(d, state.ba.dtype)
        w = jnp.asarray(w, state.ba.dtype)
        stats = self._stats(state)

        def one_pos(st, yy, n, wl):
            return self._log_marginal(st, yy, n, wl, m0, P0)

        def row(wrow):
            lm = jax.vmap(one_pos)(stats, state.yy, state.n, wrow)
            return lm + self.log_prior(wrow)

        return row(w) if w.ndim == 1 else jax.vmap(row)(w)

    # ------------------------------------------------------------------ draws
    def _relaxed_w(self, stats, m0, P0):
        """The 2d relaxation's estimate of w for one position: ridge phi over the
        pair features (prior precision P0 on both halves), ``<phi_1, phi_2> /
        ||phi_1||^2`` (0 while phi_1 = 0)."""
        Saa, Sap, Spp, ba, bp = stats
        d = ba.shape[0]
        S2 = jnp.block([[Saa + P0, Sap], [Sap.T, Spp + P0]])
        phi = linalg.chol_solve(jnp.linalg.cholesky(S2), jnp.concatenate([ba + P0 @ m0,
                                                                         bp]))
        n1 = jnp.dot(phi[:d], phi[:d])
        return jnp.where(n1 > 0, jnp.dot(phi[:d], phi[d:]) / jnp.where(n1 > 0, n1, 1.0),
                         0.0)

    def _slice_chain(self, key, state):
        """Every position's w from state.w: one Metropolis-Hastings jump from a Cauchy
        centred on the 2d relaxation's estimate of w (so that a chain caught in a far,
        negligible mode of the bilinear model leaves it), then ``slice_steps`` slice
        transitions.

        The loops have fixed lengths (at most :data:`STEP_OUT` stepping-out steps,
        split at random between the two ends as in Neal's procedure, and
        :data:`SHRINK` shrinkage proposals, staying at the current w if none is
        accepted). A truncated shrinkage keeps the kernel reversible (every accepted
        sequence of proposals has the same probability in reverse, and staying put
        is a self-transition), and fixed lengths cost the same under ``vmap`` over
        positions and runs as on one lane.
        """
        d = state.ba.shape[1]
        dtype = state.ba.dtype
        m0, P0 = self._theta_prior(d, dtype)
        stats = self._stats(state)
        L = state.w.shape[0]

        def position(key, l, st, yy, n, w0, width):
            def logf(w):  # w: (k,) points of this position -> (k,)
                lp = jax.vmap(lambda x: self.log_prior(jnp.broadcast_to(x, (L,)))[l])(w)
                lm = jax.vmap(lambda x: self._log_marginal(st, yy, n, x, m0, P0))(w)
                return lm + lp

            k_jump, k_slice = jax.random.split(key)
            # --- the jump: an independence proposal with heavy tails
            k1, k2 = jax.random.split(k_jump)
            centre = self._relaxed_w(st, m0, P0)
            scale = jnp.maximum(3.0 * width, 1e-6)
            w1 = centre + scale * jax.random.cauchy(k1, dtype=dtype)
            f01 = logf(jnp.stack([w0, w1]))
            logq = -jnp.log1p(((jnp.stack([w0, w1]) - centre) / scale) ** 2)
            log_ratio = (f01[1] - logq[1]) - (f01[0] - logq[0])
            accept = jnp.log(jax.random.uniform(k2, dtype=dtype)) < log_ratio
            w, f = jnp.where(accept, w1, w0), jnp.where(accept, f01[1], f01[0])

            def transition(carry, key):
                w0, f0, width = carry
                k1, k2, k3, k4 = jax.random.split(key, 4)
                logy = f0 - jax.random.exponential(k1, dtype=dtype)
                left = w0 - width * jax.random.uniform(k2, dtype=dtype)
                right = left + width
                j = jnp.floor(STEP_OUT * jax.random.uniform(k3, dtype=dtype))
                k = STEP_OUT - 1 - j

                def step_out(_, c):
                    lft, rgt, jj, kk = c
                    fe = logf(jnp.stack([lft, rgt]))
                    go_l = (jj > 0) & (fe[0] > logy)
                    go_r = (kk > 0) & (fe[1] > logy)
                    return (lft - width * go_l, rgt + width * go_r, jj - go_l, kk - go_r)

                left, right, _, _ = jax.lax.fori_loop(
                    0, STEP_OUT, step_out, (left, right, j, k)
                )

                def shrink(_, c):
                    lft, rgt, w1, f1, done, kk = c
                    kk, ku = jax.random.split(kk)
                    prop = lft + (rgt - lft) * jax.random.uniform(ku, dtype=dtype)
                    fp = logf(prop[None])[0]
                    ok = (~done) & (fp > logy)
                    miss = (~done) & ~ok
                    lft = jnp.where(miss & (prop < w0), prop, lft)
                    rgt = jnp.where(miss & (prop >= w0), prop, rgt)
                    return (lft, rgt, jnp.where(ok, prop, w1), jnp.where(ok, fp, f1),
                            done | ok, kk)

                _, _, w1, f1, _, _ = jax.lax.fori_loop(
                    0, SHRINK, shrink, (left, right, w0, f0, jnp.asarray(False), k4)
                )
                # the width follows the chain's own steps (about one posterior sd)
                new_width = jnp.clip(0.7 * width + 0.9 * jnp.abs(w1 - w0), 1e-12, 1e12)
                return (w1, f1, new_width), None

            (w, _, width), _ = jax.lax.scan(
                transition, (w, f, width), jax.random.split(k_slice, self.slice_steps)
            )
            return w, width

        keys = jax.random.split(key, L)
        return jax.vmap(position)(
            keys, jnp.arange(L), stats, state.yy, state.n, state.w, state.width
        )

    def given_w(self, state: LatentWState, w) -> LearntScaleState:
        """A learnt-scale base's state of the design ``a + w p``, w (L,): the sums
        given w (theta | w, D is then the base's posterior)."""
        Saa, Sap, Spp, ba, bp = self._stats(state)
        wm = w[:, None, None]
        S = Saa + wm * (Sap + jnp.swapaxes(Sap, 1, 2)) + wm * wm * Spp
        u = ba + w[:, None] * bp
        zero = jnp.zeros_like
        return LearntScaleState(S, u, state.yy, state.n, zero(S), zero(u), zero(state.yy))

    def _theta_given_w(self, key, state, w):
        """theta (L, d) drawn exactly from p(theta | w, D) (and s^2 | w first)."""
        if self.learnt:
            return self.base.draw(key, self.given_w(state, w))[0]
        d = state.ba.shape[1]
        dtype = state.ba.dtype
        m0, P0 = self._theta_prior(d, dtype)
        stats = self._stats(state)
        C, b = jax.vmap(lambda st, wl: self._conditional(st, wl, m0, P0))(stats, w)
        mean = jax.vmap(linalg.chol_solve)(C, b)
        k_var, k_theta = jax.random.split(key)
        scale = 1.0
        if not self.known_noise:
            z = jax.vmap(
                lambda c, bb: jax.scipy.linalg.solve_triangular(c, bb, lower=True)
            )(C, b)
            quad = jnp.sum(z * z, -1)
            a_n = self.base.a0 + 0.5 * state.n
            b_n = self.base.b0 + 0.5 * (state.yy + m0 @ P0 @ m0 - quad)
            b_n = jnp.maximum(b_n, 1e-300)
            sigma2 = b_n / jax.random.gamma(k_var, a_n, dtype=dtype)
            scale = jnp.sqrt(sigma2)
        return linalg.sample_per_position(k_theta, mean, C, scale)

    def draw(self, key, state: LatentWState):
        """One joint draw per position: w by the slice chain, then theta | w.

        Returns:
            ``((theta (L, d), w (L,)), state)`` with the chain moved to the new w.
        """
        k_w, k_t = jax.random.split(key)
        w, width = self._slice_chain(k_w, state)
        state = state._replace(w=w, width=width)
        return (self._theta_given_w(k_t, state, w), w), state

    def draw_batch(self, key, state: LatentWState, n: int):
        """n draws for a batch of requests, each its own chain from the current w
        (chains are not advanced): ``(theta (n, L, d), w (n, L))``."""
        keys = jax.random.split(key, n)
        return jax.vmap(lambda k: self.draw(k, state)[0])(keys)

    # --------------------------------------------------------- exact summaries
    def _locate(self, state: LatentWState, lo, hi, nodes: int):
        """Where the posterior of each w_l lies, found from the likelihood and the prior
        together, whatever the prior's width: one pass over a sinh-spaced grid centred
        on the data's own estimate of w (the 2d relaxation's, :meth:`_relaxed_w`),
        fine near it and geometric away from it, spanning the prior's whole range.

        Returns ``(mode (L,), half (L,))``: the grid's best node and a half-width
        holding the posterior (12 of its sd, at least 4 local grid cells).
        """
        dtype = state.ba.dtype
        d = state.ba.shape[1]
        m0, P0 = self._theta_prior(d, dtype)
        centre = jax.vmap(lambda *st: self._relaxed_w(st, m0, P0))(*self._stats(state))
        centre = jnp.clip(jnp.where(jnp.isfinite(centre), centre, 0.5 * (lo + hi)), lo, hi)
        a = jnp.asarray(SINH_SCALE, dtype)
        t = jnp.linspace(0.0, 1.0, nodes, dtype=dtype)[None, :]
        t0, t1 = jnp.arcsinh((lo - centre) / a), jnp.arcsinh((hi - centre) / a)
        t = t0[:, None] + (t1 - t0)[:, None] * t  # (L, G)
        grid = centre[:, None] + a * jnp.sinh(t)
        logp = self.log_density(state, grid.T).T
        dw = a * jnp.cosh(t) * ((t1 - t0) / (nodes - 1))[:, None]  # the cells' widths
        top = jnp.max(logp, axis=1, keepdims=True)
        mass = jnp.exp(logp - jnp.where(jnp.isfinite(top), top, 0.0)) * dw
        mass = mass / jnp.sum(mass, axis=1, keepdims=True)
        mean = jnp.sum(mass * grid, axis=1)
        sd = jnp.sqrt(jnp.sum(mass * (grid - mean[:, None]) ** 2, axis=1))
        best = jnp.argmax(logp, axis=1)
        mode = jnp.take_along_axis(grid, best[:, None], axis=1)[:, 0]
        cell = jnp.take_along_axis(dw, best[:, None], axis=1)[:, 0]
        half = jnp.maximum(12.0 * sd + jnp.abs(mean - mode), 4.0 * cell)
        return mode, half

    def w_grid(self, state: LatentWState, *, nodes: int = GRID, levels: int = LEVELS):
        """The collapsed posterior of w on an adaptive grid, per position.

        The prior's range (its 1e-6 and 1 - 1e-6 quantiles, or mean +- 10 sd, widened
        to hold the chain's w) is searched first by :meth:`_locate`, so a vague or
        heavy-tailed prior (``Normal(0, 1e6)``, ``Cauchy(0, 1e4)``) does not hide a
        narrow posterior between the nodes of a uniform grid. Level 1 spans the
        located region; each further level zooms onto the previous level's mean +- 12
        sd (at least 4 of its cells).

        Returns:
            ``(w (L, nodes), weights (L, nodes))``: the last level's nodes and their
            normalised weights (a quadrature of the posterior of each w_l).
        """
        L = state.w.shape[0]
        dtype = state.ba.dtype
        lo, hi = self._prior_range(L, dtype)
        lo = jnp.minimum(lo, state.w - 10 * state.width)
        hi = jnp.maximum(hi, state.w + 10 * state.width)
        mode, half = self._locate(state, lo, hi, nodes)
        lo, hi = jnp.maximum(lo, mode - half), jnp.minimum(hi, mode + half)
        u = jnp.linspace(0.0, 1.0, nodes, dtype=dtype)
        for level in range(levels):
            grid = lo[:, None] + (hi - lo)[:, None] * u[None, :]  # (L, G)
            logp = self.log_density(state, grid.T).T  # (L, G)
            top = jnp.max(logp, axis=1, keepdims=True)
            wts = jnp.exp(logp - jnp.where(jnp.isfinite(top), top, 0.0))
            wts = wts / jnp.sum(wts, axis=1, keepdims=True)
            if level == levels - 1:
                break
            mean = jnp.sum(wts * grid, axis=1)
            sd = jnp.sqrt(jnp.sum(wts * (grid - mean[:, None]) ** 2, axis=1))
            h = (hi - lo) / (nodes - 1)
            half = jnp.maximum(12.0 * sd, 4.0 * h)
            lo, hi = jnp.maximum(lo, mean - half), jnp.minimum(hi, mean + half)
        return grid, wts

    def w_mean(self, state: LatentWState):
        """(L,) the posterior mean of w (jitted; see :meth:`_w_mean`)."""
        return self.jitted("_w_mean")(state)

    def _w_mean(self, state: LatentWState):
        """(L,) the posterior mean of w (quadrature on :meth:`w_grid`)."""
        grid, wts = self.w_grid(state)
        return jnp.sum(grid * wts, axis=1)

    def w_sd(self, state: LatentWState):
        """(L,) the posterior sd of w (jitted; see :meth:`_w_sd`)."""
        return self.jitted("_w_sd")(state)

    def _w_sd(self, state: LatentWState):
        """(L,) the posterior standard deviation of w."""
        grid, wts = self.w_grid(state)
        mean = jnp.sum(grid * wts, axis=1)
        return jnp.sqrt(jnp.sum(wts * (grid - mean[:, None]) ** 2, axis=1))

    def w_quantiles(self, state: LatentWState, probs=(0.05, 0.95)):
        """``(len(probs), L)`` quantiles of w per position (see :meth:`_w_quantiles`)."""
        return self.jitted("_w_quantiles")(state, tuple(float(q) for q in probs))

    def _w_quantiles(self, state: LatentWState, probs=(0.05, 0.95)):
        """``(len(probs), L)`` quantiles of w per position (the grid's CDF, linear
        inside each cell)."""
        grid, wts = self.w_grid(state)
        h = grid[:, 1:2] - grid[:, 0:1]
        # each node carries its cell [g - h/2, g + h/2]; the CDF is linear inside
        edges = jnp.concatenate([grid[:, :1] - h / 2, grid + h / 2], axis=1)
        cdf = jnp.concatenate([jnp.zeros_like(wts[:, :1]), jnp.cumsum(wts, axis=1)],
                              axis=1)
        q = jnp.asarray(probs, grid.dtype)
        return jax.vmap(lambda c, e: jnp.interp(q, c, e), out_axes=1)(cdf, edges)

    def mean(self, state: LatentWState):
        """(L, d) the posterior mean of theta (jitted; see :meth:`_mean`)."""
        return self.jitted("_mean")(state)

    def _mean(self, state: LatentWState):
        """(L, d) the posterior mean of theta, ``E_w[P(w)^-1 b(w)]`` by quadrature."""
        grid, wts = self.w_grid(state)
        d = state.ba.shape[1]
        m0, P0 = self._theta_prior(d, state.ba.dtype)
        stats = self._stats(state)

        if self.learnt:  # E[theta | w] of the base, weighted over w's grid
            def at(ws):  # ws (L,) -> (L, d)
                return self.base.mean(self.given_w(state, ws))

            return jnp.einsum("gl,gld->ld", wts.T, jax.vmap(at)(grid.T))

        def one_pos(st, ws, pw):
            def m_of(w):
                C, b = self._conditional(st, w, m0, P0)
                return linalg.chol_solve(C, b)

            return jnp.sum(pw[:, None] * jax.vmap(m_of)(ws), axis=0)

        return jax.vmap(one_pos)(stats, grid, wts)

    def refresh(self, key, state):
        """Closed form: nothing to advance."""
        del key
        return state

    def sample_w(self, key, state: LatentWState, n: int):
        """(n, L) independent exact draws of w (inverse CDF on :meth:`w_grid`, a
        uniform position inside the drawn cell)."""
        grid, wts = self.w_grid(state)
        L, G = grid.shape
        h = grid[:, 1] - grid[:, 0]
        k1, k2 = jax.random.split(key)
        idx = jax.vmap(lambda k, p: jax.random.choice(k, G, (n,), p=p))(
            jax.random.split(k1, L), wts
        )  # (L, n)
        jitter = (jax.random.uniform(k2, (L, n), grid.dtype) - 0.5) * h[:, None]
        return (jnp.take_along_axis(grid, idx, axis=1) + jitter).T

    def draw_exact(self, key, state: LatentWState, n: int):
        """n independent exact draws per position: w from its collapsed posterior
        (:meth:`sample_w`), then theta | w. Unlike :meth:`draw_batch` (chains started
        at the current w), these are i.i.d. posterior draws, for intervals and
        diagnostics.

        Returns:
            ``(theta (n, L, d), w (n, L))``.
        """
        k_w, k_t = jax.random.split(key)
        ws = self.sample_w(k_w, state, n)
        thetas = jax.vmap(lambda k, w: self._theta_given_w(k, state, w))(
            jax.random.split(k_t, n), ws)
        return thetas, ws

    # ------------------------------------------------------------ diagnostics
    def to_datatree(self, state: LatentWState, position: int, *, key, data=None,
                    draws: int = 1000, chains: int = 4):
        """Exact joint draws of (theta, w) at one position as an ArviZ DataTree.

        w is drawn from its collapsed posterior on :meth:`w_grid`, theta | w exactly.
        ``data`` is accepted for the common protocol (the pair features and rewards);
        the groups are posterior (theta, w), sample_stats and log_prior (theta's and
        w's terms).
        """
        L = state.w.shape[0]
        check_position(position, L)
        check_int(draws, "draws", low=1)
        check_int(chains, "chains", low=1)
        del data
        thetas, ws = self.draw_exact(key, state, int(draws) * int(chains))
        w_pos = np.asarray(ws[:, position], float).reshape(chains, draws)
        th = np.asarray(thetas[:, position], float).reshape(chains, draws, -1)
        d = th.shape[-1]
        lp_w = np.asarray(
            self.log_prior(jnp.broadcast_to(jnp.asarray(w_pos)[..., None],
                                            w_pos.shape + (L,)))[..., position], float)
        log_prior = {"w": lp_w}
        if not self.learnt:  # a learnt scale's theta prior is a mixture: w's term only
            m0, P0 = (np.asarray(a, float) for a in self._theta_prior(d, state.ba.dtype))
            C0 = np.linalg.cholesky(P0)
            r = (th - m0) @ C0
            log_prior["theta"] = (-0.5 * d * math.log(2 * math.pi)
                                  + np.sum(np.log(np.diag(C0))) - 0.5 * np.sum(r * r, -1))
        return make_datatree(
            {"theta": th, "w": w_pos},
            log_prior=log_prior,
            attrs={"model": self.label(), "position": position},
        )

    # ------------------------------------------------------------ persistence
    #: The base models a saved config may name (looked up here, never imported).
    BASES: dict = {"GaussianLinear": GaussianLinear,
                   "GaussianLinearUnknownNoise": GaussianLinearUnknownNoise,
                   "LearntScaleLinear": LearntScaleLinear}

    @classmethod
    def _base_from(cls, cfg):
        if not isinstance(cfg, dict) or not isinstance(cfg.get("base"), dict):
            raise ValueError("model: a latent-w config needs a 'base' dict")
        base_cfg: Any = cfg["base"]
        base_cls = cls.BASES.get(base_cfg.get("class"))
        if base_cls is None:
            raise ValueError(f"model: unknown latent-w base {base_cfg.get('class')!r}")
        return base_cls, base_cfg

    def config(self) -> dict:
        """JSON-able description: the base model and the prior on w."""
        return {
            "base": {"class": type(self.base).__name__, "config": self.base.config()},
            "w_prior": prior_config(self.w_prior),
            "slice_steps": self.slice_steps,
        }

    @classmethod
    def from_config(cls, cfg: dict) -> LatentW:
        """Rebuild from :meth:`config` (only bayesrank's own classes, by name)."""
        base_cls, base_cfg = cls._base_from(cfg)
        return cls(
            base_cls.from_config(base_cfg["config"]),
            prior_from_config(cfg["w_prior"]),
            slice_steps=int(cfg.get("slice_steps", SLICE_STEPS)),
        )
