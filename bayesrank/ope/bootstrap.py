"""Percentile bootstrap over the rounds of a log, vectorised.

Resamples are drawn as count matrices (b, n): row j holds how often each round appears
in replicate j (n rounds drawn with replacement). An estimator that is a function of
column means of per-round statistics M (n, k) evaluates all b replicates at once as
``f(counts @ M / n)``. Replicates come in chunks of at most ``2**22`` counts so that
memory stays bounded; the chunking depends only on (n, n_boot), so a seed gives the
same replicates every time.
"""

from __future__ import annotations

import numpy as np

from bayesrank._validate import check_int

__all__ = ["percentile_interval", "resample_counts"]

#: the most counts (replicates x rounds) held at once
MAX_COUNTS = 2**22


def resample_counts(n: int, n_boot: int, seed: int = 0):
    """Yield (b, n) count matrices of n_boot bootstrap resamples of n rounds.

    Args:
        n: the number of rounds.
        n_boot: the number of replicates in all.
        seed: seeds the NumPy generator.

    Yields:
        float arrays (b, n) of counts, each row summing to n; the b's sum to n_boot.

    Examples:
        >>> from bayesrank.ope.bootstrap import resample_counts
        >>> chunks = list(resample_counts(5, 3, seed=1))
        >>> [c.shape for c in chunks], chunks[0].sum(axis=1).tolist()
        ([(3, 5)], [5.0, 5.0, 5.0])
    """
    n = check_int(n, "n", low=1)
    n_boot = check_int(n_boot, "n_boot", low=1)
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_boot, MAX_COUNTS // n))
    for start in range(0, n_boot, chunk):  # chunks of replicates (memory), not rounds
        b = min(chunk, n_boot - start)
        idx = rng.integers(0, n, size=(b, n))
        flat = (np.arange(b)[:, None] * n + idx).ravel()
        yield np.bincount(flat, minlength=b * n).reshape(b, n).astype(float)


def percentile_interval(replicates, level: float = 0.95) -> tuple[float, float]:
    """The equal-tailed percentile interval of bootstrap replicates.

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope.bootstrap import percentile_interval
        >>> lo, hi = percentile_interval(np.arange(201.0))
        >>> round(lo, 9), round(hi, 9)
        (5.0, 195.0)
    """
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(np.asarray(replicates, float), [a, 1.0 - a])
    return float(lo), float(hi)
