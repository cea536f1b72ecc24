"""The uniformity test: PIT-ECDF simultaneous-band test with a Bonferroni correction.

Per coordinate (Säilynoja, Bürkner & Vehtari 2022, "Graphical test for discrete
uniformity and its applications in goodness-of-fit evaluation and multiple sample
comparison", the test behind ArviZ's PIT-ECDF bands): with N values ``u`` that should be
Uniform(0, 1) and evaluation points ``z_i = i / E`` (i = 1..E-1), the ECDF count
``c_i = #{u <= z_i}`` is Binomial(N, z_i) under uniformity. The statistic is the
smallest two-sided binomial tail probability over the points,

    gamma = min_i 2 min( P[Bin(N, z_i) <= c_i], P[Bin(N, z_i) >= c_i] ),

and the ECDF leaves the simultaneous (1 - a) band exactly when gamma falls below the
a-quantile of its null distribution. The p-value is the share of ``n_null`` simulated
uniform samples (same N and E) whose gamma is at most the observed one (with the +1
correction, so it is never 0).

Per model: D coordinates give D p-values; the model's ONE p-value is Bonferroni's
``min(1, D * min_j p_j)`` (for the global null "every coordinate is uniform" Holm's
procedure rejects exactly when Bonferroni does, so the number is the same). A 1 % level
therefore means at most 1 % false alarms per model, whatever the dependence between
coordinates.

Example:
    >>> import numpy as np
    >>> u = np.random.default_rng(0).uniform(size=(200, 3))
    >>> res = uniformity_test(u, n_null=500)
    >>> bool(res.p_value > 0.01)
    True
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
from scipy.special import bdtr, bdtrik

__all__ = [
    "UniformityResult",
    "band",
    "ecdf_gamma",
    "null_gamma",
    "uniformity_test",
]


class UniformityResult(NamedTuple):
    """Result of :func:`uniformity_test` for one model."""

    p_value: float  # Bonferroni-corrected, one per model
    statistic: float  # smallest gamma over the coordinates
    gamma: np.ndarray  # (D,) per-coordinate statistic
    p_coordinate: np.ndarray  # (D,) per-coordinate (uncorrected) p-values


def _eval_points(N: int, n_eval: int | None) -> np.ndarray:
    E = min(N, 100) if n_eval is None else int(n_eval)
    if E < 2:
        raise ValueError(f"n_eval: expected at least 2 evaluation intervals, got {E}")
    return np.arange(1, E) / E


def ecdf_gamma(u, n_eval: int | None = None) -> np.ndarray:
    """The band statistic gamma of each column of ``u``.

    Args:
        u: (N, D) values that should be Uniform(0, 1) per column.
        n_eval: evaluation intervals E (default ``min(N, 100)``).

    Returns:
        (D,) gamma in [0, 1]; small means far from uniform.
    """
    u = np.asarray(u, dtype=float)
    if u.ndim != 2 or u.shape[0] < 2:
        raise ValueError(f"u: expected an (N, D) array with N >= 2, got {u.shape}")
    if np.any((u < 0) | (u > 1)) or not np.all(np.isfinite(u)):
        raise ValueError("u: expected finite values in [0, 1]")
    N = u.shape[0]
    z = _eval_points(N, n_eval)
    counts = np.sum(u[:, :, None] <= z[None, None, :], axis=0)  # (D, E-1)
    return _gamma_from_counts(counts, N, z)


def _gamma_from_counts(counts, N: int, z) -> np.ndarray:
    lower = bdtr(counts, N, z)
    upper = np.where(counts > 0, 1.0 - bdtr(np.maximum(counts - 1, 0), N, z), 1.0)
    return np.min(2.0 * np.minimum(lower, upper), axis=-1).clip(0.0, 1.0)


@functools.lru_cache(maxsize=32)
def null_gamma(N: int, n_eval: int | None = None, n_null: int = 4000, seed: int = 2024):
    """Sorted null distribution of gamma for N uniforms (cached; read-only array).

    Args:
        N: sample size; n_eval: evaluation intervals; n_null: simulated samples;
        seed: seed of the simulation.

    Returns:
        (n_null,) sorted gamma values.
    """
    z = _eval_points(N, n_eval)
    E = z.shape[0] + 1
    rng = np.random.default_rng(seed)
    out = np.empty(n_null)
    chunk = max(1, 2_000_000 // max(N, 1))
    for start in range(0, n_null, chunk):
        m = min(chunk, n_null - start)
        u = rng.uniform(size=(m, N))
        # c_i = #{u <= i/E} = #{floor(u E) < i}: a cumulative histogram per row
        idx = np.minimum((u * E).astype(np.int64), E - 1) + E * np.arange(m)[:, None]
        hist = np.bincount(idx.ravel(), minlength=m * E).reshape(m, E)
        counts = np.cumsum(hist, axis=1)[:, :-1]
        out[start : start + m] = _gamma_from_counts(counts, N, z)
    out.sort()
    out.setflags(write=False)
    return out


def uniformity_test(
    u, *, n_eval: int | None = None, n_null: int = 4000, seed: int = 2024
) -> UniformityResult:
    """PIT-ECDF band test per column, combined over columns by Bonferroni.

    Args:
        u: (N, D) PIT values (e.g. :func:`~bayesrank.studies.calibration.ranks.pit_from_ranks`).
        n_eval: evaluation intervals (default ``min(N, 100)``).
        n_null: null simulations (p-values resolve down to ``1 / (n_null + 1)``).
        seed: seed of the null simulation.

    Returns:
        UniformityResult with the model's p-value, the smallest gamma, and the
        per-coordinate gamma and p-values.

    Example:
        >>> import numpy as np
        >>> u = np.random.default_rng(0).uniform(size=(200, 3))
        >>> res = uniformity_test(u, n_null=500)
        >>> res.gamma.shape, bool(res.p_value > 0.01)
        ((3,), True)
        >>> bool(uniformity_test(u**2, n_null=500).p_value < 0.01)  # skewed: rejected
        True
    """
    gamma = ecdf_gamma(u, n_eval)
    null = null_gamma(int(np.shape(u)[0]), n_eval, int(n_null), int(seed))
    below = np.searchsorted(null, gamma, side="right")
    p_coord = (1.0 + below) / (1.0 + null.shape[0])
    D = gamma.shape[0]
    p_value = float(min(1.0, D * p_coord.min()))
    return UniformityResult(p_value, float(gamma.min()), gamma, p_coord)


def band(N: int, level: float, *, n_eval: int | None = None, n_null: int = 4000,
         seed: int = 2024):
    """The simultaneous band of the ECDF of N uniforms at ``level`` (e.g. 0.99).

    An ECDF inside the band everywhere has gamma above the null (1 - level) quantile,
    i.e. a per-coordinate p-value above ``1 - level`` (up to the resolution of the
    null simulation).

    Returns:
        z (E-1,), lower (E-1,), upper (E-1,): the band of the ECDF at the points.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level: expected a number in (0, 1), got {level}")
    z = _eval_points(N, n_eval)
    null = null_gamma(int(N), n_eval, int(n_null), int(seed))
    g = float(np.quantile(null, 1.0 - level))
    lower = np.ceil(bdtrik(g / 2.0, N, z)) / N
    upper = np.ceil(bdtrik(1.0 - g / 2.0, N, z)) / N
    return z, np.nan_to_num(lower, nan=0.0), np.nan_to_num(upper, nan=1.0)


def power(N: int, D: int, M: int, *, scale: float = 1.0, shift: float = 0.0,
          alpha: float = 0.01, reps: int = 200, n_null: int = 4000,
          seed: int = 7) -> float:
    """Rejection rate of :func:`uniformity_test` for a known misfit, by simulation.

    Each of the D coordinates ranks one draw of N(shift, scale^2) among M draws of
    N(0, 1) (a sampler whose draws are off by ``shift`` posterior sds, or whose spread
    is ``scale`` times the posterior's), N times; the test runs ``reps`` times.

    Returns:
        The share of repetitions with p < alpha.
    """
    rng = np.random.default_rng(seed)
    hits = 0
    for r in range(reps):
        ref = rng.standard_normal((N, D, M))
        x = shift + scale * rng.standard_normal((N, D, 1))
        ranks = np.sum(ref < x, axis=-1)
        u = (ranks + rng.uniform(size=ranks.shape)) / (M + 1.0)
        hits += uniformity_test(u, n_null=n_null, seed=seed + 1).p_value < alpha
    return hits / reps
