# Over 450 lines because: one sub-study whole: its environments, loggers, exact truths
# (clicks, IPS limits, examination) and the grid that runs every estimator on them.
"""``bayesrank study ope --click-models``: the estimators' bias when the world is a
click model, not Eq. 1.

Every estimator of the OPE study (:mod:`bayesrank.studies.ope.study`) assumes a
reward model: pair IPS is unbiased when r^l depends on (a^{l-1}, a^l) only (Eq. 1),
cascade IPS when it depends on the prefix, list IPS always. This sub-study logs
from six environments that share one catalogue (items of
:meth:`bayesrank.RankingEnv.paper`, attraction ``sigmoid(<theta_c, v_j>)``,
:data:`CLICK_ENVS`): Eq. 1 with logistic clicks (the control), the same seen
through a cascade, and the position-based, cascade, dependent-click and DBN click
models of :mod:`bayesrank.simulation`. The target is each environment's best list
of distinct items (deterministic). For each (environment, logger, n) it draws
``logs`` logs (common random numbers: the same logged lists in every
environment) and runs every estimator variant of the OPE study on each.

Two exact values per environment (no Monte Carlo):

* ``click_truth``: the expected sum of the logged rewards (clicks, NaN = 0) when
  the target's list is shown, ``sum_l P(l examined) P(click at l)``
  (:func:`observed_click_means`). This is what every estimator reading the clicks
  estimates, so the bias is measured against it.
* ``value``: ``env.expected_reward`` of the target (the value of :mod:`bayesrank.simulation.click`). It
  equals ``click_truth`` for Eq. 1, Eq. 1 through a cascade, the PBM and the
  cascade; for the DCM and the DBN it is P(satisfied), which no estimator reading
  clicks can recover (the report gives ``value - click_truth``).

``ips_limit`` is E[estimator] of list, position, cascade and pair IPS (the
self-normalised variants share it as n grows), computed by enumerating every one of
the K^L lists the logger can show with its exact probability: ``limit - click_truth``
is each estimator's exact bias.

Example:
    >>> from bayesrank.studies.ope import click
    >>> env = click.build_click_env("cascade", click.CLICK_QUICK)
    >>> lists = np.array([[0, 1, 2, 3]])
    >>> bool(np.isclose(click.observed_click_means(env, lists).sum(),
    ...                 env.expected_reward(lists)[0]))
    True
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from bayesrank._validate import check_int, check_real
from bayesrank.ope import UniformLogger, as_log, position_bias
from bayesrank.ope.examination import valid_examination
from bayesrank.ope.loggers import env_feedback
from bayesrank.simulation import CascadeEnv, DBNEnv, DCMEnv, PBMEnv
from bayesrank.simulation.dataset import versions as _versions
from bayesrank.simulation.env import RankingEnv
from bayesrank.studies import store
from bayesrank.studies.cells import run_cells
from bayesrank.studies.ope import click_report
from bayesrank.studies.ope.config import FixedListEpsilonGreedy, estimator_variants
from bayesrank.studies.ope.study import (
    STATS,
    cell_seed,
    log_estimates,
    simulate_logs,
    target_event_probs,
)

__all__ = [
    "CLICK_ENVS",
    "CLICK_FULL",
    "CLICK_LOGGERS",
    "CLICK_QUICK",
    "IPS",
    "ClickStudyConfig",
    "attraction_theta",
    "build_click_env",
    "build_click_logger",
    "check_click_cfg",
    "click_cell",
    "every_list",
    "ips_limits",
    "observed_click_means",
    "run_click_grid",
    "run_click_study",
    "true_examination",
]

#: the IPS estimators whose exact expectation is computed by enumeration
IPS = ("list_ips", "position_ips", "cascade_ips", "pair_ips")
#: the event each IPS estimator weights by (keys of ``target_event_probs``)
_EVENT = {"list_ips": "list", "position_ips": "position", "cascade_ips": "cascade",
          "pair_ips": "pair"}
#: enumerate the K^L lists for the exact limits up to this many
MAX_ENUMERATED = 2_000_000

#: environment name -> one line for the report
CLICK_ENVS = {
    "eq1": "Eq. 1, logistic clicks, every position observed (the control): "
    "P(click at l) = sigmoid(<theta_c, v_{a^l} + w_l v_{a^{l-1}}>)",
    "eq1_cascade": "the same Eq. 1 clicks seen through a cascade "
    "(RankingEnv(feedback='cascade')): NaN after the first click",
    "pbm": "PBMEnv: click_l ~ Bernoulli(examination_l attraction), examination 1/l",
    "cascade": "CascadeEnv: top-down, click the first attractive item, stop",
    "dcm": "DCMEnv: a cascade that goes on after a click with probability "
    "`continuation`",
    "dbn": "DBNEnv: after a click satisfied with probability s_j (drawn in "
    "[0.2, 0.9]) and stop, else go on with probability gamma",
}
#: logger name -> one line for the report
CLICK_LOGGERS = {
    "uniform": "every position uniform over the K items, independently (1/K^L)",
    "epsilon_greedy": "the popularity list (the L items of largest attraction, "
    "descending) with probability 1 - epsilon, else a uniform list",
}


class ClickStudyConfig(NamedTuple):
    """Scale and settings of the click-model sub-study (JSON-able; stored).

    Example:
        >>> check_click_cfg(CLICK_QUICK._replace(envs=("cascade",)))
    """

    envs: tuple[str, ...] = tuple(CLICK_ENVS)
    loggers: tuple[str, ...] = tuple(CLICK_LOGGERS)
    K: int = 10
    L: int = 4
    d: int = 10
    n: tuple[int, ...] = (1_000, 10_000, 100_000)  # rounds per log
    logs: int = 100  # independent logs per cell
    model_max_n: int = 10_000  # dm and pair_dr up to this n
    epsilon: float = 0.2
    env_seed: int = 0  # RankingEnv.paper's seed (items, theta, w)
    scale: float = 4.0  # theta_c = scale * theta_1 of the paper's generator ...
    offset: float = -3.0  # ... plus offset on the intercept: logits in [-3, 1]
    w_max: float = 0.5  # Eq. 1's neighbour weights w_l ~ U(-w_max, w_max)
    continuation: float = 0.5  # the DCM's, at every position
    gamma: float = 0.9  # the DBN's persistence


CLICK_QUICK = ClickStudyConfig(n=(1_000, 10_000), logs=20, model_max_n=1_000)
CLICK_FULL = ClickStudyConfig()


def check_click_cfg(cfg: ClickStudyConfig) -> None:
    """Raise ValueError/TypeError naming the first bad field (``cfg.<field>: ...``).

    Example:
        >>> check_click_cfg(CLICK_QUICK._replace(envs=("tandem",)))
        Traceback (most recent call last):
        ...
        ValueError: cfg.envs: expected distinct names from ['eq1', 'eq1_cascade', \
'pbm', 'cascade', 'dcm', 'dbn'], got ('tandem',)
    """
    if not isinstance(cfg, ClickStudyConfig):
        raise TypeError(f"cfg: expected a ClickStudyConfig, got {type(cfg).__name__}")
    for field, known in (("envs", CLICK_ENVS), ("loggers", CLICK_LOGGERS)):
        v = getattr(cfg, field)
        if (not isinstance(v, tuple) or not v or any(x not in known for x in v)
                or len(set(v)) != len(v)):
            raise ValueError(
                f"cfg.{field}: expected distinct names from {list(known)}, got {v!r}")
    check_int(cfg.K, "cfg.K", low=2)
    check_int(cfg.L, "cfg.L", low=1)
    if cfg.L > cfg.K:
        raise ValueError(f"cfg.L: expected L <= K = {cfg.K}, got {cfg.L}")
    check_int(cfg.d, "cfg.d", low=2)
    if not isinstance(cfg.n, tuple) or not cfg.n or len(set(cfg.n)) != len(cfg.n):
        raise ValueError(f"cfg.n: expected a non-empty tuple of distinct sizes, got "
                         f"{cfg.n!r}")
    for x in cfg.n:
        check_int(x, "cfg.n", low=2)
    check_int(cfg.logs, "cfg.logs", low=2)
    check_int(cfg.model_max_n, "cfg.model_max_n", low=0)
    check_int(cfg.env_seed, "cfg.env_seed", low=0)
    check_real(cfg.epsilon, "cfg.epsilon", low=0, high=1, inclusive="right")
    check_real(cfg.scale, "cfg.scale")
    check_real(cfg.offset, "cfg.offset")
    check_real(cfg.w_max, "cfg.w_max", low=0)
    check_real(cfg.continuation, "cfg.continuation", low=0, high=1)
    check_real(cfg.gamma, "cfg.gamma", low=0, high=1)


def attraction_theta(cfg: ClickStudyConfig):
    """``(items, theta_c, w)``: the paper's items (K, d), ``theta_c = scale *
    theta_1 + offset e_d`` (d,) (the last item coordinate is 1, so the offset is an
    intercept) and the paper's w (L,) for Eq. 1.

    Example:
        >>> V, th, w = attraction_theta(CLICK_QUICK)
        >>> V.shape, th.shape, w.shape
        ((10, 10), (10,), (4,))
    """
    base = RankingEnv.paper(seed=cfg.env_seed, K=cfg.K, L=cfg.L, d=cfg.d,
                            w_max=float(cfg.w_max))
    theta = cfg.scale * np.asarray(base.theta, float)[0]
    theta[-1] += cfg.offset
    return np.asarray(base.items, float), theta, np.asarray(base.w, float)


def build_click_env(name: str, cfg: ClickStudyConfig):
    """The environment ``name`` of :data:`CLICK_ENVS` (item vectors attached, v0 = 0).

    Example:
        >>> build_click_env("dbn", CLICK_QUICK)
        DBNEnv(K=10, L=4)
    """
    if name not in CLICK_ENVS:
        raise ValueError(f"name: unknown environment {name!r}; expected one of "
                         f"{list(CLICK_ENVS)}")
    V, theta, w = attraction_theta(cfg)
    L = cfg.L
    if name in ("eq1", "eq1_cascade"):
        feedback = "cascade" if name == "eq1_cascade" else "full"
        return RankingEnv(V, np.tile(theta, (L, 1)), w, link="logistic",
                          feedback=feedback)
    if name == "pbm":
        return PBMEnv.from_features(V, theta, 1.0 / np.arange(1, L + 1))
    if name == "cascade":
        return CascadeEnv.from_features(V, theta, L)
    if name == "dcm":
        return DCMEnv.from_features(V, theta, np.full(L, cfg.continuation))
    satisfaction = np.random.default_rng([cfg.env_seed, 1]).uniform(0.2, 0.9, cfg.K)
    return DBNEnv.from_features(V, theta, satisfaction, cfg.gamma, L)


def build_click_logger(name: str, cfg: ClickStudyConfig):
    """The logger ``name`` of :data:`CLICK_LOGGERS` (the same in every environment).

    Example:
        >>> build_click_logger("epsilon_greedy", CLICK_QUICK).base.tolist()
        [1, 0, 8, 7]
    """
    if name not in CLICK_LOGGERS:
        raise ValueError(f"name: unknown logger {name!r}; expected one of "
                         f"{list(CLICK_LOGGERS)}")
    if name == "uniform":
        return UniformLogger(cfg.K, cfg.L)
    V, theta, _ = attraction_theta(cfg)
    popular = np.argsort(-(V @ theta), kind="stable")[: cfg.L]
    return FixedListEpsilonGreedy(popular, cfg.K, cfg.epsilon)


def _reach(go) -> np.ndarray:
    """P(position l examined) from P(go on past each position): shifted cumprod."""
    ones = np.ones_like(go[..., :1])
    return np.concatenate([ones, np.cumprod(go[..., :-1], axis=-1)], axis=-1)


def observed_click_means(env, lists) -> np.ndarray:
    """(..., L) expected observed click at each position of each list (NaN = 0).

    P(examined at l) times P(click | examined): Eq. 1's position means (times the
    chance of no click before, through a cascade); the PBM's examination times
    attraction; for the cascade, DCM and DBN the user goes on past position j with
    probability 1 - A_j, 1 - (1 - continuation_j) A_j, gamma (1 - A_j s_j).

    Example:
        >>> env = build_click_env("pbm", CLICK_QUICK)
        >>> bool(np.allclose(observed_click_means(env, np.array([0, 1, 2, 3])).sum(),
        ...                  env.expected_reward(np.array([0, 1, 2, 3]))))
        True
    """
    lists = np.asarray(lists, np.int64)
    if isinstance(env, RankingEnv):
        p = np.asarray(env.position_means(lists), float)
        return p * _reach(1.0 - p) if env.feedback == "cascade" else p
    if not isinstance(env, (PBMEnv, CascadeEnv, DCMEnv, DBNEnv)):
        raise TypeError(f"env: expected a RankingEnv or a click model of "
                        f"bayesrank.simulation, got {type(env).__name__}")
    A = np.asarray(env.attraction, float)[lists]
    if isinstance(env, PBMEnv):
        return np.asarray(env.examination, float) * A
    if isinstance(env, CascadeEnv):
        go = 1.0 - A
    elif isinstance(env, DCMEnv):
        go = 1.0 - (1.0 - np.asarray(env.continuation, float)) * A
    else:
        go = float(env.gamma) * (1.0 - A * np.asarray(env.satisfaction, float)[lists])
    return A * _reach(go)


def every_list(K: int, L: int) -> np.ndarray:
    """(K^L, L) every list with repeats, in lexicographic order."""
    return np.indices((K,) * L).reshape(L, -1).T.astype(np.int64)


def ips_limits(env, logger, target) -> dict:
    """Exact E[estimator] of list, position, cascade and pair IPS for a
    deterministic target: the sum over every list the logger can show of its
    probability times the estimator's weights times the expected observed clicks.

    Returns:
        ``{name: limit}`` for the names of :data:`IPS` (NaN when K^L exceeds
        :data:`MAX_ENUMERATED`).

    Example:
        >>> cfg = CLICK_QUICK._replace(K=4, L=3)
        >>> env = build_click_env("eq1", cfg)
        >>> target = np.asarray(env.best(distinct=True)[0])
        >>> lim = ips_limits(env, build_click_logger("uniform", cfg), target)
        >>> truth = observed_click_means(env, target).sum()
        >>> bool(np.isclose(lim["pair_ips"], truth)), bool(np.isclose(lim["list_ips"], truth))
        (True, True)
    """
    K, L = env.K, env.L
    if K**L > MAX_ENUMERATED:
        return dict.fromkeys(IPS, float("nan"))
    lists = every_list(K, L)
    ps = logger.propensities(lists, np.zeros((len(lists), 1)))
    p = ps["pscore_list"]
    m = observed_click_means(env, lists)
    pi = target_event_probs(lists, np.asarray(target, np.int64))
    out = {}
    for name in IPS:
        ev = _EVENT[name]
        w = pi[ev] / ps[f"pscore_{ev}"]
        out[name] = float(p @ (w * m.sum(1)) if ev == "list" else p @ (w * m).sum(1))
    return out


def _examination(env, rewards) -> dict:
    """The checked examined mask and feedback model of rewards drawn from env (what
    :func:`bayesrank.ope.collect` stores), for dm and pair_dr."""
    fb = env_feedback(env, rewards)
    ex, kind = valid_examination(rewards, fb.get("examined"), fb.get("feedback"))
    return {"examined": ex, "feedback": kind}


def true_examination(env, L: int) -> np.ndarray:
    """(L,) the probability of examining each position relative to the top, for the
    environments whose logs record every position: the PBM's examination / its
    first; 1 for Eq. 1 with full feedback; NaN for the others (examination depends
    on the clicks above).

    Example:
        >>> true_examination(build_click_env("pbm", CLICK_QUICK), 4).round(3).tolist()
        [1.0, 0.5, 0.333, 0.25]
    """
    if isinstance(env, PBMEnv):
        e = np.asarray(env.examination, float)
        return e / e[0]
    if isinstance(env, RankingEnv) and env.feedback == "full":
        return np.ones(L)
    return np.full(L, np.nan)


def _examination_estimate(lists, rewards, feedback, K, seed) -> np.ndarray:
    """(L, 3) position_bias's EM estimate, ci_low, ci_high (90 %) on one log."""
    log = as_log(lists, rewards, np.zeros(1), K=K, feedback=feedback)
    est = position_bias(log, method="em", n_boot=100, seed=seed)
    return np.stack([est[v].values for v in ("examination", "ci_low", "ci_high")], 1)


