"""Benchmark: RankUCB select + update per round, after compilation.

Two routes:

* core - the functional core, one jitted ``select`` + ``update`` step per call
  (what a ``lax.scan`` simulation runs), timed with ``block_until_ready``;
* class - the Python API, ``policy.select()`` then ``policy.update(items, rewards)``
  (host-side input checks and history included).

Each cell is the median (and the 10th-90th percentiles) over many rounds, after a
warm-up that compiles everything. Lemma 1's width (``alpha=None``), float64.

Usage:
    python benchmarks/ucb.py                    # K = 100 and 1000, L = 4, d = 10
    python benchmarks/ucb.py --K 100 --rounds 500 --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import parse  # noqa: E402

jax.config.update("jax_enable_x64", True)

from bayesrank.simulation.env import RankingEnv
from bayesrank.policies.ucb import RankUCB


def _stats(times_s: list[float]) -> dict:
    ms = np.asarray(times_s) * 1e3
    return {
        "median_ms": float(np.median(ms)),
        "p10_ms": float(np.percentile(ms, 10)),
        "p90_ms": float(np.percentile(ms, 90)),
        "rounds": int(ms.size),
    }


def bench_core(policy: RankUCB, rewards, rounds: int, warmup: int = 20) -> dict:
    """Median time of one jitted select + update on the functional core."""
    core = policy.core
    ctx = policy.context()  # the request's context: the constructor's v0, no mask

    @jax.jit
    def step(state, key, r):
        state, sel = core.select(key, state, ctx)
        return core.update(state, sel.items, r, ctx), sel.items

    state = core.init()
    key = jax.random.key(0)
    times = []
    for t in range(warmup + rounds):
        k = jax.random.fold_in(key, t)
        t0 = time.perf_counter()
        state, items = step(state, k, rewards[t % len(rewards)])
        jax.block_until_ready((state, items))
        if t >= warmup:
            times.append(time.perf_counter() - t0)
    return _stats(times)


def bench_class(policy: RankUCB, rewards, rounds: int, warmup: int = 20) -> dict:
    """Median time of ``policy.select()`` + ``policy.update(items, rewards)``."""
    times = []
    for t in range(warmup + rounds):
        t0 = time.perf_counter()
        items = policy.select()
        policy.update(items, rewards[t % len(rewards)])
        jax.block_until_ready(policy.state)
        if t >= warmup:
            times.append(time.perf_counter() - t0)
    return _stats(times)


def run(Ks=(100, 1000), L: int = 4, d: int = 10, rounds: int = 300) -> list[dict]:
    rows = []
    rng = np.random.default_rng(0)
    for K in Ks:
        env = RankingEnv.paper(seed=0, K=K, L=L, d=d, w_max=10.0)
        rewards = rng.normal(size=(64, L))
        n = rounds if K <= 200 else max(rounds // 3, 50)
        t0 = time.perf_counter()
        core_pol = RankUCB(items=env.items, w=env.w)
        core = bench_core(core_pol, jnp.asarray(rewards), n)
        cls = bench_class(RankUCB(items=env.items, w=env.w), rewards, n)
        rows.append(
            {
                "K": K,
                "L": L,
                "d": d,
                "core": core,
                "class": cls,
                "wall_s": time.perf_counter() - t0,
            }
        )
    return rows


def table(rows: list[dict]) -> str:
    out = [
        "| K | L | d | core median ms (p10-p90) | class median ms (p10-p90) |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        c, k = r["core"], r["class"]
        out.append(
            f"| {r['K']} | {r['L']} | {r['d']} | {c['median_ms']:.3f} "
            f"({c['p10_ms']:.3f}-{c['p90_ms']:.3f}) | {k['median_ms']:.3f} "
            f"({k['p10_ms']:.3f}-{k['p90_ms']:.3f}) |"
        )
    return "\n".join(out)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--K", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--L", type=int, default=4)
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--json", default=None, help="also write the results here")
    args = parse(ap, argv, K=[100], rounds=50)
    rows = run(args.K, args.L, args.d, args.rounds)
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, float64")
    print(table(rows))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
