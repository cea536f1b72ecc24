"""Time to the first answer: cold process, warm cache, second instance, steady round.

    python benchmarks/first_answer.py [--K 100 10000] [--families RankTS RankUCB ...]
    python benchmarks/first_answer.py --quick       # K = 100, RankTS and RankUCB

For each policy family and catalogue size K, fresh Python processes measure the
first round (build the policy, select, update, select) with

* an empty persistent compilation cache (``cold``: everything compiles),
* the cache that run left behind (``warm cache``: a new process, configuration seen),
* a second policy object of the same configuration and another seed, in the process
  that just ran the first (``2nd instance``: the compiled programs are shared),

and the median steady round (update + select) of that process, the reference the
first answers are stated against. Each child process is started with
``BAYESRANK_CACHE_DIR`` pointing at a temporary folder made for this run. Prints a
markdown table and the machine it ran on.
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

FAMILIES = {
    "RankTS": "br.RankTS(items=env.items, w=env.w, v0=env.v0, seed=s)",
    "RankUCB": "br.RankUCB(items=env.items, w=env.w, v0=env.v0, seed=s)",
    "latent-w RankTS": (
        "br.RankTS(items=env.items, L=4, v0=env.v0, w=dist.Normal(0.0, 5.0), seed=s)"
    ),
    "GenRankUCB": "br.GenRankUCB(items=env.items, L=4, v0=env.v0, seed=s)",
    "RankedBaseline": "br.RankedBaseline(items=env.items, L=4, v0=env.v0, seed=s)",
    "Laplace RankTS": (
        "br.RankTS(model=br.LaplaceGLM('logistic'), items=env.items, w=env.w, "
        "v0=env.v0, seed=s)"
    ),
    "NUTS RankTS": (
        "br.RankTS(model=br.BayesGLM('logistic'), items=env.items, w=env.w, "
        "v0=env.v0, seed=s)"
    ),
}
BINARY = ("Laplace RankTS", "NUTS RankTS")  # rewards in {0, 1}


def child(family: str, K: int, steady_rounds: int) -> dict:
    """Run in a fresh process: the first round of two instances, then steady rounds."""
    t0 = time.perf_counter()
    import numpy as np
    import numpyro.distributions as dist

    import bayesrank as br

    link = "logistic" if family in BINARY else "identity"
    env = br.RankingEnv.paper(seed=0, K=K, L=4, d=10, w_max=10.0, link=link)
    rewards = np.ones(4) if family in BINARY else np.zeros(4)
    t_import = time.perf_counter() - t0

    def first_round(s):
        t = time.perf_counter()
        policy = eval(FAMILIES[family], {"br": br, "env": env, "dist": dist, "s": s})
        items = policy.select()
        policy.update(items, rewards)
        policy.select()
        return policy, time.perf_counter() - t

    _, first = first_round(0)
    policy, second = first_round(1)
    times = []
    for _ in range(steady_rounds):
        t = time.perf_counter()
        policy.update(policy.select(), rewards)
        times.append(time.perf_counter() - t)
    return {"import": t_import, "first": first, "second": second,
            "steady": float(np.median(times))}


def run_child(family: str, K: int, cache: str, steady_rounds: int) -> dict:
    env = dict(os.environ, BAYESRANK_CACHE_DIR=cache)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    out = subprocess.run(
        [sys.executable, __file__, "--child", family, str(K), str(steady_rounds)],
        env=env, capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--K", type=int, nargs="+", default=[100, 10_000])
    ap.add_argument("--families", nargs="+", default=list(FAMILIES),
                    choices=list(FAMILIES), metavar="FAMILY")
    ap.add_argument("--steady-rounds", type=int, default=30)
    ap.add_argument("--quick", action="store_true",
                    help="K = 100, RankTS and RankUCB, 10 steady rounds")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.K, args.families, args.steady_rounds = [100], ["RankTS", "RankUCB"], 10
    if args.child:
        family, K, n = args.child
        print(json.dumps(child(family, int(K), int(n))))
        return

    from _common import machine

    rows = []
    for K in args.K:
        for family in args.families:
            with tempfile.TemporaryDirectory(prefix="bayesrank-cache-") as cache:
                cold = run_child(family, K, cache, args.steady_rounds)
                warm = run_child(family, K, cache, args.steady_rounds)
            steady = min(cold["steady"], warm["steady"])
            rows.append((family, K, cold["first"], warm["first"], warm["second"],
                         steady))
            print(f"  {family} K={K}: cold {cold['first']:.2f} s, warm cache "
                  f"{warm['first']:.2f} s, 2nd instance {warm['second'] * 1e3:.1f} ms, "
                  f"steady {steady * 1e3:.2f} ms", file=sys.stderr, flush=True)
    print(f"\nMachine: {machine()}\n")
    print("| policy | K | first round, cold | first round, warm cache | "
          "first round, 2nd instance | steady round | 2nd instance / steady |")
    print("|---|---|---|---|---|---|---|")
    for family, K, cold, warm, second, steady in rows:
        print(f"| {family} | {K:,} | {cold:.2f} s | {warm:.2f} s | "
              f"{second * 1e3:.1f} ms | {steady * 1e3:.2f} ms | "
              f"{second / steady:.1f}x |")


if __name__ == "__main__":
    main()
