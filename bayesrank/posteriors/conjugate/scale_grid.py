"""The closed-form terms of :class:`~bayesrank.posteriors.conjugate.learnt_scale.LearntScaleLinear`
on the grid of its signal-to-noise ratio g (the grid itself and its hyperprior:
:mod:`bayesrank.posteriors.hyperprior`).

:func:`grid_terms` gives, from one position's running sums, the eigendecomposition
and ``log p(y | g)`` at every node (formulas: :mod:`bayesrank.posteriors.conjugate.learnt_scale`;
the summaries use it). The draws use the cheaper tridiagonal route instead:
:func:`tridiagonal` (Householder, fused), :func:`tridiagonal_loglik` (the same
``log p(y | g)`` by an LDL^T recurrence per node) and :func:`tridiagonal_draw`
(theta's conditional Gaussian given the node). :func:`centred_sums` and
:func:`evidence_terms` are shared with the latent-w density.

Example:
    >>> import jax.numpy as jnp
    >>> from bayesrank.posteriors.hyperprior import hyper_grid
    >>> log_g, _ = hyper_grid(None)
    >>> S, u = jnp.eye(2), jnp.ones(2)
    >>> beta, loglik = grid_loglik(S, u, 2.0, 3, jnp.zeros(2), jnp.asarray(log_g), True)
    >>> loglik.shape
    (160,)
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Tridiagonal", "centred_sums", "evidence_terms", "grid_loglik", "grid_terms",
           "tridiagonal", "tridiagonal_draw", "tridiagonal_loglik", "tridiagonal_quad"]


# ----------------------------------------------------------------- grid maths
def centred_sums(S, u, q, m0, sf, A, xp):
    """The sums centred at m0, over sf, whitened by A: ``(S, uc, qc)``."""
    Sm = S @ m0
    uc = (u - Sm) / sf
    qc = (q - 2.0 * xp.dot(m0, u) + xp.dot(m0, Sm)) / (sf * sf)
    if A is not None:
        S, uc = A.T @ S @ A, A.T @ uc
    return S, uc, qc


def evidence_terms(half_logdet, quad, qc, n, learn_noise, xp):
    """``beta (G,)`` and ``log p(y | g) (G,)`` from the half log-determinants
    ``1/2 sum log(1 + g^2 D_i)`` and the quadratic forms at the nodes.

    beta = q - quad is floored at about the rounding of that difference: 1e-6 q in
    float32 (8 eps), 8 eps q = 1.8e-15 q in float64, not at 1e-6 q there too: where
    the rewards are 1e3 noise sds or more the true residual is below 1e-6 q, and that
    floor flattened the evidence about its mode (SBC under a vague prior on w found
    it). float32 keeps exactly 1e-6 so that its lists do not move (with fewer
    observations than features the floor binds at large g).
    """
    info = xp.finfo(quad.dtype)
    frac = 1e-6 if info.eps > 1e-10 else 8.0 * info.eps
    beta = xp.maximum(qc - quad, frac * xp.maximum(qc, info.tiny) + info.tiny)
    if learn_noise:
        return beta, -half_logdet - 0.5 * n * xp.log(beta)
    return beta, -half_logdet - 0.5 * beta


class Tridiagonal(NamedTuple):
    """One position's sums in tridiagonal form (:func:`tridiagonal`): ``Q^T S Q``
    has diagonal ``a (p,)`` and off-diagonal ``e (p-1,)``, Q ``(p, p)`` orthogonal
    (the product of the Householder reflections); ``z = Q^T u (p,)`` and ``qc ()``
    (all centred at m0, over sf, whitened)."""

    Q: jax.Array
    a: jax.Array
    e: jax.Array
    z: jax.Array
    qc: jax.Array


def _householder_step(carry, k):
    """Reflect column k below the subdiagonal to zero: ``A <- H A H``, ``u <- H u``,
    ``Q <- Q H`` (Golub & Van Loan, Algorithm 8.3.1, with whole-array operations
    that XLA fuses)."""
    A, u, Q = carry
    idx = jnp.arange(A.shape[-1])
    x = jnp.where(idx > k, A[:, k], 0.0)
    below = A[k + 1, k]
    alpha = -jnp.where(below >= 0, 1.0, -1.0) * jnp.sqrt(jnp.sum(x * x))
    v = x - jnp.where(idx == k + 1, alpha, 0.0)
    vv = jnp.sum(v * v)
    tau = jnp.where(vv > 0, 2.0 / jnp.where(vv > 0, vv, 1.0), 0.0)
    pv = tau * (A @ v)
    w = pv - (0.5 * tau * jnp.dot(v, pv)) * v
    A = A - v[:, None] * w[None, :] - w[:, None] * v[None, :]
    Q = Q - (tau * (Q @ v))[:, None] * v[None, :]
    return (A, u - (tau * jnp.dot(v, u)) * v, Q), None


def tridiagonal(S, u, q, m0, sf=1.0, A=None) -> Tridiagonal:
    """One position's sums (centred at m0, over sf, whitened by A) reduced to
    tridiagonal form by p - 2 Householder reflections (jittable; ``vmap`` for more).

    Written as whole-array steps in a rolled loop rather than LAPACK's ``sytrd``:
    for four 10 x 10 matrices 2.3 us against 4.9 us on CPU (the library call also
    leaves Q^T u to a second pass; ``benchmarks/learnt_scale.py``). Q is
    accumulated in the same loop, so that a draw maps back with one product."""
    S, uc, qc = centred_sums(S, u, q, m0, sf, A, jnp)
    p = S.shape[-1]
    S = 0.5 * (S + S.T)
    Q = jnp.eye(p, dtype=S.dtype)
    if p > 2:
        (S, uc, Q), _ = jax.lax.scan(_householder_step, (S, uc, Q), jnp.arange(p - 2))
    return Tridiagonal(Q, jnp.diagonal(S), jnp.diagonal(S, offset=-1), uc, qc)


def tridiagonal_loglik(tri: Tridiagonal, n, log_g, learn_noise: bool):
    """``beta (G,)`` and ``log p(y | g) (G,)`` from one position's
    :class:`Tridiagonal`: the LDL^T recurrence of ``T + I/g^2`` at every node.

    ``log det(g^2 T + I)`` is the sum of ``log(d_i g^2)`` over the pivots d_i; it is
    kept as a running product split by ``frexp`` into a mantissa and a power of two
    (no overflow, one logarithm per node instead of p: 15 % of the recurrence's time
    on CPU), and each pivot's reciprocal serves both divisions of its step."""
    a, e, z = tri.a, tri.e, tri.z
    p = a.shape[-1]
    g2 = jnp.exp(2.0 * log_g)
    c = 1.0 / g2

    def pivot(X, i):  # X (5, ...): 1/d, y, mantissa, exponent, quad; one array, so
        # that XLA makes each step one kernel (five outputs would be five)
        r, y, mant, expo, quad = X
        ratio = e[i - 1] * r
        d = jnp.maximum(a[i] + c - ratio * e[i - 1], c)
        r = 1.0 / d
        y = z[i] - ratio * y
        mant, k = jnp.frexp(mant * (d * g2))
        return jnp.stack([r, y, mant, expo + k.astype(X.dtype), quad + y * y * r])

    d0 = jnp.maximum(a[0] + c, c)
    y0 = jnp.broadcast_to(z[0], c.shape)
    mant, expo = jnp.frexp(d0 * g2)
    X = jnp.stack([1.0 / d0, y0, mant, expo.astype(d0.dtype), y0 * y0 / d0])
    for i in range(1, p):  # unrolled; the barrier keeps XLA from fusing the steps
        # into one expression that recomputes every earlier pivot (its compile then
        # stalls); rolled, the loop's own overhead costs a tenth of a learnt round
        X = pivot(jax.lax.optimization_barrier(X), i)
    mant, expo, quad = X[2], X[3], X[4]
    half_logdet = 0.5 * (jnp.log(mant) + expo * np.log(2.0))
    return evidence_terms(half_logdet, quad, tri.qc, n, learn_noise, jnp)


