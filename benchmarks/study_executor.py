"""Benchmark: a study's wall time in one process against its cells on a Dask
LocalCluster (``bayesrank study NAME --executor dask --workers N``), measured in the
same run, each as a fresh ``bayesrank`` command.

The first pass of each study warms JAX's persistent compilation cache (a cold cache
favours whichever runs second); the reported pass runs the two alternately after it.

Usage:
    python benchmarks/study_executor.py                       # --quick scales
    python benchmarks/study_executor.py --studies units --workers 2 --full
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine  # noqa: E402


def _run(study: str, executor: str, workers: int, quick: bool, out: Path) -> float:
    argv = [sys.executable, "-m", "bayesrank", "study", study, "--out", str(out)]
    if quick:
        argv.append("--quick")
    if executor == "dask":
        argv += ["--executor", "dask", "--workers", str(workers)]
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - t0


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", nargs="+", default=["click-models", "units"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--full", action="store_true", help="the full scales (hours)")
    args = ap.parse_args(argv)
    print(f"# {machine()}; {'full' if args.full else 'quick'} scales, "
          f"{args.workers} Dask workers")
    with tempfile.TemporaryDirectory() as tmp:
        for study in args.studies:
            _run(study, "local", args.workers, not args.full, Path(tmp) / "warm")
            t = {ex: _run(study, ex, args.workers, not args.full, Path(tmp) / ex)
                 for ex in ("local", "dask")}
            print(f"{study:14s} one process {t['local']:7.1f} s   dask "
                  f"{t['dask']:7.1f} s   dask / one process {t['dask'] / t['local']:.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
