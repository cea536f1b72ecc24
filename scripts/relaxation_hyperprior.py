"""Why the 2d relaxation (GenRankTS) learns g under HalfNormal(1), not the conjugate
default HalfCauchy(1): total regret over 1,000 rounds on the paper's instance
(K = 100, L = 4, w_max = 10) beside the paper's fixed N(0, I) prior.

    python scripts/relaxation_hyperprior.py [--d 5] [--runs 4] [--rounds 1000]
"""

from __future__ import annotations

import argparse

import numpy as np

import bayesrank as br
from bayesrank.posteriors.conjugate import GaussianLinear


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=5)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=1000)
    args = ap.parse_args()
    env = br.RankingEnv.paper(seed=0, K=100, L=4, d=args.d, w_max=10.0)

    def gen(model):
        return lambda s: br.GenRankTS(env.items, L=4, v0=env.v0, model=model, seed=s)

    policies = {
        "fixed N(0, I), noise sd 1 (the paper)": gen(GaussianLinear(prior_scale=1.0,
                                                                     noise_scale=1.0)),
        "HalfCauchy(1) (the conjugate default)": gen(GaussianLinear()),
        "HalfNormal(1) (the relaxation's default)": gen(None),
    }
    ds = br.simulate(env, policies, T=args.rounds, runs=args.runs, seed=0)
    total = ds.regret.sum("round")
    print(f"d = {args.d}, {args.runs} runs x {args.rounds} rounds: total regret")
    for name in policies:
        runs = np.asarray(total.sel(policy=name))
        print(f"  {name}: mean {runs.mean():.0f}  (runs {np.round(runs).astype(int)})")


if __name__ == "__main__":
    main()
