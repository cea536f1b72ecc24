"""The Laplace GLM's fitting machinery: the log-likelihoods and their derivatives per
link, the damped Newton search for the regularised MAP over a fixed buffer, and the
buffer's update (:class:`LaplaceState`). Pure functions, jittable; the model class
is :class:`bayesrank.posteriors.laplace.LaplaceGLM` (which re-exports these names).

Example:
    >>> import jax.numpy as jnp
    >>> from bayesrank.posteriors.laplace.glm_fit import loglik
    >>> float(loglik("logistic")(jnp.zeros(2), jnp.array([1.0, 0.0])).sum()) < 0
    True
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln, log_ndtr

from bayesrank.posteriors import linalg

__all__ = ["LAPLACE_LINKS", "LaplaceState", "link_derivatives", "loglik", "newton_map",
           "validate_loaded_fit"]

LAPLACE_LINKS = ("logistic", "probit", "exp", "identity")

_SUPPORT = {"logistic": "binary", "probit": "binary", "exp": "count", "identity": "real"}

#: most halvings of the Newton step in the backtracking line search
_MAX_HALVINGS = 30
#: The Newton passes over a buffer of more than _BLOCK_MIN rows run in at most
#: _BLOCKS_MAX blocks and skip the blocks not yet filled (each block has a fixed cost).
_BLOCK_MIN, _BLOCKS_MAX = 256, 4


def _block(n_max: int) -> int | None:
    """Rows per block of the Newton passes for a buffer of n_max rows (None: whole)."""
    if n_max <= _BLOCK_MIN:
        return None
    return max(_BLOCK_MIN, -(-n_max // _BLOCKS_MAX))


class LaplaceState(NamedTuple):
    """Laplace posterior of :class:`LaplaceGLM` (non-identity links), leading axis L.

    Example:
        >>> from bayesrank.posteriors import LaplaceGLM
        >>> state = LaplaceGLM(link="logistic", prior_scale=1.0, n_max=100).init(L=2, p=3)
        >>> state.x.shape, state.theta.shape
        ((2, 100, 3), (2, 3))
    """

    x: jax.Array  # (L, n_max, p) ring buffer of features, zero rows past the count
    y: jax.Array  # (L, n_max) ring buffer of rewards
    n: jax.Array  # (L,) int32, observations received (may exceed n_max: window)
    theta: jax.Array  # (L, p) MAP, the regularised MLE
    chol: jax.Array  # (L, p, p) lower Cholesky factor of the Hessian at the MAP


# --------------------------------------------------------------- log-likelihoods
def loglik(link: str):
    """Elementwise log p(y | eta) for one link (constants included)."""
    if link == "logistic":
        return lambda eta, y: y * eta - jax.nn.softplus(eta)
    if link == "probit":
        return lambda eta, y: y * log_ndtr(eta) + (1.0 - y) * log_ndtr(-eta)
    if link == "exp":
        return lambda eta, y: y * eta - jnp.exp(eta) - gammaln(y + 1.0)
    raise ValueError(f"link: expected one of {LAPLACE_LINKS}, got {link!r}")


def link_derivatives(link: str):
    """Elementwise (d log p / d eta, -d^2 log p / d eta^2)."""
    if link == "logistic":

        def d(eta, y):
            s = jax.nn.sigmoid(eta)
            return y - s, s * (1.0 - s)

        return d
    if link == "exp":

        def d(eta, y):
            mu = jnp.exp(eta)
            return y - mu, mu

        return d
    ll = loglik(link)
    g1 = jax.grad(ll)
    g2 = jax.grad(g1)

    def d(eta, y):
        return jax.vmap(g1)(eta, y), -jax.vmap(g2)(eta, y)

    return d


def newton_map(link: str, lam, x, y, mask, theta0, tol, max_iter: int, chol0=None,
               refresh_tol=None, rows=None, block=None):
    """Regularised MLE of one position by warm-started, line-searched Newton.

    Args:
        link: "logistic", "probit" or "exp".
        lam: () ridge weight 1 / prior_scale^2.
        x: (n, p) features; y: (n,) rewards; mask: (n,) bool rows that count.
        theta0: (p,) starting point (the previous MAP).
        tol: () relative step size at which to stop.
        max_iter: most Newton steps.
        chol0: (p, p) optional lower factor of (an approximation of) the Hessian at
            ``theta0``: the first step uses it instead of a fresh Hessian.
        refresh_tol: None (exact), or a relative step size at or above ``tol``: once
            the next Newton step is at most this, it is taken *without* a new
            Hessian and the loop stops. Newton converges quadratically, so theta is
            then the MAP to about ``refresh_tol**2`` (relative), and the factor is the
            Hessian at a point within ``refresh_tol`` of it.
        rows, block: with ``block`` < n, sums run over blocks of ``block`` rows up to
            ``rows`` (an int, may be traced; every row at or past it must be masked
            out): the cost then follows the rows held rather than n.

    Each step solves with the Hessian factor, backtracks until the Armijo condition
    holds, and refactors the Hessian at the new point; the loop stops when the next
    Newton step (already known from that factor and the new gradient) would move
    theta by at most ``tol`` relative, so the converged fit costs no extra step.

    Returns:
        theta (p,) the MAP, chol (p, p) lower factor of the Hessian at theta (at the
        last iterate with ``refresh_tol``), iterations () int: Hessians computed.
    """
    ll = loglik(link)
    derivs = link_derivatives(link)
    n, p = x.shape
    eye = jnp.eye(p, dtype=x.dtype)
    tiny = 64.0 * jnp.finfo(x.dtype).eps
    blocked = block is not None and block < n
    if blocked and rows is None:
        raise ValueError("rows: expected the count of rows to scan with block=")

    def terms(theta, xs, ys, ms, hessian):
        """Sums over rows xs of -log p, its gradient and (optionally) Hessian."""
        eta = xs @ theta
        d1, d2 = derivs(eta, ys)
        f = -jnp.sum(jnp.where(ms, ll(eta, ys), 0.0))
        g = -(xs.T @ jnp.where(ms, d1, 0.0))
        h = (xs * jnp.where(ms, d2, 0.0)[:, None]).T @ xs if hessian else None
        return f, g, h

    def sums(theta, hessian):
        if not blocked:
            return terms(theta, x, y, mask, hessian)
        # blocks of rows up to ``rows``: the cost follows the data held, not n
        # (the last block may start early; rows before its nominal start are masked)
        idx = jnp.arange(block)

        def step(k, acc):
            start = jnp.minimum(k * block, n - block)
            ms = jax.lax.dynamic_slice_in_dim(mask, start, block) & (start + idx >= k * block)
            part = terms(theta, jax.lax.dynamic_slice_in_dim(x, start, block),
                         jax.lax.dynamic_slice_in_dim(y, start, block), ms, hessian)
            return jax.tree.map(jnp.add, acc, part)

        zero = (jnp.zeros((), x.dtype), jnp.zeros((p,), x.dtype),
                jnp.zeros((p, p), x.dtype) if hessian else None)
        return jax.lax.fori_loop(0, (rows + block - 1) // block, step, zero)

    def evaluate(theta, hessian=True):
        """Objective, gradient and the Hessian's lower factor (when asked) at theta."""
        f, g, h = sums(theta, hessian)
        f = f + 0.5 * lam * jnp.dot(theta, theta)
        g = g + lam * theta
        if not hessian:
            return f, g, None
        h = lam * eye + h
        return f, g, jnp.linalg.cholesky(0.5 * (h + h.T))

    stop = tol if refresh_tol is None else jnp.maximum(tol, refresh_tol)

    def small(delta, theta, bound=tol):
        return jnp.max(jnp.abs(delta)) <= bound * (1.0 + jnp.max(jnp.abs(theta)))

    def body(carry):
        theta, f0, grad, delta, chol, it, _ = carry
        decrement = jnp.dot(grad, delta)
        slack = tiny * (1.0 + jnp.abs(f0))

        # one pass at the full Newton step gives the objective for the Armijo test
        # and, since that step is almost always taken once warm, the gradient and
        # Hessian at the new point. Otherwise halve the step (each halving a full
        # pass); the last try is t = 0, theta itself: stop there with a fresh factor.
        def ls_cond(c):
            t, f, _, _, k = c
            return (f > f0 - 1e-4 * t * decrement + slack) & (k <= _MAX_HALVINGS)

        def ls_body(c):
            t, _, _, _, k = c
            t = jnp.where(k + 1 >= _MAX_HALVINGS, 0.0, 0.5 * t)
            return (t, *evaluate(theta - t * delta), k + 1)

        one = jnp.ones((), x.dtype)
        t, f, grad, chol, _ = jax.lax.while_loop(
            ls_cond, ls_body, (one, *evaluate(theta - delta), jnp.zeros((), jnp.int32))
        )
        ok = t > 0  # some decrease: a step was taken
        theta = theta - t * delta
        delta = linalg.chol_solve(chol, grad)  # the next step
        done = small(delta, theta, stop) | ~ok
        return theta, f, grad, delta, chol, it + 1, done

    def cond(carry):
        return (~carry[6]) & (carry[5] < max_iter)

    f0, grad, chol = evaluate(theta0, hessian=chol0 is None)
    chol = chol if chol0 is None else chol0
    delta = linalg.chol_solve(chol, grad)
    init = (
        theta0,
        f0,
        grad,
        delta,
        chol,
        jnp.zeros((), jnp.int32),
        small(delta, theta0, stop) if chol0 is None else jnp.zeros((), bool),
    )
    theta, _, _, delta, chol, it, _ = jax.lax.while_loop(cond, body, init)
    if refresh_tol is not None:
        # the last step, below refresh_tol, is taken without a new Hessian
        theta = jnp.where(small(delta, theta, stop), theta - delta, theta)
    return theta, chol, it


