"""The exact summaries of :class:`~bayesrank.posteriors.LatentW`: the collapsed
posterior of w on an adaptive grid, and what it gives (means, sds, quantiles, i.i.d.
draws, the ArviZ DataTree).

:meth:`LatentWSummaries.w_grid` evaluates the collapsed density on an adaptive grid (a
sinh-spaced pass over the prior's whole range, centred on the data's estimate of w,
then levels that zoom onto mean +- 12 sd), i.e. quadrature to grid precision,
independent of the slice chain. The class is a mixin: it reads the model's collapsed
density (``log_density``, ``_relaxed_w``, ``_conditional``, ``_stats``,
``_theta_prior``, ``_prior_range``), its exact conditional draw (``theta_given_w``,
``given_w``) and its settings (``learnt``, ``base``), all defined by
:class:`~bayesrank.posteriors.latent_w.LatentW`.

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

from bayesrank._validate import check_int, check_position
from bayesrank.posteriors import linalg
from bayesrank.posteriors.datatree import make_datatree

__all__ = ["GRID", "LEVELS", "SINH_SCALE", "LatentWSummaries"]

#: Grid nodes per zoom level and zoom levels of :meth:`LatentW.w_grid`.
GRID = 512
LEVELS = 3
#: The sinh grid's scale near its centre (w = centre + SINH_SCALE sinh(t)): nodes are
#: about this fine at the data's estimate of w and a fixed fraction of the distance
#: away from it, so 512 nodes span a prior range of 1e7 and still resolve sd 0.05.
SINH_SCALE = 1e-2


class LatentWSummaries:
    """Exact summaries of a latent-w posterior (mixed into
    :class:`~bayesrank.posteriors.latent_w.LatentW`; see the module docstring for
    what it reads from the model)."""

    def _locate(self, state, lo, hi, nodes: int):
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

    def w_grid(self, state, *, nodes: int = GRID, levels: int = LEVELS):
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

    def sample_w(self, key, state, n: int):
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

    # ------------------------------------------------------------ diagnostics
    def to_datatree(self, state, position: int, *, key, data=None,
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
