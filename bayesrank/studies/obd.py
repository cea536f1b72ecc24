"""The real-items study: the paper's algorithms on Open Bandit Dataset items.

Items are the OBD "all" campaign's 80 fashion items (:func:`bayesrank.datasets.
obd_items`, reduced by PCA); clicks are drawn by :meth:`bayesrank.RankingEnv.
semi_synthetic`, whose per-position click rates under a uniformly random list equal
those of the OBD uniform-random log (0.39 %, 0.41 %, 0.34 %). For each ``w_max`` in
the configuration, every policy of :data:`POLICIES` plays the same environment
(:func:`bayesrank.simulate`, common random numbers), and the study writes

* ``regret.png``: per-round and cumulative pseudo-regret, one panel per ``w_max``;
* ``results.nc``: ``regret[w_max, policy, run, round]`` and the environments;
* ``report.md``: the data, what the log can and cannot support, the set-up and the
  results (:mod:`bayesrank.studies.obd_report`).

Policies are a registry: adding one is one entry in :data:`POLICIES`. There are five:
RankTS with a logistic GLM per position, by Laplace (:class:`bayesrank.LaplaceGLM`)
and by warm NUTS (:class:`bayesrank.BayesGLM`); RankUCB and GenRankUCB with a ridge
model of the clicks (with a logistic ``LaplaceGLM`` their width is divided by the
link's smallest slope c1, 0.015 down to 0 on these features, and they do not leave
their initial exploration within the study's horizons: ``scripts/obd_pilot.py``);
the ranked-bandits baseline.

Example:
    >>> from bayesrank.studies import obd
    >>> sorted(obd.POLICIES)
    ['Baseline', 'GenRankUCB', 'RankTS-Laplace', 'RankTS-NUTS', 'RankUCB']
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

import bayesrank as br

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


class StudyConfig(NamedTuple):
    """Scale and settings of the study (JSON-able; stored in the results)."""

    campaign: str = "all"  # OBD campaign of the items and of the target click rates
    d: int | None = 10  # PCA dimensions of the item features (None: all 41)
    w_max: tuple[float, ...] = (0.0, 1.0, 5.0)  # w_l ~ U(-w_max, w_max)
    T: int = 1500  # rounds per run
    runs: int = 4  # independent runs per policy and w_max
    spread: float = 1.0  # sd of the items' own logit scores
    alpha: float = 0.5  # constant UCB width (RankUCB, GenRankUCB, baseline)
    prior_scale: float = 1.0  # prior sd of the GLM's item coefficients
    intercept_prior_scale: float = 10.0  # prior sd of the GLM's intercept
    steps_per_round: int = 2  # NUTS transitions per round
    num_warmup: int = 100  # NUTS (re-)adaptation transitions
    env_seed: int = 0  # seed of the semi-synthetic environments


QUICK = StudyConfig(w_max=(0.0, 5.0), T=300, runs=2)
FULL = StudyConfig()


class Entry(NamedTuple):
    """A policy of the study.

    Attributes:
        build: ``build(env, cfg) -> factory``, ``factory(seed) -> policy``.
        description: one line for the report.
        neighbour_aware: True if the policy models the previous item.
        linestyle: matplotlib line style in the figure.
    """

    build: Callable
    description: str
    neighbour_aware: bool = True
    linestyle: str = "-"


def prior_scales(env, cfg: StudyConfig):
    """(p,) prior sds: ``prior_scale`` on the item features, ``intercept_prior_scale``
    on the intercept column (the semi-synthetic intercepts reach |b| ~ 12)."""
    return np.r_[np.full(env.d - 1, cfg.prior_scale), cfg.intercept_prior_scale]


def _laplace_model(env, cfg: StudyConfig):
    # LaplaceGLM takes one prior scale for every coefficient, the intercept included
    return br.LaplaceGLM(link="logistic", prior_scale=cfg.prior_scale, n_max=cfg.T)


def _nuts_model(env, cfg: StudyConfig):
    import numpyro.distributions as dist

    return br.BayesGLM(
        link="logistic",
        prior=dist.Normal(0.0, prior_scales(env, cfg)),
        dim=env.d,
        n_max=cfg.T,
        steps_per_round=cfg.steps_per_round,
        num_warmup=cfg.num_warmup,
    )


#: the study's policies, in plotting order
POLICIES: dict[str, Entry] = {
    "RankTS-Laplace": Entry(
        lambda env, cfg: lambda s: br.RankTS(
            model=_laplace_model(env, cfg), items=env.items, w=env.w, v0=env.v0, seed=s
        ),
        "RankTS, known w, logistic GLM per position, Laplace approximation "
        "(LaplaceGLM: Newton MAP, Normal prior sd prior_scale on every coefficient, "
        "the intercept included)",
        linestyle=(0, (6, 1.5, 1, 1.5, 1, 1.5)),
    ),
    "RankTS-NUTS": Entry(
        lambda env, cfg: lambda s: br.RankTS(
            model=_nuts_model(env, cfg), items=env.items, w=env.w, v0=env.v0, seed=s
        ),
        "RankTS, known w, logistic GLM per position (Normal prior: sd prior_scale "
        "per item coefficient, intercept_prior_scale on the intercept), warm NUTS",
    ),
    "RankUCB": Entry(
        lambda env, cfg: lambda s: br.RankUCB(
            items=env.items, w=env.w, v0=env.v0, alpha=cfg.alpha, seed=s
        ),
        "RankUCB, known w, ridge (identity-link) model of the clicks, width alpha",
        linestyle="--",
    ),
    "GenRankUCB": Entry(
        lambda env, cfg: lambda s: br.GenRankUCB(
            items=env.items, L=env.L, v0=env.v0, alpha=cfg.alpha, seed=s
        ),
        "GenRankUCB, learns w, ridge (identity-link) model, width alpha",
        linestyle=":",
    ),
    "Baseline": Entry(
        lambda env, cfg: lambda s: br.RankedBaseline(
            items=env.items, L=env.L, v0=env.v0, alpha=cfg.alpha, seed=s
        ),
        "ranked bandits: LinUCB per position ignoring the previous item, width alpha",
        neighbour_aware=False,
        linestyle="-.",
    ),
}


def policy_factories(env, cfg: StudyConfig, names=None) -> dict:
    """``{name: factory(seed)}`` for :func:`bayesrank.simulate`."""
    names = list(POLICIES) if names is None else list(names)
    for n in names:
        if n not in POLICIES:
            raise ValueError(f"names: unknown policy {n!r}; known: {list(POLICIES)}")
    return {n: POLICIES[n].build(env, cfg) for n in names}


def build_env(cfg: StudyConfig, w_max: float):
    """The semi-synthetic environment of one ``w_max`` (items reduced by PCA)."""
    items = br.datasets.obd_items(cfg.campaign, d=cfg.d)
    return br.RankingEnv.semi_synthetic(
        items,
        L=3,
        link="logistic",
        w_max=w_max,
        campaign=cfg.campaign,
        spread=cfg.spread,
        seed=cfg.env_seed,
    )


def _check_cfg(cfg: StudyConfig) -> None:
    if not isinstance(cfg, StudyConfig):
        raise TypeError(f"cfg: expected a StudyConfig, got {type(cfg).__name__}")
    for name in ("T", "runs", "steps_per_round"):
        v = getattr(cfg, name)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"cfg.{name}: expected a positive integer, got {v!r}")
    if not cfg.w_max or any(not np.isfinite(w) or w < 0 for w in cfg.w_max):
        raise ValueError(f"cfg.w_max: expected finite numbers >= 0, got {cfg.w_max!r}")


def run_obd_study(
    out="bayesrank-study-obd",
    *,
    quick: bool = False,
    seed: int = 0,
    cfg: StudyConfig | None = None,
    names=None,
    progress: bool = True,
):
    """Run the study; write ``regret.png``, ``results.nc`` and ``report.md`` to ``out``.

    Args:
        out: output folder (created).
        quick: use :data:`QUICK` (2-3 minutes on two shared cores) instead of
            :data:`FULL`; ignored when ``cfg`` is given.
        seed: the simulations' master seed.
        cfg: a :class:`StudyConfig` overriding both.
        names: the policies to run (default all of :data:`POLICIES`).
        progress: print a line per environment.

    Returns:
        The results as an ``xarray.Dataset``.
    """
    import xarray as xr

    from bayesrank.studies import obd_report

    cfg = (QUICK if quick else FULL) if cfg is None else cfg
    _check_cfg(cfg)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    parts = []
    for w_max in cfg.w_max:
        env = build_env(cfg, w_max)
        if progress:
            print(
                f"w_max={w_max:g}: w={[round(float(x), 2) for x in env.w]}, "
                f"{cfg.runs} runs x {cfg.T} rounds",
                flush=True,
            )
        ds = br.simulate(
            env,
            policy_factories(env, cfg, names),
            T=cfg.T,
            runs=cfg.runs,
            seed=seed,
            progress=False,
        )
        parts.append(_with_env(ds.drop_attrs(), env))
    res = xr.concat(parts, dim="w_max", combine_attrs="drop")
    res = res.assign_coords(w_max=np.asarray(cfg.w_max, dtype=float))
    rates = br.datasets.obd_position_clicks(cfg.campaign).rates
    res["target_rate"] = ("position", rates)
    res.attrs["config"] = json.dumps({**cfg._asdict(), "seed": seed})
    res.attrs["versions"] = ds.attrs["versions"]
    res.attrs["policies"] = json.dumps(
        {n: POLICIES[n].description for n in res["policy"].values}
    )
    res.attrs["band"] = "10 %-90 % quantiles over runs"
    res.attrs["seconds_total"] = time.perf_counter() - t0
    res.to_netcdf(out / "results.nc")
    obd_report.figure(res, out / "regret.png")
    (out / "report.md").write_text(obd_report.report(res))
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
