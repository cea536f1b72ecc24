"""All the random numbers of one learnt-scale draw from one call to the generator.

On the CPU each call of a ``jax.random`` sampler is a loop of its own (JAX lowers the
threefry hash there as a rolled five-step loop), and ``jax.random.gamma`` runs
rejection loops holding more such calls. A learnt-scale draw needs a uniform for its
grid node, a Gamma variate for the noise and p normals for theta: drawn one by one
they cost about as much as the rest of the round (``benchmarks/learnt_scale.py``).
:func:`uniforms_normals_gamma` takes them all from one block of uniforms:

* normals as ``jax.random.normal`` makes them, ``sqrt(2) erfinv(v)`` for v uniform on
  (-1, 1);
* Gamma(a, 1) by Marsaglia & Tsang's (2000) squeeze-free rejection method, from
  :data:`CANDIDATES` (normal, uniform) pairs per variate (with a < 1 boosted:
  ``Gamma(a) = Gamma(a + 1) U^(1/a)``). Each candidate is accepted with probability
  at least 0.95, and the first accepted is exactly Gamma(a + 1); where all of them are
  rejected (at most 0.05^3 = 1.25e-4 a variate) a loop draws fresh candidates from an
  independent key until every variate has one, so the result is exact, not truncated.

Example:
    >>> import jax, jax.numpy as jnp
    >>> u, z, g = uniforms_normals_gamma(jax.random.key(0), jnp.array([0.5, 3.0, 40.0]),
    ...                                  (1000,), n_uniform=1, n_normal=4)
    >>> u.shape, z.shape, g.shape
    ((1000, 3, 1), (1000, 3, 4), (1000, 3))
    >>> bool(jnp.all(g > 0))
    True
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["CANDIDATES", "uniforms_normals_gamma"]

#: Marsaglia-Tsang candidates drawn per Gamma variate in the first pass.
CANDIDATES = 3


def _block(key, shape, dtype):
    """Uniforms on (-1, 1) (jax.random.normal's open interval): one threefry call."""
    lo = jnp.nextafter(jnp.asarray(-1.0, dtype), jnp.asarray(0.0, dtype))
    return jax.random.uniform(key, shape, dtype, minval=lo, maxval=1.0)


def _normal(v):
    return np.sqrt(2.0).astype(v.dtype) * jax.scipy.special.erfinv(v)


def _uniform(v):
    """(-1, 1) to (0, 1]: never 0, so its logarithm is finite."""
    return 0.5 * (v + 1.0)


def _marsaglia_tsang(d, c, v, out, done):
    """Fold candidates ``v (..., 2 m)`` (m normals, then m uniforms on (-1, 1)) into
    ``out``/``done``: the first accepted candidate of each variate not yet done."""
    m = v.shape[-1] // 2
    x, u = _normal(v[..., :m]), _uniform(v[..., m:])  # whole arrays: one kernel each
    t = 1.0 + c[..., None] * x
    cube = t * t * t
    pos = cube > 0
    dd = d[..., None]
    ok = pos & (jnp.log(u) < 0.5 * x * x + dd - dd * cube
                + dd * jnp.log(jnp.where(pos, cube, 1.0)))
    for j in range(m):
        out = jnp.where(ok[..., j] & ~done, dd[..., 0] * cube[..., j], out)
        done = done | ok[..., j]
    return out, done


def uniforms_normals_gamma(key, a, shape=(), *, n_uniform: int, n_normal: int):
    """Uniforms (0, 1], standard normals and one Gamma(a, 1) variate per entry of a.

    Args:
        key: a PRNG key (split once: the first pass and the rare fallback loop).
        a (...): Gamma shapes, > 0 (an entry that is not, NaN included, gives NaN
            and never holds up the fallback loop).
        shape: leading shape of independent draws.
        n_uniform, n_normal: how many of each per entry of a.

    Returns:
        ``uniforms (*shape, *a.shape, n_uniform)``, ``normals (*shape, *a.shape,
        n_normal)`` and ``gamma (*shape, *a.shape)``, all of a's dtype.
    """
    a = jnp.asarray(a)
    dtype = a.dtype
    k_main, k_more = jax.random.split(key)
    full = (*shape, *a.shape)
    m = 2 * CANDIDATES
    v = _block(k_main, (*full, n_uniform + n_normal + 1 + m), dtype)
    small = a < 1.0
    d = jnp.where(small, a + 1.0, a) - 1.0 / 3.0
    c = 1.0 / jnp.sqrt(9.0 * d)
    bad = jnp.broadcast_to(~(a > 0), full)
    out, done = _marsaglia_tsang(d, c, v[..., -m:], jnp.ones(full, dtype), bad)

    def more(carry):
        i, out, done = carry
        fresh = _block(jax.random.fold_in(k_more, i), (*full, m), dtype)
        return (i + 1, *_marsaglia_tsang(d, c, fresh, out, done))

    _, out, _ = jax.lax.while_loop(lambda s: ~jnp.all(s[2]), more,
                                   (jnp.zeros((), jnp.int32), out, done))
    boost = _uniform(v[..., n_uniform + n_normal]) ** (1.0 / a)
    gamma = jnp.where(bad, jnp.nan, jnp.where(small, out * boost, out))
    return (_uniform(v[..., :n_uniform]), _normal(v[..., n_uniform:n_uniform + n_normal]),
            gamma)
