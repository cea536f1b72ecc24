"""Simulation-based calibration of a per-position posterior model.

Per simulation: theta ~ the model's prior, n lists of the design with rewards from the
model's likelihood, the data folded in with ``model.update`` (the protocol, in order),
then ``draws`` posterior draws by ``model.draw``, and the rank of the true theta among
them per coordinate (position x feature). Conjugate and Laplace models give
independent draws (``thin=1``, ``warmup=0``); an MCMC model's draws come from one chain
started after the data are in ("fresh chain"): ``warmup`` draws are dropped and every
``thin``-th of the rest is kept.

Simulations are ``vmap``ped in batches when the model says it is vmappable
(``model.vmappable``, default True) and run one by one through the same jitted
function otherwise (NUTS: batched trees wait for the longest one).

Example:
    >>> import jax
    >>> from bayesrank.posteriors import GaussianLinear
    >>> res = run_sbc(jax.random.key(0), GaussianLinear(), n_sims=8, draws=19)
    >>> res.ranks.shape
    (8, 10)
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._validate import check_int
from bayesrank.posteriors.base import update_many
from bayesrank.studies.calibration.generative import (
    Design,
    Generative,
    design_features,
    generative_for,
)
from bayesrank.studies.calibration.ranks import rank_of, thin

__all__ = ["SBCResult", "ScaledDraws", "lag1_autocorrelation", "posterior_draws",
           "run_sbc"]


class SBCResult(NamedTuple):
    """Ranks of one SBC study."""

    ranks: np.ndarray  # (N, L * p) int, rank of the truth among M draws
    M: int  # draws each rank is taken among
    theta: np.ndarray  # (N, L, p) the true thetas
    lag1: float  # mean lag-1 autocorrelation of the kept draws (0 if independent)


class ScaledDraws:
    """A deliberately broken model: draws pulled towards (or pushed from) the mean.

    ``draw`` returns ``mean + factor * (theta - mean)``: with an exact model, the
    posterior sd scaled by ``factor``. Used to show the test has power.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> from bayesrank.posteriors import GaussianLinear
        >>> model = GaussianLinear()
        >>> wide = ScaledDraws(model, 2.0)
        >>> state = wide.init(1, 2)
        >>> key = jax.random.key(0)
        >>> theta, _ = model.draw(key, state)
        >>> scaled, _ = wide.draw(key, state)
        >>> mean = model.mean(state)
        >>> bool(jnp.allclose(scaled - mean, 2.0 * (theta - mean)))
        True
    """

    def __init__(self, model, factor: float):
        if not np.isfinite(factor) or factor <= 0:
            raise ValueError(f"factor: expected a finite number > 0, got {factor!r}")
        self.model, self.factor = model, float(factor)
        self.link = model.link
        self.vmappable = getattr(model, "vmappable", True)
        if hasattr(model, "draws_at_once"):  # scale those draws too
            self.draws_at_once = self._scaled_at_once

    def __getattr__(self, name):
        return getattr(self.model, name)

    def init(self, L, p):
        """The wrapped model's prior state."""
        return self.model.init(L, p)

    def update(self, state, x, y, valid=None):
        """The wrapped model's update."""
        return self.model.update(state, x, y, valid)

    def draw(self, key, state):
        """A draw of the wrapped model, moved ``factor`` times as far from the mean."""
        theta, state = self.model.draw(key, state)
        m = self.model.mean(state)
        return m + self.factor * (theta - m), state

    def _scaled_at_once(self, key, state, n: int):
        m = self.model.mean(state)
        return m + self.factor * (self.model.draws_at_once(key, state, n) - m)


def lag1_autocorrelation(draws):
    """Mean over coordinates of the lag-1 autocorrelation of a chain: draws (M, ...)."""
    d = draws - jnp.mean(draws, axis=0)
    num = jnp.sum(d[1:] * d[:-1], axis=0)
    den = jnp.sum(d * d, axis=0)
    return jnp.mean(jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), 0.0))


