"""Jittable linear algebra for Gram / precision matrices kept as Cholesky factors.

Conjugate posteriors and UCB policies both maintain a matrix of the form

    P = P0 + sum_t x_t x_t^T          (d, d), symmetric positive definite

(the posterior precision, or the design matrix ``V = lam I + sum x x^T`` of a UCB
policy). Refactorising P every round costs O(d^3) and inverting it is numerically poor.
These helpers keep the lower Cholesky factor ``C`` (``P = C C^T``) up to date in O(d^2)
per observation, and answer every question the algorithms ask with triangular solves:

    chol_update(C, x)              factor of P + x x^T                 O(d^2)
    logdet_increment(C, x)         log det(P + x x^T) - log det(P)     O(d^2)
    chol_logdet(C)                 log det(P)                          O(d)
    chol_solve(C, b)               P^{-1} b                            O(d^2)
    sample_from_precision(k, m, C, scale)   a draw of N(m, scale^2 P^{-1})  O(d^2)
    sample_per_position(k, M, Cs, scale)    one such draw per position (L, d)
    sample_many_from_precision(k, M, Cs, n) n draws per position (n, L, d)
    mahalanobis_norms(C, X)        ||x_k||_{P^{-1}} for the rows of X  O(K d^2)

Compensated arithmetic keeps running sums of P and b exact to a few units in the last
place (the conjugate models' numerics, :mod:`bayesrank.posteriors.conjugate.gaussian`):

    two_sum(a, b)                  a + b as (s, e), s + e exact (Knuth's TwoSum)
    accumulate(hi, lo, x)          the compensated running sum (hi, lo) + x
    refined_mean(C, P, P_lo, b, b_lo)  P^{-1} b plus one refinement step

and ``half_logdet_quad(P, b)`` gives ``(1/2 log det P, b^T P^-1 b)`` of a small matrix
in one fused loop (the latent-w marginal's inner step).

All functions act on one matrix; batch them (positions, runs) with ``jax.vmap``. They
never form ``P^{-1}``.

Example:
    >>> import jax.numpy as jnp
    >>> C = jnp.eye(3)                                   # P = I
    >>> x = jnp.array([1.0, 0.0, 0.0])
    >>> C2 = chol_update(C, x)                           # P = I + x x^T
    >>> round(float(chol_logdet(C2)), 6), round(float(logdet_increment(C, x)), 6)
    (0.693147, 0.693147)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular

__all__ = [
    "accumulate",
    "chol_logdet",
    "half_logdet_quad",
    "chol_solve",
    "chol_update",
    "sample_many_from_precision",
    "tri_inv",
    "two_sum",
    "chol_update_many",
    "logdet_increment",
    "mahalanobis_norms",
    "refined_mean",
    "sample_from_precision",
    "whiten",
]


def chol_update(chol: jax.Array, x: jax.Array) -> jax.Array:
    """Rank-one update of a lower Cholesky factor, O(d^2).

    Given ``C`` lower triangular with positive diagonal and ``P = C C^T``, returns the
    lower factor ``C'`` of ``P + x x^T`` (a sequence of Givens-like rotations, one per
    column, run as a ``lax.fori_loop``). ``x = 0`` returns ``C`` exactly, so a masked
    update is ``chol_update(C, where(valid, x, 0))``. To add ``w x x^T`` (w >= 0), pass
    ``sqrt(w) x``.

    Args:
        chol: (d, d) lower-triangular factor with a positive diagonal.
        x: (d,) the new vector.

    Returns:
        (d, d) lower-triangular factor of ``chol @ chol.T + outer(x, x)``.

    Example:
        >>> import jax.numpy as jnp, numpy as np
        >>> C = chol_update(2.0 * jnp.eye(2), jnp.array([0.0, 3.0]))   # P = diag(4, 13)
        >>> np.round(C @ C.T, 4).tolist()
        [[4.0, 0.0], [0.0, 13.0]]
    """
    chol = jnp.asarray(chol)
    x = jnp.asarray(x, dtype=chol.dtype)
    d = chol.shape[-1]
    idx = jnp.arange(d)

    def body(k, carry):
        c_mat, v = carry
        ckk = c_mat[k, k]
        vk = v[k]
        r = jnp.hypot(ckk, vk)
        cos = r / ckk
        sin = vk / ckk
        col = c_mat[:, k]
        below = idx > k
        new_col = jnp.where(below, (col + sin * v) / cos, col)
        new_col = new_col.at[k].set(r)
        v = jnp.where(below, cos * v - sin * new_col, v)
        return c_mat.at[:, k].set(new_col), v

    out, _ = jax.lax.fori_loop(0, d, body, (chol, x))
    return out


def chol_update_many(chol: jax.Array, X: jax.Array) -> jax.Array:
    """Apply :func:`chol_update` for each row of ``X`` in turn (a ``lax.scan``).

    Args:
        chol: (d, d) lower factor of P.
        X: (n, d) vectors.

    Returns:
        (d, d) lower factor of ``P + X^T X``.

    Example:
        >>> import jax.numpy as jnp, numpy as np
        >>> C = chol_update_many(jnp.eye(2), jnp.array([[1.0, 0.0], [0.0, 2.0]]))
        >>> np.round(C @ C.T, 4).tolist()
        [[2.0, 0.0], [0.0, 5.0]]
    """

    def body(c, x):
        return chol_update(c, x), None

    out, _ = jax.lax.scan(body, jnp.asarray(chol), jnp.asarray(X))
    return out


def chol_logdet(chol: jax.Array) -> jax.Array:
    """log det P from its lower Cholesky factor: ``2 sum log diag(C)``.

    Args:
        chol: (d, d) lower factor.

    Returns:
        () the log-determinant of ``chol @ chol.T``.

    Example:
        >>> import jax.numpy as jnp
        >>> round(float(chol_logdet(jnp.diag(jnp.array([1.0, 2.0])))), 4)   # log 4
        1.3863
    """
    return 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)


def whiten(chol: jax.Array, x: jax.Array) -> jax.Array:
    """Solve ``C z = x`` (forward substitution), so ``||z||^2 = x^T P^{-1} x``.

    Args:
        chol: (d, d) lower factor of P.
        x: (d,) or (d, K) right-hand side(s).

    Returns:
        Same shape as ``x``: ``C^{-1} x``.

    Example:
        >>> import jax.numpy as jnp
        >>> whiten(jnp.diag(jnp.array([2.0, 4.0])), jnp.array([2.0, 2.0])).tolist()
        [1.0, 0.5]
    """
    if x.ndim == 2 and x.shape[1] > chol.shape[0]:
        # Many right-hand sides: invert the (well-conditioned, triangular) factor once
        # and multiply. Batched (vmapped) triangular solves with wide right-hand sides
        # are pathologically slow on XLA's CPU backend (figures: docs/performance.md,
        # "Why the code is written this way").
        eye = jnp.eye(chol.shape[0], dtype=chol.dtype)
        return solve_triangular(chol, eye, lower=True) @ x
    return solve_triangular(chol, x, lower=True)


def logdet_increment(chol: jax.Array, x: jax.Array) -> jax.Array:
    """``log det(P + x x^T) - log det P = log(1 + x^T P^{-1} x)`` (determinant lemma).

    Uses the factor of P *before* the update, one triangular solve, O(d^2).

    Args:
        chol: (d, d) lower factor of P.
        x: (d,) the vector being added.

    Returns:
        () the increment of the log-determinant.

    Example:
        >>> import jax.numpy as jnp
        >>> inc = logdet_increment(jnp.eye(2), jnp.array([1.0, 1.0]))    # log 3
        >>> round(float(inc), 4)
        1.0986
    """
    z = whiten(chol, x)
    return jnp.log1p(jnp.dot(z, z))


def chol_solve(chol: jax.Array, b: jax.Array) -> jax.Array:
    """``P^{-1} b`` with two triangular solves (``C C^T y = b``), never inverting P.

    Args:
        chol: (d, d) lower factor of P.
        b: (d,) or (d, K) right-hand side(s).

    Returns:
        Same shape as ``b``.

    Example:
        >>> import jax.numpy as jnp
        >>> chol_solve(jnp.diag(jnp.array([2.0, 4.0])), jnp.array([4.0, 16.0])).tolist()
        [1.0, 1.0]
    """
    z = solve_triangular(chol, b, lower=True)
    return solve_triangular(chol, z, lower=True, trans="T")


def sample_from_precision(
    key: jax.Array, mean: jax.Array, chol: jax.Array, scale=1.0
) -> jax.Array:
    """One draw of ``N(mean, scale^2 P^{-1})`` given the lower factor C of P.

    ``theta = mean + scale * C^{-T} z`` with ``z ~ N(0, I)``: its covariance is
    ``scale^2 C^{-T} C^{-1} = scale^2 P^{-1}``. One triangular solve, O(d^2).

    Args:
        key: a JAX PRNG key.
        mean: (d,) mean.
        chol: (d, d) lower factor of the precision P.
        scale: () scalar multiplying the standard deviation (e.g. the noise sd, or
            a sampled sigma in a Normal-Inverse-Gamma model).

    Returns:
        (d,) the draw.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> C = 1e3 * jnp.eye(3)                  # P = 1e6 I: standard deviation 1e-3
        >>> theta = sample_from_precision(jax.random.key(0), jnp.ones(3), C)
        >>> theta.shape, bool(jnp.all(jnp.abs(theta - 1.0) < 0.01))
        ((3,), True)
    """
    z, mean, chol = _in_turn(jax.random.normal(key, chol.shape[-1:], chol.dtype),
                             mean, jnp.asarray(chol))
    return mean + scale * (tri_inv(chol).T @ z)


def sample_per_position(key, mean, chol, scale=1.0) -> jax.Array:
    """One draw per position: ``theta[l] ~ N(mean[l], scale[l]^2 P_l^{-1})``.

    Args:
        key: a JAX PRNG key (split into one key per position); mean: (L, d);
            chol: (L, d, d) lower factors of the precisions; scale: () or (L,).

    Returns:
        (L, d) draws.
    """
    L = mean.shape[0]
    scale = jnp.broadcast_to(jnp.asarray(scale, mean.dtype), (L,))
    # The generator runs after whatever computed mean and chol (see _in_turn).
    key, mean, chol, scale = _in_turn(key, mean, chol, scale)
    return jax.vmap(sample_from_precision)(jax.random.split(key, L), mean, chol, scale)


def _in_turn(*arrays):
    """The arrays, unchanged, with everything that reads them ordered after all of
    them (``lax.optimization_barrier``).

    XLA on CPU runs independent operations of one computation concurrently on its
    thread pool; for the small arrays of a draw (a threefry generator beside the
    triangular solves of the mean and of ``C^{-1}``) the hand-offs cost more than the
    work, and running them in turn is several times faster (figures:
    docs/performance.md, "Why the code is written this way").
    """
    return jax.lax.optimization_barrier(arrays)


def tri_inv(chol: jax.Array) -> jax.Array:
    """``C^{-1}`` of lower-triangular factors (..., d, d), by a triangular solve
    against the identity (O(d^3), d small): one factor serves many draws.

    Example:
        >>> import jax.numpy as jnp
        >>> tri_inv(jnp.array([[2.0, 0.0], [1.0, 1.0]])).tolist()
        [[0.5, 0.0], [-0.5, 1.0]]
    """
    eye = jnp.broadcast_to(jnp.eye(chol.shape[-1], dtype=chol.dtype), chol.shape)
    return solve_triangular(chol, eye, lower=True)


def mahalanobis_norms(chol: jax.Array, X: jax.Array) -> jax.Array:
    """``||x_k||_{P^{-1}} = sqrt(x_k^T P^{-1} x_k)`` for every row of X at once.

    One triangular solve on the (d, K) block ``X^T``: O(K d^2). This is the
    exploration width of linear UCB (with P = V_t the regularised design matrix).

    Args:
        chol: (d, d) lower factor of P.
        X: (K, d) vectors (a single (d,) vector is also accepted).

    Returns:
        (K,) norms (a scalar for a (d,) input).

    Example:
        >>> import jax.numpy as jnp
        >>> C = jnp.diag(jnp.array([1.0, 2.0]))                     # P = diag(1, 4)
        >>> mahalanobis_norms(C, jnp.array([[1.0, 0.0], [0.0, 2.0]])).tolist()
        [1.0, 1.0]
    """
    X = jnp.asarray(X)
    if X.ndim == 1:
        z = whiten(chol, X)
        return jnp.sqrt(jnp.dot(z, z))
    Z = whiten(chol, X.T)
    return jnp.sqrt(jnp.sum(Z * Z, axis=0))


def sample_many_from_precision(key, mean, chol, n: int, scale=1.0) -> jax.Array:
    """n draws per position at once: ``theta[b, l] = mean[l] + scale[b, l] C_l^{-T} z``.

    One triangular solve with n right-hand sides per position (a batch of requests
    shares the factor), instead of n separate solves.

    Args:
        key: a JAX PRNG key; mean: (L, d); chol: (L, d, d) lower factors of the
            precisions; n: draws; scale: () or (n, L) multipliers of the sd.

    Returns:
        (n, L, d) draws.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> chol = jnp.broadcast_to(jnp.eye(3), (4, 3, 3))
        >>> sample_many_from_precision(jax.random.key(0), jnp.zeros((4, 3)), chol,
        ...                            n=5).shape
        (5, 4, 3)
    """
    L, d = mean.shape
    z, mean, chol = _in_turn(jax.random.normal(key, (L, d, n), mean.dtype), mean, chol)
    eps = jnp.einsum("lji,ljn->nli", tri_inv(chol), z)  # C^{-T} z, (n, L, d)
    scale = jnp.asarray(scale, mean.dtype)
    if scale.ndim:
        scale = scale[..., None]
    return mean[None] + scale * eps


# ------------------------------------------------------- compensated arithmetic
def two_sum(a, b):
    """``a + b`` as ``(s, e)`` with ``s + e == a + b`` exactly (Knuth's TwoSum).

    Example:
        >>> import numpy as np
        >>> s, e = two_sum(np.float32(1.0), np.float32(1e-8))  # 1e-8 is lost in s
        >>> float(s), float(e) == float(np.float32(1e-8))
        (1.0, True)
    """
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def accumulate(hi, lo, x):
    """Compensated running sum: ``(hi, lo) + x`` (``lo`` gathers the rounding errors).

    Example:
        >>> import numpy as np
        >>> hi, lo = np.float32(1.0), np.float32(0.0)
        >>> for _ in range(1000):
        ...     hi, lo = accumulate(hi, lo, np.float32(1e-8))
        >>> float(hi), round(float(hi) + float(lo), 7)           # plain sum: 1.0
        (1.0, 1.00001)
    """
    s, e = two_sum(hi, x)
    return s, lo + e


def refined_mean(chol, prec, prec_lo, b, b_lo):
    """``P^{-1} b`` for one position: the factor's solve plus one refinement step with
    the residual of the compensated sums ``(prec + prec_lo, b + b_lo)``.

    Example:
        >>> import jax.numpy as jnp
        >>> P, b = jnp.array([[2.0, 0.5], [0.5, 1.0]]), jnp.array([1.0, 2.0])
        >>> m = refined_mean(jnp.linalg.cholesky(P), P, jnp.zeros((2, 2)), b, jnp.zeros(2))
        >>> bool(jnp.allclose(P @ m, b))
        True
    """
    m = chol_solve(chol, b)
    r = (b - prec @ m) + (b_lo - prec_lo @ m)
    return m + chol_solve(chol, r)


def half_logdet_quad(P, b):
    """``(1/2 log det P, b^T P^-1 b)`` of a small SPD matrix by a Cholesky
    factorisation unrolled over its columns, the forward solve carried along.

    Written with whole-column array operations so that XLA fuses it into one loop
    (about 25 % faster than LAPACK's per-matrix call for 10 x 10 matrices batched by
    ``vmap``); a non-positive pivot gives NaN, as a failed Cholesky does.

    Example:
        >>> import jax.numpy as jnp
        >>> P, b = jnp.array([[4.0, 0.0], [0.0, 9.0]]), jnp.array([2.0, 3.0])
        >>> half, quad = half_logdet_quad(P, b)                  # log 6, 1 + 1
        >>> round(float(half), 4), round(float(quad), 4)
        (1.7918, 2.0)
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
