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

**Exact summaries** (:meth:`LatentW.w_grid`, ``w_mean``, ``mean``, ``to_datatree``):
quadrature of the collapsed density on an adaptive grid
(:mod:`bayesrank.posteriors.latent_w_summaries`), independent of the chain.

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
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from bayesrank._validate import check_int
from bayesrank._static import Part, jit_method
from bayesrank.model.links import get_link
from bayesrank.posteriors import linalg
from bayesrank.posteriors.base import check_reward_support
from bayesrank.posteriors.gaussian import GaussianLinear, GaussianLinearUnknownNoise
from bayesrank.posteriors.latent_w_density import CollapsedDensity
from bayesrank.posteriors.latent_w_summaries import LatentWSummaries
from bayesrank.posteriors.linalg import half_logdet_quad
from bayesrank.posteriors.scale_grid import grid_index
from bayesrank.posteriors.scaled import LearntScaleLinear, LearntScaleState
from bayesrank.posteriors.slice_sampler import jump_then_slice
from bayesrank.posteriors.w_prior import (
    chain_start,
    refuse_bad_w_batch,
    valid_w_prior,
    prior_box,
    prior_config,
    prior_from_config,
)

__all__ = ["LatentW", "LatentWState", "half_logdet_quad"]

#: Slice-sampler transitions per draw (each: stepping out, then shrinkage).
SLICE_STEPS = 1


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


class LatentW(LatentWSummaries, CollapsedDensity, Part):
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
    #: True if, with a learnt scale, the chain draws g given w and then moves w given
    #: g (False moves w on its density with the scale integrated out, as
    #: LatentLaplace does)
    moves_w_given_scale = True

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
        lo, hi = prior_box(self.w_prior, L)
        return jnp.asarray(lo, dtype), jnp.asarray(hi, dtype)

    def _start(self, L: int, dtype):
        """A starting w in the prior's support (its median) and a width (its spread)."""
        med, width = chain_start(self.w_prior, L)
        return jnp.asarray(med, dtype), jnp.asarray(width, dtype)

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

    # ------------------------------------------------------------------ draws
    def _slice_chain(self, key, state):
        """Every position's w from state.w: one Metropolis-Hastings jump from a Cauchy
        centred on the 2d relaxation's estimate of w (so that a chain caught in a far,
        negligible mode of the bilinear model leaves it), then ``slice_steps`` slice
        transitions (the kernel:
        :func:`bayesrank.posteriors.slice_sampler.jump_then_slice`).

        With a learnt-scale base the chain moves on (w, g): g is first drawn exactly
        from ``p(g | w, D)`` on the base's grid (one tridiagonal reduction per
        position), then the kernel moves w under ``p(w | g, D)`` (a Cholesky factor
        per evaluation, as with a fixed scale). Each part leaves the joint posterior
        invariant, so the pair does: (w, g) is a draw of their joint posterior, and
        :meth:`draw` takes theta | w, g, D (g is not kept: it is redrawn from w each
        round). Returns ``(w, width, log g)`` (log g = inf without a learnt scale)."""
        d = state.ba.shape[1]
        dtype = state.ba.dtype
        m0, P0 = self._theta_prior(d, dtype)
        stats = self._stats(state)
        L = state.w.shape[0]
        # the conjugate learnt scale: g | w exactly on the base's grid, then w | g
        given_g = self.learnt and self.moves_w_given_scale
        if given_g:
            key, k_g = jax.random.split(key)
            # on the nodes: (node, w) then has one joint, the grid's, whose w-marginal
            # is the collapsed density the summaries integrate (a draw spread over
            # the node's cell would pair with p(w | g) from no single joint)
            logw = self.base._grid_posterior(self.given_w(state, state.w))[2]
            log_g = jnp.asarray(self.base.log_g, dtype)[grid_index(k_g, logw)]
        else:
            log_g = jnp.full((L,), jnp.inf, dtype)
        c = jnp.exp(-2.0 * log_g)

        def position(key, l, st, yy, n, w0, width, c):
            def log_lik(x):
                if given_g:
                    return self._log_marginal_given_g(st, yy, n, x, c)
                return self._log_marginal(st, yy, n, x, m0, P0)

            def logf(w):  # w: (k,) points of this position -> (k,)
                lp = jax.vmap(lambda x: self.log_prior(jnp.broadcast_to(x, (L,)))[l])(w)
                return jax.vmap(log_lik)(w) + lp

            centre = self._relaxed_w(st, m0, P0)
            return jump_then_slice(key, logf, w0, width, centre,
                                   steps=self.slice_steps)

        keys = jax.random.split(key, L)
        w, width = jax.vmap(position)(
            keys, jnp.arange(L), stats, state.yy, state.n, state.w, state.width, c
        )
        return w, width, log_g

    def given_w(self, state: LatentWState, w) -> LearntScaleState:
        """A learnt-scale base's state of the design ``a + w p``, w (L,): the sums
        given w (theta | w, D is then the base's posterior)."""
        Saa, Sap, Spp, ba, bp = self._stats(state)
        wm = w[:, None, None]
        S = Saa + wm * (Sap + jnp.swapaxes(Sap, 1, 2)) + wm * wm * Spp
        u = ba + w[:, None] * bp
        zero = jnp.zeros_like
        return LearntScaleState(S, u, state.yy, state.n, zero(S), zero(u), zero(state.yy))

    def theta_given_w(self, key, state: LatentWState, w):
        """One exact draw of theta from its conditional posterior given w.

        Given w the design is ``a + w p`` and theta is conjugate (module docstring):
        theta | w, D is Gaussian (known noise), Student-like through s^2 | w, D first
        (Normal-Inverse-Gamma base), or the learnt-scale base's posterior of the design
        (:meth:`given_w`). Pure and traceable (jit, vmap over keys or w).

        Args:
            key: a JAX PRNG key.
            state: the model's state.
            w: (L,) the dependency weights to condition on.

        Returns:
            (L, d) one draw of theta per position.

        Example:
            >>> import jax, jax.numpy as jnp, numpyro.distributions as dist
            >>> from bayesrank.posteriors import GaussianLinear, LatentW
            >>> model = LatentW(GaussianLinear(), dist.Normal(0.0, 5.0))
            >>> state = model.init(L=2, p=4)
            >>> model.theta_given_w(jax.random.key(0), state, jnp.zeros(2)).shape
            (2, 2)
        """
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
        """One joint draw per position: w by the slice chain, then theta | w (and
        the chain's g with a learnt conjugate scale: theta | w, g).

        Returns:
            ``((theta (L, d), w (L,)), state)`` with the chain moved to the new w.
        """
        k_w, k_t = jax.random.split(key)
        w, width, log_g = self._slice_chain(k_w, state)
        state = state._replace(w=w, width=width)
        if self.learnt and self.moves_w_given_scale:  # the chain's (w, g): theta | both
            return (self.base.draw_given_scale(k_t, self.given_w(state, w), log_g),
                    w), state
        return (self.theta_given_w(k_t, state, w), w), state

    def draw_batch(self, key, state: LatentWState, n: int):
        """n draws for a batch of requests, each its own chain from the current w
        (chains are not advanced): ``(theta (n, L, d), w (n, L))``."""
        keys = jax.random.split(key, n)
        return jax.vmap(lambda k: self.draw(k, state)[0])(keys)

    def refresh(self, key, state):
        """Closed form: nothing to advance."""
        del key
        return state

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