def _ldl_forward(tri: Tridiagonal, c):
    """The LDL^T forward pass of ``T + c I`` (pivots kept >= c), broadcasting c (...)
    against the leading axes: ``(ratios, pivots (..., p), y (..., p))``, ratios a
    list over rows 1..p-1 (row i's subdiagonal entry of L), ``L y = z``."""
    a, e, z = tri.a, tri.e, tri.z
    d = jnp.maximum(a[..., 0] + c, c)
    X = [jnp.stack([d, jnp.broadcast_to(z[..., 0], d.shape)])]  # (pivot, y)
    for i in range(1, a.shape[-1]):  # one array per row: one kernel per step
        d, y = X[-1]
        r = e[..., i - 1] / d
        X.append(jnp.stack([jnp.maximum(a[..., i] + c - r * e[..., i - 1], c),
                            z[..., i] - r * y]))
    D, Y = jnp.stack(X, -1)
    return [e[..., i] / D[..., i] for i in range(D.shape[-1] - 1)], D, Y


def tridiagonal_draw(tri: Tridiagonal, c, s, eps):
    """``zeta = (S + c I)^-1 u + s (S + c I)^-1/2 eps`` in distribution: a draw of
    N(mean, s^2 (S + c I)^-1) from the standard normals eps (..., p), c and s
    (...) broadcasting against the :class:`Tridiagonal`'s leading axes.

    With ``T + c I = L D L^T`` (L unit lower bidiagonal, the pivots kept >= c as
    in :func:`tridiagonal_loglik`), ``L^T t = D^-1 L^-1 z + s D^-1/2 eps`` and
    ``zeta = Q t``: O(p^2), no factorisation beyond the shared tridiagonal one."""
    ratios, D, Y = _ldl_forward(tri, c)
    rhs = Y / D + jnp.asarray(s)[..., None] * eps / jnp.sqrt(D)
    t = [rhs[..., -1]]
    for i in range(D.shape[-1] - 2, -1, -1):
        t.append(rhs[..., i] - ratios[i] * t[-1])
    return jnp.einsum("...ij,...j->...i", tri.Q, jnp.stack(t[::-1], -1))


