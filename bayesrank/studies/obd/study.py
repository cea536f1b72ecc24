"""The real-items study: the paper's algorithms on Open Bandit Dataset items.

Items are the OBD "all" campaign's 80 fashion items
(:func:`bayesrank.datasets.obd_items`, reduced by PCA); clicks are drawn by
:meth:`bayesrank.RankingEnv.semi_synthetic`, whose per-position click rates under a
uniformly random list equal those of the OBD uniform-random log (0.39 %, 0.41 %,
0.34 %). For each ``w_max`` in the configuration, every policy of :data:`POLICIES`
plays the same environment (:func:`bayesrank.simulate`, common random numbers), and
the study writes

* ``regret.png``: per-round and cumulative pseudo-regret, one panel per ``w_max``;
* ``results.nc``: ``regret[w_max, policy, run, round]`` and the environments;
* ``report.md``: the data, what the log can and cannot support, the set-up and the
  results (:mod:`bayesrank.studies.obd.report`).

Policies are a registry: adding one is one entry in :data:`POLICIES`. There are five:
RankTS with a logistic GLM per position, by Laplace (:class:`bayesrank.LaplaceGLM`)
and by warm NUTS (:class:`bayesrank.BayesGLM`); RankUCB and GenRankUCB with a ridge
model of the clicks (with a logistic ``LaplaceGLM`` their width is divided by the
link's smallest slope c1, 0.015 down to 0 on these features, and they do not leave
their initial exploration within the study's horizons: ``scripts/obd_pilot.py``);
the ranked-bandits baseline.

Example:
    >>> from bayesrank.studies.obd import study as obd
    >>> sorted(obd.POLICIES)
    ['Baseline', 'GenRankUCB', 'RankTS-Laplace', 'RankTS-NUTS', 'RankUCB']
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from bayesrank.datasets.obd import obd_position_clicks
from bayesrank.simulation.simulate import simulate
from bayesrank.studies import store
from bayesrank.studies.cells import run_cells
from bayesrank.studies.obd import report as obd_report
from bayesrank.studies.obd.config import (
    FULL,
    POLICIES,
    QUICK,
    Entry,
    StudyConfig,
    build_env,
    policy_factories,
    prior_scales,
    refuse_bad_cfg,
)

__all__ = [
    "FULL",
    "POLICIES",
    "QUICK",
    "Entry",
    "StudyConfig",
    "build_env",
    "policy_factories",
    "prior_scales",
    "run_obd_study",
]

def obd_cell(payload: dict):
    """One w_max of the study (every policy's runs on its environment) from a
    payload (keys cfg (the :class:`StudyConfig`), seed, w_max,
    names): the results with the environment's parameters, and the versions. The
    task :func:`run_obd_study` sends to its executor."""
    cfg = payload["cfg"]
    env = build_env(cfg, payload["w_max"])
    ds = simulate(env, policy_factories(env, cfg, payload["names"]), T=cfg.T,
                  runs=cfg.runs, seed=payload["seed"], progress=False)
    return _with_env(ds.drop_attrs(), env), ds.attrs["versions"]


def run_obd_study(
    out="bayesrank-study-obd",
    *,
    quick: bool = False,
    seed: int = 0,
    cfg: StudyConfig | None = None,
    names=None,
    progress: bool = True,
    executor: str = "local",
    scheduler: str | None = None,
    workers: int = 2,
):
    """Run the study; write ``regret.png``, ``results.nc`` and ``report.md`` to ``out``.

    Args:
        out: output folder (created).
        quick: use :data:`QUICK` (2-3 minutes on two shared cores) instead of
            :data:`FULL`; ignored when ``cfg`` is given.
        seed: the simulations' master seed.
        cfg: a :class:`StudyConfig` overriding both.
        names: the policies to run (default all of :data:`POLICIES`).
        progress: print a line per environment (a bar over them with dask).
        executor, scheduler, workers: where each w_max's simulation runs ("local"
            or "dask", as :func:`bayesrank.studies.cells.run_cells`); the results
            do not depend on it (every run's keys come from ``seed``).

    Returns:
        The results as an ``xarray.Dataset``.

    Example:
        A small custom scale (the run compiles every policy, some 10 s, so it is
        skipped here):

        >>> cfg = StudyConfig(w_max=(1.0,), T=20, runs=2)
        >>> refuse_bad_cfg(cfg)
        >>> res = run_obd_study("out", cfg=cfg, names=["RankUCB"],
        ...                     progress=False)  # doctest: +SKIP
        >>> res["regret"].sizes  # doctest: +SKIP
        Frozen({'w_max': 1, 'policy': 1, 'run': 2, 'round': 20})
    """
    import xarray as xr

    cfg = (QUICK if quick else FULL) if cfg is None else cfg
    refuse_bad_cfg(cfg)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if progress:
        for w_max in cfg.w_max:
            env = build_env(cfg, w_max)
            print(f"w_max={w_max:g}: w={[round(float(x), 2) for x in env.w]}, "
                  f"{cfg.runs} runs x {cfg.T} rounds", flush=True)
    payloads = [{"cfg": cfg, "seed": seed, "w_max": float(w_max),
                 "names": None if names is None else list(names)} for w_max in cfg.w_max]
    cells = run_cells(obd_cell, payloads, executor=executor, scheduler=scheduler,
                      workers=workers, progress=progress and executor != "local",
                      desc="study obd")
    res = xr.concat([c[0] for c in cells], dim="w_max", combine_attrs="drop")
    res = res.assign_coords(w_max=np.asarray(cfg.w_max, dtype=float))
    rates = obd_position_clicks(cfg.campaign).rates
    res["target_rate"] = ("position", rates)
    res.attrs["config"] = json.dumps({**cfg._asdict(), "seed": seed})
    res.attrs["versions"] = cells[0][1]
    res.attrs["policies"] = json.dumps(
        {n: POLICIES[n].description for n in res["policy"].values}
    )
    res.attrs["band"] = "10 %-90 % quantiles over runs"
    res.attrs["seconds_total"] = time.perf_counter() - t0
    store.save_netcdf(res, out / "results.nc")
    obd_report.figure(res, out / "regret.png")
    store.write_text(out / "report.md", obd_report.report(res))
    if progress:
        print(
            f"wrote {out / 'regret.png'}, {out / 'results.nc'} and {out / 'report.md'} "
            f"in {res.attrs['seconds_total']:.0f} s",
            flush=True,
        )
    return res

def _with_env(ds, env):
    """Add the environment's parameters to one w_max's simulation results."""
    w = np.asarray(env.w)
    best, best_value = env.best()
    ds = ds.assign_coords(position=np.arange(1, env.L + 1))
    ds["w"] = ("position", w)
    ds["w_max_realised"] = float(np.max(np.abs(w[1:]))) if env.L > 1 else 0.0
    ds["theta"] = (("position", "feature"), np.asarray(env.theta))
    ds["best_list"] = ("position", np.asarray(best))
    ds["best_position_means"] = ("position", np.asarray(env.position_means(best)))
    ds["best_value"] = float(best_value)
    return ds
