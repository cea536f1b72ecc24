"""Running a sweep: RankTS in every cell over seeds, diagnostics, a resumable store.

Per cell (prior x environment) and run:

* the pseudo-regret of every round (RankTS with the cell's posterior model; run r uses
  the policy key ``key(policy_seed(seed, r))`` and the noise key ``noise_key(seed, r)``
  of :func:`bayesrank.simulate`, so every cell sees the same noise: common random
  numbers across the grid, and a cell equals ``simulate`` of the same RankTS);
* the settle round: the number of rounds after which the optimal list (any list of the
  optimal value) is played in every remaining round; T when the last round is not
  optimal;
* at each checkpoint c and diagnosed position l, the posterior after c rounds as an
  ArviZ DataTree (``model.to_datatree``; exact draws for the conjugate families, fresh
  NUTS chains for the NumPyro ones) and from it R-hat, bulk and tail ESS, MCSE of the
  mean, divergences, and power-scaling sensitivity of prior and likelihood
  (``arviz.psense``), per coordinate of theta.

Conjugate cells of one family and environment are ``vmap``ped over the grid and over
runs in one compiled function (the hyper-parameters are traced arrays); NUTS cells run
one by one, vmapped over runs. Every finished cell is written at once to
``OUT/cells/<key>.nc`` (the key hashes the cell and the settings that change its
numbers), so an interrupted sweep resumed with the same configuration recomputes
nothing that was finished. ``OUT/results.nc`` gathers all cells along ``cell``.

The diagnostics of one posterior live in :mod:`.diagnostics`, the per-cell datasets and
their store in :mod:`.results`; this module plays the cells and schedules them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._progress import progress
from bayesrank.model import scores
from bayesrank.policies.parts import features
from bayesrank.policies.parts.context import Context
from bayesrank.policies.ts import RankTS, rank_ts
from bayesrank.posteriors.base import update_many
from bayesrank.simulation.play import fold_in_keys
from bayesrank.simulation.play import play as play_rounds
from bayesrank.simulation.simulate import noise_key, policy_seed
from bayesrank.studies import store as files
from bayesrank.studies.sensitivity.config import SweepSettings, SweepSpec
from bayesrank.studies.sensitivity.diagnostics import (  # re-exported: their old home
    DIAGNOSTICS,
    PSENSE_THRESHOLD,
    posterior_diagnostics,
    settle_round,
)
from bayesrank.studies.sensitivity.executors import make_executor
from bayesrank.studies.sensitivity.grid import (
    LEARNT_FAMILIES,
    Cell,
    build_model,
    conjugate_hyper,
)
from bayesrank.studies.sensitivity.results import SweepStore, _cell_dataset, _combine

__all__ = [
    "DIAGNOSTICS",
    "PSENSE_THRESHOLD",
    "SweepStore",
    "compute_payload",
    "posterior_diagnostics",
    "run_sweep",
    "settle_round",
]


_COMPILED: dict = {}


def progress_bar(enabled: bool, *, total=None, desc: str = "", unit: str = "it", **kwargs):
    """The sweep's progress (:func:`bayesrank._progress.progress`: a tqdm bar on a
    terminal or in a notebook, plain lines in a file, nothing when ``enabled`` is
    false)."""
    return progress(total, desc, unit=unit, enabled=enabled, **kwargs)


# --------------------------------------------------------------------- the play
def _play(core, env, T: int, best):
    """One run ``(state, pkey, nkey) -> (state, regret (T,), items (T, L), rewards)``.

    The same keys per round as :func:`bayesrank.simulation.simulate.run_scan`.
    """
    ctx = Context(env.v0, jnp.ones(env.K, bool))

    def record(r):
        return r.best - r.env.expected_reward(r.items), r.items, r.rewards

    def run(state, pkey, nkey):
        state, (regret, items, rewards) = play_rounds(
            core, env, state, T, keys=fold_in_keys(pkey, nkey), ctx=ctx, best=best,
            record=record,
        )
        return state, regret, items, rewards

    return run


def _features(env, items):
    return scores.list_features(env.items, env.W, env.v0, items)


def _replay_fn(model, env, T: int, pair: bool = False):
    """``(items (T, L), rewards (T, L), c) -> state`` after the first c rounds.

    ``pair``: the model learns from the pair features ``(v_{a^l}, v_{a^{l-1}})``
    (a latent-w model) instead of ``v_{a^l} + w_l v_{a^{l-1}}``.
    """
    def replay(items, rewards, c):
        if pair:
            x = features.pair_features(env.items, items, env.v0)
        else:
            x = _features(env, items)
        valid = jnp.broadcast_to((jnp.arange(T) < c)[:, None], rewards.shape)
        return update_many(model, model.init(env.L, x.shape[-1]), x, rewards, valid)

    return replay


def _conjugate_fns(cell: Cell, T: int):
    """Compiled (play over cells x runs, replay of one cell), cached per group."""
    key = ("conjugate", cell.prior.family, cell.env, T, jax.config.jax_enable_x64)
    if key in _COMPILED:
        return _COMPILED[key]
    prior, env = cell.prior, cell.env.build()
    best = jnp.asarray(env.best_value)

    def play(hyper, pkeys, nkeys):
        def one_cell(h):
            model = build_model(prior, T, h)
            core = rank_ts(model, env.items, env.W)
            run = _play(core, env, T, best)
            state0 = core.init()
            return jax.vmap(lambda pk, nk: run(state0, pk, nk)[1:])(pkeys, nkeys)

        return jax.vmap(one_cell)(hyper)

    def replay(hyper, items, rewards, c):
        return _replay_fn(build_model(prior, T, hyper), env, T)(items, rewards, c)

    fns = (jax.jit(play), jax.jit(replay), env)
    _COMPILED[key] = fns
    return fns


def _diag_key(seed: int, run: int, checkpoint: int, position: int):
    k = jax.random.fold_in(jax.random.key(seed), 0xD1A6)
    for i in (run, checkpoint, position):
        k = jax.random.fold_in(k, i)
    return k


def _diagnose(cell, model, replay, items, rewards, s: SweepSettings, env):
    """Diagnostics arrays (diag_run, checkpoint, position, p) and DataTrees."""
    positions = list(range(env.L)) if s.positions is None else list(s.positions)
    shape = (s.diagnostic_runs, len(s.checkpoints), len(positions))
    arrays = {k: np.full(shape + (env.d,), np.nan) for k in DIAGNOSTICS}
    arrays["divergences"] = np.zeros(shape, np.int64)
    trees = {}
    for r in range(s.diagnostic_runs):
        x_all = np.asarray(_features(env, items[r]))
        for ci, c in enumerate(s.checkpoints):
            state = replay(items[r], rewards[r], c)
            for pi, pos in enumerate(positions):
                key = _diag_key(s.seed, r, c, pos)
                # one protocol: closed-form models use data (their sufficient
                # statistics hold no rows); NUTS models ignore it (own buffers) and
                # run fresh chains with warm-up = draws.
                data = (x_all[:c, pos], np.asarray(rewards[r, :c, pos]))
                dt = model.to_datatree(
                    state, pos, key=key, draws=s.draws, chains=s.chains, data=data
                )
                diag = posterior_diagnostics(dt)
                for k in DIAGNOSTICS:
                    arrays[k][r, ci, pi] = diag[k]
                arrays["divergences"][r, ci, pi] = diag["divergences"]
                if s.save_posteriors:
                    trees[f"run{r}_t{c}_pos{pos}"] = dt
    return arrays, trees, positions


def _keys(s: SweepSettings):
    pkeys = jnp.stack([jax.random.key(policy_seed(s.seed, r)) for r in range(s.runs)])
    nkeys = jnp.stack([noise_key(s.seed, r) for r in range(s.runs)])
    return pkeys, nkeys


def _compute_conjugate(cells: list[Cell], s: SweepSettings) -> list[dict]:
    start = time.perf_counter()
    play, replay_j, env = _conjugate_fns(cells[0], s.T)
    d = env.d
    hypers = [conjugate_hyper(c.prior, d) for c in cells]
    stacked = {k: jnp.stack([jnp.asarray(h[k]) for h in hypers]) for k in hypers[0]}
    pkeys, nkeys = _keys(s)
    regret, items, rewards = (np.asarray(a) for a in play(stacked, pkeys, nkeys))
    sim_seconds = (time.perf_counter() - start) / len(cells)
    best = float(env.best_value)
    out = []
    for i, cell in enumerate(cells):
        t0 = time.perf_counter()
        h = {k: jnp.asarray(v) for k, v in hypers[i].items()}
        model = build_model(cell.prior, s.T, hypers[i])

        def replay(it, rw, c, h=h):
            return replay_j(h, jnp.asarray(it), jnp.asarray(rw), c)

        arrays, trees, positions = _diagnose(
            cell, model, replay, items[i], rewards[i], s, env
        )
        out.append(
            _result(
                regret[i],
                best,
                arrays,
                trees,
                positions,
                np.zeros((s.runs, env.L), np.int64),
                sim_seconds + time.perf_counter() - t0,
            )
        )
    return out


def _compute_latent(cell: Cell, s: SweepSettings) -> dict:
    """A closed-form cell played one at a time, runs vmapped: RankTS learns w
    (``w_prior``), or its scales (``gaussian_learnt``, w known or learnt)."""
    start = time.perf_counter()
    env = cell.env.build()
    hyper = None if cell.prior.family in LEARNT_FAMILIES else conjugate_hyper(
        cell.prior, env.d)
    base = build_model(cell.prior, s.T, hyper)
    latent = cell.prior.latent_w
    policy = RankTS(model=base, items=env.items, L=env.L,
                    w=cell.prior.w_distribution() if latent else env.w, v0=env.v0,
                    seed=0)
    model = policy.model  # the LatentW over the pair features, or the base
    best = jnp.asarray(env.best_value)
    run = _play(policy.core, env, s.T, best)
    state0 = policy.state
    play = jax.jit(jax.vmap(lambda pk, nk: run(state0, pk, nk)[1:]))
    regret, items, rewards = (np.asarray(a) for a in play(*_keys(s)))

    replay_j = jax.jit(_replay_fn(model, env, s.T, pair=latent))

    def replay(it, rw, c):
        return replay_j(jnp.asarray(it), jnp.asarray(rw), c)

    arrays, trees, positions = _diagnose(cell, model, replay, items, rewards, s, env)
    return _result(regret, float(env.best_value), arrays, trees, positions,
                   np.zeros((s.runs, env.L), np.int64), time.perf_counter() - start)


def _compute_nuts(cell: Cell, s: SweepSettings) -> dict:
    start = time.perf_counter()
    env = cell.env.build()
    model = build_model(cell.prior, s.T)
    policy = RankTS(model=model, items=env.items, w=env.w, v0=env.v0, seed=0)
    best = jnp.asarray(env.best_value)
    run = _play(policy.core, env, s.T, best)
    state0 = policy.state
    play = jax.jit(jax.vmap(lambda pk, nk: run(state0, pk, nk)))
    pkeys, nkeys = _keys(s)
    state, regret, items, rewards = play(pkeys, nkeys)
    loop_div = np.asarray(state.model.divergences)
    regret, items, rewards = (np.asarray(a) for a in (regret, items, rewards))
    replay_j = jax.jit(_replay_fn(model, env, s.T))

    def replay(it, rw, c):
        return replay_j(jnp.asarray(it), jnp.asarray(rw), c)

    arrays, trees, positions = _diagnose(cell, model, replay, items, rewards, s, env)
    return _result(
        regret,
        float(env.best_value),
        arrays,
        trees,
        positions,
        loop_div,
        time.perf_counter() - start,
    )


def _result(regret, best, arrays, trees, positions, loop_div, seconds) -> dict:
    return {
        "regret": np.asarray(regret, float),
        "best_value": best,
        "settle_round": settle_round(regret, best),
        "diagnostics": arrays,
        "positions": list(positions),
        "loop_divergences": np.asarray(loop_div, np.int64),
        "posteriors": trees,
        "seconds": float(seconds),
    }


def compute_payload(payload: dict) -> list[dict]:
    """Compute a batch of cells (the unit of work of every executor).

    Args:
        payload: ``{"cells": [Cell.to_dict(), ...], "settings": SweepSettings dict,
            "x64": bool}``; conjugate batches share one family and environment, a
            NUTS or latent-w batch holds one cell.

    Returns:
        One result dict per cell (NumPy arrays, plus DataTrees when posteriors are
        saved), in the order of ``payload["cells"]``.
    """
    jax.config.update("jax_enable_x64", bool(payload.get("x64", False)))
    sd = dict(payload["settings"])
    for k in ("checkpoints", "quantiles"):
        sd[k] = tuple(sd[k])
    if sd.get("positions") is not None:
        sd["positions"] = tuple(sd["positions"])
    s = SweepSettings(**sd)
    cells = [Cell.from_dict(c) for c in payload["cells"]]
    if cells[0].prior.is_conjugate:
        return _compute_conjugate(cells, s)
    return [(_compute_latent if c.prior.latent_w or c.prior.family in LEARNT_FAMILIES
             else _compute_nuts)(c, s) for c in cells]


def _batches(pending: list[Cell], s: SweepSettings):
    """Units of work: conjugate cells grouped by (family, environment) and cut into
    ``batch_cells`` (0: whole groups), NUTS and latent-w cells one by one.

    The batches depend on the settings only, never on the executor: a vmapped batch
    rounds slightly differently from a smaller one, and rank-based diagnostics
    (R-hat) amplify last-bit differences, so the local and the Dask executor must
    compute the same batches to give the same numbers."""
    groups: dict = {}
    for c in pending:
        gkey = (c.prior.family, c.env) if c.prior.is_conjugate else ("nuts", c.index)
        groups.setdefault(gkey, []).append(c)
    out = []
    for cells in groups.values():
        size = s.batch_cells or len(cells)
        out.extend(cells[i : i + size] for i in range(0, len(cells), size))
    return out


def run_sweep(
    spec: SweepSpec,
    out,
    *,
    executor: str | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    processes: bool = True,
    progress: bool = True,
    on_cell: Callable[[Cell], None] | None = None,
):
    """Run (or resume) a sweep and gather its results.

    Args:
        spec: from :func:`~bayesrank.studies.sensitivity.load_config` or ``parse_config``.
        out: output folder; finished cells under ``out/cells`` are reused.
        executor: "local" or "dask" (default: the config's).
        scheduler: a Dask scheduler address (default: the config's, else a
            ``LocalCluster``).
        workers: LocalCluster workers (default: the config's).
        processes: LocalCluster workers as processes (True) or threads.
        progress: show a progress bar over cells.
        on_cell: called with each cell after it is computed and stored (not for
            cells found in the store).

    Returns:
        ``xarray.Dataset`` over ``cell`` (also written to ``out/results.nc``).

    Example:
        A tiny sweep (two priors, 10 rounds, 2 runs, diagnostics at round 10):

        >>> import tempfile
        >>> from bayesrank.studies import sensitivity as sens
        >>> spec = sens.parse_config({
        ...     "sweep": {"T": 10, "runs": 2, "checkpoints": [10], "draws": 20,
        ...               "chains": 2},
        ...     "env": {"K": 4, "L": 2, "d": 2},
        ...     "priors": {"weak": {"scale": [1.0, 10.0]}}})
        >>> out = tempfile.TemporaryDirectory()
        >>> ds = sens.run_sweep(spec, out.name, progress=False)
        >>> ds.sizes["cell"], ds["final_regret"].shape          # (cell, run)
        (2, (2, 2))
        >>> again = sens.run_sweep(spec, out.name, progress=False)   # from the store
        >>> bool((again["final_regret"] == ds["final_regret"]).all())
        True
        >>> out.cleanup()
    """
    if not isinstance(spec, SweepSpec):
        raise TypeError(f"spec: expected a SweepSpec, got {type(spec).__name__}")
    s = spec.settings
    name = executor or s.executor
    if name not in ("local", "dask"):
        raise ValueError(f"executor: expected 'local' or 'dask', got {name!r}")
    n_workers = int(workers or s.workers)
    store = SweepStore(out)
    store.root.mkdir(parents=True, exist_ok=True)
    (store.root / "sweep.json").write_text(
        json.dumps(
            {"settings": s.to_dict(), "config": spec.source}, indent=2, default=str
        )
    )
    numbers = s.numbers_key()
    keys = [c.key(numbers) for c in spec.cells]
    pending = [c for c, k in zip(spec.cells, keys) if not store.has(k)]
    x64 = bool(jax.config.jax_enable_x64)
    batches = _batches(pending, s)
    payloads = [
        {"cells": [c.to_dict() for c in b], "settings": s.to_dict(), "x64": x64}
        for b in batches
    ]
    bar = progress_bar(progress, total=len(pending), desc=s.name, unit="cell")
    if pending:
        ex = make_executor(
            name,
            scheduler=scheduler or s.scheduler,
            workers=n_workers,
            processes=processes,
        )
        try:
            for bi, results in ex.map(compute_payload, payloads):
                for cell, res in zip(batches[bi], results):
                    key = keys[cell.index]
                    store.write(key, _cell_dataset(cell, key, res, s))
                    if res["posteriors"]:
                        store.write_posteriors(key, res["posteriors"])
                    bar.update(1)
                    if on_cell is not None:
                        on_cell(cell)
        finally:
            ex.close()
            bar.close()
    ds = _combine(spec, store, keys)
    files.save_netcdf(ds, store.root / "results.nc")
    return ds
