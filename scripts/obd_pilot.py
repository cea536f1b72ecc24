"""Pilot for ``bayesrank study obd``: which per-position models on Bernoulli clicks?

On the study's environments (w_max 0 and 5) it compares the ridge (identity-link)
RankUCB / GenRankUCB with GLM-UCB (``LaplaceGLM`` logistic, default c1 and c1 = 1
forced), and RankTS-Laplace at prior sd 1 and 3 on every coefficient and with
RankTS-NUTS's prior (sd 1, intercept sd 10: the policy's intercept column is scaled
by 10, which is the same prior) beside RankTS-NUTS itself.

    PYTHONPATH=. python scripts/obd_pilot.py [T] [runs]     # default 400 3

Prints, per w_max and policy, the mean per-round regret over the last 10 % of the
rounds (and per run), the cumulative regret, the seconds and the width's c1.
"""

import sys

import numpy as np

import bayesrank as br
from bayesrank.studies.obd import study as obd


def main(T: int = 400, runs: int = 3) -> None:
    cfg = obd.StudyConfig(w_max=(0.0, 5.0), T=T, runs=runs)

    def lap(ps=1.0):
        return br.LaplaceGLM(link="logistic", prior_scale=ps, n_max=T)

    for wm in cfg.w_max:
        env = obd.build_env(cfg, wm)
        a = cfg.alpha
        kw = dict(items=env.items, v0=env.v0, alpha=a)
        known = dict(kw, w=env.w)
        scaled = np.asarray(env.items) * obd.prior_scales(env, cfg) / cfg.prior_scale
        fac = {
            "TS-NUTS": obd.POLICIES["RankTS-NUTS"].build(env, cfg),
            "TS-Laplace NUTS's prior": lambda s: br.RankTS(
                model=lap(cfg.prior_scale), items=scaled, w=env.w, v0=env.v0, seed=s),
            "TS-Laplace sd 1": lambda s: br.RankTS(
                model=lap(1.0), items=env.items, w=env.w, v0=env.v0, seed=s),
            "TS-Laplace sd 3": lambda s: br.RankTS(
                model=lap(3.0), items=env.items, w=env.w, v0=env.v0, seed=s),
            "RankUCB ridge": lambda s: br.RankUCB(**known, seed=s),
            "RankUCB logistic": lambda s: br.RankUCB(model=lap(), **known, seed=s),
            "RankUCB logistic c1=1": lambda s: br.RankUCB(
                model=lap(), **known, c1=1.0, seed=s),
            "GenRankUCB ridge": lambda s: br.GenRankUCB(L=env.L, **kw, seed=s),
            "GenRankUCB logistic": lambda s: br.GenRankUCB(
                model=lap(), L=env.L, **kw, seed=s),
            "GenRankUCB logistic c1=1": lambda s: br.GenRankUCB(
                model=lap(), L=env.L, **kw, c1=1.0, seed=s),
            "Baseline": lambda s: br.RankedBaseline(L=env.L, **kw, seed=s),
        }
        ds = br.simulate(env, fac, T=T, runs=runs, seed=0, progress=False)
        tail = ds["regret"].isel(round=slice(T - T // 10, T)).mean("round")
        for p in ds["policy"].values:
            c1 = getattr(fac[p](0), "c1", None)
            e = tail.sel(policy=p).values
            cum = float(ds["regret"].sel(policy=p).sum("round").mean())
            print(
                f"w_max={wm:g} {p:26s} end/round={e.mean():.4f} runs={np.round(e, 3)} "
                f"cum={cum:.1f} s={float(ds['seconds'].sel(policy=p)):.1f} c1={c1}",
                flush=True,
            )


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
