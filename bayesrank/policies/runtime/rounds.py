"""The round counter's keys: which PRNG key round ``t`` of a policy draws with.

Round t draws with ``fold_in(key, t)`` (as :func:`bayesrank.simulate` does) for every
t < 2**32: ``fold_in`` takes 32-bit data. Past it, t's block of 2**32 rounds has a key
of its own, so every round up to the counter's bound (``MAX_ROUND`` = 2**63 - 1, an
int64, :func:`bayesrank.policies.runtime.checks.as_round`) has its own key:

    round_key(key, t) = fold_in(key, t)                                  t < 2**32
                      = fold_in(fold_in(fold_in(key, t >> 32), 2**32 - 1), t % 2**32)

The index 2**32 - 1 under a round's key is one no round and no batch reaches (a batch
splits its round's key into B < 2**32 keys), so no two rounds share a key.

    key', t32 = round_args(key, t)     # what the compiled programs fold: fold_in(key', t32)
    posterior_key(key, t)              # the key of Policy.posterior at round counter t
"""

from __future__ import annotations

import jax
import numpy as np

from bayesrank.policies.runtime.checks import as_round, MAX_ROUND

__all__ = ["BLOCK", "posterior_key", "refuse_last_round", "round_args", "round_key"]

#: Rounds per block of the counter: fold_in takes 32-bit data.
BLOCK = 2**32


def _block_key(key, hi: int, index: int):
    """The key of block ``hi`` (>= 1) of 2**32 rounds (``index``: which unreached
    child of round hi's key: 2**32 - 1 for rounds, 2**32 - 2 for posteriors)."""
    return jax.random.fold_in(jax.random.fold_in(key, np.uint32(hi)), np.uint32(index))


def round_args(key, t: int):
    """``(key', t32)`` such that ``fold_in(key', t32)`` is :func:`round_key` ``(key,
    t)``, for the compiled programs: ``t32`` is t's low 32 bits as a signed 32-bit
    Python int (fold_in reads its bits as uint32, so it is t itself for t < 2**31 and
    the programs are those of every earlier round), ``key'`` is ``key`` for t < 2**32.

    Args:
        key: a PRNG key; t: an int in ``[0, MAX_ROUND]`` (checked by the caller).
    """
    hi, lo = divmod(t, BLOCK)
    if hi:
        key = _block_key(key, hi, BLOCK - 1)
    return key, lo - BLOCK if lo >= 2**31 else lo


def round_key(key, t: int):
    """The key round ``t`` draws with (see the module docstring).

    Args:
        key: a PRNG key (a policy's ``key``, ``jax.random.key(seed)``).
        t: the round, an int in ``[0, 2**63 - 1]`` (checked, named ``t``).

    Returns:
        The round's key, as ``key``.

    Example:
        >>> import jax
        >>> k = jax.random.key(0)
        >>> bool((jax.random.key_data(round_key(k, 7))
        ...       == jax.random.key_data(jax.random.fold_in(k, 7))).all())
        True
    """
    key, t32 = round_args(key, as_round(t))
    return jax.random.fold_in(key, np.uint32(t32 % BLOCK))


def posterior_key(key, t: int):
    """The key of ``Policy.posterior`` at round counter ``t``: ``fold_in(key, 2**31 -
    1 - t)`` for t < 2**31 (as before), else a key under t's block that no round
    reaches."""
    if t < 2**31:
        return jax.random.fold_in(key, 2**31 - 1 - t)
    hi, lo = divmod(t, BLOCK)
    return jax.random.fold_in(_block_key(key, hi, BLOCK - 2), np.uint32(lo))


def refuse_last_round(t: int) -> None:
    """A select at ``t`` = ``MAX_ROUND`` would move the counter past what a file
    holds: a ValueError naming ``t``."""
    if t >= MAX_ROUND:
        raise ValueError(f"t: the round counter is at its bound 2**63 - 1 (an int64), "
                         f"no round is left to select, got {t}")