def tridiagonal_quad(tri: Tridiagonal, c):
    """``z^T (T + c I)^-1 z = u^T (S + c I)^-1 u`` at c (...) broadcasting against
    the :class:`Tridiagonal`'s leading axes (the LDL^T recurrence, pivots >= c)."""
    _, D, Y = _ldl_forward(tri, c)
    return jnp.sum(Y * Y / D, -1)


def grid_loglik(S, u, q, n, m0, log_g, learn_noise: bool, sf=1.0, A=None):
    """``beta (G,)`` and ``log p(y | g) (G,)`` of :func:`grid_terms` without an
    eigendecomposition (jittable; all that a draw of g needs).

    S is reduced once to tridiagonal form ``T = Q^T S Q`` (:func:`tridiagonal`:
    Householder reflections, a quarter of ``eigh``'s time for 10 x 10 matrices on
    CPU); at every node c = 1/g^2 the LDL^T recurrence of ``T + c I``, O(p), gives
    ``log det(S + c I)`` and ``z^T (T + c I)^-1 z`` with ``z = Q^T u``. Each pivot
    of ``T + c I`` is at least c (S is positive semi-definite), so pivots are kept
    >= c, as :func:`grid_terms` keeps the eigenvalues >= 0.

    Example:
        >>> import numpy as np, jax.numpy as jnp
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(6, 3)); y = X.sum(1) + rng.normal(size=6)
        >>> args = (jnp.asarray(X.T @ X), jnp.asarray(X.T @ y), float(y @ y), 6.0,
        ...         jnp.zeros(3), jnp.linspace(-3.0, 3.0, 5), True)
        >>> bool(np.allclose(grid_loglik(*args)[1], grid_terms(*args)[-1], atol=1e-4))
        True
    """
    return tridiagonal_loglik(tridiagonal(S, u, q, m0, sf, A), n, log_g, learn_noise)


def grid_terms(S, u, q, n, m0, log_g, learn_noise: bool, sf=1.0, xp=jnp, A=None):
    """Everything one position's draw, mean and evidence need, from its sums.

    Args:
        S (p, p), u (p,), q (), n (): the running sums; m0 (p,) prior mean;
        log_g (G,) grid; learn_noise: Jeffreys noise (True) or known noise sf;
        xp: ``jax.numpy`` (jittable) or ``numpy`` (host-side summaries);
        A: None, or (p, p) the prior's shape (theta = m0 + A z, z ~ N(0, g^2 s^2 I)):
        the sums are whitened by it.

    Returns:
        U (p, p), D (p,) eigenpairs of S; z (p,) = U^T u (centred, over sf);
        denom (G, p) = D + 1/g^2; beta (G,); loglik (G,) log p(y | g) up to a
        constant in g.
    """
    S, uc, qc = centred_sums(S, u, q, m0, sf, A, xp)
    if xp is np:
        D, U = np.linalg.eigh(S)
    else:  # symmetrised here: eigh's own symmetrisation is a slower path (86 vs 35 us
        # for four 10 x 10 matrices on CPU, benchmarks/learnt_scale.py)
        D, U = jnp.linalg.eigh(0.5 * (S + S.T), symmetrize_input=False)
    D = xp.maximum(D, 0.0)
    z = U.T @ uc
    g2 = xp.exp(2.0 * log_g)
    denom = D[None, :] + 1.0 / g2[:, None]
    half_logdet = 0.5 * xp.sum(xp.log1p(g2[:, None] * D[None, :]), axis=-1)
    beta, loglik = evidence_terms(half_logdet, xp.sum(z * z / denom, axis=-1), qc, n,
                                learn_noise, xp)
    return U, D, z, denom, beta, loglik
