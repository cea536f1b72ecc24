"""Run the click-model study: every policy on every environment, common random
numbers, cumulative regret at checkpoint rounds.

Example:
    >>> from bayesrank.studies.click_models.study import checkpoints
    >>> checkpoints(100, 4, 30).tolist()
    [25, 30, 50, 75, 100]
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import xarray as xr

from bayesrank._validate import check_int, check_seed
from bayesrank.simulation.simulate import simulate
from bayesrank.studies import store
from bayesrank.studies.cells import run_cells
from bayesrank.studies.click_models import report as click_report
from bayesrank.studies.click_models.setup import (
    POLICIES,
    SCALES,
    environments,
    policy_factories,
)

__all__ = ["checkpoints", "click_cell", "click_cells", "merge_cells",
           "run_click_models_study"]

#: the policy that runs fewer rounds and runs (``nuts_T``, ``nuts_runs``)
SHORT = "RankTS-NUTS"


def checkpoints(T: int, points: int, extra: int | None = None) -> np.ndarray:
    """``points`` evenly spaced rounds up to T (1-based counts of rounds played), and
    ``extra`` (NUTS's last round) if given."""
    pts = np.round(np.linspace(T / points, T, points)).astype(int)
    if extra is not None:
        pts = np.r_[pts, min(int(extra), T)]
    return np.unique(pts[pts >= 1])


def _config(scale) -> dict:
    if isinstance(scale, dict):
        cfg = {**SCALES["quick"], **scale}
    elif scale in SCALES:
        cfg = dict(SCALES[scale])
    else:
        raise ValueError(f"scale: expected one of {list(SCALES)} or a dict, got {scale!r}")
    for k in ("K", "d", "L", "T", "runs", "points", "nuts_T", "nuts_runs"):
        cfg[k] = check_int(cfg[k], f"scale[{k!r}]", low=2 if k == "d" else 1)
    if cfg["L"] > cfg["K"]:
        raise ValueError(f"scale: expected L <= K, got L={cfg['L']} and K={cfg['K']}")
    cfg["nuts_T"] = min(cfg["nuts_T"], cfg["T"])
    cfg["nuts_runs"] = min(cfg["nuts_runs"], cfg["runs"])
    return cfg


def click_cells(scale="full", *, seed: int = 0, names=None, envs=None,
                progress: bool = True, record_lists: bool = False,
                workers: int = 1) -> xr.Dataset:
    """Play every policy on every environment; the results as an xarray Dataset.

    Args:
        scale: "quick", "full" (:data:`~bayesrank.studies.click_models.setup.SCALES`)
            or a dict overriding the quick scale's entries.
        seed: master seed: the catalogue, and every run's environment keys (run r of
            every policy on an environment sees the same clicks for the same lists).
        names: the policies (default all of ``POLICIES``).
        envs: the environments' names (default all six).
        progress: progress bars over each policy's runs and a line per environment.
        record_lists: also keep the lists shown (``lists``: env, policy, run, t,
            position; -1 where not run), for checks.
        workers: policies played at once on each environment (see
            :func:`~bayesrank.simulation.simulate`); the results do not depend on it,
            the ``seconds`` of policies played side by side overlap.

    Returns:
        Dataset with ``regret`` (env, policy, run, round): cumulative pseudo-regret
        after ``round`` rounds, NaN where the cell did not run (a skipped policy, or
        NUTS past its ``nuts_T`` rounds and ``nuts_runs`` runs); ``seconds`` (env,
        policy) wall time (compilation included); ``best_value`` (env); attributes
        ``config``, ``skipped`` ({env: {policy: reason}}) and ``policies`` (JSON).
    """
    cfg, seed = _config(scale), check_seed(seed)
    names = list(POLICIES) if names is None else list(names)
    for n in names:
        if n not in POLICIES:
            raise ValueError(f"names: unknown policy {n!r}; known: {list(POLICIES)}")
    all_envs = environments(cfg, seed)
    envs = list(all_envs) if envs is None else list(envs)
    for e in envs:
        if e not in all_envs:
            raise ValueError(f"envs: unknown environment {e!r}; known: {list(all_envs)}")
    T, runs = cfg["T"], cfg["runs"]
    rounds = checkpoints(T, cfg["points"], cfg["nuts_T"] if SHORT in names else None)
    shape = (len(envs), len(names), runs, len(rounds))
    regret = np.full(shape, np.nan, np.float32)
    seconds = np.full(shape[:2], np.nan)
    lists = np.full(shape[:3] + (T, cfg["L"]), -1, np.int32) if record_lists else None
    skipped, best = {}, np.zeros(len(envs))
    for ie, ename in enumerate(envs):
        env = all_envs[ename]
        best[ie] = float(env.best(distinct=True)[1])
        factories, skipped[ename] = policy_factories(env, ename, cfg, names)
        t0 = time.perf_counter()
        groups = [({k: v for k, v in factories.items() if k != SHORT}, T, runs),
                  ({k: v for k, v in factories.items() if k == SHORT},
                   cfg["nuts_T"], cfg["nuts_runs"])]
        for facs, T_g, runs_g in groups:
            if not facs:
                continue
            ds = simulate(env, facs, T=T_g, runs=runs_g, seed=seed, progress=progress,
                          record_lists=record_lists, workers=workers)
            cum = np.cumsum(ds["regret"].values, axis=-1)  # (policy, run, T_g)
            keep = rounds <= T_g
            for ip, name in enumerate(ds["policy"].values):
                j = names.index(str(name))
                cell = regret[ie, j]  # a view: (run, round)
                cell[:runs_g, keep] = cum[ip][:, rounds[keep] - 1]
                seconds[ie, j] = float(ds["seconds"].values[ip])
                if record_lists:
                    lists[ie, j, :runs_g, :T_g] = ds["lists"].values[ip]
        if progress:
            fin = np.isfinite(regret[ie, :, :, -1]).all(axis=1)
            last = np.where(fin, np.where(fin[:, None], regret[ie, :, :, -1], 0).mean(1),
                            np.inf)
            top = ", ".join(f"{names[j]} {last[j]:.1f}" for j in np.argsort(last)[:3]
                            if np.isfinite(last[j]))
            print(f"{ename}: best value {best[ie]:.3f}; lowest regret at T={T}: {top} "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
    coords = {"env": envs, "policy": names, "run": np.arange(runs), "round": rounds}
    data = {"regret": (("env", "policy", "run", "round"), regret),
            "seconds": (("env", "policy"), seconds), "best_value": (("env",), best)}
    if record_lists:
        coords |= {"t": np.arange(T), "position": np.arange(cfg["L"])}
        data["lists"] = (("env", "policy", "run", "t", "position"), lists)
    ds = xr.Dataset(data, coords=coords)
    ds["regret"].attrs["long_name"] = "cumulative pseudo-regret after `round` rounds"
    ds.attrs["config"] = json.dumps({**cfg, "seed": seed})
    ds.attrs["skipped"] = json.dumps(skipped)
    ds.attrs["policies"] = json.dumps({n: POLICIES[n].description for n in names})
    return ds


def merge_cells(pieces) -> xr.Dataset:
    """One study dataset from :func:`click_cells` results over disjoint cells (other
    environments or other policies, same scale and seed), e.g. run in separate
    tasks of an executor (:func:`run_click_models_study`), in the study's environment
    and policy order.

    Every piece uses the study's own seeds (the catalogue, the environments and each
    run's keys depend on the master seed only), so the merged cells equal one
    :func:`click_cells` call's. ``seconds_total`` is the longest piece's (they ran
    side by side).

    Raises:
        ValueError: no pieces, or pieces of different scales or seeds.
    """
    pieces = list(pieces)
    if not pieces:
        raise ValueError("pieces: expected at least one click_cells dataset")
    config = json.loads(pieces[0].attrs["config"])
    envs, skipped, policies, total = [], {}, {}, 0.0
    for ds in pieces:
        if json.loads(ds.attrs["config"]) != config:
            raise ValueError("pieces: expected one scale and seed, got "
                             f"{json.loads(ds.attrs['config'])} and {config}")
        envs += [str(e) for e in ds["env"].values if str(e) not in envs]
        for e, why in json.loads(ds.attrs["skipped"]).items():
            skipped.setdefault(e, {}).update(why)
        policies |= json.loads(ds.attrs["policies"])
        total = max(total, float(ds.attrs.get("seconds_total", 0.0)))
    out = pieces[0]
    for ds in pieces[1:]:
        out = out.combine_first(ds)
    order = [e for e in environments(_config("quick"), 0) if e in envs]
    names = [n for n in POLICIES if n in policies]
    out = out.reindex(env=order, policy=names)
    out.attrs = {"config": json.dumps(config),
                 "skipped": json.dumps({e: skipped.get(e, {}) for e in order}),
                 "policies": json.dumps({n: policies[n] for n in names}),
                 "seconds_total": total}
    return out


def click_cell(payload: dict) -> xr.Dataset:
    """One cell of the study from a JSON-like payload (keys scale, seed, env, names,
    workers): the task :func:`run_click_models_study` sends to a Dask executor."""
    return click_cells(payload["scale"], seed=payload["seed"], names=payload["names"],
                       envs=[payload["env"]], progress=False, workers=payload["workers"])


def run_click_models_study(out="bayesrank-study-click-models", *, quick: bool = False,
                    seed: int = 0, scale=None, progress: bool = True,
                    workers: int | None = None, executor: str = "local",
                    scheduler: str | None = None) -> xr.Dataset:
    """Run the study; write ``results.nc``, ``report.md`` and ``regret.png`` to out.

    Args:
        out: output folder (created).
        quick: the quick scale (about a minute on two cores, most of it compiling)
            instead of the full one (about 15 minutes); ``scale`` overrides both.
        seed: master seed.
        scale: a scale name or dict (see :func:`click_cells`), overriding ``quick``.
        progress: progress bars and a line per environment (per cell with dask).
        workers: with ``executor="local"``, policies played at once (default: 2 on a
            machine with two cores or more; see :func:`click_cells`); with "dask",
            the LocalCluster's worker processes (default 2).
        executor: "local" (this process) or "dask": one task per environment and
            part (RankTS-NUTS apart from the other policies), merged
            (:func:`merge_cells`) into the numbers one process gives, cell for cell.
        scheduler: a Dask scheduler's address (None: a LocalCluster).

    Returns:
        The results (see :func:`click_cells`).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    scale = scale or ("quick" if quick else "full")
    if executor == "local" and scheduler is None:
        if workers is None:
            workers = min(2, os.cpu_count() or 1)
        ds = click_cells(scale, seed=seed, progress=progress, workers=workers)
    else:
        parts = [[n for n in POLICIES if n != SHORT], [SHORT]]
        payloads = [{"scale": scale, "seed": seed, "env": e, "names": names,
                     "workers": 1}
                    for e in environments(_config(scale), check_seed(seed))
                    for names in parts]
        ds = merge_cells(run_cells(click_cell, payloads, executor=executor,
                                   scheduler=scheduler, workers=workers or 2,
                                   progress=progress, desc="study click-models"))
    ds.attrs["seconds_total"] = time.perf_counter() - t0
    ds.attrs["executor"] = executor
    store.save_netcdf(ds, out / "results.nc")
    store.write_text(out / "report.md", click_report.report(ds))
    click_report.figure(ds, out / "regret.png")
    if progress:
        print(f"wrote {out / 'report.md'}, {out / 'regret.png'} and "
              f"{out / 'results.nc'} in {ds.attrs['seconds_total']:.0f} s", flush=True)
    return ds
