"""Rank statistics of simulation-based calibration (Talts et al. 2018).

For one simulation, the rank of a reference value (the true theta drawn from the
prior, or one draw under test) among ``M`` draws of the posterior is the number of
draws below it. If the draws are ``M`` independent draws of the same distribution the
reference came from, the rank is uniform on ``{0, ..., M}`` for every coordinate.

Ties (a Markov chain that rejected a proposal repeats its value, and a reference equal
to a draw) are broken uniformly at random, which keeps the rank exactly uniform.

Example:
    >>> import jax, jax.numpy as jnp
    >>> draws = jnp.array([[0.1], [0.5], [0.9]])
    >>> int(rank_of(jax.random.key(0), jnp.array([0.6]), draws)[0])
    2
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["pit_from_ranks", "rank_of", "thin"]


def rank_of(key, reference, draws):
    """Rank of ``reference`` among ``draws`` per coordinate, ties broken at random.

    Args:
        key: a JAX PRNG key (used only to break ties).
        reference: (...,) the value whose rank is taken.
        draws: (M, ...) posterior draws.

    Returns:
        (...,) int32 ranks in ``{0, ..., M}``.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> draws = jnp.array([[0.1, 5.0], [0.5, 6.0], [0.9, 7.0]])  # M = 3
        >>> rank_of(jax.random.key(0), jnp.array([0.6, 4.0]), draws).tolist()
        [2, 0]
    """
    reference = jnp.asarray(reference)
    draws = jnp.asarray(draws)
    if draws.shape[1:] != reference.shape:
        raise ValueError(
            f"draws: expected shape (M, *{reference.shape}) to match reference, "
            f"got {draws.shape}"
        )
    below = jnp.sum(draws < reference, axis=0)
    equal = jnp.sum(draws == reference, axis=0)
    u = jax.random.uniform(key, reference.shape)
    extra = jnp.floor(u * (equal + 1)).astype(below.dtype)
    return (below + extra).astype(jnp.int32)


def thin(draws, every: int, *, skip: int = 0):
    """Keep every ``every``-th draw after discarding the first ``skip``.

    Args:
        draws: (T, ...) a chain's draws in order.
        every: the thinning interval (1 keeps all).
        skip: draws discarded first (warm-up).

    Returns:
        (ceil((T - skip) / every), ...) the kept draws, the last one included.
    """
    if every < 1 or skip < 0:
        raise ValueError(
            f"every/skip: expected every >= 1 and skip >= 0, got {every}, {skip}"
        )
    kept = draws[skip:]
    # align on the end, so the last (best-mixed) draw is always kept
    start = (kept.shape[0] - 1) % every
    return kept[start::every]


def pit_from_ranks(ranks, M: int, *, seed: int = 0) -> np.ndarray:
    """Randomised PIT values ``(rank + U) / (M + 1)``, U ~ Uniform(0, 1).

    Uniform ranks on ``{0, ..., M}`` give exactly Uniform(0, 1) values, so tests and
    bands for continuous uniforms apply without a discreteness correction.

    Args:
        ranks: (N, D) integer ranks in ``{0, ..., M}``.
        M: the number of posterior draws each rank was taken among.
        seed: seed of the randomisation.

    Returns:
        (N, D) float64 values in (0, 1).

    Example:
        >>> import numpy as np
        >>> u = pit_from_ranks(np.array([[0, 9], [4, 5]]), M=9)
        >>> bool(np.all((u > 0) & (u < 1)))
        True
        >>> np.floor(u * 10).astype(int).tolist()  # (M + 1) u lies in [rank, rank + 1)
        [[0, 9], [4, 5]]
    """
    ranks = np.asarray(ranks)
    if np.any(ranks < 0) or np.any(ranks > M):
        raise ValueError(f"ranks: expected integers in [0, {M}]")
    rng = np.random.default_rng(seed)
    return (ranks + rng.uniform(size=ranks.shape)) / (M + 1.0)
