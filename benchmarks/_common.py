"""Shared helpers of the benchmark scripts: timing and the machine description."""

from __future__ import annotations

import os
import platform
import time

import numpy as np


def machine() -> str:
    import jax

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"jax {jax.__version__} ({jax.default_backend()})"
    )


def timeit(fn, *, repeat: int = 50, warmup: int = 3) -> float:
    """Median wall time of ``fn()`` in seconds (fn must block until done)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def interleaved(fns: dict, *, rounds: int = 15, number: int = 100,
                warmup: int = 100) -> dict:
    """Median seconds per call of each ``fns[name]()``, timed in turns.

    Each round times ``number`` calls of every function, one function after the
    other, so that a slow spell of a shared machine falls on all of them alike and
    the ratios stay fair. Returns ``{name: seconds}``.
    """
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            times[name].append((time.perf_counter() - t0) / number)
    return {name: float(np.median(t)) for name, t in times.items()}


def table(rows: list[dict]) -> str:
    cols = list(rows[0])
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in rows:
        out.append(
            "| "
            + " | ".join(
                f"{r[c]:.4g}" if isinstance(r[c], float) else str(r[c]) for c in cols
            )
            + " |"
        )
    return "\n".join(out)


def parse(ap, argv=None, **quick):
    """``ap.parse_args(argv)`` with a ``--quick`` flag (what ``bayesrank bench --quick``
    passes): it switches the defaults to ``quick``; flags given explicitly still win."""
    small = ", ".join(f"{k.replace('_', '-')}={v}" for k, v in quick.items())
    ap.add_argument("--quick", action="store_true", help=f"small scale ({small})")
    args = ap.parse_args(argv)
    if args.quick:
        ap.set_defaults(**quick)
        args = ap.parse_args(argv)
    return args
