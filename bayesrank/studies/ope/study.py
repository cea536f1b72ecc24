# Over 450 lines because: one study read top to bottom (the target and its exact
# value, the seeded logs, the estimates per log, the position-IPS limit, the grid
# runner); each part is short and used only here.
"""``bayesrank study ope``: do the off-policy estimators recover a known truth?

Synthetic logs come from :meth:`bayesrank.RankingEnv.paper` environments (identity
link, Gaussian(1) noise), where the target's value is exact: the target is the
environment's best list (deterministic), its value ``env.expected_reward``. Over a
grid of catalogue sizes K, list lengths L, dependency scales w_max (w = 0 exactly, or
w_l ~ U(-w_max, w_max)), loggers (:data:`LOGGERS`, exact propensities) and log
lengths n, the study draws ``logs`` independent logs per cell and runs every
estimator of :data:`bayesrank.ope.ESTIMATORS` (and its self-normalised variant) on
each. It writes

* ``results.nc``: per-log ``estimate``, ``stderr``, ``ci_low``, ``ci_high`` over
  (K, L, w_max, logger, n, log, estimator), the truth, the target list, w and
  position IPS's exact limit; the Thompson-sampling section (``ts_*``) and the Open
  Bandit Dataset section (attribute ``obd``);
* ``rmse.png`` (RMSE against n, log-log), ``coverage.png`` (95 % interval coverage)
  and ``report.md`` (:mod:`bayesrank.studies.ope.report`).

Every estimator runs through the :class:`bayesrank.ope.Estimator` protocol on each
log's arrays with the target's exact probabilities (0/1 indicators,
:func:`target_event_probs`) and, for the direct method and doubly robust estimators,
one reward-model fit per log (a test checks that the results equal
:func:`bayesrank.ope.evaluate`'s).
Logs are generated a chunk of ~10^5 rounds at a time, vectorised over rounds.

Example:
    >>> import numpy as np
    >>> from bayesrank.studies.ope import study as ope_study
    >>> lists = np.array([[0, 1], [0, 2], [3, 1]])
    >>> ope_study.target_event_probs(lists, np.array([0, 1]))["pair"]
    array([[1., 1.],
           [1., 0.],
           [0., 0.]])
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from bayesrank import ope
from bayesrank.ope.reward_model import fit_inputs_model
from bayesrank.ope.protocol import PSCORE_OF
from bayesrank.simulation.dataset import versions as _versions
from bayesrank.studies.cells import run_cells
from bayesrank.studies import store
from bayesrank.studies.ope import obd as ope_obd
from bayesrank.studies.ope import report as ope_report
from bayesrank.studies.ope import ts as ope_ts
from bayesrank.studies.ope.config import (
    FULL,
    LOGGERS,
    QUICK,
    OPEStudyConfig,
    build_env,
    build_logger,
    estimator_variants,
    refuse_bad_cfg,
)

__all__ = [
    "FULL",
    "HIT_EVENTS",
    "LOGGERS",
    "QUICK",
    "STATS",
    "FixedListTarget",
    "OPEStudyConfig",
    "cell_seed",
    "log_estimates",
    "position_ips_limit",
    "run_ope_study",
    "simulate_logs",
    "target_event_probs",
]

#: the per-log statistics stored for every estimator
STATS = ("estimate", "stderr", "ci_low", "ci_high")
#: events whose expected number of target matches per log is stored
#: (``expected_hits``: n times the logger's probability of the target's event,
#: the smallest over positions)
HIT_EVENTS = ("position", "pair", "cascade", "list")
#: rounds generated per chunk (several short logs share one chunk)
CHUNK_ROUNDS = 100_000


class FixedListTarget:
    """A deterministic target policy: the same list for every request.

    Args:
        items: (L,) int, the list.

    Example:
        >>> FixedListTarget([2, 0]).select_batch(n=2)
        array([[2, 0],
               [2, 0]])
    """

    def __init__(self, items):
        self.list = np.asarray(items, np.int64).reshape(-1)

    def select_batch(self, v0=None, mask=None, *, n=None) -> np.ndarray:
        """(B, L) the list, once per row of v0 (or ``n`` times)."""
        B = int(n) if v0 is None else np.shape(v0)[0]
        return np.tile(self.list, (B, 1))


def target_event_probs(lists, target) -> dict:
    """Exact probabilities of a deterministic target's events for each logged row.

    Args:
        lists: (n, L) logged lists.
        target: (L,) the target's list.

    Returns:
        ``{"position", "pair", "cascade": (n, L), "list": (n,)}`` 0/1 floats:
        whether the target shows a^l at l; a^{l-1} and a^l at l-1, l (at l = 0 the
        position event); the prefix a^1..a^l; the whole list.

    Example:
        >>> probs = target_event_probs(np.array([[0, 1], [2, 1]]), np.array([0, 1]))
        >>> probs["position"].tolist(), probs["cascade"].tolist()
        ([[1.0, 1.0], [0.0, 1.0]], [[1.0, 1.0], [0.0, 0.0]])
        >>> probs["list"].tolist()
        [1.0, 0.0]
    """
    same = np.asarray(lists) == np.asarray(target)[None, :]
    pair = same.copy()
    pair[:, 1:] &= same[:, :-1]
    prefix = np.logical_and.accumulate(same, axis=1)
    return {
        "position": same.astype(float),
        "pair": pair.astype(float),
        "cascade": prefix.astype(float),
        "list": prefix[:, -1].astype(float),
    }


def cell_seed(seed: int, K: int, L: int, logger: str, n: int) -> np.random.SeedSequence:
    """The seed sequence of one cell. It does not depend on w_max, so the w = 0 and
    w > 0 cells see the same lists and the same noise (common random numbers).

    Example:
        >>> cell_seed(0, 20, 3, "uniform", 1000).spawn_key
        (20, 3, 0, 1000)
    """
    return np.random.SeedSequence(
        seed, spawn_key=(int(K), int(L), list(LOGGERS).index(logger), int(n))
    )


def simulate_logs(env, logger, n: int, logs: int, seed_seq, *, chunk=CHUNK_ROUNDS):
    """Yield ``logs`` independent logs of n rounds: ``(lists, rewards, pscores)``.

    Vectorised over rounds: each chunk of up to ``chunk`` rounds (several logs when
    n is small) is one call of the logger's ``sample`` and ``propensities`` and one
    ``env.sample``.

    Args:
        env: a :class:`bayesrank.RankingEnv` (every round has context ``env.v0``).
        logger: a :mod:`bayesrank.ope` logger.
        n: rounds per log.
        logs: the number of logs.
        seed_seq: a :class:`numpy.random.SeedSequence` (or int) seeding the
            logger's choices and the rewards.
        chunk: rounds per chunk.

    Yields:
        lists (n, L) int, rewards (n, L) float, pscores {name: array} (the four
        pscore variables of :mod:`bayesrank.ope`).

    Example:
        >>> from bayesrank.studies.ope.config import QUICK, build_env, build_logger
        >>> env = build_env(QUICK, 4, 2, 0.0)
        >>> logger = build_logger("uniform", env, QUICK)
        >>> logs = list(simulate_logs(env, logger, 5, 3, 0))  # 3 logs of 5 rounds
        >>> lists, rewards, pscores = logs[0]
        >>> len(logs), lists.shape, rewards.shape
        (3, (5, 2), (5, 2))
        >>> sorted(pscores)
        ['pscore_cascade', 'pscore_list', 'pscore_pair', 'pscore_position']
    """
    import jax

    rng = np.random.default_rng(seed_seq)
    key = jax.random.key(int(rng.integers(2**31 - 1)))
    per = max(1, chunk // n)
    v0 = np.asarray(env.v0, float)
    for start in range(0, logs, per):
        m = min(per, logs - start)
        v0s = np.broadcast_to(v0, (m * n, v0.shape[0]))
        lists = np.asarray(logger.sample(rng, v0s), np.int64)
        ps = logger.propensities(lists, v0s)
        rewards = np.asarray(env.sample(jax.random.fold_in(key, start), lists), float)
        for j in range(m):
            rows = slice(j * n, (j + 1) * n)
            yield lists[rows], rewards[rows], {k: v[rows] for k, v in ps.items()}


def log_estimates(
    lists, rewards, pscores, target, variants, *, K, v0, items=None, examination=None
) -> np.ndarray:
    """(V, 4) estimate, stderr, ci_low, ci_high of every variant on one log.

    Every variant runs through the :class:`bayesrank.ope.Estimator` protocol: one
    :class:`bayesrank.ope.EstimatorInputs` per normalisation holds the log's
    arrays, the target's exact probabilities (:func:`target_event_probs`) and,
    when a variant reads the reward model, one fit per log with the target's list
    in every round (this needs the item vectors ``items`` (K, d)). The results
    equal :func:`bayesrank.ope.evaluate`'s (a test checks it).

    Args:
        lists: (n, L) the logged lists.
        rewards: (n, L) their rewards.
        pscores: the logger's four pscore arrays (:mod:`bayesrank.ope`).
        target: (L,) the deterministic target's list.
        variants: from :func:`~bayesrank.studies.ope.config.estimator_variants`.
        K: the number of items.
        v0: (d,) the context of every round.
        items: (K, d) the item vectors.
        examination: ``{"examined", "feedback"}`` of the log (None: full, as before)
            for dm and pair_dr (:func:`bayesrank.ope.reward_model.fit_inputs_model`).

    Example:
        >>> from bayesrank.studies.ope.config import (
        ...     QUICK, build_env, build_logger, estimator_variants)
        >>> env = build_env(QUICK, 4, 2, 0.0)
        >>> logger = build_logger("uniform", env, QUICK)
        >>> lists, rewards, ps = next(simulate_logs(env, logger, 400, 1, 0))
        >>> ips = [v for v in estimator_variants() if not v.model]
        >>> target = np.asarray(env.best()[0])
        >>> out = log_estimates(lists, rewards, ps, target, ips, K=4, v0=env.v0)
        >>> out.shape  # (variants, (estimate, stderr, ci_low, ci_high))
        (8, 4)
        >>> bool(np.all((out[:, 2] <= out[:, 0]) & (out[:, 0] <= out[:, 3])))
        True
    """

    out = np.full((len(variants), len(STATS)), np.nan)
    probs = target_event_probs(lists, target)
    pi = {ev: probs["cascade" if ev == "prefix" else ev] for ev in PSCORE_OF}
    pscore = {ev: pscores[var] for ev, var in PSCORE_OF.items() if var in pscores}
    v0 = np.asarray(v0, float)
    rewards = np.asarray(rewards, float)
    model = (None, None, None)
    if any(v.model for v in variants):
        if items is None:
            raise ValueError(
                "items: the reward-model estimators "
                f"{sorted({v.name for v in variants if v.model})} need the item vectors"
            )
        target = np.asarray(target, np.int64)
        draws = ope.TargetDraws(v0[None], np.zeros(len(lists), np.int64),
                                target[None, None], True)
        m = fit_inputs_model(lists, rewards, np.broadcast_to(v0, (len(lists), v0.size)),
                             draws, np.asarray(items, float), **(examination or {}))
        model = (m.q_logged, m.q_target, m)
    inputs = {sn: ope.EstimatorInputs(rewards, pscore, pi, sn, *model)
              for sn in (False, True)}
    for i, v in enumerate(variants):
        out[i] = tuple(v.estimator.estimate(inputs[v.self_normalised]))[: len(STATS)]
    return out


def position_ips_limit(env, logger, target) -> float:
    """The exact expectation of position IPS for a deterministic target.

    Position l's term has expectation E[mean reward at l | a^l = b_l] under the
    logger: the target's item b_l after the logger's previous item, not the
    target's. It equals the truth when w = 0.

    Args:
        env: the environment.
        logger: a logger with exact ``propensities`` (pair and position).
        target: (L,) the target's list.

    Example:
        >>> from bayesrank.studies.ope.config import QUICK, build_env, build_logger
        >>> for w_max in (0.0, 10.0):
        ...     env = build_env(QUICK, 4, 2, w_max)
        ...     target = np.asarray(env.best()[0])
        ...     limit = position_ips_limit(env, build_logger("uniform", env, QUICK),
        ...                                target)
        ...     print(w_max, bool(np.isclose(limit, env.expected_reward(target))))
        0.0 True
        10.0 False
    """
    target = np.asarray(target, np.int64)
    K, L = env.K, env.L
    total = float(np.asarray(env.position_means(target))[0])
    v0s = np.broadcast_to(np.asarray(env.v0, float), (K, env.d))
    for l in range(1, L):
        lists = np.tile(target, (K, 1))
        lists[:, l - 1] = np.arange(K)  # every previous item i, then b_l at l
        means = np.asarray(env.position_means(lists))[:, l]
        ps = logger.propensities(lists, v0s)
        joint = ps["pscore_pair"][:, l]  # P(a^{l-1} = i, a^l = b_l)
        total += float(joint @ means / ps["pscore_position"][0, l])
    return total


def grid_cell(payload: dict) -> np.ndarray:
    """Every log's estimates (logs, estimators, 4) of one (K, L, w_max, logger, n)
    cell of :func:`run_grid`, from a payload (keys cfg (the :class:`OPEStudyConfig`),
    seed, K, L, w_max, logger, n): the task the grid sends to its executor."""
    cfg = payload["cfg"]
    K, L, name, n = payload["K"], payload["L"], payload["logger"], payload["n"]
    env = build_env(cfg, K, L, payload["w_max"])
    logger = build_logger(name, env, cfg)
    target = np.asarray(env.best()[0], np.int64)
    variants = estimator_variants()
    use = [i for i, v in enumerate(variants) if not v.model or n <= cfg.model_max_n]
    est = np.full((cfg.logs, len(variants), len(STATS)), np.nan)
    logs = simulate_logs(env, logger, n, cfg.logs, cell_seed(payload["seed"], K, L, name, n))
    for j, (lists, rewards, ps) in enumerate(logs):
        est[j, use] = log_estimates(lists, rewards, ps, target,
                                    [variants[i] for i in use], K=K,
                                    v0=np.asarray(env.v0, float),
                                    items=np.asarray(env.items, float))
    return est


def run_grid(cfg: OPEStudyConfig, seed: int = 0, *, progress: bool = True,
             executor: str = "local", scheduler: str | None = None, workers: int = 2):
    """The synthetic grid as an ``xarray.Dataset`` (see the module docstring).

    Each (K, L, w_max, logger, n) cell (:func:`grid_cell`) is a task of ``executor``
    ("local" or "dask", with ``scheduler`` and ``workers`` as
    :func:`bayesrank.studies.cells.run_cells`); every cell's logs come from its own
    seed, so the results do not depend on where it ran."""
    import xarray as xr

    variants = estimator_variants()
    shape = (len(cfg.K), len(cfg.L), len(cfg.w_max), len(cfg.loggers), len(cfg.n),
             cfg.logs, len(variants), len(STATS))
    est = np.full(shape, np.nan)
    Lmax = max(cfg.L)
    truth = np.full(shape[:3], np.nan)
    limit = np.full(shape[:4], np.nan)
    hits = np.full((*shape[:5], len(HIT_EVENTS)), np.nan)
    best = np.full((*shape[:3], Lmax), -1, np.int64)
    w = np.full((*shape[:3], Lmax), np.nan)
    index, payloads = [], []
    for a, K in enumerate(cfg.K):
        for b, L in enumerate(cfg.L):
            for c, w_max in enumerate(cfg.w_max):
                env = build_env(cfg, K, L, w_max)
                target = np.asarray(env.best()[0], np.int64)
                truth[a, b, c] = float(env.expected_reward(target))
                best[a, b, c, :L] = target
                w[a, b, c, :L] = np.asarray(env.w)
                for e, name in enumerate(cfg.loggers):
                    logger = build_logger(name, env, cfg)
                    limit[a, b, c, e] = position_ips_limit(env, logger, target)
                    own = logger.propensities(target[None], np.asarray(env.v0)[None])
                    for f, n in enumerate(cfg.n):
                        hits[a, b, c, e, f] = [
                            n * float(np.min(own[f"pscore_{ev}"])) for ev in HIT_EVENTS
                        ]
                        index.append((a, b, c, e, f))
                        payloads.append({"cfg": cfg, "seed": seed, "K": K,
                                         "L": L, "w_max": float(w_max), "logger": name,
                                         "n": n})
    cells = run_cells(grid_cell, payloads, executor=executor, scheduler=scheduler,
                      workers=workers, progress=progress, desc="study ope")
    for (a, b, c, e, f), cell in zip(index, cells):
        est[a, b, c, e, f] = cell
    dims = ("K", "L", "w_max", "logger", "n", "log", "estimator")
    data = {s: (dims, est[..., i]) for i, s in enumerate(STATS)}
    data["truth"] = (("K", "L", "w_max"), truth)
    data["position_ips_limit"] = (("K", "L", "w_max", "logger"), limit)
    data["expected_hits"] = (dims[:5] + ("event",), hits)
    data["target_list"] = (("K", "L", "w_max", "position"), best)
    data["w"] = (("K", "L", "w_max", "position"), w)
    return xr.Dataset(
        data,
        coords={
            "K": list(cfg.K),
            "L": list(cfg.L),
            "w_max": [float(x) for x in cfg.w_max],
            "logger": list(cfg.loggers),
            "n": list(cfg.n),
            "log": np.arange(cfg.logs),
            "estimator": [v.label for v in variants],
            "position": np.arange(1, Lmax + 1),
            "event": list(HIT_EVENTS),
        },
    )


def run_ope_study(
    out="bayesrank-study-ope",
    *,
    quick: bool = False,
    seed: int = 0,
    cfg: OPEStudyConfig | None = None,
    progress: bool = True,
    executor: str = "local",
    scheduler: str | None = None,
    workers: int = 2,
):
    """Run the study; write ``results.nc``, ``rmse.png``, ``coverage.png`` and
    ``report.md`` to ``out``.

    Args:
        out: output folder (created).
        quick: use :data:`QUICK` (about 75 s of study time on two cores) instead of
            :data:`FULL`; ignored when ``cfg`` is given.
        seed: the master seed of the logs (the environments use ``cfg.env_seed``).
        cfg: an :class:`OPEStudyConfig` overriding both.
        progress: show a progress bar and a closing line.
        executor, scheduler, workers: where the grid's cells run (:func:`run_grid`;
            the Thompson-sampling section runs here).

    Returns:
        The results as an ``xarray.Dataset``.

    Example:
        One small cell (K = 3, L = 2, w = 0, uniform logger), no Thompson-sampling
        or OBD section:

        >>> import tempfile
        >>> cfg = OPEStudyConfig(K=(3,), L=(2,), w_max=(0.0,), n=(20,), logs=2,
        ...                      loggers=("uniform",), ts_K=0, obd_campaigns=())
        >>> with tempfile.TemporaryDirectory() as out:
        ...     res = run_ope_study(out, cfg=cfg, progress=False)
        >>> res["estimate"].sizes["log"], res["estimate"].sizes["estimator"]
        (2, 12)
        >>> bool(np.allclose(res["position_ips_limit"], res["truth"]))  # w = 0
        True
    """
    cfg = (QUICK if quick else FULL) if cfg is None else cfg
    refuse_bad_cfg(cfg)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0, c0 = time.perf_counter(), time.process_time()
    res = run_grid(cfg, seed, progress=progress, executor=executor, scheduler=scheduler,
                   workers=workers)
    t_grid = time.perf_counter() - t0
    if cfg.ts_K:
        res = res.merge(ope_ts.run_ts(cfg, seed, progress=progress))
    res.attrs["obd"] = json.dumps(ope_obd.obd_section(cfg.obd_campaigns))
    res.attrs["config"] = json.dumps({**cfg._asdict(), "seed": seed})
    res.attrs["loggers"] = json.dumps({k: LOGGERS[k].description for k in cfg.loggers})
    res.attrs["versions"] = json.dumps(_versions())
    res.attrs["seconds_grid"] = t_grid
    res.attrs["seconds_total"] = time.perf_counter() - t0
    res.attrs["cpu_seconds_total"] = time.process_time() - c0
    store.save_netcdf(res, out / "results.nc")
    ope_report.figures(res, out)
    store.write_text(out / "report.md", ope_report.report(res))
    if progress:
        print(
            f"wrote results.nc, rmse.png, coverage.png and report.md to {out} in "
            f"{res.attrs['seconds_total']:.0f} s",
            flush=True,
        )
    return res
