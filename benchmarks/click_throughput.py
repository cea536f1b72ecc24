"""Throughput of ``simulate`` on the click-model environments against Eq. 1 (issue 45,
item 6: at most 1.5x for the same policy).

    python benchmarks/click_throughput.py [--quick]

The same RankTS (known w = 0, the default posterior) plays Eq. 1 with logistic clicks
(``RankingEnv``), Eq. 1 seen through a cascade (``feedback="cascade"``), and the PBM,
cascade, DCM and DBN environments built from the same items and theta
(``from_features``). Each is simulated twice in one process; the second, compiled run
is timed (median of three), and its ratio to Eq. 1's is printed with the machine.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _common import machine, table  # noqa: E402

import bayesrank as br  # noqa: E402
from bayesrank.simulation import CascadeEnv, DBNEnv, DCMEnv, PBMEnv  # noqa: E402


def envs(K: int, L: int, d: int):
    base = br.RankingEnv.paper(seed=0, K=K, L=L, d=d, w_max=0.0, link="logistic")
    V, theta = np.asarray(base.items), np.asarray(base.theta)[0]
    w = np.zeros(L)
    return {
        "Eq. 1 (logistic clicks)": br.RankingEnv(V, np.asarray(base.theta), w,
                                                 link="logistic"),
        "Eq. 1 through a cascade": br.RankingEnv(V, np.asarray(base.theta), w,
                                                 link="logistic", feedback="cascade"),
        "PBM": PBMEnv.from_features(V, theta, 1.0 / np.arange(1, L + 1)),
        "cascade": CascadeEnv.from_features(V, theta, L),
        "DCM": DCMEnv.from_features(V, theta, np.full(L, 0.5)),
        "DBN": DBNEnv.from_features(V, theta, np.full(K, 0.5), 0.9, L),
    }


def main(quick: bool = False) -> None:
    K, L, d = 100, 4, 10
    T, runs = (200, 4) if quick else (1000, 20)
    rows, ref = [], None
    for name, env in envs(K, L, d).items():
        V = np.asarray(env.items)
        pol = {"RankTS": lambda s, V=V: br.RankTS(items=V, w=np.zeros(L), seed=s)}
        br.simulate(env, pol, T=T, runs=runs, progress=False)  # compile
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            br.simulate(env, pol, T=T, runs=runs, progress=False)
            times.append(time.perf_counter() - t0)
        sec = float(np.median(times))
        ref = sec if ref is None else ref
        rows.append({"environment": name, f"simulate, {runs} runs x {T} rounds (s)": sec,
                     "ratio to Eq. 1": sec / ref})
    print(f"machine: {machine()}\n")
    print(table(rows))


if __name__ == "__main__":
    main("--quick" in sys.argv)