def click_cell(payload: dict) -> dict:
    """One (env, logger, n) cell of :func:`run_click_grid` from a payload
    (keys cfg (the :class:`ClickStudyConfig`), seed, env, logger, n): every
    log's estimates ``"estimates"`` (logs, estimators, 4) and the examination
    estimate on its first log ``"exam"`` (L, 3; NaN where not estimated). The task
    the grid sends to its executor."""
    cfg = payload["cfg"]
    name, gname, n, seed = payload["env"], payload["logger"], payload["n"], payload["seed"]
    env, logger = build_click_env(name, cfg), build_click_logger(gname, cfg)
    target = np.asarray(env.best(distinct=True)[0], np.int64)
    items, v0 = np.asarray(env.items, float), np.asarray(env.v0, float)
    variants = estimator_variants()
    use = [i for i, v in enumerate(variants) if not v.model or n <= cfg.model_max_n]
    est = np.full((cfg.logs, len(variants), len(STATS)), np.nan)
    exam = np.full((cfg.L, 3), np.nan)
    every = np.isfinite(true_examination(env, cfg.L)).all()
    logs = simulate_logs(env, logger, n, cfg.logs, cell_seed(seed, cfg.K, cfg.L, gname, n))
    for j, (lists, rewards, ps) in enumerate(logs):
        examination = _examination(env, rewards)
        est[j, use] = log_estimates(lists, rewards, ps, target, [variants[i] for i in use],
                                    K=cfg.K, v0=v0, items=items, examination=examination)
        if j == 0 and every:
            exam[:] = _examination_estimate(lists, rewards, examination["feedback"],
                                            cfg.K, cell_seed(seed, cfg.K, cfg.L, gname, n))
    return {"estimates": est, "exam": exam}


