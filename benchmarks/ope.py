"""Offline evaluation and warm starts from a log: ``evaluate`` and ``fit`` at scale.

    python benchmarks/ope.py [--quick]

Rows (conjugate model, identity link, L = 4, d = 10, K = 100, a 100,000-round log
made by ``br.ope.collect`` with one fixed v0, epsilon-greedy around the true best
list, epsilon = 0.2):

* ``br.ope.evaluate`` of a RankTS target (fitted on the log's first 2,000 rounds, so
  that its posterior draws still differ) with 1,000 posterior draws, every
  estimator in ``br.ope.ESTIMATORS``: wall time of the first call (the target's
  batched select is compiled there) and of a second call, against the 30 s target.
  References measured in the same run: ``collect`` of the log, and ``evaluate`` of
  a deterministic target (RankUCB fitted on the whole log, one list per distinct
  v0).
* ``policy.fit(log)`` on the whole log against replaying ``policy.update`` row by
  row. The replay is timed on a prefix (2,000 rows by default, after a few rows of
  warm-up) and scaled per row to the log's length; ``fit`` is timed in full, once
  including its compilation and once warm. Target: fit at least 20x faster.

Every ratio is against a reference measured in the same run. Prints markdown tables.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
import numpy as np  # noqa: E402
from _common import machine, parse, table  # noqa: E402

import bayesrank as br  # noqa: E402

EVAL_TARGET_S = 30.0
FIT_TARGET_X = 20.0


def _seconds(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def make_log(K: int, n: int, epsilon: float = 0.2, seed: int = 0):
    """The environment and an epsilon-greedy log of n rounds, with collect's time."""
    env = br.RankingEnv.paper(seed=seed, K=K, L=4, d=10, w_max=10.0)
    best = np.asarray(env.best()[0])
    logger = br.ope.EpsilonGreedyLogger(lambda v0: best, K, env.L, epsilon)
    br.ope.collect(env, logger, n, seed=seed + 1)  # compile env.sample at this shape
    t0 = time.perf_counter()
    log = br.ope.collect(env, logger, n, seed=seed)
    return env, log, time.perf_counter() - t0


def evaluate_cost(env, log, collect_s: float, n_draws: int) -> list[dict]:
    names = list(br.ope.ESTIMATORS)
    n = log.sizes["round"]
    # RankTS learns from the first rounds only, so that its draws still vary (after
    # the whole log its lists could all be equal, and evaluate would take the
    # deterministic path: the table says how many distinct lists it drew).
    ts = br.RankTS(items=env.items, w=env.w, seed=0)
    ts.fit(log.isel(round=slice(0, min(n, 2000))))
    ucb = br.RankUCB(items=env.items, w=env.w)
    ucb.fit(log)
    rows = [{"what": f"collect the {n:,}-round log (reference)", "seconds": collect_s,
             "ratio to collect": 1.0, "target": "-"}]
    timed = []
    for label, pol in ((f"evaluate RankTS, {n_draws:,} draws", ts),
                       ("evaluate RankUCB (deterministic)", ucb)):
        def run(p=pol):
            return br.ope.evaluate(log, p, estimators=names, n_draws=n_draws)

        timed.append((label, pol, _seconds(run), _seconds(run)))
    # after the timings, so that the first call above compiles RankTS's select_batch
    distinct = len(np.unique(ts.select_batch(n=n_draws), axis=0))
    for label, pol, first, again in timed:
        if pol is ts:
            label += f" ({distinct} distinct lists)"
        for when, s in (("first call", first), ("second call", again)):
            rows.append({
                "what": f"{label}, {when}", "seconds": s,
                "ratio to collect": s / collect_s,
                "target": "-" if pol is not ts else (
                    f"<= {EVAL_TARGET_S:g} s: "
                    + ("met" if s <= EVAL_TARGET_S else "MISSED")),
            })
    return rows


def fit_cost(env, log, prefix: int, warmup: int = 20) -> list[dict]:
    n = log.sizes["round"]
    lists = log["lists"].values
    rewards = log["rewards"].values
    v0 = log["v0"].values
    makers = {
        "RankTS (conjugate)": lambda: br.RankTS(items=env.items, w=env.w, seed=0),
        "RankUCB": lambda: br.RankUCB(items=env.items, w=env.w),
    }
    rows = []
    for name, make in makers.items():
        pol = make()
        cold = _seconds(lambda p=pol: (p.fit(log), jax.block_until_ready(p.state)))
        warm = _seconds(lambda p=pol: (p.fit(log), jax.block_until_ready(p.state)))
        rep = make()
        for t in range(warmup):  # compile the single-row update
            rep.update(lists[t], rewards[t], v0=v0[t])
        jax.block_until_ready(rep.state)  # applies the pending update

        def replay(p=rep):
            for t in range(warmup, warmup + prefix):
                p.update(lists[t], rewards[t], v0=v0[t])
            jax.block_until_ready(p.state)

        per_row = _seconds(replay) / prefix
        scaled = per_row * n
        rows.append({
            "policy": name, "rounds": n,
            "update row by row, us per row": 1e6 * per_row,
            f"replay scaled to {n:,} rows (s)": scaled,
            "fit, first call (s)": cold, "fit, warm (s)": warm,
            "speed-up (first call)": scaled / cold, "speed-up (warm)": scaled / warm,
            "target >= 20x (first call / warm)": " / ".join(
                "met" if scaled / s >= FIT_TARGET_X else "MISSED" for s in (cold, warm)
            ),
        })
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--K", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=100_000)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--prefix", type=int, default=2000,
                    help="rows of the row-by-row replay actually timed")
    args = parse(ap, argv, K=20, rounds=5_000, draws=100, prefix=200)
    print(f"# Offline evaluation and fit from a log\n\nMachine: {machine()}\n")
    env, log, collect_s = make_log(args.K, args.rounds)
    print(f"## evaluate at K = {args.K}, L = 4, {args.rounds:,} rounds, "
          f"estimators {list(br.ope.ESTIMATORS)}\n")
    print(table(evaluate_cost(env, log, collect_s, args.draws)) + "\n")
    print(f"## fit against update row by row ({args.prefix:,} rows replayed, scaled "
          f"per row to {args.rounds:,})\n")
    print(table(fit_cost(env, log, args.prefix)))


if __name__ == "__main__":
    main()
