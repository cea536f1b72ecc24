# Over 450 lines because: one class, LatentW (the draw of w, the update and the files
# share its statistics); its collapsed density and summaries already live beside it.
"""Unknown dependency weights: w as a latent variable, inferred jointly with theta.

Identity link, conjugate prior on theta per position l (:class:`GaussianLinear`:
known noise s; :class:`GaussianLinearUnknownNoise`: Normal-Inverse-Gamma), and any
prior ``p(w_l)`` (a NumPyro distribution). The model learns from the pair features
``x = (a, p) = (v_{a^l}, v_{a^{l-1}})`` in R^{2d} and keeps running sufficient
statistics only (constant memory, no history) of the difference ``c = a - p`` and p::

    S_cc = sum c c^T,  S_cp = sum c p^T,  S_pp = sum p p^T,  b_c = sum r c,
    b_p = sum r p,     yy = sum r^2,      n                (divided by s^2 for known s)

Given w, the design is ``a + w p = c + v p`` with ``v = 1 + w``, and theta is
conjugate::

    P(w) = P0 + S_cc + v (S_cp + S_cp^T) + v^2 S_pp,      b(w) = P0 m0 + b_c + v b_p

(Why the difference: what a and p share, the items' constant coordinate or an item
shown twice in a row, cancels exactly row by row. Kept as sums of a and of p, it
cancelled between float32 sums near w = -1, where the density grew a spurious spike
of width 1e-4 that held the whole posterior.)

and theta integrates out in closed form (up to a constant in w):

* known noise:   log p(w | D) = log p(w) - 1/2 log det P(w) + 1/2 b(w)^T P(w)^-1 b(w)
* unknown noise: log p(w | D) = log p(w) - 1/2 log det L(w) - a_n log b_n(w),
  ``L(w)`` as P(w) with Lambda0 and unscaled statistics, ``a_n = a0 + n/2`` and
  ``b_n(w) = b0 + (yy + m0^T Lambda0 m0 - b(w)^T L(w)^-1 b(w)) / 2``
  (the Normal-Inverse-Gamma evidence: ``det(Lambda0)^1/2 det(L(w))^-1/2
  b0^a0 Gamma(a_n) / (b_n(w)^a_n Gamma(a0))``, only the w-dependent factors kept).

**Draws** (:meth:`LatentW.draw`): each round draws w_l from that collapsed marginal
by the inverse CDF of a small adaptive grid (:meth:`LatentW.w_grid` with
``DRAW_NODES`` nodes a pass: a search of the prior's whole range, then a grid in
the posterior's own coordinates, centred on its mode and scaled by its spread); with a
learnt scale, g | w, D exactly on the base's grid; then theta | w (, g) exactly (and
s^2 | w first for the NIG model). Each draw is independent of the last, so nothing
can get stuck where the data leave w vague: a learnt scale lets theta shrink as |w|
grows, so under a vague prior w's posterior has polynomial tails, along which the
former chain over (w, g) crawled to |w| of 1e5. All positions draw at once
(``vmap``), the state is arrays only, and the whole step is jittable, scannable and
vmappable over runs.

**Exact summaries** (:meth:`LatentW.w_grid`, ``w_mean``, ``mean``, ``to_datatree``):
the same quadrature with more nodes (:mod:`bayesrank.posteriors.latent.gaussian_summaries`).

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

from bayesrank._static import jit_method, Part
from bayesrank._validate import check_int, check_reward_support
from bayesrank.model.links import get_link
from bayesrank.posteriors import linalg
from bayesrank.posteriors.conjugate import (
    GaussianLinear,
    GaussianLinearUnknownNoise,
    LearntScaleLinear,
    LearntScaleState,
    reward_bound,
)
from bayesrank.posteriors.hyperprior import grid_index
from bayesrank.posteriors.latent.gaussian_density import CollapsedDensity
from bayesrank.posteriors.latent.gaussian_summaries import LatentWSummaries
from bayesrank.posteriors.w_prior import (
    chain_start,
    prior_box,
    prior_config,
    prior_from_config,
    refuse_bad_w_batch,
    valid_w_prior,
)

__all__ = ["LatentW", "LatentWState"]

#: Nodes per pass of the grid that a draw of w uses (:meth:`LatentW.w_grid`).
DRAW_NODES = 64


class LatentWState(NamedTuple):
    """Sufficient statistics per position (divided by s^2 for known noise) of the
    difference ``c = a - p`` and p, the last draw of w and its posterior's spread.

    Example:
        >>> import numpyro.distributions as dist, bayesrank as br
        >>> from bayesrank.posteriors import LatentW
        >>> state = LatentW(br.GaussianLinear(), dist.Normal(0.0, 5.0)).init(L=3, p=4)
        >>> state.Scc.shape, state.w.shape                       # p = 2d, d = 2
        ((3, 2, 2), (3,))
    """

    Scc: jax.Array  # (L, d, d) sum c c^T, c = a - p
    Scp: jax.Array  # (L, d, d) sum c p^T
    Spp: jax.Array  # (L, d, d) sum p p^T
    bc: jax.Array  # (L, d) sum r c
    bp: jax.Array  # (L, d) sum r p
    yy: jax.Array  # (L,) sum r^2
    n: jax.Array  # (L,) (discounted) number of observations
    w: jax.Array  # (L,) the last draw of w
    width: jax.Array  # (L,) the spread of w's posterior at the last draw (> 0)


#: Jitted methods shared by every LatentW of one configuration (see ``jitted``).
_JITTED: dict = {}


class LatentW(LatentWSummaries, CollapsedDensity, Part):
    """A conjugate per-position posterior over (theta, w) with w latent.

    Args:
        base: :class:`GaussianLinear` or :class:`GaussianLinearUnknownNoise`: the
            prior on theta (and the noise), the discount.
        w_prior: a NumPyro distribution over the reals (or an interval), batch shape
            ``()`` or ``(L,)``: the prior on w (e.g. ``dist.Normal(0.0, 5.0)``).

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
    #: True if, with a learnt scale, a draw takes g | w, D on the base's grid (then
    #: theta | w, g); False keeps the scale integrated into theta's conditional, as
    #: LatentLaplace does
    moves_w_given_scale = True

    def __init__(self, base=None, w_prior=None):
        if base is None:
            base = GaussianLinear()
        if not isinstance(base, (GaussianLinear, GaussianLinearUnknownNoise,
                                 LearntScaleLinear)):
            raise TypeError(
                "model: a latent w (w=<distribution>) needs GaussianLinear or "
                f"GaussianLinearUnknownNoise, got {type(base).__name__}; GenRankTS "
                "learns w with any posterior"
            )
        self.base = base
        self.w_prior = valid_w_prior(w_prior, None)
        # a learnt-scale base: g (and s) integrated on its grid with theta
        self.learnt = bool(getattr(base, "learnt_scale", False))
        self.known_noise = isinstance(base, GaussianLinear) and not self.learnt
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
        L, d = state.bp.shape
        dtype = state.bp.dtype
        x, y = jnp.asarray(x, dtype), jnp.asarray(y, dtype)
        if x.shape != (L, 2 * d):
            raise ValueError(f"x: expected shape (L, 2d) = ({L}, {2 * d}), got {x.shape}")
        if y.shape != (L,):
            raise ValueError(f"y: expected shape (L,) = ({L},), got {y.shape}")
        valid = jnp.ones((L,), bool) if valid is None else jnp.asarray(valid, bool)
        if valid.shape != (L,):
            raise ValueError(f"valid: expected a (L,) = ({L},) bool array, got {valid.shape}")
        c, p = x[:, :d] - x[:, d:], x[:, d:]  # exact where a and p agree
        inv = 1.0
        if self.known_noise:
            inv = 1.0 / jnp.asarray(self.base.noise_scale, dtype) ** 2
        g = jnp.asarray(self.discount, dtype)
        new = state._replace(
            Scc=g * state.Scc + inv * c[:, :, None] * c[:, None, :],
            Scp=g * state.Scp + inv * c[:, :, None] * p[:, None, :],
            Spp=g * state.Spp + inv * p[:, :, None] * p[:, None, :],
            bc=g * state.bc + inv * (y[:, None] * c),
            bp=g * state.bp + inv * (y[:, None] * p),
            yy=g * state.yy + inv * y * y,
            n=g * state.n + 1.0,
        )

        def pick(n_, o_):
            v = valid.reshape(valid.shape + (1,) * (n_.ndim - 1))
            return jnp.where(v, n_, o_)

        return jax.tree_util.tree_map(pick, new, state)

    def check_rewards(self, y) -> None:
        """Host-side check: finite real rewards within :meth:`reward_bound`."""
        bound, why = self.reward_bound()
        check_reward_support(y, "real", name="rewards", bound=bound, why=why)

    def reward_bound(self, dtype=None) -> tuple[float, str]:
        """The largest reward magnitude taken (``conjugate.reward_bound``):
        ``yy`` sums r^2 (over s^2 for a fixed prior and noise s), so squares in units
        of 1, or of s < 1, bound them (float32: 2^50; r^2 overflows at 1.8e19)."""
        base = self.base
        s = getattr(base, "noise_scale", None)
        if self.known_noise:
            return reward_bound(dtype, square_unit=float(s), over=float(s) ** 2)
        unit = 1.0 if s is None else min(1.0, float(s))
        return reward_bound(dtype, square_unit=unit)

    # ------------------------------------------------------------------ draws
    def draw_w(self, key, state):
        """Every position's w from its collapsed posterior: the inverse CDF of
        :meth:`w_grid` with ``DRAW_NODES`` nodes a pass (two passes: the prior's
        whole range, then the posterior's own coordinates), the log density linear
        in w between nodes.

        Returns:
            ``(w (L,), spread (L,))``: the draws and the grid's robust spread of w
            (half its 25-75 % range, > 0).
        """
        grid, logp = self._w_nodes(state, DRAW_NODES, 2)
        w = self._grid_sample(key, grid, logp, 1)[0]
        lo, hi = self._grid_quantiles(grid, logp, (0.25, 0.75))
        tiny = jnp.finfo(grid.dtype).tiny
        return w, jnp.maximum(0.5 * (hi - lo), tiny)

    def given_w(self, state: LatentWState, w) -> LearntScaleState:
        """A learnt-scale base's state of the design ``a + w p``, w (L,): the sums
        given w (theta | w, D is then the base's posterior)."""
        S, u, _ = jax.vmap(lambda st, wl: self._design(st, wl, scaled=False))(
            self._stats(state), w)
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
        return self._theta_sigma_given_w(key, state, w)[0]

    def _theta_sigma_given_w(self, key, state: LatentWState, w):
        """theta | w (L, d) of a fixed-scale base and the noise sd (L,) drawn with
        it (None where the noise is known)."""
        d = state.bp.shape[1]
        dtype = state.bp.dtype
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
        theta = linalg.sample_per_position(k_theta, mean, C, scale)
        return theta, (None if self.known_noise else scale)

    def theta_scales_given_w(self, key, state, w):
        """theta | w (L, d) and the learnt scales drawn with it, as :meth:`draw` takes
        them (g | w, D on a learnt base's grid, s^2, theta | w, g; NIG: s^2 | w, D):
        ``(theta, scales)``, scales a dict of (L,) arrays, ``"prior_scale"`` (g, as
        the known-w DataTree) and ``"noise_scale"`` (reward units) where learnt."""
        if self.learnt:
            return self._theta_scales_at(*jax.random.split(key), state, w)
        theta, sigma = self._theta_sigma_given_w(key, state, w)
        return theta, ({} if sigma is None else {"noise_scale": sigma})

    def _theta_scales_at(self, k_g, k_t, state, w):
        """:meth:`theta_scales_given_w` of a learnt base: g | w, D (key ``k_g``),
        then s^2 and theta | w, g (key ``k_t``)."""
        base = self.base
        given = self.given_w(state, w)
        tri, _, logw = base._grid_posterior(given)
        log_g = jnp.asarray(base.log_g, w.dtype)[grid_index(k_g, logw)]
        _, eps, gam = base._randomness(k_t, given, (), 0)
        s2 = base._noise(tri, given, log_g, gam)
        scales = {}
        if base.fixed_scale is None:
            scales["prior_scale"] = jnp.exp(log_g)
        if base.learn_noise:
            scales["noise_scale"] = jnp.sqrt(s2) * base._units(given)[2]
        return base._theta(tri, log_g, s2, eps, given), scales

    def draw(self, key, state: LatentWState):
        """One joint draw per position: w from its collapsed posterior
        (:meth:`draw_w`), then theta | w (with a learnt conjugate scale: g | w, D on
        the base's grid, then theta | w, g).

        Returns:
            ``((theta (L, d), w (L,)), state)`` with the draw of w and its spread kept.
        """
        k_w, k_g, k_t = jax.random.split(key, 3)
        w, spread = self.draw_w(k_w, state)
        state = state._replace(w=w, width=spread)
        if self.learnt and self.moves_w_given_scale:  # g | w, D; then theta | w, g
            return (self._theta_scales_at(k_g, k_t, state, w)[0], w), state
        return (self.theta_given_w(k_t, state, w), w), state

    def draw_batch(self, key, state: LatentWState, n: int):
        """n independent draws for a batch of requests (the state is not advanced):
        ``(theta (n, L, d), w (n, L))``."""
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
                   # earlier versions' name of GaussianLinear()'s learnt part
                   "LearntScaleLinear": GaussianLinear}

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
        }

    @classmethod
    def from_config(cls, cfg: dict) -> LatentW:
        """Rebuild from :meth:`config` (only bayesrank's own classes, by name)."""
        base_cls, base_cfg = cls._base_from(cfg)
        return cls(
            base_cls.from_config(base_cfg["config"]),
            prior_from_config(cfg["w_prior"]),  # an older "slice_steps" is ignored
        )
