"""Decoder timings: dense DP, separable DP, distinct search and networkx's longest path.

Run ``python benchmarks/decode.py`` (``--x64`` for float64, ``--quick`` for fewer
repeats). Scores are the true scores of ``RankingEnv.paper`` (identity link). Prints a
markdown table and the machine it ran on. Times are medians over repeated calls after
compilation, each call waited for with ``block_until_ready``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np


def median_time(fn, repeats: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        jax.block_until_ready(fn())
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--x64", action="store_true", help="float64 scores")
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    if args.x64:
        jax.config.update("jax_enable_x64", True)

    from bayesrank.decoding import graph
    from bayesrank.decoding.api import best_list
    from bayesrank.decoding.dense import decode_in_jit, dp_decode
    from bayesrank.decoding.separable import separable_decode
    from bayesrank.model import scores
    from bayesrank.simulation.env import RankingEnv

    reps = 20 if args.quick else 200
    rows: list[tuple[str, int, int, float, str]] = []

    def tables(K, L):
        env = RankingEnv.paper(seed=0, K=K, L=L, d=10, w_max=10.0)
        first, pairs = env.score_tables()
        return env, jnp.asarray(first), jnp.asarray(pairs)

    dense = jax.jit(dp_decode)
    dense_times = {}
    for K in (10, 30, 100, 1000):
        _, first, pairs = tables(K, 4)
        t = median_time(
            lambda f=first, p=pairs: dense(f, p), reps if K < 1000 else reps // 4
        )
        dense_times[K] = t
        rows.append(("dense DP (jit dp_decode)", K, 4, t, ""))

    for K in (30, 100):
        _, first, pairs = tables(K, 4)
        f_np, p_np = np.asarray(first, np.float64), np.asarray(pairs, np.float64)
        t0 = time.perf_counter()
        G = graph.layered_graph(f_np, p_np)
        build = time.perf_counter() - t0
        n_rep = 5 if K <= 30 else (1 if args.quick else 3)
        t_nx = median_time(
            lambda G=G: nx.dag_longest_path(G, weight=graph.SHIFTED), n_rep, warmup=0
        )
        path = nx.dag_longest_path(G, weight=graph.SHIFTED)
        _, v_dp = dense(first, pairs)
        agree = abs(graph.path_weight(G, path) - float(v_dp)) < 1e-4 * (
            1 + abs(float(v_dp))
        )
        rows.append(
            (
                "networkx dag_longest_path",
                K,
                4,
                t_nx,
                (
                    f"graph build {fmt(build)} (excluded), "
                    f"{G.number_of_edges():,} edges; "
                    f"{t_nx / dense_times[K]:,.0f}x dense DP; same value: {agree}"
                ),
            )
        )
        del G

    sep = jax.jit(separable_decode)
    for K in (1000, 100_000):
        env = RankingEnv.paper(seed=0, K=K, L=10, d=10, w_max=10.0)
        first, A, B = scores.linear_parts(env.theta, env.items, env.w, env.v0)
        t = median_time(
            lambda f=first, a=A, b=B: sep(f, a, b), reps if K < 10**5 else reps // 4
        )
        rows.append(("separable DP (jit separable_decode)", K, 10, t, ""))

    _, first, pairs = tables(100, 4)
    f_np, p_np = np.asarray(first), np.asarray(pairs)
    n_d = 10 if args.quick else 50
    t = median_time(lambda: best_list(f_np, p_np, distinct=True), n_d)
    rep_items, _ = dense(first, pairs)
    repeats = len(set(np.asarray(rep_items).tolist())) < 4
    note = f"unconstrained best repeats an item: {repeats}"
    rows.append(("distinct (best_list, host A*)", 100, 4, t, note))
    in_jit = jax.jit(lambda f, p: decode_in_jit(f, p, distinct=True))
    t = median_time(lambda: in_jit(first, pairs), n_d)
    rows.append(("distinct (jit decode_in_jit, callback)", 100, 4, t, ""))

    print("## Decoder timings\n")
    print(
        f"- machine: {platform.platform()}; "
        f"processor: {platform.processor() or 'n/a'}; "
        f"cpu count: {os.cpu_count()}; load average: {os.getloadavg()[0]:.2f}"
    )
    print(
        f"- jax {jax.__version__}, backend {jax.default_backend()}, "
        f"networkx {nx.__version__}, dtype {'float64' if args.x64 else 'float32'}"
    )
    print("\n| method | K | L | median time | notes |\n|---|---:|---:|---:|---|")
    for name, K, L, t, note in rows:
        print(f"| {name} | {K:,} | {L} | {fmt(t)} | {note} |")

    def get(name, K):
        return next(t for n, k, _, t, _ in rows if n.startswith(name) and k == K)

    print("\nTargets:")
    d100, nx100, s1e5 = (
        get("dense", 100),
        get("networkx", 100),
        get("separable", 100_000),
    )
    print(
        f"- dense K=100 L=4 < 200 us: {fmt(d100)} -> "
        f"{'met' if d100 < 2e-4 else 'MISSED'}"
    )
    print(
        f"- >= 1000x faster than networkx at K=100: {nx100 / d100:,.0f}x -> "
        f"{'met' if nx100 / d100 >= 1000 else 'MISSED'}"
    )
    print(
        f"- separable K=1e5 L=10 < 20 ms: {fmt(s1e5)} -> "
        f"{'met' if s1e5 < 2e-2 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
