"""The exact posterior of :class:`~bayesrank.posteriors.conjugate.learnt_scale.LearntScaleLinear` at one
position as an ArviZ DataTree: i.i.d. draws of (g, s, theta) on the host (NumPy), from
the same grid terms as the compiled draws.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from bayesrank.posteriors import GaussianLinear
    >>> model = GaussianLinear()                         # a LearntScaleLinear
    >>> state = model.update(model.init(L=1, p=2), jnp.ones((1, 2)), jnp.ones(1))
    >>> dt = learnt_scale_datatree(model, state, 0, key=jax.random.key(0), draws=50,
    ...                            chains=2)
    >>> sorted(dt.posterior.data_vars)
    ['noise_scale', 'prior_scale', 'theta']
"""

from __future__ import annotations

import math

import numpy as np

from bayesrank.posteriors.conjugate.linear import _ConjugateLinear
from bayesrank.posteriors.conjugate.scale_grid import grid_terms
from bayesrank.posteriors.datatree import make_datatree
from bayesrank.posteriors.host_sampler import host_rng
from bayesrank.posteriors.hyperprior import log_density

__all__ = ["learnt_scale_datatree"]


class _Shim:
    """What the shared checks of :mod:`~bayesrank.posteriors.conjugate.gaussian` read from a state: ``b`` (its
    shape and dtype are u's) and ``n``."""

    def __init__(self, state):
        self.b = state.u
        self.n = state.n


def learnt_scale_datatree(model, state, position: int, *, key, data=None,
                          draws: int = 1000, chains: int = 4):
    """``model.to_datatree(state, position, ...)`` of a
    :class:`~bayesrank.posteriors.conjugate.learnt_scale.LearntScaleLinear` (see its docstring)."""
    shim = _Shim(state)
    pos = _ConjugateLinear._valid_position(shim, position)
    draws, chains = _ConjugateLinear._valid_draws(draws, chains)
    data = _ConjugateLinear._valid_data(data, shim, pos)
    N = chains * draws
    S, u, q, n = (np.asarray(a, float)[pos] for a in (
        state.S + state.S_lo, state.u + state.u_lo, state.q + state.q_lo, state.n))
    c = float(np.asarray(model._unit(state))[pos])  # the sums' unit: to the rewards'
    u, q = u * c, q * c * c  # (float64: no overflow)
    p = u.shape[0]
    m0 = np.broadcast_to(np.asarray(model.prior_mean, float), (p,))
    sf = 1.0 if model.noise_scale is None else float(model.noise_scale)
    out = float(np.asarray(model._units(state)[2])[pos])
    U, _, z, denom, beta, loglik = grid_terms(
        S, u, q, n, m0, model.log_g, model.learn_noise, sf, xp=np, A=model.shape)
    logits = model.log_w0 + loglik
    w = np.exp(logits - np.logaddexp.reduce(logits))
    rng = host_rng(key)
    k = rng.choice(len(w), size=N, p=w / w.sum())
    if model.learn_noise:
        s2 = (0.5 * beta[k] / rng.gamma(0.5 * n, 1.0, N) if n > 0
              else np.full(N, float(np.asarray(model._fallback_var(state)))
                           * (out / sf) ** 2))
    else:
        s2 = np.ones(N)
    eps = rng.standard_normal((N, p))
    den = denom[k]
    A = np.eye(p) if model.shape is None else model.shape
    Sw = A.T @ S @ A
    P = Sw[None] + np.exp(-2.0 * model.log_g[k])[:, None, None] * np.eye(p)[None]
    C = np.linalg.cholesky(P)  # the spread as in _theta: no eigenvector signs
    spread = np.linalg.solve(np.swapaxes(C, -1, -2), eps[..., None])[..., 0]
    zeta = (z / den) @ U.T + np.sqrt(s2)[:, None] * spread
    theta = m0 + sf * zeta @ A.T
    g = np.exp(model.log_g[k])
    sd = g * np.sqrt(s2) * sf  # theta's prior sd (in units of A) in reward units
    lp_theta = (-p * np.log(np.sqrt(2 * math.pi) * sd)
                - np.sum(np.log(np.abs(np.diag(A))))
                - 0.5 * np.sum(zeta**2, -1) * sf**2 / sd**2)
    variables = {"theta": theta.reshape(chains, draws, p)}
    log_prior = {"theta": lp_theta.reshape(chains, draws)}
    if model.fixed_scale is None:
        variables["prior_scale"] = g.reshape(chains, draws)
        log_prior["prior_scale"] = log_density(model.hyperprior, g).reshape(chains, draws)
    if model.learn_noise:
        variables["noise_scale"] = np.sqrt(s2).reshape(chains, draws)
        log_prior["noise_scale"] = -0.5 * np.log(s2).reshape(chains, draws)
    ll = obs = const = None
    if data is not None and data[0].shape[0] > 0:
        X, y = data
        resid = y - theta.reshape(chains, draws, p) @ X.T
        v = (s2 * sf * sf).reshape(chains, draws, 1)
        ll = -0.5 * np.log(2 * math.pi * v) - 0.5 * resid**2 / v
        obs, const = y, {"X": X}
    return make_datatree(
        variables, log_likelihood=ll, log_prior=log_prior, observed=obs,
        constant_data=const,
        attrs={"model": "GaussianLinear (learnt scales)", "position": pos,
               **_ConjugateLinear._data_attrs(data, shim, pos)})

