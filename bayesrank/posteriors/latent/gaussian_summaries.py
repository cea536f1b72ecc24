"""The exact summaries of :class:`~bayesrank.posteriors.LatentW`: the collapsed
posterior of w on an adaptive grid, and what it gives (means, sds, quantiles, i.i.d.
draws, the ArviZ DataTree).

:meth:`LatentWSummaries.w_grid` evaluates the collapsed density on an adaptive grid (a
sinh-spaced search of the prior's whole range, centred on the data's estimate of w and
on the last draw, then levels in the posterior's own coordinates), i.e. quadrature to
grid precision; the draws use the same grid with fewer nodes. The class is a mixin: it reads the model's collapsed
density (``log_density``, ``_relaxed_w``, ``_conditional``, ``_stats``,
``_theta_prior``, ``_prior_range``), its exact conditional draw (``theta_given_w``,
``given_w``) and its settings (``learnt``, ``base``), all defined by
:class:`~bayesrank.posteriors.latent.gaussian.LatentW`.

Example:
    >>> import jax.numpy as jnp, numpyro.distributions as dist
    >>> from bayesrank.posteriors import GaussianLinear, LatentW
    >>> model = LatentW(GaussianLinear(), dist.Normal(0.0, 5.0))
    >>> grid, wts = model.w_grid(model.init(L=2, p=4), nodes=64, levels=1)
    >>> grid.shape, bool(jnp.allclose(wts.sum(1), 1.0))
    ((2, 64), True)
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._static import jit_method
from bayesrank._validate import check_int, check_position
from bayesrank.posteriors import linalg
from bayesrank.posteriors.datatree import make_datatree
from bayesrank.posteriors.hyperprior import log_density

__all__ = ["GRID", "LEVELS", "SINH_SCALE", "LatentWSummaries"]

#: Grid nodes per zoom level and zoom levels of :meth:`LatentW.w_grid`.
GRID = 512
LEVELS = 3
#: The sinh grid's scale near its centre (w = centre + SINH_SCALE sinh(t)): nodes are
#: about this fine at the data's estimate of w and a fixed fraction of the distance
#: away from it, so 512 nodes span a prior range of 1e7 and still resolve sd 0.05.
SINH_SCALE = 1e-2
#: ``_draw_exact_scales`` compiled once per model configuration and number of draws
#: (op by op, 4,000 draws of a learnt scale's grid took 90 s, compiled 10 s).
_DRAW_EXACT_SCALES = jit_method("_draw_exact_scales", static_argnums=(3,))


class LatentWSummaries:
    """Exact summaries of a latent-w posterior (mixed into
    :class:`~bayesrank.posteriors.latent.gaussian.LatentW`; see the module docstring for
    what it reads from the model)."""

    @staticmethod
    def _sinh_grid(centre, a, lo, hi, nodes: int):
        """(L, nodes) nodes ``centre + a sinh(t)``, t uniform, spanning [lo, hi]:
        fine (about ``a`` apart over ``nodes``) near the centre, geometric away."""
        dtype = lo.dtype
        t = jnp.linspace(0.0, 1.0, nodes, dtype=dtype)[None, :]
        t0, t1 = jnp.arcsinh((lo - centre) / a), jnp.arcsinh((hi - centre) / a)
        t = t0[:, None] + (t1 - t0)[:, None] * t
        grid = centre[:, None] + a[:, None] * jnp.sinh(t)
        return jnp.clip(grid, lo[:, None], hi[:, None])

    @staticmethod
    def _intervals(grid, logp):
        """The posterior between sorted nodes (L, G), its log density ``logp``
        linear in w inside each interval (exact for exponential pieces, close for
        smooth ones): ``(mass (L, G-1) normalised, slope d (L, G-1))``, d the
        interval's rise in log density."""
        top = jnp.max(logp, axis=1, keepdims=True)
        lp = logp - jnp.where(jnp.isfinite(top), top, 0.0)
        a, b = lp[:, :-1], lp[:, 1:]
        both = jnp.isfinite(a) & jnp.isfinite(b)
        d = jnp.where(both, b - a, 0.0)
        ad = jnp.abs(d)
        # e^max(a, b) (1 - e^-|d|) / |d|: the mean of the exponential over the interval
        mean = jnp.exp(jnp.maximum(a, b)) * jnp.where(
            ad > 1e-4, -jnp.expm1(-ad) / jnp.where(ad > 1e-4, ad, 1.0), 1.0 - 0.5 * ad)
        # an end outside the support: the trapezoid's half of the other end
        mean = jnp.where(both, mean, 0.5 * (jnp.exp(a) + jnp.exp(b)))
        mass = jnp.diff(grid, axis=1) * mean
        return mass / jnp.sum(mass, axis=1, keepdims=True), jnp.clip(d, -80.0, 80.0)

    @staticmethod
    def _invert(grid, mass, d, u):
        """Points (L, k) at cumulative probabilities ``u (L, k)`` of the interval
        representation (:meth:`_intervals`): the interval, then the inverse CDF of
        its exponential piece."""
        cum = jnp.cumsum(mass, axis=1)
        k = jnp.minimum(jax.vmap(lambda c, q: jnp.searchsorted(c, q, side="right"))(
            cum, u), mass.shape[1] - 1)
        pick = lambda x, i: jnp.take_along_axis(x, i, axis=1)  # noqa: E731
        m, dk = pick(mass, k), pick(d, k)
        r = jnp.clip((u - (pick(cum, k) - m)) / jnp.where(m > 0, m, 1.0), 0.0, 1.0)
        small = jnp.abs(dk) < 1e-4
        frac = jnp.where(small, r, jnp.log1p(r * jnp.expm1(dk)) / jnp.where(small, 1.0, dk))
        left = pick(grid, k)
        return left + jnp.clip(frac, 0.0, 1.0) * (pick(grid, k + 1) - left)

    @staticmethod
    def _node_weights(mass):
        """Normalised weights per node (L, G): each interval's mass shared by its two
        ends (the moments' quadrature)."""
        z = jnp.zeros_like(mass[:, :1])
        wts = 0.5 * (jnp.concatenate([z, mass], axis=1) + jnp.concatenate([mass, z], 1))
        return wts / jnp.sum(wts, axis=1, keepdims=True)

    def _grid_quantiles(self, grid, logp, probs):
        """(len(probs), L) quantiles of w from :meth:`_w_nodes`'s output."""
        mass, d = self._intervals(grid, logp)
        u = jnp.broadcast_to(jnp.asarray(probs, grid.dtype), (grid.shape[0], len(probs)))
        return self._invert(grid, mass, d, u).T

    def _grid_sample(self, key, grid, logp, n: int):
        """(n, L) independent draws from :meth:`_w_nodes`'s output (inverse CDF)."""
        mass, d = self._intervals(grid, logp)
        u = jax.random.uniform(key, (grid.shape[0], n), grid.dtype)
        return self._invert(grid, mass, d, u).T

    def _w_nodes(self, state, nodes: int, levels: int):
        """``(w (L, G), log density (L, G))``: :meth:`w_grid`'s sorted nodes and the
        unnormalised log posterior there."""
        check_int(nodes, "nodes", low=8)
        check_int(levels, "levels", low=1)
        L = state.w.shape[0]
        dtype = state.bp.dtype
        lo, hi = self._prior_range(L, dtype)
        d = state.bp.shape[1]
        m0, P0 = self._theta_prior(d, dtype)
        rel = jax.vmap(lambda *st: self._relaxed_w(st, m0, P0))(*self._stats(state))
        mid = 0.5 * (lo + hi)
        centres = [jnp.clip(jnp.where(jnp.isfinite(c), c, mid), lo, hi)
                   for c in (rel, state.w.astype(dtype))]
        half = nodes // 2
        a = jnp.full((L,), SINH_SCALE, dtype)
        grid = jnp.sort(jnp.concatenate(
            [self._sinh_grid(c, a, lo, hi, n) for c, n in zip(centres, (half, nodes - half))],
            axis=1), axis=1)
        logp = self.log_density(state, grid.T).T
        for _ in range(levels - 1):
            mass, slope = self._intervals(grid, logp)
            G = grid.shape[1]
            mode = jnp.take_along_axis(grid, jnp.argmax(logp, axis=1)[:, None], axis=1)[:, 0]
            # all but 1e-10 of the mass each side (counted from its own end: 1 - 1e-10
            # is 1 in float32), an interval more each side
            k_lo = jnp.minimum(jnp.sum(jnp.cumsum(mass, axis=1) <= 1e-10, axis=1), G - 2)
            k_hi = jnp.maximum(G - 2 - jnp.sum(
                jnp.cumsum(mass[:, ::-1], axis=1) <= 1e-10, axis=1), 0)
            pick = lambda x, k: jnp.take_along_axis(x, k[:, None], axis=1)[:, 0]  # noqa: E731
            r_lo = jnp.maximum(lo, 2.0 * pick(grid, k_lo) - pick(grid, k_lo + 1))
            r_hi = jnp.minimum(hi, 2.0 * pick(grid, k_hi + 1) - pick(grid, k_hi))
            q = self._invert(grid, mass, slope, jnp.broadcast_to(
                jnp.asarray((0.25, 0.75), dtype), (L, 2))).T
            floor = 64.0 * jnp.finfo(dtype).eps * (jnp.abs(mode) + 1.0)
            spread = jnp.maximum(q[1] - q[0], floor)
            # half the nodes where the mass is (at the last level's quantiles 0.1 %
            # to 99.9 %), half sinh-spaced about the mode out to the whole range (the
            # tails, geometrically)
            u = jnp.linspace(1e-3, 1.0 - 1e-3, half, dtype=dtype)
            core = self._invert(grid, mass, slope, jnp.broadcast_to(u, (L, half)))
            tails = self._sinh_grid(jnp.clip(mode, r_lo, r_hi), spread, r_lo, r_hi,
                                    nodes - half)
            grid = jnp.sort(jnp.concatenate([core, tails], axis=1), axis=1)
            logp = self.log_density(state, grid.T).T
        return grid, logp

    def w_grid(self, state, *, nodes: int = GRID, levels: int = LEVELS):
        """The collapsed posterior of w on an adaptive grid, per position.

        Level 1 searches the prior's whole range (its 1e-6 and 1 - 1e-6 quantiles,
        or mean +- 10 sd): two sinh-spaced grids of ``nodes / 2`` nodes, one centred
        on the data's own estimate of w (the 2d relaxation's, :meth:`_relaxed_w`),
        one on the last draw (``state.w``), fine near their centres and geometric
        away, so a vague or heavy-tailed prior (``Normal(0, 1e6)``,
        ``Cauchy(0, 1e4)``) does not hide a narrow posterior between nodes. Each
        further level is a grid in the posterior's own coordinates: half its nodes
        at the last level's quantiles 0.1 % to 99.9 %, half sinh-spaced about its mode
        (scaled by its 25-75 % range) out to its 1e-10 and 1 - 1e-10 quantiles (an
        interval more each side). Between nodes the log density is taken linear in
        w (exact for exponential pieces), which keeps the geometric intervals of
        polynomial tails (a learnt scale under a vague prior) accurate.

        Returns:
            ``(w (L, nodes), weights (L, nodes))``: the last level's sorted nodes and
            their normalised weights (each interval's mass shared by its two ends).
        """
        grid, logp = self._w_nodes(state, nodes, levels)
        return grid, self._node_weights(self._intervals(grid, logp)[0])

    def w_mean(self, state):
        """(L,) the posterior mean of w, by quadrature on :meth:`w_grid`.

        Compiled once per model configuration; it may be called inside a caller's
        ``jit``/``vmap`` too (the calibration study does).
        """
        return self.jitted("_w_mean")(state)

    def _w_mean(self, state):
        """(L,) the posterior mean of w (quadrature on :meth:`w_grid`)."""
        grid, wts = self.w_grid(state)
        return jnp.sum(grid * wts, axis=1)

    def w_sd(self, state):
        """(L,) the posterior sd of w (jitted; see :meth:`_w_sd`)."""
        return self.jitted("_w_sd")(state)

    def _w_sd(self, state):
        """(L,) the posterior standard deviation of w."""
        grid, wts = self.w_grid(state)
        mean = jnp.sum(grid * wts, axis=1)
        return jnp.sqrt(jnp.sum(wts * (grid - mean[:, None]) ** 2, axis=1))

    def w_quantiles(self, state, probs=(0.05, 0.95)):
        """``(len(probs), L)`` quantiles of w per position (see :meth:`_w_quantiles`)."""
        return self.jitted("_w_quantiles")(state, tuple(float(q) for q in probs))

    def _w_quantiles(self, state, probs=(0.05, 0.95)):
        """``(len(probs), L)`` quantiles of w per position (the inverse CDF of
        :meth:`w_grid`'s interval representation)."""
        return self._grid_quantiles(*self._w_nodes(state, GRID, LEVELS), probs)

    def mean(self, state):
        """(L, d) the posterior mean of theta, ``E_w[P(w)^-1 b(w)]`` by quadrature on
        :meth:`w_grid`.

        Compiled once per model configuration; it may be called inside a caller's
        ``jit``/``vmap`` too (the calibration study does).
        """
        return self.jitted("_mean")(state)

    def _mean(self, state):
        """(L, d) the posterior mean of theta, ``E_w[P(w)^-1 b(w)]`` by quadrature."""
        grid, wts = self.w_grid(state)
        d = state.bp.shape[1]
        m0, P0 = self._theta_prior(d, state.bp.dtype)
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

    def sample_w(self, key, state, n: int):
        """(n, L) independent exact draws of w (the inverse CDF of :meth:`w_grid`'s
        interval representation)."""
        return self._grid_sample(key, *self._w_nodes(state, GRID, LEVELS), n)

    def draw_exact(self, key, state, n: int):
        """n independent exact draws per position: w from its collapsed posterior
        (:meth:`sample_w`), then theta | w. Unlike :meth:`draw_batch` (chains started
        at the current w), these are i.i.d. posterior draws, for intervals and
        diagnostics.

        Returns:
            ``(theta (n, L, d), w (n, L))``.
        """
        k_w, k_t = jax.random.split(key)
        ws = self.sample_w(k_w, state, n)
        thetas = jax.vmap(lambda k, w: self.theta_given_w(k, state, w))(
            jax.random.split(k_t, n), ws)
        return thetas, ws

    def draw_exact_scales(self, key, state, n: int):
        """n independent exact draws per position with the learnt scales: w from its
        collapsed posterior (:meth:`sample_w`), then the scales and theta | w as a
        draw takes them (``theta_scales_given_w``: g | w, D on a learnt conjugate
        scale's grid, s^2 | w, g, D, theta | w, g, s; tau_k | w, D for a learnt
        Laplace scale).

        Returns:
            ``(theta (n, L, d), w (n, L), scales)``, ``scales`` a dict of (n, L)
            arrays: ``"prior_scale"``, ``"noise_scale"`` where learnt.
        """
        return _DRAW_EXACT_SCALES(self, key, state, int(n))

    def _draw_exact_scales(self, key, state, n: int):
        """:meth:`draw_exact_scales`, traced (jitted once per configuration and n)."""
        k_w, k_t = jax.random.split(key)
        ws = self.sample_w(k_w, state, n)
        thetas, scales = jax.vmap(lambda k, w: self.theta_scales_given_w(k, state, w))(
            jax.random.split(k_t, n), ws)
        return thetas, ws, scales

    def _scales_log_prior(self, variables: dict) -> dict:
        """Host side: the log prior terms of theta and of the drawn scales, from the
        DataTree's ``variables`` (theta (chain, draw, d), prior_scale and
        noise_scale (chain, draw) where learnt), as the known-w models' DataTrees
        write them: g's hyperprior, Jeffreys' ``-log s`` (improper) and ``log
        N(theta | m0, g^2 s^2 I)`` (a learnt conjugate scale, no per-coordinate
        shape); ``log InvGamma(s^2 | a0, b0)`` and ``log N(theta | m0, s^2
        P0^-1)`` (Normal-Inverse-Gamma); ``log N(theta | m0, P0^-1)`` (fixed)."""
        theta = variables["theta"]
        d = theta.shape[-1]
        out = {}
        if self.learnt:
            base = self.base
            g, s = variables.get("prior_scale"), variables.get("noise_scale")
            if g is not None:
                out["prior_scale"] = log_density(base.hyperprior, g)
            if s is not None:
                out["noise_scale"] = -np.log(s)
            if base.shape is None:  # theta | g, s ~ N(m0, (g s)^2 I)
                sd = ((math.exp(float(base.log_g[0])) if g is None else g)
                      * (float(base.noise_scale) if s is None else s))
                m0 = np.broadcast_to(np.asarray(base.prior_mean, float), (d,))
                out["theta"] = (-d * np.log(math.sqrt(2 * math.pi) * sd)
                                - 0.5 * np.sum((theta - m0) ** 2, -1) / sd**2)
            return out
        m0, P0 = (np.asarray(a, float)
                  for a in self._theta_prior(d, jnp.result_type(float)))
        C0 = np.linalg.cholesky(P0)
        r = (theta - m0) @ C0
        s2 = 1.0
        if not self.known_noise:  # theta | s ~ N(m0, s^2 P0^-1), s^2 ~ InvGamma(a0, b0)
            s2 = variables["noise_scale"] ** 2
            a0, b0 = float(self.base.a0), float(self.base.b0)
            out["noise_scale"] = (a0 * math.log(b0) - math.lgamma(a0)
                                  - (a0 + 1.0) * np.log(s2) - b0 / s2)
        out["theta"] = (-0.5 * d * np.log(2 * math.pi * s2)
                        + np.sum(np.log(np.diag(C0))) - 0.5 * np.sum(r * r, -1) / s2)
        return out

    # ------------------------------------------------------------ diagnostics
    def to_datatree(self, state, position: int, *, key, data=None,
                    draws: int = 1000, chains: int = 4):
        """Exact joint draws of (theta, w) and the learnt scales at one position as
        an ArviZ DataTree.

        w is drawn from its collapsed posterior on :meth:`w_grid`, then the scales
        and theta | w exactly (:meth:`draw_exact_scales`). ``data`` is accepted for
        the common protocol (the pair features and rewards); the groups are
        posterior (theta, w, and ``prior_scale`` / ``noise_scale`` where learnt,
        with the known-w models' meaning and units: g, theta's prior sd over the
        noise sd, or tau for a Laplace GLM; the noise sd in reward units),
        sample_stats and log_prior (w's, theta's and the scales' terms).
        """
        L = state.w.shape[0]
        check_position(position, L)
        check_int(draws, "draws", low=1)
        check_int(chains, "chains", low=1)
        del data
        n = int(draws) * int(chains)
        thetas, ws, scales = self.draw_exact_scales(key, state, n)
        w_pos = np.asarray(ws[:, position], float).reshape(chains, draws)
        th = np.asarray(thetas[:, position], float).reshape(chains, draws, -1)
        variables = {"theta": th, "w": w_pos}
        for name in ("prior_scale", "noise_scale"):
            if name in scales:
                variables[name] = np.asarray(scales[name][:, position], float).reshape(
                    chains, draws)
        lp_w = np.asarray(
            self.log_prior(jnp.broadcast_to(jnp.asarray(w_pos)[..., None],
                                            w_pos.shape + (L,)))[..., position], float)
        log_prior = {"w": lp_w, **self._scales_log_prior(variables)}
        return make_datatree(
            variables,
            log_prior=log_prior,
            attrs={"model": self.label(), "position": position},
        )
