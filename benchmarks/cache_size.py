"""What a full compilation cache costs a new configuration's first round.

    python benchmarks/cache_size.py [--entries 0 2000 10000] [--family RankTS] [--K 100]
    python benchmarks/cache_size.py --quick          # 0 and 1,000 entries

JAX's bounded persistent cache (bayesrank's default, ``bayesrank._cache.MAX_BYTES``)
reads the size and access time of every entry each time it writes a program, to
decide what to evict. A cache that holds many programs therefore slows every program
compiled for the first time. For each cache size, a fresh process runs the first
round of a configuration the cache does not hold (``benchmarks/first_answer.py``'s
child), once with bayesrank's bounded cache and once with an unbounded one (the
alternative: ``JAX_COMPILATION_CACHE_MAX_SIZE=-1``, no eviction and no lock, which the
tests use with one folder per worker). The cache is filled with placeholder entries
(1 KiB each, keys no program has). Prints a markdown table and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

FIRST_ANSWER = Path(__file__).resolve().parent / "first_answer.py"


def fill(folder: Path, n: int) -> None:
    """n placeholder entries in JAX's layout (``<key>-cache`` and ``<key>-atime``)."""
    stamp = time.time_ns().to_bytes(8, "little")
    for i in range(n):
        (folder / f"placeholder{i:06d}-cache").write_bytes(b"\0" * 1024)
        (folder / f"placeholder{i:06d}-atime").write_bytes(stamp)


def first_round(family: str, K: int, folder: Path, bounded: bool) -> tuple[float, int]:
    """The child's cold first round (s) and the number of programs it wrote."""
    env = dict(os.environ)
    for key in ("BAYESRANK_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR",
                "JAX_COMPILATION_CACHE_MAX_SIZE"):
        env.pop(key, None)
    if bounded:
        env["BAYESRANK_CACHE_DIR"] = str(folder)          # bayesrank's default bound
    else:
        env["JAX_COMPILATION_CACHE_DIR"] = str(folder)    # left alone by bayesrank
        env["JAX_COMPILATION_CACHE_MAX_SIZE"] = "-1"
    before = len(list(folder.glob("*-cache")))
    out = subprocess.run(
        [sys.executable, str(FIRST_ANSWER), "--child", family, str(K), "3"],
        env=env, capture_output=True, text=True, check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["first"], len(list(folder.glob("*-cache"))) - before


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, nargs="+", default=[0, 2_000, 10_000])
    ap.add_argument("--family", default="RankTS")
    ap.add_argument("--K", type=int, default=100)
    ap.add_argument("--quick", action="store_true", help="0 and 1,000 entries")
    args = ap.parse_args()
    if args.quick:
        args.entries = [0, 1_000]

    from _common import machine

    rows = []
    for n in args.entries:
        times = {}
        for bounded in (True, False):
            with tempfile.TemporaryDirectory(prefix="bayesrank-cache-") as tmp:
                fill(Path(tmp), n)
                times[bounded] = first_round(args.family, args.K, Path(tmp), bounded)
        rows.append((n, times[True], times[False]))
        print(f"  {n:,} entries: bounded {times[True][0]:.2f} s, unbounded "
              f"{times[False][0]:.2f} s ({times[True][1]} programs written)",
              file=sys.stderr, flush=True)
    print(f"\nMachine: {machine()}\n")
    print(f"{args.family} at K = {args.K:,}, first round in a new process, "
          "configuration not in the cache:\n")
    print("| entries in the cache | bounded (bayesrank's default) | unbounded | "
          "bounded / unbounded | programs written |")
    print("|---|---|---|---|---|")
    for n, (tb, written), (tu, _) in rows:
        print(f"| {n:,} | {tb:.2f} s | {tu:.2f} s | {tb / tu:.2f}x | {written} |")


if __name__ == "__main__":
    main()
