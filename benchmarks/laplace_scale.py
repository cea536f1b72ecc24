"""Cost of learning a Laplace GLM's prior scale tau: a RankTS round (select, then
update; logistic rewards, Figure 1's generator, L = 4, d = 10, known w) with
``LaplaceGLM()``'s learnt tau integrated two ways, against the fixed-scale
``LaplaceGLM(prior_scale=1.0)``, at K = 100 and K = 10,000:

* ``grid``: the 24 fixed nodes, a Newton fit each (``LaplaceGLM()`` today);
* ``adaptive``: 13 nodes around the mode of log tau's posterior, one Newton fit a
  round (``LearntScaleLaplace(..., nodes="adaptive")``, ``posteriors/laplace/
  scale_nodes.py``).

    python benchmarks/laplace_scale.py [--quick]

Each learnt model and the fixed one are timed in the same run, in adjacent pairs
(``learnt_scale._paired``: the ratio is the median of the pairs' ratios, with its
interquartile range), two ways: blocks of 10 single jitted select-then-update calls,
and 200 rounds scanned inside one compiled program. The policies first play 20
rounds; the scan then holds 20 to 220 rows per position.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bayesrank as br  # noqa: E402
from _common import machine, table  # noqa: E402
from learnt_scale import SCANNED, _paired, _stepper  # noqa: E402

from bayesrank.posteriors.laplace.learnt_scale import LearntScaleLaplace  # noqa: E402


def main(quick: bool = False) -> None:
    rows = []
    pairs = 8 if quick else 20
    for K in (100, 10_000):
        env = br.RankingEnv.paper(seed=0, K=K, L=4, d=10, w_max=10.0, link="logistic")
        fixed = _stepper(br.LaplaceGLM("logistic", prior_scale=1.0), env, env.w)
        hyper = br.LaplaceGLM().hyperprior
        for nodes in ("grid", "adaptive"):
            learnt = _stepper(br.LaplaceGLM._holding(
                LearntScaleLaplace("logistic", hyper, nodes=nodes)), env, env.w)
            tl, tf, cr, ciqr = _paired(learnt[0], fixed[0], pairs, 10)
            sl, sf, sr, siqr = _paired(learnt[1], fixed[1], max(pairs // 2, 4), 1)
            rows.append({"K": K, "tau": nodes, "call: fixed (us)": 1e6 * tf,
                         "call: learnt (us)": 1e6 * tl, "call ratio": cr,
                         "(IQR)": ciqr,
                         "scanned: fixed (us)": 1e6 * sf / SCANNED,
                         "scanned: learnt (us)": 1e6 * sl / SCANNED,
                         "scanned ratio": sr, "(IQR) ": siqr})
            print(table(rows[-1:]), flush=True)
    print(f"machine: {machine()}\n")
    print(table(rows))


if __name__ == "__main__":
    main("--quick" in sys.argv)
