"""Estimates: what a policy scores lists with, read from its per-position posterior.

* :class:`Thompson`: one draw of theta per position per round (RankTS);
* :class:`Optimistic`: the posterior mean (``model.refresh`` first, so MCMC chains
  advance and the mean is current) plus a confidence width per position (the UCB
  family). The width reads the Gram factor and log det from the posterior's own state
  (``model.gram``): one copy of every matrix, for the identity link, where the
  posterior precision of the default model *is* ``V = lam I + sum x x^T``. Models
  without a Gaussian precision (NUTS), and every non-identity link, keep the Gram
  factor of the design matrix ``V = lam I + sum x x^T`` in the estimate's own state:
  Lemma 3's confidence set is an ellipsoid in that V (not in the Laplace Hessian,
  whose weights f'(eta) would shrink it).
  A posterior that learns the reward's scale (``GaussianLinear()``, which has a
  ``noise_sd``) has no such precision in reward units: the estimate keeps the design
  Gram matrix and multiplies the width by the posterior's noise sd, Lemma 1's R (its
  width is then in the reward's units, as the mean is).
  A Laplace posterior that learns its prior scale tau (``LaplaceGLM()``: a
  ``map_node`` method) regularises with ``lam = 1 / tau^2`` at the grid's modal node:
  theta_hat is that node's MAP, the ``lam``-regularised MLE of Lemma 3, and V is the
  design Gram matrix with the same ``lam`` per position, ``lam I + sum x x^T``,
  factorised afresh each round from the estimate's running ``sum x x^T`` (lam moves
  with the data); Lemma 1's width takes that ``lam`` (``sqrt(lam) m2`` and
  ``log det V - p log lam``).

An estimate is ``init(L, p) -> est_state``, ``update(est_state, x, valid) ->
est_state`` and ``__call__(key, model_state, est_state) -> (params, model_state)``,
all pure. ``random`` says whether two calls with different keys may differ (then a
batch of requests gets one independent draw each).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from bayesrank._static import Part
from bayesrank.policies.parts.bonus import ucb_width, UCBParams
from bayesrank.posteriors.linalg import chol_update, logdet_increment

__all__ = ["Optimistic", "Thompson"]


class Thompson(Part):
    """A Thompson draw ``theta (L, p)`` from the posterior.

    Args:
        model: the per-position posterior to draw from.

    Example:
        >>> import jax, bayesrank as br
        >>> from bayesrank.policies import Thompson
        >>> model = br.GaussianLinear()
        >>> estimate = Thompson(model)
        >>> theta, mstate = estimate(jax.random.key(0), model.init(L=4, p=3),
        ...                          estimate.init(4, 3))
        >>> theta.shape
        (4, 3)
    """

    random = True

    def __init__(self, model):
        self.model = model

    def init(self, L: int, p: int):
        """The estimate's own state: none (the posterior holds everything)."""
        return ()

    def update(self, est, x, valid):
        """Nothing to update: the posterior is updated by the core."""
        return est

    def __call__(self, key, mstate, est):
        theta, mstate = self.model.draw(key, mstate)
        return theta, mstate

    def batch(self, key, mstate, est, n: int):
        """n independent draws (n, L, p) for a batch of requests. Models with a
        ``draw_batch`` share one factorisation across the batch; others (NUTS) draw
        per request from the current chain state (chains are not advanced)."""
        many = getattr(self.model, "draw_batch", None)
        if many is not None:
            return many(key, mstate, n)
        keys = jax.random.split(key, n)
        return jax.vmap(lambda k: self.model.draw(k, mstate)[0])(keys)


