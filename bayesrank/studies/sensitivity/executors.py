"""Where the cells of a sweep are computed: in this process, or on a Dask cluster.

Both executors take a module-level function and a list of JSON-like payloads (cells
as plain dicts, never model objects) and yield ``(index, result)`` pairs as results
arrive, so the caller can store each finished cell at once.

* :class:`LocalExecutor` runs payloads one after the other in this process (conjugate
  cells of a payload are already vmapped over the grid).
* :class:`DaskExecutor` submits every payload to a ``dask.distributed`` cluster: a
  ``LocalCluster`` of ``workers`` single-threaded workers by default, or the scheduler
  at ``scheduler`` (e.g. ``"tcp://10.0.0.5:8786"``). Dask is the optional extra
  ``bayesrank[dask]``; it is imported only here, when asked for.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

from bayesrank._validate import check_int

__all__ = ["DaskExecutor", "LocalExecutor", "make_executor"]


class LocalExecutor:
    """Run payloads sequentially in this process.

    Example:
        >>> from bayesrank.studies.sensitivity import LocalExecutor
        >>> list(LocalExecutor().map(abs, [-2, 1]))
        [(0, 2), (1, 1)]
    """

    name = "local"

    def map(self, fn: Callable, payloads: list) -> Iterator[tuple[int, object]]:
        """Yield ``(index, fn(payload))`` for each payload, in order."""
        for i, payload in enumerate(payloads):
            yield i, fn(payload)

    def close(self) -> None:
        """Nothing to release."""


def _require_distributed():
    try:
        import distributed
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(
            "executor='dask' needs dask.distributed: pip install 'bayesrank[dask]'"
        ) from None
    return distributed


class DaskExecutor:
    """Send payloads to a Dask distributed cluster.

    Args:
        scheduler: address of a running scheduler; None starts a ``LocalCluster``.
        workers: LocalCluster workers (one thread each).
        processes: LocalCluster workers as processes (True) or threads in this
            process (False: cheaper to start, shares the GIL).

    Raises:
        ImportError: dask.distributed is not installed (names the extra to install).

    Example:
        >>> from bayesrank.studies.sensitivity import DaskExecutor
        >>> executor = DaskExecutor(workers=1, processes=False)   # a LocalCluster
        >>> sorted(executor.map(abs, [-2, 1]))
        [(0, 2), (1, 1)]
        >>> executor.close()
    """

    name = "dask"

    def __init__(
        self, scheduler: str | None = None, workers: int = 2, processes: bool = True
    ):
        distributed = _require_distributed()
        check_int(workers, "workers", low=1)
        self._cluster = None
        if scheduler:
            self.client = distributed.Client(scheduler)
        else:
            self._cluster = distributed.LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=processes,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
            self.client = distributed.Client(self._cluster)

    def map(self, fn: Callable, payloads: list) -> Iterator[tuple[int, object]]:
        """Submit every payload; yield ``(index, result)`` as results arrive."""
        distributed = _require_distributed()
        futures = {
            self.client.submit(fn, p, pure=False): i for i, p in enumerate(payloads)
        }
        try:
            for fut in distributed.as_completed(futures):
                yield futures[fut], fut.result()
        finally:
            for fut in futures:
                if not fut.done():
                    fut.cancel()

    def close(self) -> None:
        """Close the client and the LocalCluster it started."""
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()


def make_executor(
    name: str, *, scheduler: str | None = None, workers: int = 2, processes: bool = True
):
    """An executor by name: "local" or "dask".

    Raises:
        ValueError: unknown name; ImportError: dask missing for "dask".

    Example:
        >>> from bayesrank.studies.sensitivity import make_executor
        >>> make_executor("local").name
        'local'
        >>> make_executor("spark")
        Traceback (most recent call last):
        ...
        ValueError: executor: expected 'local' or 'dask', got 'spark'
    """
    if name == "local":
        return LocalExecutor()
    if name == "dask":
        return DaskExecutor(scheduler=scheduler, workers=workers, processes=processes)
    raise ValueError(f"executor: expected 'local' or 'dask', got {name!r}")
