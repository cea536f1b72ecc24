"""Benchmark: the C UCB backward pass against the compiled-JAX search, same run.

Times, in turns in one process (so a slow spell of a shared machine falls on all of
them alike), the identity-link UCB backward pass on RankUCB's own factors after
``--observed`` random lists (20: early rounds, a wide bonus; 20,000: late rounds, a
narrow one), L = 4, d = 10, the paper's instances:

* the C kernel, :func:`bayesrank.decoding.native.ucb_backward_native`, with 1 thread and
  with :func:`~bayesrank.decoding.native.default_threads` threads (host call);
* the compiled search, :func:`bayesrank.decoding.prefix.ucb_backward_prefix` (jitted,
  after compiling).

Prints the median time of each, the ratio compiled / C, and each one's pair scores
(and checks that both return the same values to go). Without the C kernel built it
says so and exits.

Usage:
    python benchmarks/ucb_native.py                      # K = 1,000, 3,000, 100,000
    python benchmarks/ucb_native.py --K 3000 --float32
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import interleaved, machine  # noqa: E402
from decode_scale import D, L, backward_pass_options, ucb_instances  # noqa: E402

from bayesrank.decoding import native  # noqa: E402
from bayesrank.decoding.prefix import ucb_backward_prefix  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args = backward_pass_options(ap, argv)
    print(machine())
    if not native.available():
        print("the C kernel (bayesrank.decoding._prefix_scan) is not built: nothing to compare")
        return
    T = native.default_threads()
    print(f"L = {L}, d = {D}, {jax.numpy.result_type(float)}; backward pass alone, "
          f"median of interleaved rounds\n")
    print(f"| lists observed | K | compiled search | C, 1 thread | C, {T} threads | "
          f"compiled / C ({T} threads) | pair scores (compiled / C) |")
    print("|---|---|---|---|---|---|---|")
    compiled = jax.jit(ucb_backward_prefix)
    for K, n_obs, inst, rounds in ucb_instances(args):
        out_c = compiled(*inst)
        out_n = native.ucb_backward_native(*inst)
        tol = 1e-4 if args.float32 else 1e-9
        if not np.allclose(np.asarray(out_c[0], np.float64), out_n[0], rtol=tol,
                           atol=tol):
            raise AssertionError(f"K={K}, {n_obs} lists: the two passes disagree")
        calls = {
            "compiled": lambda: jax.block_until_ready(compiled(*inst)),
            "c1": lambda: native.ucb_backward_native(*inst, threads=1),
            "cT": lambda: native.ucb_backward_native(*inst, threads=T),
        }
        t = interleaved(calls, rounds=rounds, number=1, warmup=1)
        print(f"| {n_obs:,d} | {K:,d} | {1e3 * t['compiled']:.2f} ms | "
              f"{1e3 * t['c1']:.2f} ms | {1e3 * t['cT']:.2f} ms | "
              f"{t['compiled'] / t['cT']:.1f}x | "
              f"{int(np.asarray(out_c[2]).sum()):,d} / {int(out_n[2].sum()):,d} |",
              flush=True)


if __name__ == "__main__":
    main()
