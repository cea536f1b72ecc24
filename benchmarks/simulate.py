"""Throughput of ``bayesrank.simulate`` (vmap over runs x scan over rounds).

    python benchmarks/simulate.py [--quick | --full]

Default: RankTS alone, K=100, L=4, d=10, 100 runs x 1,000 rounds, compilation
included; then the four algorithms of Figure 1 (max|w| = 10) at 100 runs x 1,000
rounds. ``--full``: the whole Figure 1 study, both panels (max|w| = 0 and 10), 100 runs
x 10,000 rounds. Runs on whatever JAX backend is present (CPU or GPU).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, table  # noqa: E402

import bayesrank as br  # noqa: E402
from bayesrank.studies.paper.demo import authors_alpha, paper_policies  # noqa: E402


def timed(env, policies, T, runs):
    t0 = time.perf_counter()
    ds = br.simulate(env, policies, T=T, runs=runs, seed=0, progress=False)
    wall = time.perf_counter() - t0
    rows = []
    for name in ds["policy"].values:
        s = float(ds["seconds"].sel(policy=name))
        rows.append(
            {
                "policy": str(name),
                "runs x rounds": f"{runs} x {T}",
                "seconds (incl. compile)": s,
                "round-runs per second": runs * T / s,
                "final regret/round": float(
                    ds["regret"].sel(policy=name).isel(round=slice(-100, None)).mean()
                ),
            }
        )
    return rows, wall


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--full", action="store_true")
    args = ap.parse_args(argv)
    print(f"machine: {machine()}\n")
    runs, T = (20, 300) if args.quick else (100, 1000)
    env = br.RankingEnv.paper(seed=0, K=100, L=4, d=10, w_max=10.0)
    pol = paper_policies(env, alpha=authors_alpha())
    print(f"### RankTS alone, K=100 ({runs} runs x {T} rounds; target < 60 s)\n")
    rows, _ = timed(env, {"RankTS": pol["RankTS"]}, T, runs)
    print(table(rows))
    print(f"\n### The four algorithms, K=100, max|w|=10 ({runs} runs x {T} rounds)\n")
    rows, wall = timed(env, pol, T, runs)
    print(table(rows))
    print(f"\ntotal: {wall:.1f} s")
    if args.full:
        total = 0.0
        print(
            "\n### Full Figure 1 study: both panels, 100 runs x 10,000 rounds "
            "(target < 10 min)\n"
        )
        for w_max in (0.0, 10.0):
            env = br.RankingEnv.paper(seed=0, K=100, L=4, d=10, w_max=w_max)
            rows, wall = timed(
                env, paper_policies(env, alpha=authors_alpha()), 10_000, 100
            )
            for r in rows:
                r["max|w|"] = w_max
            print(table(rows))
            total += wall
        print(f"\nFigure 1 study total: {total:.1f} s")


if __name__ == "__main__":
    main()
