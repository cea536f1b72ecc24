"""Which inference for an unknown w? RankTS(w=<prior>) with each posterior family.

On the d = 5 Figure 1 instance (K = 100, L = 4, w_l ~ U(-10, 10), seed 0), with the
identity link and with the logistic link, it runs RankTS given the true w, RankTS
with the prior w ~ Normal(0, 5) under each inference (identity: the exact conjugate
collapse and joint NUTS over (theta, w); logistic: LatentLaplace and joint NUTS)
and GenRankTS, on common random numbers. NUTS policies run run by run (they do not
vmap), so the default scale is small.

    python scripts/latent_w_inference.py [T] [runs]     # default 1000 10

Prints per link a table: mean cumulative regret +- its standard error over runs, the
per-run values, and the seconds of each policy.
"""

import sys
import time

import numpy as np
import numpyro.distributions as dist

import bayesrank as br


def policies(env, link: str, T: int) -> dict:
    def prior():
        return dist.Normal(0.0, 5.0)

    V, w, v0 = env.items, env.w, env.v0
    if link == "identity":
        known, base = (lambda: br.GaussianLinear()), (lambda: br.GaussianLinear())
        collapsed = "RankTS (latent w, conjugate)"
    else:
        known = base = lambda: br.LaplaceGLM(link, n_max=T)  # noqa: E731
        collapsed = "RankTS (latent w, LatentLaplace)"
    return {
        "RankTS (known w)": lambda s: br.RankTS(model=known(), items=V, w=w, v0=v0,
                                                seed=s),
        collapsed: lambda s: br.RankTS(model=base(), items=V, L=4, w=prior(), v0=v0,
                                       seed=s),
        "RankTS (latent w, NUTS)": lambda s: br.RankTS(
            model=br.BayesGLM(link, n_max=T), items=V, L=4, w=prior(), v0=v0, seed=s),
        "GenRankTS": lambda s: br.GenRankTS(V, L=4, v0=v0, model=base(), seed=s),
    }


def main(T: int = 1000, runs: int = 10) -> None:
    for link in ("identity", "logistic"):
        env = br.RankingEnv.paper(seed=0, K=100, L=4, d=5, w_max=10.0, link=link)
        print(f"\n## {link} link, T = {T}, {runs} runs\n")
        print("| policy | cumulative regret | per run | seconds |\n|---|---|---|---|")
        for name, factory in policies(env, link, T).items():
            t0 = time.perf_counter()
            ds = br.simulate(env, {name: factory}, T=T, runs=runs, progress=False)
            c = ds["regret"].sum("round").values.ravel()
            se = c.std(ddof=1) / np.sqrt(runs)
            print(f"| {name} | {c.mean():.0f} +- {se:.0f} | "
                  f"{', '.join(f'{x:.0f}' for x in c)} | "
                  f"{time.perf_counter() - t0:.0f} |", flush=True)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
