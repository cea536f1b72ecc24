"""Benchmark: exact selection at catalogue scale (no K x K tables).

For RankTS (identity link; logistic link) and RankUCB (early round: wide bonus; late
round: narrow bonus) at K = 1,000 .. 100,000 items (L = 4, d = 10, the paper's
instance generator), prints per policy and K:

* ``select`` wall time through the class API (median over repeats, after compiling)
  with the fast host decoders forced (``decoder.FAST_K = 0``; "auto" picks them from
  ``FAST_K`` = 4,096 items, and on the CPU from ``FAST_K_MONOTONE`` = 640 items for a
  point estimate under a monotone link and ``FAST_K_NATIVE`` = 256 for RankUCB with
  the C kernel, ``FAST_K_PREFIX`` = 512 without) and,
  where the tables fit (K <= 3,000), the dense DP
  beside it, with the ratio dense / fast measured in the same run (RankTS with the
  identity link is separable: O(L K) on every path, no dense column);
* the peak of host (NumPy) memory during one fast select (``tracemalloc``; about 0
  for RankUCB, whose C kernel allocates with malloc and whose compiled search
  allocates in XLA, both outside it) and the
  process's maximum resident set size (``resource``, everything included);
* for RankUCB, the exact pair evaluations per select (all L-1 steps) against the
  (L-1) K^2 of the dense DP.

"Early" is after 20 observed lists, "late" after 20,000 (random lists, rewards from
the environment). The logistic RankTS uses the conjugate Gaussian posterior scored
under the logistic link (a stand-in for a GLM posterior: the decoder sees only a
draw of theta and the link).

Float64 by default (as the README's main table); ``--float32`` runs in the library's
default precision, where the dense DP is several times faster. RankUCB's fast path
is the C kernel of :mod:`bayesrank.decoding.native` where it is built (the header says
which ran); ``--compiled`` forces the compiled-JAX search of
:mod:`bayesrank.decoding.prefix`.

Usage:
    python benchmarks/decode_scale.py                   # K = 1e3 .. 1e5
    python benchmarks/decode_scale.py --K 1000 3000 --json out.json
    python benchmarks/decode_scale.py --K 3000 --runs 5  # ratios over 5 runs
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, parse  # noqa: E402

import bayesrank as br  # noqa: E402
from bayesrank.decoding import native  # noqa: E402
from bayesrank.decoding.bounded import ucb_backward  # noqa: E402
from bayesrank.decoding.native import ucb_backward_fast  # noqa: E402
from bayesrank.model.links import get_link  # noqa: E402
from bayesrank.decoding import dispatch as decoder  # noqa: E402
from bayesrank.posteriors import GaussianLinear  # noqa: E402

L, D = 4, 10
FAST_K_DEFAULT = (decoder.FAST_K, decoder.FAST_K_MONOTONE, decoder.FAST_K_PREFIX,
                  decoder.FAST_K_NATIVE)
DENSE_MAX = 3000


class LogisticGaussian:
    """The conjugate Gaussian posterior (fixed scales, as these figures were measured:
    the learnt default keeps no Gram factor), its draws scored under the logistic link."""

    def __init__(self):
        self._m = GaussianLinear(prior_scale=1.0, noise_scale=1.0)
        self.link = get_link("logistic")
        for name in ("init", "update", "mean", "draw", "gram", "check_rewards"):
            setattr(self, name, getattr(self._m, name))


def build(kind, env, method):
    """A policy whose decoder is fixed at trace time: 'fast' or 'dense'."""
    k = 0 if method == "fast" else 10**12
    decoder.FAST_K = decoder.FAST_K_MONOTONE = decoder.FAST_K_PREFIX = k
    decoder.FAST_K_NATIVE = k
    if kind == "ts-identity":
        pol = br.RankTS(items=env.items, w=env.w, seed=0)
    elif kind == "ts-logistic":
        pol = br.RankTS(model=LogisticGaussian(), items=env.items, w=env.w, seed=0)
    else:
        pol = br.RankUCB(items=env.items, w=env.w, seed=0)
    return pol


def observe(pol, env, n, seed):
    rng = np.random.default_rng(seed)
    lists = rng.integers(0, env.K, size=(n, L))
    rewards = np.asarray(env.sample(jax.random.key(seed), lists))
    pol.update(lists, rewards)


def backward_pass_options(ap, argv):
    """The options of the backward-pass benchmarks (``prefix_versions.py``,
    ``ucb_native.py``): item counts, observed lists, the early-round cap, the rounds
    of the interleaved timing and the precision. Parses, sets x64 and returns args."""
    ap.add_argument("--K", type=int, nargs="+", default=[1000, 3000, 100000])
    ap.add_argument("--observed", type=int, nargs="+", default=[20, 20000])
    ap.add_argument("--early-max-K", type=int, default=10000,
                    help="largest K for the early rounds (about K^2 work)")
    ap.add_argument("--rounds", type=int, default=15,
                    help="rounds of the interleaved timing (3 above K = 10,000)")
    ap.add_argument("--float32", action="store_true",
                    help="run in float32 (the library's default) instead of float64")
    args = parse(ap, argv, K=[300], observed=[20], rounds=3)
    jax.config.update("jax_enable_x64", not args.float32)
    return args


def ucb_instances(args):
    """``(K, n_obs, (A, B, Ua, Ub, c, mask), rounds)`` for each item count and
    observed-list count of :func:`backward_pass_options` (early rounds up to
    ``--early-max-K``; at most 3 timing rounds above K = 10,000)."""
    for K in args.K:
        for n_obs in args.observed:
            if n_obs < 1000 and K > args.early_max_K:
                continue
            inst = tuple(np.asarray(x) for x in ucb_factors(K, n_obs)) + (
                np.ones(K, bool),)
            yield K, n_obs, inst, args.rounds if K <= 10000 else min(args.rounds, 3)


def ucb_factors(K, n_obs):
    """RankUCB's UCB factors (A, B, Ua, Ub, c) after ``n_obs`` random lists on the
    paper's instance with K items, as its decoder sees them."""
    env = br.RankingEnv.paper(seed=0, K=K, L=L, d=D)
    pol = build("ucb", env, "fast")
    (decoder.FAST_K, decoder.FAST_K_MONOTONE, decoder.FAST_K_PREFIX,
     decoder.FAST_K_NATIVE) = FAST_K_DEFAULT
    observe(pol, env, n_obs, seed=1)
    pol.select()
    tabs = pol.core.tables
    return tabs.factors(tabs.rest(pol._last.params, pol.state.items))


