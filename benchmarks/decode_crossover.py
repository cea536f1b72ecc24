"""Benchmark: where the Pareto-front scan overtakes the dense DP (monotone links).

    python benchmarks/decode_crossover.py [--quick] [--K 256 512 640 768 1000 2000] [--x64]

RankTS with a point estimate under the logistic link (the conjugate Gaussian
posterior's draw scored under the logistic link, as in ``decode_scale.py``; L = 4,
d = 10, the paper's generator, 200 observed lists) selects through the class API with
the decoder forced to the dense (L-1) K x K DP and to the host Pareto-front scan of
:mod:`bayesrank.decoding.monotone`. The two are timed in turns (``interleaved``), so a
slow spell of the machine falls on both; the ratio dense / fast is what sets
``bayesrank.decoding.dispatch.FAST_K_MONOTONE``, the item count from which "auto" takes
the scan on the CPU. The two policies share the seed and the data, so they draw the
same theta: the "same list" column says whether both paths picked the same list
(exactness itself is tested in ``tests/test_decode_monotone.py``).

Float32 by default (the library's default precision); ``--x64`` runs in float64.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import interleaved, machine, parse, table  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--K", type=int, nargs="+", default=[256, 512, 640, 768, 1000, 2000])
    ap.add_argument("--rounds", type=int, default=9, help="turns of the timing")
    ap.add_argument("--number", type=int, default=5, help="selects per turn")
    ap.add_argument("--x64", action="store_true", help="float64 instead of float32")
    args = parse(ap, argv, K=[128, 512], rounds=3, number=2)
    jax.config.update("jax_enable_x64", args.x64)
    from decode_scale import build, observe

    import bayesrank as br
    from bayesrank.decoding import dispatch as decoder

    print(machine())
    dtype = jax.numpy.result_type(float)
    print(f"L = 4, d = 10, {dtype}, "
          f"FAST_K_MONOTONE = {decoder.FAST_K_MONOTONE}")
    saved = (decoder.FAST_K, decoder.FAST_K_MONOTONE, decoder.FAST_K_PREFIX,
             decoder.FAST_K_NATIVE)
    rows = []
    try:
        for K in args.K:
            env = br.RankingEnv.paper(seed=0, K=K, L=4, d=10)
            pols = {}
            for method in ("dense", "fast"):
                pol = build("ts-logistic", env, method)  # fixes the decoder at trace
                observe(pol, env, 200, seed=1)
                pol.select()
                pols[method] = pol
            # same seed, same data: the same draws, so both pick the same best list
            same = np.array_equal(*(np.asarray(p.select()) for p in pols.values()))
            t = interleaved({m: p.select for m, p in pols.items()},
                            rounds=args.rounds, number=args.number, warmup=2)
            rows.append({
                "K": K,
                "dense DP (ms)": 1e3 * t["dense"],
                "front scan (ms)": 1e3 * t["fast"],
                "dense / scan": t["dense"] / t["fast"],
                "same list": same,
            })
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    finally:
        (decoder.FAST_K, decoder.FAST_K_MONOTONE, decoder.FAST_K_PREFIX,
         decoder.FAST_K_NATIVE) = saved
    print()
    print(table(rows))


if __name__ == "__main__":
    main()
