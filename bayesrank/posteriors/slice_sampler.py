"""One univariate Metropolis-within-slice kernel: a heavy-tailed independence jump,
then slice transitions (Neal 2003: stepping out, then shrinkage).

:func:`jump_then_slice` moves one scalar w under an unnormalised log density ``logf``
(vectorised over points). It is what :class:`~bayesrank.posteriors.LatentW` runs per
position on the collapsed marginal of w: first one Metropolis-Hastings jump from a
Cauchy centred on a data-driven estimate (so that a chain caught in a far, negligible
mode leaves it), then ``steps`` slice transitions whose width tracks the chain's own
steps.

The loops have fixed lengths (at most :data:`STEP_OUT` stepping-out steps, split at
random between the two ends as in Neal's procedure, and :data:`SHRINK` shrinkage
proposals, staying at the current w if none is accepted). A truncated shrinkage keeps
the kernel reversible (every accepted sequence of proposals has the same probability
in reverse, and staying put is a self-transition), and fixed lengths cost the same
under ``vmap`` over positions and runs as on one lane. Pure JAX: jittable, vmappable.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from bayesrank.posteriors.slice_sampler import jump_then_slice
    >>> logf = lambda w: -0.5 * w**2                     # a standard normal
    >>> w, width = jump_then_slice(jax.random.key(0), logf, jnp.asarray(3.0),
    ...                            jnp.asarray(1.0), jnp.asarray(0.0), steps=2)
    >>> w.shape, bool(width > 0)
    ((), True)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["SHRINK", "STEP_OUT", "jump_then_slice"]

#: Stepping-out steps (both ends together) and shrinkage proposals per transition.
STEP_OUT = 3
SHRINK = 3


def jump_then_slice(key, logf, w0, width, centre, *, steps: int):
    """One independence jump, then ``steps`` slice transitions of a scalar w.

    Args:
        key: a JAX PRNG key.
        logf: unnormalised log density, (k,) points -> (k,) (``-inf`` outside the
            support).
        w0: () the chain's current w; width: () the current slice width.
        centre: () the jump proposal's centre (a Cauchy of scale ``3 width``).
        steps: slice transitions (static).

    Returns:
        ``(w, width)``: the new w and the width, following the chain's steps.
    """
    dtype = jnp.result_type(w0)
    k_jump, k_slice = jax.random.split(key)
    # --- the jump: an independence proposal with heavy tails
    k1, k2 = jax.random.split(k_jump)
    scale = jnp.maximum(3.0 * width, 1e-6)
    w1 = centre + scale * jax.random.cauchy(k1, dtype=dtype)
    f01 = logf(jnp.stack([w0, w1]))
    logq = -jnp.log1p(((jnp.stack([w0, w1]) - centre) / scale) ** 2)
    log_ratio = (f01[1] - logq[1]) - (f01[0] - logq[0])
    accept = jnp.log(jax.random.uniform(k2, dtype=dtype)) < log_ratio
    w, f = jnp.where(accept, w1, w0), jnp.where(accept, f01[1], f01[0])

    def transition(carry, key):
        w0, f0, width = carry
        k1, k2, k3, k4 = jax.random.split(key, 4)
        logy = f0 - jax.random.exponential(k1, dtype=dtype)
        left = w0 - width * jax.random.uniform(k2, dtype=dtype)
        right = left + width
        j = jnp.floor(STEP_OUT * jax.random.uniform(k3, dtype=dtype))
        k = STEP_OUT - 1 - j

        def step_out(_, c):
            lft, rgt, jj, kk = c
            fe = logf(jnp.stack([lft, rgt]))
            go_l = (jj > 0) & (fe[0] > logy)
            go_r = (kk > 0) & (fe[1] > logy)
            return (lft - width * go_l, rgt + width * go_r, jj - go_l, kk - go_r)

        left, right, _, _ = jax.lax.fori_loop(
            0, STEP_OUT, step_out, (left, right, j, k)
        )

        def shrink(_, c):
            lft, rgt, w1, f1, done, kk = c
            kk, ku = jax.random.split(kk)
            prop = lft + (rgt - lft) * jax.random.uniform(ku, dtype=dtype)
            fp = logf(prop[None])[0]
            ok = (~done) & (fp > logy)
            miss = (~done) & ~ok
            lft = jnp.where(miss & (prop < w0), prop, lft)
            rgt = jnp.where(miss & (prop >= w0), prop, rgt)
            return (lft, rgt, jnp.where(ok, prop, w1), jnp.where(ok, fp, f1),
                    done | ok, kk)

        _, _, w1, f1, _, _ = jax.lax.fori_loop(
            0, SHRINK, shrink, (left, right, w0, f0, jnp.asarray(False), k4)
        )
        # the width follows the chain's own steps (about one posterior sd)
        new_width = jnp.clip(0.7 * width + 0.9 * jnp.abs(w1 - w0), 1e-12, 1e12)
        return (w1, f1, new_width), None

    (w, _, width), _ = jax.lax.scan(
        transition, (w, f, width), jax.random.split(k_slice, steps)
    )
    return w, width
