"""The warm-up re-adaptation schedule of the online NUTS chains.

As data accumulate a position's posterior contracts like ``n^{-1/2}``, so a step size
and mass matrix adapted on few data become too large. Warm-up re-runs on a geometric
schedule: once a position has ``readapt_start`` observations, then each time its count
has grown by ``readapt_growth`` since the previous re-run began (10, 40, 160, 640, ...
by default; between re-runs the posterior scale shrinks by at most
``sqrt(readapt_growth) = 2``, which NUTS absorbs through its tree depth). A re-run
resets the chain's warm-up counter and restarts the adapter from the current step size
and mass matrix; its transitions are the ordinary per-round ones, so re-adaptation
adds no cost, no branch and no recompilation. A re-run due while an adaptation is still
running waits for it to end. A rescue re-run also starts when, ``RESCUE_AFTER``
transitions after a warm-up, the chain's mean acceptance probability is below half
``target_accept_prob`` (a step size tuned on too few or too different data can freeze a
chain otherwise).

Example:
    >>> schedule = Schedule(num_warmup=200, readapt_growth=4.0, target_accept_prob=0.8)
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from bayesrank.posteriors.nuts.numpyro_compat import Kernel, restart_adaptation

__all__ = ["RESCUE_AFTER", "Schedule", "readapt"]

#: post-warm-up transitions before a low acceptance rate triggers a rescue re-run
RESCUE_AFTER = 25


class Schedule(NamedTuple):
    """Static settings of the schedule."""

    num_warmup: int  # warm-up transitions per (re-)adaptation
    readapt_growth: float | None  # count growth between re-runs; None: never
    target_accept_prob: float  # the dual-averaging target


def readapt(kernel: Kernel, schedule: Schedule, hs, n, readapt_at):
    """Restart warm-up where it is due.

    Args:
        kernel: the online kernel.
        schedule: the settings.
        hs: HMCState of L chains (leaves with leading axis L).
        n: (L,) observation counts.
        readapt_at: (L,) counts at which the next scheduled re-run starts.

    Returns:
        (hs, readapt_at): the chains with the due ones restarted, the next thresholds.
    """
    if schedule.num_warmup == 0:
        return hs, readapt_at
    done = hs.i >= schedule.num_warmup
    if schedule.readapt_growth is None:
        scheduled = jnp.zeros_like(done)
    else:
        scheduled = done & (n >= readapt_at)
    rescue = (hs.i >= schedule.num_warmup + RESCUE_AFTER) & (
        hs.mean_accept_prob < 0.5 * schedule.target_accept_prob
    )
    hs = restart_adaptation(kernel, hs, scheduled | rescue)
    growth = 1.0 if schedule.readapt_growth is None else schedule.readapt_growth
    nxt = jnp.ceil(n * growth).astype(readapt_at.dtype)
    return hs, jnp.where(scheduled, nxt, readapt_at)