# --------------------------------------------------------------- loaded states
#: What ``update`` lets into a buffer, per reward support (``check_rewards``).
_SUPPORT_TEXT = {"binary": "rewards in {0, 1}", "count": "non-negative integer rewards"}


def validate_loaded_fit(state, link: str, name: str) -> None:
    """Host-side check that a buffered state read from a file (a
    :class:`LaplaceState` or its learnt-scale form, theta and chol with a node axis)
    is one ``update`` could have left: every float finite, counts ``n >= 0``, the
    rewards of the rows held (the first ``min(n, n_max)`` of each position) in the
    link's support, as ``check_rewards`` asks of an update, the rows past them zero,
    as ``init`` left them, and the Hessian factors lower triangular with a positive
    diagonal.

    Args:
        state: the state, with fields ``x (L, n_max, p)``, ``y (L, n_max)``,
            ``n (L,)``, ``theta`` and ``chol``.
        link: "logistic", "probit" or "exp".
        name: the state's field path in messages ("model", "model.fit").

    Raises:
        ValueError: naming the field (``<name>.y: ...``) and what was expected.

    Example:
        >>> import jax.numpy as jnp
        >>> from bayesrank.posteriors import LaplaceGLM
        >>> model = LaplaceGLM("logistic", prior_scale=1.0, n_max=4)
        >>> state = model.update(model.init(L=1, p=2), jnp.ones((1, 2)), jnp.ones(1))
        >>> validate_loaded_fit(state, "logistic", "model")
        >>> try:
        ...     validate_loaded_fit(state._replace(y=state.y.at[0, 0].set(7.0)),
        ...                      "logistic", "model")
        ... except ValueError as exc:
        ...     print(str(exc)[:66])
        model.y: expected rewards in {0, 1} for the logistic link, got 7.0
    """
    for field in state._fields:
        a = np.asarray(getattr(state, field))
        if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            raise ValueError(f"{name}.{field}: expected finite values, found NaN or "
                             "inf")
    x, y, n = np.asarray(state.x), np.asarray(state.y), np.asarray(state.n)
    if n.size and n.min() < 0:
        raise ValueError(f"{name}.n: expected counts >= 0, got {n.min()}")
    n_max = y.shape[-1]
    held = np.arange(n_max) < np.minimum(n, n_max)[:, None]  # (L, n_max)
    support = _SUPPORT[link]
    if support == "binary":
        bad = held & (y != 0) & (y != 1)
    else:  # "count"
        bad = held & ((y < 0) | (y != np.round(y)))
    if bad.any():
        l, i = np.argwhere(bad)[0]
        raise ValueError(
            f"{name}.y: expected {_SUPPORT_TEXT[support]} for the {link} link, got "
            f"{float(y[l, i])!r} (position {l}, row {i})"
        )
    for field, past in (("y", ~held & (y != 0)), ("x", ~held & np.any(x != 0, -1))):
        if past.any():
            l, i = np.argwhere(past)[0]
            raise ValueError(
                f"{name}.{field}: expected zeros past the rows held (position {l} "
                f"holds {min(int(n[l]), n_max)}: n = {int(n[l])}), found a non-zero "
                f"row {i}"
            )
    chol = np.asarray(state.chol)
    if not np.all(np.diagonal(chol, axis1=-2, axis2=-1) > 0):
        raise ValueError(f"{name}.chol: expected Cholesky factors with a positive "
                         "diagonal")
    if np.any(np.triu(chol, 1) != 0):
        raise ValueError(f"{name}.chol: expected lower triangular Cholesky factors")
