"""A study's independent cells run through the sweeps' executor: in this process, or
on a Dask cluster (a ``LocalCluster`` of ``workers`` processes, or the scheduler at
``scheduler``), one cell a task.

A cell is a JSON-like payload (plain values, never model objects) and a module-level
function of it, so it travels to a worker as is. Every cell's random keys depend on
the study's seed and the cell's own coordinates alone, so the cells give the same
numbers wherever they run; the caller joins them (:func:`run_cells` returns them in
the payloads' order). A worker computes in the caller's precision (JAX's float64
switch as the caller has it). Dask reruns the task of a worker that dies (its
``distributed.scheduler.allowed-failures``, 3 by default), so a killed worker's
cell is recomputed, not lost.

Example:
    >>> from bayesrank.studies.cells import run_cells
    >>> run_cells(abs, [-2, 1, -3], progress=False)
    [2, 1, 3]
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax

from bayesrank._progress import progress as progress_bar
from bayesrank.studies.sensitivity import make_executor

__all__ = ["EXECUTORS", "run_cells"]

#: the executors a study takes (``--executor``)
EXECUTORS = ("local", "dask")


def _in_precision(fn: Callable, x64: bool, payload):
    """fn(payload) with JAX's float64 switch as the caller had it (a fresh worker
    starts in float32; a process that ran ``bayesrank calibrate`` is in float64)."""
    if bool(jax.config.jax_enable_x64) != x64:
        jax.config.update("jax_enable_x64", x64)
    return fn(payload)


def run_cells(fn: Callable, payloads: list, *, executor: str = "local",
              scheduler: str | None = None, workers: int = 2, progress: bool = True,
              desc: str = "cells", processes: bool = True) -> list:
    """``[fn(p) for p in payloads]``, each call a task of the executor.

    Args:
        fn: a module-level function of one payload.
        payloads: the cells, JSON-like.
        executor: "local" (one after the other here) or "dask".
        scheduler: a Dask scheduler's address (None: a LocalCluster).
        workers: the LocalCluster's worker processes.
        progress: a bar over the cells (a line per finished cell in a file).
        desc: the bar's label.
        processes: the LocalCluster's workers as processes (False: threads here).

    Raises:
        ValueError: an unknown executor; ImportError: dask missing for "dask".
    """
    if executor not in EXECUTORS:
        raise ValueError(f"executor: expected 'local' or 'dask', got {executor!r}")
    ex = make_executor(executor, scheduler=scheduler, workers=workers,
                       processes=processes)
    out = [None] * len(payloads)
    bar = progress_bar(len(payloads), desc, unit="cell", enabled=progress)
    try:
        task = fn if executor == "local" else functools.partial(
            _in_precision, fn, bool(jax.config.jax_enable_x64))
        for i, result in ex.map(task, list(payloads)):
            out[i] = result
            bar.update(1)
    finally:
        bar.close()
        ex.close()
    return out