class Optimistic(Part):
    """``UCBParams(theta_hat, width / c1, chol)`` from the posterior mean.

    Args:
        model: the per-position posterior; its mean is theta_hat. If it has a
            ``noise_sd(state)`` (a posterior that learns the reward's scale), the
            width is multiplied by it: Lemma 1's R, the noise's sub-Gaussian scale,
            with ``m2`` a bound on ``||theta||`` in units of that R.
        lam, delta, m2, alpha: the width (Lemma 1, or the constant alpha); ``lam``
            None for a posterior that learns it (a ``map_node`` method: the
            learnt-scale Laplace GLM, whose theta_hat is then the modal node's MAP).
        c1: the link's lower derivative bound (1 for the identity link).

    Example:
        >>> import jax, bayesrank as br
        >>> from bayesrank.policies import Optimistic
        >>> model = br.GaussianLinear()
        >>> estimate = Optimistic(model, lam=1.0, delta=0.1, m2=1.0, alpha=None, c1=1.0)
        >>> params, _ = estimate(jax.random.key(0), model.init(L=4, p=3),
        ...                      estimate.init(4, 3))
        >>> params.theta.shape, params.width.shape, params.chol.shape
        ((4, 3), (4,), (4, 3, 3))
    """

    random = False

    def __init__(self, model, *, lam, delta, m2, alpha, c1):
        self.model = model
        self.lam, self.delta, self.m2, self.alpha = lam, delta, m2, alpha
        self.c1 = float(c1)
        #: whether lam is the posterior's own, per position (a learnt-scale Laplace)
        self.learnt_lam = callable(getattr(model, "map_node", None))
        if self.learnt_lam and lam is not None:
            raise ValueError(
                f"lam: the model learns its prior scale, and the width takes its "
                f"regulariser 1/tau^2 from the posterior; got lam={lam!r} (leave it "
                "unset, or give the model a prior_scale number)")
        if not self.learnt_lam and lam is None:
            raise ValueError("lam: expected a positive ridge parameter, got None")
        self.own_gram = not hasattr(model, "gram") or model.link.name != "identity"
        #: whether Lemma 1's R comes from the posterior (``model.noise_sd``)
        self.scaled = hasattr(model, "noise_sd")

    def init(self, L: int, p: int):
        """The estimate's own state: the Gram factor ``sqrt(lam) I`` per position and
        its log-det ratio, or none when the posterior keeps the Gram matrix (a
        learnt ``lam``: the running ``sum x x^T`` (L, p, p) alone)."""
        dtype = jnp.result_type(float)
        if self.learnt_lam:
            return (jnp.zeros((L, p, p), dtype),)
        if not self.own_gram:
            return ()
        chol = jnp.broadcast_to(math.sqrt(self.lam) * jnp.eye(p, dtype=dtype), (L, p, p))
        return chol, jnp.zeros((L,), dtype)

    def update(self, est, x, valid):
        """Fold the features x (L, p) of the positions marked ``valid`` into the
        Gram factor (when the estimate keeps its own)."""
        if self.learnt_lam:
            x = jnp.where(valid[:, None], x, 0.0).astype(est[0].dtype)
            return (est[0] + x[:, :, None] * x[:, None, :],)
        if not self.own_gram:
            return est
        chol, ratio = est
        x = jnp.where(valid[:, None], x, 0.0).astype(chol.dtype)
        inc = jax.vmap(logdet_increment)(chol, x)
        return jax.vmap(chol_update)(chol, x), ratio + inc

    def _lam(self, mstate):
        """The ridge weight: this estimate's number, or (L,) the posterior's
        ``1 / tau^2`` at its modal node (a learnt-scale Laplace)."""
        return self.model.map_node(mstate)[1] if self.learnt_lam else self.lam

    def gram(self, mstate, est):
        """``(chol (L, p, p), log det V - log det V_0 (L,))``; a learnt ``lam``:
        ``V = lam I + sum x x^T`` with the posterior's ``lam`` (L,), factorised."""
        if self.learnt_lam:
            S = est[0]
            lam = self._lam(mstate).astype(S.dtype)
            eye = jnp.eye(S.shape[-1], dtype=S.dtype)
            chol = jnp.linalg.cholesky(lam[:, None, None] * eye + S)
            logdet = 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol, 0, -2, -1)), -1)
            return chol, logdet - S.shape[-1] * jnp.log(lam)
        return est if self.own_gram else self.model.gram(mstate)

    def width(self, mstate, est):
        """(L,) the width before the division by c1 (times the posterior's noise
        sd where the model learns it)."""
        chol, ratio = self.gram(mstate, est)
        del chol
        width = ucb_width(
            ratio, lam=self._lam(mstate), delta=self.delta, m2=self.m2, alpha=self.alpha
        )
        if self.scaled:
            width = width * self.model.noise_sd(mstate).astype(width.dtype)
        return width

    def __call__(self, key, mstate, est):
        refresh = getattr(self.model, "refresh", None)
        if refresh is not None:
            mstate = refresh(key, mstate)
        chol, _ = self.gram(mstate, est)
        width = self.width(mstate, est) / self.c1
        theta = (self.model.map_node(mstate)[0] if self.learnt_lam
                 else self.model.mean(mstate))
        return UCBParams(theta, width, chol), mstate
