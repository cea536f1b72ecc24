"""Benchmark: the compiled UCB backward pass against an earlier version of itself.

Loads ``bayesrank/prefix.py`` as it was at ``--against`` (a git revision of
this repository, read with ``git show``) beside the current module, and times both
backward passes (``ucb_backward_prefix``, jitted, after compiling) in turns on
RankUCB's own factors after ``--observed`` random lists (20: early rounds, a wide
bonus; 20,000: late rounds, a narrow one), L = 4, d = 10, the paper's instances.
Prints the median time of each, their ratio, the pair scores of each, and checks that
both return the same values to go.

Without git or without that revision (a shallow clone, an unpacked archive) it says
so and times the current version alone.

Usage:
    python benchmarks/prefix_versions.py                      # against 1a40259
    python benchmarks/prefix_versions.py --K 3000 --float32
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import types
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import interleaved, machine  # noqa: E402
from decode_scale import D, L, backward_pass_options, ucb_instances  # noqa: E402

from bayesrank.decoding import prefix  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def previous(rev: str):
    """The module ``bayesrank/prefix.py`` at git revision ``rev`` of this
    repository, or None (with the reason printed) when git cannot show it."""
    try:
        src = subprocess.run(
            ["git", "show", f"{rev}:bayesrank/prefix.py"], cwd=ROOT,
            check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        print(f"revision {rev} not available ({err}); timing the current version only")
        return None
    mod = types.ModuleType(f"decode_prefix_{rev}")
    exec(compile(src, f"{rev}:bayesrank/prefix.py", "exec"), mod.__dict__)
    return mod


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", default="1a40259", help="git revision to compare with")
    args = backward_pass_options(ap, argv)
    old = previous(args.against)
    print(machine())
    print(f"L = {L}, d = {D}, {jax.numpy.result_type(float)}; backward pass alone, "
          f"median of interleaved rounds\n")
    print(f"| lists observed | K | {args.against} | current | {args.against} / current "
          "| pair scores (old / current) |")
    print("|---|---|---|---|---|---|")
    for K, n_obs, inst, rounds in ucb_instances(args):
        fns = {"current": jax.jit(prefix.ucb_backward_prefix)}
        if old is not None:
            fns["old"] = jax.jit(old.ucb_backward_prefix)
        out = {k: f(*inst) for k, f in fns.items()}
        calls = {k: (lambda f=f: jax.block_until_ready(f(*inst))) for k, f in fns.items()}
        t = interleaved(calls, rounds=rounds, number=1, warmup=1)
        cur = f"{1e3 * t['current']:.2f} ms"
        pairs = int(np.asarray(out["current"][2]).sum())
        if old is None:
            print(f"| {n_obs:,d} | {K:,d} | - | {cur} | - | - / {pairs:,d} |")
            continue
        H_old, H_new = (np.asarray(out[k][0], np.float64) for k in ("old", "current"))
        tol = 1e-4 if args.float32 else 1e-9
        if not np.allclose(H_old, H_new, rtol=tol, atol=tol):
            raise AssertionError(f"K={K}, {n_obs} lists: the versions disagree")
        print(f"| {n_obs:,d} | {K:,d} | {1e3 * t['old']:.2f} ms | {cur} | "
              f"{t['old'] / t['current']:.2f}x | "
              f"{int(np.asarray(out['old'][2]).sum()):,d} / {pairs:,d} |", flush=True)


if __name__ == "__main__":
    main()
