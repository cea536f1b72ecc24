"""``bayesrank bench``: run the scripts in the checkout's ``benchmarks/`` folder."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

__all__ = ["benchmark_dir", "run_bench"]


def benchmark_dir() -> Path:
    """The ``benchmarks/`` folder of the source checkout bayesrank runs from."""
    here = Path(__file__).resolve().parents[2] / "benchmarks"
    if not here.is_dir():
        raise FileNotFoundError(
            "benchmarks: no benchmarks/ folder beside this installation; run from a "
            "source checkout (pip install -e .)"
        )
    return here


def run_bench(which=(), quick: bool = False) -> None:
    """Run the named benchmarks (file stems, e.g. 'decode'), or all of them."""
    folder = benchmark_dir()
    scripts = {
        p.stem: p for p in sorted(folder.glob("*.py")) if not p.stem.startswith("_")
    }
    names = list(which) or list(scripts)
    unknown = [n for n in names if n not in scripts]
    if unknown:
        raise ValueError(
            f"which: unknown benchmark(s) {unknown}; expected some of {sorted(scripts)}"
        )
    for name in names:
        print(f"\n## benchmarks/{name}.py\n", flush=True)
        argv = sys.argv
        sys.argv = [str(scripts[name])] + (["--quick"] if quick else [])
        try:
            runpy.run_path(str(scripts[name]), run_name="__main__")
        finally:
            sys.argv = argv
