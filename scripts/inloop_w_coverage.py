"""In-loop coverage of w's 90 % intervals on the Figure 1 instance (issue 35, item 5).

RankTS(w=Normal(0, 5)) runs the bandit loop on RankingEnv.paper(seed=0, K=100, L=4,
d=10, w_max=10); at checkpoints, the share of (run, position 2..4) whose central 90 %
interval holds the true w. Three theta priors: the default GaussianLinear() (theta's
prior scale and the noise sd learnt), the old default GaussianLinear(prior_scale=1,
noise_scale=1) (theta ~ N(0, I), E||theta||^2 = d = 10) and prior_scale = 0.224, which
matches the generator's E||theta||^2 = 0.5 (theta = (theta'/2, 1/2), theta' a unit
vector in 9 dimensions).

    python scripts/inloop_w_coverage.py [--runs 10] [--T 1000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import bayesrank as br
from bayesrank.studies.paper.unknown_w import w_tracking


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--T", type=int, default=1000)
    args = ap.parse_args()
    env = br.RankingEnv.paper(seed=0, K=100, L=4, d=10, w_max=10.0)
    theta = np.asarray(env.theta)
    print(f"generator: mean ||theta^l||^2 = {np.mean(np.sum(theta**2, axis=1)):.3f}; "
          f"d = {env.d}; w = {np.round(np.asarray(env.w), 2).tolist()}")
    rows = {}
    for label, model in (
            ("default GaussianLinear() (scales learnt)", br.GaussianLinear()),
            ("old default GaussianLinear(prior_scale=1, noise_scale=1)",
             br.GaussianLinear(prior_scale=1.0, noise_scale=1.0)),
            ("GaussianLinear(prior_scale=0.224, noise_scale=1)",
             br.GaussianLinear(prior_scale=0.224, noise_scale=1.0))):
        t0 = time.perf_counter()
        tr = w_tracking(env, args.T, args.runs, seed=0, checkpoints=8, model=model)
        rows[label] = tr
        print(f"{label}: {time.perf_counter() - t0:.0f} s", flush=True)
    rounds = next(iter(rows.values()))["rounds"]
    print("\n| theta prior | " + " | ".join(f"r{r}" for r in rounds) + " |")
    print("|---|" + "---|" * len(rounds))
    for label, tr in rows.items():
        print(f"| {label} | " + " | ".join(f"{c:.2f}" for c in tr["coverage"]) + " |")


if __name__ == "__main__":
    main()
