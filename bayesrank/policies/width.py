"""Lemma 1's confidence radius, the width the UCB policies add to their estimate at
run time (the regret bounds that use it are in :mod:`bayesrank.theorems`)."""

from __future__ import annotations

import math

import jax.numpy as jnp

__all__ = ["lemma1_width"]


def lemma1_width(logdet_ratio, *, lam, delta, m2):
    """Lemma 1's confidence radius, jittable.

    ``sqrt(beta_t) = sqrt(lam) m2 + sqrt(2 log(1/delta) + log(det V_t / lam^d))``.

    Args:
        logdet_ratio: (...) ``log det V_t - d log lam`` (>= 0).
        lam: the ridge parameter (a number, or an array broadcasting with
            ``logdet_ratio``: one per position); delta: the confidence level in (0, 1);
        m2: a bound on the parameter norm ``||theta||_2``.

    Returns:
        (...) the radius of the confidence ellipsoid in the ``V_t`` norm.

    Example:
        >>> import math
        >>> from bayesrank.policies.width import lemma1_width
        >>> r = lemma1_width(0.0, lam=1.0, delta=0.1, m2=1.0)  # 1 + sqrt(2 log 10)
        >>> round(float(r), 4), round(1 + math.sqrt(2 * math.log(10)), 4)
        (3.146, 3.146)
    """
    r = jnp.maximum(jnp.asarray(logdet_ratio), 0.0)
    root = math.sqrt(lam) if isinstance(lam, (int, float)) else jnp.sqrt(lam)
    return root * m2 + jnp.sqrt(2.0 * math.log(1.0 / delta) + r)