def posterior_draws(key, model, state, *, draws: int, thin_every: int = 1,
                    warmup: int = 0):
    """``draws`` posterior draws through ``model.draw`` (pure; jittable).

    Runs ``warmup + draws * thin_every`` draws in a ``lax.scan`` and keeps every
    ``thin_every``-th after the warm-up. A model with independent draws may provide
    ``draws_at_once(key, state, n) -> (n, L, p)`` (e.g. sharing one quadrature grid);
    it is used when there is no warm-up and no thinning.

    Returns:
        (draws, L, p).
    """
    if thin_every == 1 and warmup == 0 and hasattr(model, "draws_at_once"):
        return model.draws_at_once(key, state, draws)
    total = warmup + draws * thin_every

    def body(s, k):
        theta, s = model.draw(k, s)
        return s, theta

    _, thetas = jax.lax.scan(body, state, jax.random.split(key, total))
    return thin(thetas, thin_every, skip=warmup)


def _refuse_bad_counts(**kw):
    for name, v in kw.items():
        low = 0 if name == "warmup" else 1
        check_int(v, name, low=low)


def run_sbc(
    key,
    model,
    *,
    generative: Generative | None = None,
    design: Design = Design(),
    n_obs: int = 50,
    n_sims: int = 200,
    draws: int = 99,
    thin_every: int = 1,
    warmup: int = 0,
    batch: int = 100,
) -> SBCResult:
    """SBC ranks of ``model`` over ``n_sims`` simulations.

    Args:
        key: a JAX PRNG key.
        model: a per-position posterior (the protocol of
            :mod:`bayesrank.posteriors.base`).
        generative: the simulated truth (default :func:`generative_for` of
            ``model``: the model's own prior and likelihood; pass another to
            misspecify on purpose).
        design: the feature design.
        n_obs: impressions per simulation.
        n_sims: simulations N.
        draws: posterior draws M per simulation (ranks lie in 0..M).
        thin_every, warmup: thinning and warm-up of MCMC draws.
        batch: simulations per vmapped batch (vmappable models).

    Returns:
        SBCResult.

    Example:
        >>> import jax
        >>> from bayesrank.posteriors import GaussianLinear
        >>> from bayesrank.studies.calibration.generative import Design
        >>> res = run_sbc(jax.random.key(0), GaussianLinear(), n_obs=5, n_sims=4,
        ...               draws=9, design=Design(K=4, L=2, d=2))
        >>> res.ranks.shape, res.M, res.theta.shape  # ranks: (N, L * p)
        ((4, 4), 9, (4, 2, 2))
        >>> bool(((res.ranks >= 0) & (res.ranks <= 9)).all())
        True
    """
    _refuse_bad_counts(n_obs=n_obs, n_sims=n_sims, draws=draws, thin_every=thin_every,
                  warmup=warmup, batch=batch)
    gen = generative_for(model) if generative is None else generative
    L, p = design.L, design.d

    def one(k):
        kp, kx, ky, kd, kr = jax.random.split(k, 5)
        params = gen.prior(kp, L, p)
        x = (gen.features or design_features)(kx, n_obs, design)
        y = gen.rewards(ky, params, x)
        state = update_many(model, model.init(L, p), x, y)
        d = posterior_draws(kd, model, state, draws=draws, thin_every=thin_every,
                            warmup=warmup)
        theta = params["theta"].astype(d.dtype)
        return rank_of(kr, theta, d).reshape(-1), theta, lag1_autocorrelation(d)

    keys = jax.random.split(key, n_sims)
    if getattr(model, "vmappable", True):
        f = jax.jit(jax.vmap(one))
        parts = [f(keys[i : i + batch]) for i in range(0, n_sims, batch)]
        ranks, theta, lag1 = (np.concatenate([np.asarray(a[j]) for a in parts])
                              for j in range(3))
    else:
        f = jax.jit(one)
        out = [f(k) for k in keys]
        ranks, theta, lag1 = (np.stack([np.asarray(o[j]) for o in out])
                              for j in range(3))
    return SBCResult(ranks.astype(np.int64), draws, theta, float(np.mean(lag1)))
