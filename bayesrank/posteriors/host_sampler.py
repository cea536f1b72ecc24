"""Host-side (NumPy) posterior draws for DataTree summaries.

``to_datatree`` summarises thousands of exact draws once; drawing them with NumPy on
the host avoids compiling a sampler (JAX's gamma sampler alone takes seconds to
compile). :func:`host_rng` turns a JAX key into a NumPy generator, so the draws are
still seeded by the caller's key; :func:`host_draws` draws ``N(P^-1 b, s^2 P^-1)``
from a Cholesky factor of the precision P.

Example:
    >>> import jax, numpy as np
    >>> from bayesrank.posteriors.host_sampler import host_draws, host_rng
    >>> chol = np.linalg.cholesky(np.array([[4.0, 0.0], [0.0, 1.0]]))
    >>> draws = host_draws(host_rng(jax.random.key(0)), chol, np.array([4.0, 1.0]),
    ...                    np.ones(20000))
    >>> np.round(draws.mean(0), 1).tolist(), np.round(draws.std(0), 1).tolist()
    ([1.0, 1.0], [0.5, 1.0])
"""

from __future__ import annotations

import jax
import numpy as np

__all__ = ["host_draws", "host_rng"]


def host_rng(key) -> np.random.Generator:
    """A NumPy generator seeded from a JAX key (``jax.random.key(0)`` if None)."""
    key = jax.random.key(0) if key is None else key
    seed = np.asarray(jax.random.key_data(key)).astype(np.uint32).ravel()
    return np.random.default_rng(seed.tolist())


def host_draws(rng, chol, b, scale) -> np.ndarray:
    """Host-side draws of N(P^{-1} b, scale_i^2 P^{-1}) with P = C C^T (NumPy/SciPy).

    Used by ``to_datatree``, where thousands of draws are summarised once: NumPy
    avoids compiling a sampler (JAX's gamma sampler alone takes seconds to compile).

    Args:
        rng: NumPy generator; chol (p, p) lower factor of P; b (p,);
        scale: (N,) per-draw scale.

    Returns:
        (N, p) draws.
    """
    from scipy.linalg import cho_solve, solve_triangular

    chol = np.asarray(chol, dtype=float)
    mean = cho_solve((chol, True), np.asarray(b, dtype=float))
    z = rng.standard_normal((scale.shape[0], chol.shape[0]))
    return mean + scale[:, None] * solve_triangular(chol, z.T, lower=True, trans="T").T