def run_click_grid(cfg: ClickStudyConfig, seed: int = 0, *, progress: bool = True,
                   executor: str = "local", scheduler: str | None = None,
                   workers: int = 2):
    """The sub-study's results as an ``xarray.Dataset`` (see the module docstring):
    per-log ``estimate``, ``stderr``, ``ci_low``, ``ci_high`` over (env, logger, n,
    log, estimator); ``click_truth`` and ``value`` (env); ``ips_limit`` (env,
    logger, ips); ``target_list`` (env, position); ``exam_estimate``,
    ``exam_low``, ``exam_high`` (env, logger, n, position): position bias by
    regression EM (:func:`bayesrank.ope.position_bias`, 90 % bootstrap interval)
    on the first log of each cell whose feedback records every position (NaN for
    the others), and ``exam_true`` (env, position)
    (:func:`~bayesrank.studies.ope.click.true_examination`).

    Each (env, logger, n) cell (:func:`~bayesrank.studies.ope.click.click_cell`) is a
    task of ``executor`` ("local" or "dask", with ``scheduler`` and ``workers`` as
    :func:`bayesrank.studies.cells.run_cells`); every cell's logs come from its own
    seed, so the results do not depend on where it ran."""
    import xarray as xr

    variants = estimator_variants()
    E, G, N = len(cfg.envs), len(cfg.loggers), len(cfg.n)
    est = np.full((E, G, N, cfg.logs, len(variants), len(STATS)), np.nan)
    click_truth, value = np.full(E, np.nan), np.full(E, np.nan)
    limit = np.full((E, G, len(IPS)), np.nan)
    targets = np.zeros((E, cfg.L), np.int64)
    exam = np.full((E, G, N, cfg.L, 3), np.nan)
    exam_true = np.full((E, cfg.L), np.nan)
    loggers = [build_click_logger(g, cfg) for g in cfg.loggers]
    for a, name in enumerate(cfg.envs):
        env = build_click_env(name, cfg)
        target = np.asarray(env.best(distinct=True)[0], np.int64)
        targets[a] = target
        click_truth[a] = float(observed_click_means(env, target).sum())
        value[a] = float(env.expected_reward(target))
        exam_true[a] = true_examination(env, cfg.L)
        for b, logger in enumerate(loggers):
            lim = ips_limits(env, logger, target)
            limit[a, b] = [lim[k] for k in IPS]
    index = [(a, b, c) for a in range(E) for b in range(G) for c in range(N)]
    payloads = [{"cfg": cfg, "seed": seed, "env": cfg.envs[a],
                 "logger": cfg.loggers[b], "n": cfg.n[c]} for a, b, c in index]
    cells = run_cells(click_cell, payloads, executor=executor, scheduler=scheduler,
                      workers=workers, progress=progress, desc="study ope --click-models")
    for (a, b, c), cell in zip(index, cells):
        est[a, b, c], exam[a, b, c] = cell["estimates"], cell["exam"]
    dims = ("env", "logger", "n", "log", "estimator")
    data = {s: (dims, est[..., i]) for i, s in enumerate(STATS)}
    data["click_truth"] = (("env",), click_truth)
    data["value"] = (("env",), value)
    data["ips_limit"] = (("env", "logger", "ips"), limit)
    data["target_list"] = (("env", "position"), targets)
    for i, v in enumerate(("exam_estimate", "exam_low", "exam_high")):
        data[v] = (("env", "logger", "n", "position"), exam[..., i])
    data["exam_true"] = (("env", "position"), exam_true)
    return xr.Dataset(data, coords={
        "env": list(cfg.envs), "logger": list(cfg.loggers), "n": list(cfg.n),
        "log": np.arange(cfg.logs), "estimator": [v.label for v in variants],
        "ips": list(IPS), "position": np.arange(1, cfg.L + 1)})


