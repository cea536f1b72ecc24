"""Instance generators of :class:`~bayesrank.simulation.env.RankingEnv`: the paper's
synthetic instances and semi-synthetic ones (real item vectors, drawn click parameters
matching observed click rates).

The functions take the environment class as their first argument (what
``RankingEnv.paper`` and ``RankingEnv.semi_synthetic`` pass), so this module stays
below :mod:`bayesrank.simulation.env` in the import graph; their docstrings are the
classmethods'.

Example:
    >>> from bayesrank.simulation.env import RankingEnv
    >>> env = paper_env(RankingEnv, 0, 10, 4, 10, 10.0, "identity", None, None)
    >>> env.K, env.L, env.d
    (10, 4, 10)
"""

from __future__ import annotations

import numpy as np

from bayesrank._validate import check_array, check_int, check_seed
from bayesrank.datasets import obd_position_clicks

__all__ = ["paper_env", "semi_synthetic_env"]


def paper_env(cls, seed, K, L, d, w_max, link, noise, v0):
    """:meth:`RankingEnv.paper <bayesrank.simulation.env.RankingEnv.paper>`."""
    for name, val in (("K", K), ("L", L), ("d", d)):
        check_int(val, name, low=1)
    if d < 2:
        raise ValueError(f"d: the paper's generator needs d >= 2, got {d}")
    if not np.isfinite(w_max) or w_max < 0:
        raise ValueError(f"w_max: expected a finite number >= 0, got {w_max!r}")
    rng = np.random.default_rng(check_seed(seed))

    def unit_rows(n):
        x = rng.uniform(-1.0, 1.0, size=(n, d - 1))
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    items = np.c_[unit_rows(K), np.ones(K)]
    theta = 0.5 * np.c_[unit_rows(L), np.ones(L)]
    w = rng.uniform(-w_max, w_max, size=L)
    return cls(items, theta, w, v0=v0, link=link, noise=noise)


def semi_synthetic_env(cls, items, *, L, link, w_max, base_rate, campaign, spread,
                       seed):
    """:meth:`RankingEnv.semi_synthetic
    <bayesrank.simulation.env.RankingEnv.semi_synthetic>`."""
    from scipy.special import expit, ndtr

    V = check_array(items, "items", ndim=2)
    K, d = V.shape
    L = check_int(L, "L", low=1)
    if K < 1 or d < 1:
        raise ValueError(
            f"items: expected a (K, d) array with K, d >= 1, got {V.shape}"
        )
    means = {"logistic": expit, "probit": ndtr}
    if not isinstance(link, str) or link not in means:
        raise ValueError(
            f"link: expected 'logistic' or 'probit' (clicks), got {link!r}"
        )
    for name, val, low in (("w_max", w_max, 0.0), ("spread", spread, None)):
        ok = isinstance(val, (int, float, np.floating, np.integer)) and np.isfinite(
            val
        )
        if not ok or (val < 0 if low is not None else val <= 0):
            need = ">= 0" if low is not None else "> 0"
            raise ValueError(
                f"{name}: expected a finite number {need}, got {val!r}"
            )
    if base_rate is None:
        if L != 3:
            raise ValueError(
                f"L: the log's per-position rates need L = 3, got {L}; pass "
                "base_rate for another list length"
            )
        target = obd_position_clicks(campaign).rates
    else:
        try:
            target = np.broadcast_to(np.asarray(base_rate, dtype=float), (L,))
        except (TypeError, ValueError):
            raise ValueError(
                f"base_rate: expected None, a number or an ({L},) array of rates "
                f"in (0, 1), got {base_rate!r}"
            ) from None
        if not np.all((target > 0) & (target < 1)):
            raise ValueError(
                f"base_rate: expected rates in (0, 1), got {base_rate!r}"
            )
    f = means[link]
    rng = np.random.default_rng(check_seed(seed))
    w = rng.uniform(-w_max, w_max, size=L)
    for pos in range(1, L):
        while abs(1.0 + w[pos]) < cls.SEMI_SYNTHETIC_MIN_OFFSET:
            w[pos] = rng.uniform(-w_max, w_max)
    theta = np.zeros((L, d + 1))
    for pos in range(L):
        u = rng.standard_normal(d)
        s = V @ u
        sd = s.std()
        if not sd > 1e-12 * max(1.0, np.abs(s).max()):
            raise ValueError(
                "items: every item has the same features; the item scores cannot "
                "be given a spread"
            )
        g = spread * u / sd
        s = V @ g
        # logits of a uniformly random list, up to the offset c = b (1 + w)
        z = s if pos == 0 else (s[None, :] + w[pos] * s[:, None]).ravel()
        c = _bisect_offset(lambda c, z=z: float(np.mean(f(c + z))), target[pos])
        theta[pos] = np.r_[g, c if pos == 0 else c / (1.0 + w[pos])]
    return cls(np.c_[V, np.ones(K)], theta, w, link=link)


def _bisect_offset(rate, target: float, tol: float = 1e-12) -> float:
    """The offset c with ``rate(c) = target`` for an increasing ``rate`` (bisection)."""
    lo, hi = -1.0, 1.0
    while rate(lo) > target:
        lo *= 2.0
    while rate(hi) < target:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if rate(mid) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo < tol:
            break
    return 0.5 * (lo + hi)
