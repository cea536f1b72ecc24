"""The ``tightness`` part of ``bayesrank reproduce``: cumulative regret under the
theorems' bounds, every policy run with exactly the constants of the bound it is
plotted against (:func:`tightness_constants`), and RankTS also averaged over
instances of the paper's generator (the Bayesian regret its theorem bounds).

Example:
    >>> import bayesrank as br
    >>> from bayesrank.studies.paper.tightness import tightness_constants
    >>> c = tightness_constants(br.RankingEnv.paper(seed=0, K=10, L=4, d=10))
    >>> sorted(c), c["RankUCB"]["lam"], c["RankTS"]["L"]
    (['GenRankUCB', 'RankTS', 'RankUCB'], 1.0, 4)
"""

from __future__ import annotations

import json

import numpy as np

from bayesrank import theorems
from bayesrank.policies.gen_ucb import GenRankUCB
from bayesrank.policies.ts import RankTS
from bayesrank.policies.ucb import RankUCB
from bayesrank.posteriors.conjugate import GaussianLinear
from bayesrank.simulation.env import RankingEnv
from bayesrank.simulation.simulate import simulate
from bayesrank.studies import plots, store
from bayesrank.studies.paper.demo import w_label

__all__ = ["BOUND_STATEMENTS", "tightness_constants", "tightness_policies"]


#: What each theorem bounds (stated in the report and the results' attributes).
BOUND_STATEMENTS = {
    "RankUCB": (
        "Theorem 1: with probability >= 1 - delta, the cumulative regret of RankUCB "
        "with Lemma 1's width on any fixed instance with ||v|| <= m1, "
        "||theta^l|| <= m2, |w_l| <= w_max (a frequentist, per-run bound)"
    ),
    "GenRankUCB": (
        "Theorem 2: with probability >= 1 - delta, the cumulative regret of "
        "genRankUCB (w learned) with Lemma 1's width for ||phi|| <= m2 "
        "sqrt(1 + m3^2) on any fixed instance with |w_l| <= m3 (frequentist, per "
        "run; log term with the feature bound sqrt(2) m1, see "
        "bayesrank.theorems.gen_rank_ucb_bound)"
    ),
    "RankTS": (
        "the RankTS theorem: the Bayesian regret, the expected regret averaged "
        "over theta drawn from the prior (||theta^l|| <= m2 a.s.), with lam = "
        "1/m2^2; it does not bound the regret on one fixed instance, so the "
        "fixed-instance curve is an illustration, and the prior-averaged curve "
        "(a fresh instance of the paper's generator per run) is the quantity it "
        "bounds when the generator is taken as the prior (RankTS itself samples "
        "from a Gaussian N(0, m2^2 I) prior, not from the generator's law)"
    ),
}


def tightness_constants(env, *, lam: float = 1.0, delta: float = 0.1) -> dict:
    """Per policy, the keyword arguments of its bound, from the instance's constants.

    The same numbers configure the run (:func:`tightness_policies`): RankUCB and
    GenRankUCB use Lemma 1's width with ``m2`` (and ``m3``) of the instance and
    ``lam``, ``delta``; RankTS uses the prior ``N(0, m2^2 I)``, i.e. the proof's
    ``lam = 1/m2^2``. ``w_max``/``m3`` are over positions 2..L (w_1 is inert).
    """
    c = theorems.instance_constants(env)
    common = {"L": c["L"], "d": c["d"], "c1": c["c1"], "c2": c["c2"]}
    return {
        "RankUCB": {
            **common, "lam": lam, "delta": delta, "m1": c["m1"], "m2": c["m2"],
            "w_max": c["w_max"],
        },
        "GenRankUCB": {
            **common, "lam": lam, "delta": delta, "m1": c["m1"], "m2": c["m2"],
            "m3": c["m3"],
        },
        "RankTS": {
            "L": c["L"], "d": c["d"], "m1": c["m1"], "m2": c["m2"],
            "w_max": c["w_max"],
        },
    }


def tightness_policies(env, consts: dict) -> dict:
    """``{name: factory(seed)}`` run with exactly the constants in ``consts``."""

    V, w, v0, L = env.items, env.w, env.v0, env.L
    u, g, ts = consts["RankUCB"], consts["GenRankUCB"], consts["RankTS"]
    return {
        "RankUCB": lambda s: RankUCB(
            items=V, w=w, v0=v0, lam=u["lam"], delta=u["delta"], m2=u["m2"], seed=s
        ),
        "GenRankUCB": lambda s: GenRankUCB(
            items=V, L=L, v0=v0, lam=g["lam"], delta=g["delta"], m2=g["m2"],
            m3=g["m3"], seed=s,
        ),
        "RankTS": lambda s: RankTS(
            model=GaussianLinear(prior_scale=ts["m2"], noise_scale=1.0),
            items=V, w=w, v0=v0, seed=s,
        ),
    }


def _bound_fn(name):
    return {
        "RankUCB": theorems.rank_ucb_bound,
        "GenRankUCB": theorems.gen_rank_ucb_bound,
        "RankTS": theorems.rank_ts_bound,
    }[name]


