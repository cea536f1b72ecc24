"""The OPE study's Thompson-sampling target: Monte Carlo propensities, small scale.

A :class:`bayesrank.RankTS` (known w, the default conjugate Gaussian model) is
fitted on ``ts_fit_rounds`` uniform rounds of the (ts_K, ts_L) environment, so its
lists stay random. Each log of ``ts_n`` rounds is evaluated by
:func:`bayesrank.ope.evaluate`, the library's own route for a random target: the
target's event probabilities are frequencies over ``ts_draws`` lists drawn for the
log. The target's round counter is set to a different value before every log
(``evaluate`` restores it afterwards), so every log gets its own independent draws
and the Monte Carlo error averages out over logs instead of being shared.
The truth is the mean exact expected reward of ``ts_truth_draws`` further draws
(its Monte Carlo standard error is stored).

Example:
    >>> from bayesrank.studies.ope import ts as ope_ts
    >>> ope_ts.TS_STATS
    ('estimate', 'stderr', 'ci_low', 'ci_high', 'mc_stderr')
"""

from __future__ import annotations

import numpy as np

from bayesrank._progress import progress as progress_bar
from bayesrank.ope import UniformLogger, collect, evaluate
from bayesrank.policies.ts import RankTS
from bayesrank.studies.ope.config import (
    OPEStudyConfig,
    build_env,
    build_logger,
    estimator_variants,
)

__all__ = ["TS_STATS", "fitted_ts_target", "run_ts"]

#: the per-log statistics of the section (evaluate's, with its Monte Carlo error)
TS_STATS = ("estimate", "stderr", "ci_low", "ci_high", "mc_stderr")


def fitted_ts_target(env, cfg: OPEStudyConfig, seed: int):
    """A RankTS (known w) fitted on ``cfg.ts_fit_rounds`` uniform rounds of env."""
    log = collect(env, UniformLogger(env.K, env.L), cfg.ts_fit_rounds, seed=seed)
    target = RankTS(items=env.items, L=env.L, w=env.w, v0=env.v0, seed=seed)
    target.fit(log)
    return target


def _truth(env, target, m: int):
    """(value, Monte Carlo stderr, distinct lists, share of the commonest list)."""
    _, lists = target.select_batch_at(target.state, 0, n=m)  # round 0, target unchanged
    vals = np.asarray(env.expected_reward(lists), float)
    _, counts = np.unique(lists, axis=0, return_counts=True)
    return vals.mean(), vals.std(ddof=1) / np.sqrt(m), len(counts), counts.max() / m


def run_ts(cfg: OPEStudyConfig, seed: int = 0, *, progress: bool = True):
    """The section's results as an ``xarray.Dataset`` with dims ``ts_w_max``,
    ``ts_logger``, ``ts_log`` and ``estimator``: ``ts_<stat>`` per log, ``ts_truth``
    and ``ts_truth_mc_se``, ``ts_distinct_lists``, ``ts_top_share``."""
    import xarray as xr

    variants = estimator_variants()
    names = {
        sn: [v.name for v in variants if v.self_normalised == sn]
        for sn in (False, True)
    }
    shape = (len(cfg.w_max), len(cfg.loggers), cfg.ts_logs, len(variants))
    est = np.full((*shape, len(TS_STATS)), np.nan)
    truth = np.full((len(cfg.w_max), 4), np.nan)
    bar = None
    if progress:
        bar = progress_bar(shape[0] * shape[1] * shape[2],
                       "study ope: Thompson-sampling target", unit="log")
    for c, w_max in enumerate(cfg.w_max):
        env = build_env(cfg, cfg.ts_K, cfg.ts_L, w_max)
        target = fitted_ts_target(env, cfg, seed)
        truth[c] = _truth(env, target, cfg.ts_truth_draws)
        for e, name in enumerate(cfg.loggers):
            logger = build_logger(name, env, cfg)
            for j in range(cfg.ts_logs):
                log = collect(
                    env,
                    logger,
                    cfg.ts_n,
                    seed=int(
                        np.random.SeedSequence(
                            seed, spawn_key=(7, e, j)
                        ).generate_state(1)[0]
                    ),
                )
                target.t = 1 + j  # independent Monte Carlo draws for every log
                for sn, est_names in names.items():
                    if not est_names:
                        continue
                    ds = evaluate(
                        log,
                        target,
                        estimators=est_names,
                        n_draws=cfg.ts_draws,
                        self_normalised=sn,
                        deterministic=None,  # judged from the draws (random)
                    )
                    for i, v in enumerate(variants):
                        if v.self_normalised == sn:
                            row = ds.sel(estimator=v.name)
                            est[c, e, j, i] = [float(row[s]) for s in TS_STATS]
                if bar is not None:
                    bar.update(1)
    if bar is not None:
        bar.close()
    dims = ("ts_w_max", "ts_logger", "ts_log", "estimator")
    data = {f"ts_{s}": (dims, est[..., i]) for i, s in enumerate(TS_STATS)}
    for i, v in enumerate(
        ("ts_truth", "ts_truth_mc_se", "ts_distinct_lists", "ts_top_share")
    ):
        data[v] = ("ts_w_max", truth[:, i])
    return xr.Dataset(
        data,
        coords={
            "ts_w_max": [float(x) for x in cfg.w_max],
            "ts_logger": list(cfg.loggers),
            "ts_log": np.arange(cfg.ts_logs),
            "estimator": [v.label for v in variants],
        },
    )
