"""``bayesrank demo``: RankTS, RankUCB, GenRankUCB, the baseline and RankTS learning w, paper instance."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import numpy as np

from bayesrank import theorems
from bayesrank._validate import check_int, check_real
from bayesrank.policies.baseline import RankedBaseline
from bayesrank.policies.gen_ucb import GenRankUCB
from bayesrank.policies.ts import RankTS
from bayesrank.policies.ucb import RankUCB
from bayesrank.posteriors.conjugate import GaussianLinear
from bayesrank.simulation.env import RankingEnv
from bayesrank.simulation.simulate import simulate
from bayesrank.studies import plots, store

__all__ = ["authors_alpha", "paper_policies", "run_demo", "summary_rows", "w_label"]


def authors_alpha(delta: float = 0.1) -> float:
    """The constant UCB width of the authors' experiments, 1 + sqrt(log(2/delta)/2).

    Lemma 1's width (``alpha=None``) is what the theorems assume, but it is far wider
    and converges much more slowly on the paper's instances.
    """
    return 1.0 + math.sqrt(math.log(2.0 / delta) / 2.0)


def paper_policies(env, *, lam: float = 1.0, delta: float = 0.1, alpha=None):
    """The paper's four algorithms as ``{name: factory(seed)}`` for :func:`simulate`."""

    V, w, v0, L = env.items, env.w, env.v0, env.L
    return {
        "RankTS": lambda s: RankTS(
            model=GaussianLinear(), items=V, w=w, v0=v0, seed=s
        ),
        "RankUCB": lambda s: RankUCB(
            items=V, w=w, v0=v0, lam=lam, delta=delta, alpha=alpha, seed=s
        ),
        "GenRankUCB": lambda s: GenRankUCB(
            items=V, L=L, v0=v0, lam=lam, delta=delta, alpha=alpha, seed=s
        ),
        "Baseline": lambda s: RankedBaseline(
            items=V, L=L, v0=v0, lam=lam, delta=delta, alpha=alpha, seed=s
        ),
    }


def summary_rows(ds, tail: float = 0.1) -> list[dict]:
    """Per policy: cumulative regret (mean, sd over runs), final per-round regret
    (mean over the last ``tail`` fraction of rounds), and time per round."""
    T = ds.sizes["round"]
    runs = ds.sizes["run"]
    last = max(1, int(T * tail))
    rows = []
    for name in ds["policy"].values:
        r = ds["regret"].sel(policy=name).values
        cum = r.sum(axis=1)
        rows.append(
            {
                "policy": str(name),
                "cumulative regret": float(cum.mean()),
                "sd over runs": float(cum.std(ddof=1)) if runs > 1 else 0.0,
                f"regret/round (last {last})": float(r[:, -last:].mean()),
                "ms per round (all runs, incl. compile)": float(
                    1e3 * ds["seconds"].sel(policy=name).item() / T
                ),
            }
        )
    return rows


def _w_prior():
    """The demo's prior on an unknown w (NumPyro is imported only here)."""
    import numpyro.distributions as dist

    return dist.Normal(0.0, 5.0)


def run_demo(
    out="bayesrank-demo", K=100, T=1000, runs=20, w_max=10.0, seed=0, quick=False
):
    """Run the demo, print a summary table, write ``regret.png`` and ``results.nc``."""
    for name, val in (("K", K), ("T", T), ("runs", runs)):
        check_int(val, name, low=1)
    check_real(w_max, "w_max", low=0)
    if quick:
        K, T, runs = min(K, 20), min(T, 200), min(runs, 4)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    env = RankingEnv.paper(seed=seed, K=K, L=4, d=10, w_max=w_max)
    print(
        f"bayesrank demo: {env!r}, T={T} rounds x {runs} runs; UCB width "
        f"alpha = {authors_alpha():.3f} (the authors' constant)"
    )
    t0 = time.perf_counter()
    policies = paper_policies(env, alpha=authors_alpha())
    policies["RankTS (latent w)"] = lambda s: RankTS(
        items=env.items, L=env.L, w=_w_prior(), v0=env.v0, seed=s
    )
    # two policies at a time where there are two cores: the demo's cold time is mostly
    # compiling five programs and playing RankTS learning w (benchmarks/demo.py)
    ds = simulate(env, policies, T=T, runs=runs, seed=seed,
                  workers=min(2, os.cpu_count() or 1))
    elapsed = time.perf_counter() - t0
    rows = summary_rows(ds)
    print(plots.timing_table(rows, list(rows[0])))
    fig = plots.regret_curves(
        ds,
        window=max(1, T // 100),
        title=f"K={K}, L=4, d=10, max|w|={w_max:g}: {runs} runs",
    )
    plots.save(fig, out / "regret.png")
    store.save_netcdf(ds, out / "results.nc")
    print(f"wrote {out / 'regret.png'} and {out / 'results.nc'} in {elapsed:.1f} s")
    best = min(rows, key=lambda r: r["cumulative regret"])["policy"]
    print(f"lowest cumulative regret: {best}")
    return ds, np.asarray([r["cumulative regret"] for r in rows])


def w_label(env, w_max: float) -> str:
    """"max|w| range X (realised Y)": the sampling range and the realised value."""
    return f"max|w| range {w_max:g} (realised {theorems.w_max_realised(env):.3g})"