def time_select(pol, repeat):
    pol.select()  # compile (the decoder is chosen at trace time)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        pol.select()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def host_peak(pol):
    tracemalloc.start()
    pol.select()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def pair_evals(pol):
    """Exact pair evaluations of the fast UCB decode of the last selection (the
    compiled prefix search for the identity link, as the decoder runs it; the host
    bound-and-prune otherwise)."""
    tabs = pol.core.tables
    rest = tabs.rest(pol._last.params, pol.state.items)
    A, B, Ua, Ub, c = tabs.factors(rest)
    if tabs.link.name == "identity":
        mask = np.ones(A.shape[1], bool)
        return int(np.asarray(ucb_backward_fast(A, B, Ua, Ub, c, mask)[2]).sum())
    A, B, Ua, Ub, c = (np.asarray(x) for x in (A, B, Ua, Ub, c))
    return int(ucb_backward(A, B, Ua, Ub, c, tabs.link)[2].sum())


CASES = [
    ("ts-identity", None),
    ("ts-logistic", 200),
    ("ucb", 20),  # early: wide bonus
    ("ucb", 20000),  # late: narrow bonus
]


def run(Ks, repeat_small, repeat_large, early_max_K):
    rows = []
    for K in Ks:
        env = br.RankingEnv.paper(seed=0, K=K, L=L, d=D)
        repeat = repeat_small if K <= 10000 else repeat_large
        for kind, n_obs in CASES:
            label = kind if kind != "ucb" else f"ucb-{'early' if n_obs < 1000 else 'late'}"
            if label == "ucb-early" and K > early_max_K:
                print(f"{label:12s} K={K:>7,d}  skipped (--early-max-K {early_max_K:,d})")
                continue
            row = {"policy": label, "K": K}
            pol = build(kind, env, "fast")
            if n_obs:
                observe(pol, env, n_obs, seed=1)
            row["fast_ms"] = 1e3 * time_select(pol, repeat)
            row["host_peak_mb"] = host_peak(pol) / 2**20
            if kind == "ucb":
                row["pair_evals"] = pair_evals(pol)
                row["dense_pairs"] = (L - 1) * K * K
            if K <= DENSE_MAX and kind != "ts-identity":
                dpol = build(kind, env, "dense")
                if n_obs:
                    observe(dpol, env, n_obs, seed=1)
                row["dense_ms"] = 1e3 * time_select(dpol, repeat)
                row["dense_over_fast"] = row["dense_ms"] / row["fast_ms"]
            row["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            rows.append(row)
            print(_fmt(row), flush=True)
    (decoder.FAST_K, decoder.FAST_K_MONOTONE, decoder.FAST_K_PREFIX,
     decoder.FAST_K_NATIVE) = FAST_K_DEFAULT
    return rows


def _fmt(r):
    out = f"{r['policy']:12s} K={r['K']:>7,d}  fast {r['fast_ms']:9.1f} ms"
    if "dense_ms" in r:
        out += f"  dense {r['dense_ms']:9.1f} ms  dense/fast {r['dense_over_fast']:6.1f}x"
    out += f"  host peak {r['host_peak_mb']:7.1f} MB  maxrss {r['maxrss_mb']:7.0f} MB"
    if "pair_evals" in r:
        frac = r["pair_evals"] / r["dense_pairs"]
        out += f"  pairs {r['pair_evals']:,d} ({100 * frac:.3f}% of dense)"
    return out


def summary(rows):
    """Per (policy, K) over runs, in first-seen order: the median fast and dense times
    and the median, min and max of the per-run dense / fast ratios."""
    out = []
    for policy, K in dict.fromkeys((r["policy"], r["K"]) for r in rows):
        rs = [r for r in rows if (r["policy"], r["K"]) == (policy, K)]
        row = {"policy": policy, "K": K, "runs": len(rs),
               "fast_ms": float(np.median([r["fast_ms"] for r in rs]))}
        if all("dense_ms" in r for r in rs):
            ratio = [r["dense_over_fast"] for r in rs]
            row.update(dense_ms=float(np.median([r["dense_ms"] for r in rs])),
                       ratio_median=float(np.median(ratio)),
                       ratio_min=min(ratio), ratio_max=max(ratio))
        out.append(row)
    return out


def _fmt_summary(r):
    out = f"{r['policy']:12s} K={r['K']:>7,d}  fast {r['fast_ms']:9.1f} ms"
    if "dense_ms" in r:
        out += (f"  dense {r['dense_ms']:9.1f} ms  dense/fast {r['ratio_median']:6.1f}x"
                f" [{r['ratio_min']:.1f}, {r['ratio_max']:.1f}]")
    return out + f"  ({r['runs']} runs)"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--K", type=int, nargs="+",
                    default=[1000, 3000, 10000, 30000, 100000])
    ap.add_argument("--repeat", type=int, default=9, help="repeats at K <= 10,000")
    ap.add_argument("--repeat-large", type=int, default=3, help="repeats above")
    ap.add_argument("--early-max-K", type=int, default=30000,
                    help="largest K for the early-round RankUCB rows (its pruning is "
                    "weak: the time grows about as K^2)")
    ap.add_argument("--runs", type=int, default=1,
                    help="run the whole sweep this many times and print, per row, the "
                    "median and range of the dense / fast ratios (each ratio is from "
                    "one run: this machine's speed drifts between runs)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--float32", action="store_true",
                    help="run in float32 (the library's default) instead of float64")
    ap.add_argument("--compiled", action="store_true",
                    help="RankUCB's fast path: the compiled-JAX search "
                    "(decode_prefix) even where the C kernel (decode_native) is built")
    args = parse(ap, argv, K=[1000, 3000], repeat=3)
    jax.config.update("jax_enable_x64", not args.float32)
    print(machine())
    native.USE_NATIVE = not args.compiled
    ucb_path = ("C kernel (bayesrank.decoding._prefix_scan, "
                f"{native.default_threads()} threads)"
                if native.USE_NATIVE and native.available()
                else "compiled search (bayesrank.decoding.prefix)")
    print(f"RankUCB fast path: {ucb_path}")
    print(f"L = {L}, d = {D}, {jax.numpy.result_type(float)}, FAST_K = {decoder.FAST_K}, "
          f"FAST_K_MONOTONE = {decoder.FAST_K_MONOTONE}, FAST_K_PREFIX = "
          f"{decoder.FAST_K_PREFIX}, FAST_K_NATIVE = {decoder.FAST_K_NATIVE}, "
          "median select time")
    rows = []
    for r in range(args.runs):
        if args.runs > 1:
            print(f"run {r + 1} of {args.runs}")
        rows += [dict(row, run=r) for row in
                 run(args.K, args.repeat, args.repeat_large, args.early_max_K)]
    result = {"machine": machine(), "ucb_path": ucb_path, "rows": rows}
    if args.runs > 1:
        result["summary"] = summary(rows)
        print("over runs: median fast, median dense, dense/fast median [min, max]")
        for r in result["summary"]:
            print(_fmt_summary(r))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
