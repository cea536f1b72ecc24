"""Simulation-based calibration of the learnt-scale model (``GaussianLinear()``).

The simulated truth per simulation: ``g ~`` the model's hyperprior, the noise sd s
(1 where the model learns it, else the model's number), ``theta^l ~ N(m0, g^2 s^2
I)`` and ``y = <theta^l, x> + N(0, s^2)``. With s learnt under Jeffreys' prior
(improper, the right Haar measure of the scale group) the truth draws s = 1: the
model is scale-equivariant, so its posterior ranks have the same law at every s
(the 1 / s prior gives credible intervals with exact frequentist coverage for
scale-equivariant quantities).

:class:`ScaleDraws` adapts a :class:`~bayesrank.posteriors.LearntScaleLinear` to the
SBC protocol: a draw is ``(theta^l, log g_l[, log s_l])`` per position, so the scales
are ranked like any coordinate of theta. It adapts a
:class:`~bayesrank.posteriors.LearntScaleLaplace` (``LaplaceGLM(prior_scale=None)``)
the same way, with ``(theta^l, log tau_l)``: the truth draws tau from the hyperprior,
``theta^l ~ N(0, tau^2 I)`` and the link's Bernoulli or Poisson rewards
(:func:`laplace_learnt_generative`).

Example:
    >>> import jax
    >>> from bayesrank.posteriors import GaussianLinear
    >>> from bayesrank.studies.calibration.sbc import run_sbc
    >>> m = ScaleDraws(GaussianLinear())
    >>> res = run_sbc(jax.random.key(0), m, n_sims=4, draws=9, n_obs=10)
    >>> res.ranks.shape  # 4 simulations x (L = 2 positions x (d = 5 + log g + log s))
    (4, 14)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from bayesrank.studies.calibration.generative import (
    Generative,
    laplace_learnt_generative,
    learnt_generative,
)

__all__ = ["ScaleDraws", "laplace_learnt_generative", "learnt_generative"]


class ScaleDraws:
    """A :class:`~bayesrank.posteriors.LearntScaleLinear` seen by SBC: draws
    ``(theta, log g[, log s])`` stacked as (L, p + 1 or p + 2); a
    :class:`~bayesrank.posteriors.LearntScaleLaplace`: ``(theta, log tau)``."""

    def __init__(self, model):
        if not getattr(model, "learnt_scale", False):
            raise TypeError(
                "model: expected a LearntScaleLinear or a LearntScaleLaplace (a "
                "GaussianLinear or LaplaceGLM with a learnt scale holds one), got "
                f"{model!r}")
        self.model = model
        self.link = model.link
        self.vmappable = True

    def generative(self) -> Generative:
        """The model's own truth, with the scales among the ranked coordinates."""
        if self.model.link.name != "identity":  # tau on a Laplace grid
            return laplace_learnt_generative(self.model)
        return learnt_generative(self.model, with_scales=True)

    def init(self, L, p):
        return self.model.init(L, p)

    def update(self, state, x, y, valid=None):
        return self.model.update(state, x, y, valid)

    def draws_at_once(self, key, state, n: int):
        """n independent draws (n, L, p + 1 or p + 2)."""
        if self.model.link.name != "identity":  # tau on a Laplace grid
            theta, tau = self.model.draw_scales(key, state, n)
            return jnp.concatenate([theta, jnp.log(tau)[..., None]], -1)
        theta, g, s = self.model.draw_scales(key, state, n)
        cols = [theta, jnp.log(g)[..., None]]
        if self.model.learn_noise:
            cols.append(jnp.log(s)[..., None])
        return jnp.concatenate(cols, -1)

    def draw(self, key, state):
        """One draw (L, p + k) and the state unchanged."""
        return self.draws_at_once(key, state, 1)[0], state

    def mean(self, state):
        """(L, p + k): posterior means of theta, log g (and log s), from 2,000 draws."""
        return jnp.mean(self.draws_at_once(jax.random.key(0), state, 2000), axis=0)