def run_click_study(out="bayesrank-study-ope-click", *, quick: bool = False,
                    seed: int = 0, cfg: ClickStudyConfig | None = None,
                    progress: bool = True, executor: str = "local",
                    scheduler: str | None = None, workers: int = 2):
    """Run the sub-study; write ``results.nc``, ``bias.png`` and ``report.md`` to
    ``out``.

    Args:
        out: output folder (created).
        quick: use :data:`CLICK_QUICK` instead of :data:`CLICK_FULL`; ignored when
            ``cfg`` is given.
        seed: the master seed of the logs.
        cfg: a :class:`ClickStudyConfig` overriding both.
        progress: show a progress bar and a closing line.
        executor, scheduler, workers: where the cells run (:func:`run_click_grid`).

    Returns:
        The results as an ``xarray.Dataset``.
    """
    cfg = (CLICK_QUICK if quick else CLICK_FULL) if cfg is None else cfg
    check_click_cfg(cfg)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0, c0 = time.perf_counter(), time.process_time()
    res = run_click_grid(cfg, seed, progress=progress, executor=executor,
                         scheduler=scheduler, workers=workers)
    res.attrs["config"] = json.dumps({**cfg._asdict(), "seed": seed})
    res.attrs["envs"] = json.dumps({k: CLICK_ENVS[k] for k in cfg.envs})
    res.attrs["loggers"] = json.dumps({k: CLICK_LOGGERS[k] for k in cfg.loggers})
    res.attrs["versions"] = json.dumps(_versions())
    res.attrs["seconds_total"] = time.perf_counter() - t0
    res.attrs["cpu_seconds_total"] = time.process_time() - c0
    store.save_netcdf(res, out / "results.nc")
    click_report.figure(res, out / "bias.png")
    store.write_text(out / "report.md", click_report.report(res))
    if progress:
        print(f"wrote results.nc, bias.png and report.md to {out} in "
              f"{res.attrs['seconds_total']:.0f} s", flush=True)
    return res