def _prior_averaged_ts(T, runs, seed, K, w_max):
    """RankTS on a fresh instance of the generator per run (Bayesian regret)."""

    n_inst = max(2, min(10, runs))
    per = max(1, runs // n_inst)
    regs, consts = [], []
    for i in range(n_inst):
        env = RankingEnv.paper(seed=seed + 1 + i, K=K, L=4, d=10, w_max=w_max)
        c = tightness_constants(env)
        consts.append(c["RankTS"])
        ds = simulate(
            env, {"RankTS": tightness_policies(env, c)["RankTS"]}, T=T, runs=per,
            seed=seed + 1 + i, progress=False,
        )
        regs.append(ds["regret"].sel(policy="RankTS").values)
    r = np.concatenate(regs)  # (n_inst * per, T)
    # the bound for the family: the largest constants over the instances drawn
    c = {k: max(ci[k] for ci in consts) for k in consts[0]}
    c["L"], c["d"] = int(c["L"]), int(c["d"])
    # ``w_max`` of a family drawn from U(-w_max, w_max) is bounded by w_max itself
    c["w_max"] = float(w_max)
    return r, c, n_inst, per


def _tightness(out, scale, seed, report, quick):
    import xarray as xr

    T = scale["T"]
    runs = scale["runs"]
    env = RankingEnv.paper(seed=seed, K=10, L=4, d=10, w_max=10.0)
    consts = tightness_constants(env)
    ds = simulate(env, tightness_policies(env, consts), T=T, runs=runs, seed=seed)
    t = np.arange(1, T + 1)
    curves = {n: np.asarray(_bound_fn(n)(t, **consts[n])) for n in consts}
    ds["bound"] = xr.DataArray(
        np.stack([curves[str(n)] for n in ds["policy"].values]),
        dims=("policy", "round"),
    )
    ds["bound"].attrs["long_name"] = "the policy's theorem bound at rounds 1..T"
    ds.attrs["bound_constants"] = json.dumps(consts)
    ds.attrs["bound_statements"] = json.dumps(BOUND_STATEMENTS)
    ds.attrs["w_max_sampling"] = 10.0
    ds.attrs["w_max_realised"] = theorems.w_max_realised(env)
    for name, c in consts.items():
        ds.attrs[f"constants_{name}"] = json.dumps(c)
    store.save_netcdf(ds, out / "tightness.nc")
    report.append(
        "## Bound tightness (K = 10, "
        f"{w_label(env, 10.0)}, Lemma 1 width)\n\nEvery run uses exactly the "
        "constants of the bound it is plotted against (`reproduce."
        "tightness_constants`, from `bounds.instance_constants`; stored in "
        "`tightness.nc` as the `bound_constants` attribute, the bound curves as "
        "the `bound` variable). Constants: "
        + "; ".join(
            f"{n}: " + ", ".join(f"{k} = {v:.4g}" for k, v in c.items())
            for n, c in consts.items()
        )
        + ".\n"
    )
    for name in consts:
        b = curves[name]
        extra = {}
        if name == "RankTS":
            r_avg, c_avg, n_inst, per = _prior_averaged_ts(T, runs, seed, 10, 10.0)
            b_avg = np.asarray(theorems.rank_ts_bound(t, **c_avg))
            avg_ds = xr.Dataset(
                {"regret": (("policy", "run", "round"), r_avg[None])},
                coords={"policy": ["RankTS, prior-averaged"], "round": np.arange(T)},
            )
            extra = {"Bayesian bound (generator family)": b_avg}
        fig = plots.tightness(
            ds,
            {f"{name} bound (this instance's constants)": b, **extra},
            policy=name,
            title=f"{name}: cumulative regret vs its bound",
        )
        if name == "RankTS":
            cum_avg = np.cumsum(r_avg, axis=1).mean(axis=0)
            fig.axes[0].plot(
                t, cum_avg, color="#ff7f0e", ls="--",
                label=f"RankTS, prior-averaged ({n_inst} instances x {per} runs)",
            )
            fig.axes[0].legend(frameon=False, fontsize=8)
        plots.save(fig, out / f"tightness_{name}.png")
        cum = ds["regret"].sel(policy=name).values.cumsum(axis=1)
        under = float(np.mean(cum[:, -1] <= b[-1]))
        text = (
            f"![tightness {name}](tightness_{name}.png)\n\n**{name}** bounds: "
            f"{BOUND_STATEMENTS[name]}.\n\nMean cumulative regret at T = {T}: "
            f"{cum[:, -1].mean():.1f} (largest run {cum[:, -1].max():.1f}); the "
            f"bound {b[-1]:.1f} (mean/bound {cum[:, -1].mean() / b[-1]:.3g}; "
            f"{100 * under:.0f} % of runs below it).\n"
        )
        if name == "RankTS":
            text += (
                f"\nPrior-averaged (a fresh instance per group of runs, "
                f"{n_inst} instances x {per} runs): mean cumulative regret "
                f"{cum_avg[-1]:.1f} against the Bayesian bound {b_avg[-1]:.1f} "
                f"(constants {', '.join(f'{k} = {v:.4g}' for k, v in c_avg.items())}"
                ").\n"
            )
            avg_ds.attrs["bound_constants"] = json.dumps(c_avg)
            store.save_netcdf(avg_ds, out / "tightness_RankTS_prior_averaged.nc")
        report.append(text)
