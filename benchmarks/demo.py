"""The README's main job, ``bayesrank demo``, timed as a user runs it.

    python benchmarks/demo.py            # the full demo, cold then cached
    python benchmarks/demo.py --quick    # bayesrank demo --quick

Runs the command twice in fresh processes with a compilation cache made for this run:
first with the cache empty (**cold**: a first use on the machine), then with what the
first run left (**cached**: the reference is the cold run, same command, same run).
Wall time includes starting Python and importing JAX. Prints a markdown table and the
machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def run_demo(cache: str, out: str, quick: bool) -> float:
    env = dict(os.environ, BAYESRANK_CACHE_DIR=cache)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    env.pop("JAX_COMPILATION_CACHE_MAX_SIZE", None)
    cmd = [sys.executable, "-m", "bayesrank", "demo", "--out", out]
    t = time.perf_counter()
    subprocess.run(cmd + (["--quick"] if quick else []), env=env, check=True,
                   capture_output=True, text=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="bayesrank demo --quick")
    args = ap.parse_args()

    from _common import machine

    with tempfile.TemporaryDirectory(prefix="bayesrank-demo-") as tmp:
        cold = run_demo(os.path.join(tmp, "cache"), os.path.join(tmp, "a"), args.quick)
        cached = run_demo(os.path.join(tmp, "cache"), os.path.join(tmp, "b"), args.quick)
    print(f"\nMachine: {machine()}\n")
    print("| command | cold (empty cache) | cached | cached / cold |")
    print("|---|---|---|---|")
    name = "bayesrank demo" + (" --quick" if args.quick else "")
    print(f"| {name} | {cold:.1f} s | {cached:.1f} s | {cached / cold:.2f}x |")


if __name__ == "__main__":
    main()
