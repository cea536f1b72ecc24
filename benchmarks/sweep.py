"""Benchmark: sensitivity-sweep cells per minute, locally and on a 2-worker cluster.

Run: ``python benchmarks/sweep.py [--cells 12] [--T 500] [--runs 4]``.

Each executor runs the same grid into a fresh folder, twice (seeds 0 and 1). Locally
the second pass reuses the compiled functions; every Dask pass starts its own
LocalCluster, so it includes the workers' start-up and compilation. Conjugate cells
are vmapped over the grid; ``batch_cells`` cuts the grid into units of work so the
Dask workers share it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import jax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import parse  # noqa: E402


def grid_config(cells: int, T: int, runs: int, batch_cells: int, seed: int) -> dict:
    scales = [0.05 * 2**i for i in range(cells)]
    return {
        "sweep": {
            "T": T,
            "runs": runs,
            "seed": seed,
            "checkpoints": [T],
            "positions": [0],
            "draws": 250,
            "chains": 4,
            "batch_cells": batch_cells,
        },
        "env": {"K": 10, "L": 4, "d": 5},
        "priors": {"scale": {"family": "gaussian", "scale": scales}},
    }


def time_sweep(cfg: dict, executor: str, processes: bool = True) -> float:
    from bayesrank.studies.sensitivity import parse_config, run_sweep

    spec = parse_config(cfg)
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        run_sweep(
            spec, out, executor=executor, workers=2, processes=processes, progress=False
        )
        return time.perf_counter() - start


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--cells", type=int, default=12)
    p.add_argument("--T", type=int, default=500)
    p.add_argument("--runs", type=int, default=4)
    p.add_argument("--batch-cells", type=int, default=6)
    args = parse(p, argv, cells=4, T=100, runs=2, batch_cells=2)
    jax.config.update("jax_enable_x64", True)
    print(
        f"grid: {args.cells} conjugate cells, T={args.T}, runs={args.runs}, "
        f"diagnostics at T for position 0 (4 x 250 draws), "
        f"batch_cells={args.batch_cells}"
    )
    print(f"{'executor':<28}{'pass':<10}{'seconds':>9}{'cells/min':>11}")
    for name, kw in (("local", {}), ("dask LocalCluster(2 proc)", {"processes": True})):
        executor = "local" if name == "local" else "dask"
        for k, label in enumerate(("first", "second")):
            cfg = grid_config(args.cells, args.T, args.runs, args.batch_cells, seed=k)
            secs = time_sweep(cfg, executor, **kw)
            print(f"{name:<28}{label:<10}{secs:>9.1f}{60 * args.cells / secs:>11.1f}")


if __name__ == "__main__":
    main()
