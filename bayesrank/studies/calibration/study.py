"""Run the calibration study: every registry entry, tested, gathered in a DataTree.

Layout of the result (written as NetCDF by :func:`save`):

* root dataset: ``p_value``, ``statistic``, ``n_simulations``, ``draws``,
  ``thinning``, ``warmup``, ``kind`` and ``passed`` over the ``model`` coordinate;
  attributes: the settings, the design and the test's description;
* ``by_n``: ``p_value_by_n``, ``coverage90_by_n`` and ``ks_by_n`` over
  (``model_by_n``, ``n_obs``) for the approximate models (LaplaceGLM);
* one node per model (``models/<label>``): ``ranks`` (simulation, coordinate),
  ``gamma`` and ``p_coordinate`` (coordinate), attributes N, draws, thinning, warmup,
  n_obs, kind, lag1 (kept draws' autocorrelation).

Example:
    >>> from bayesrank.studies.calibration.registry import QUICK
    >>> dt = run_study(QUICK._replace(n_sims=20, draws=9), ["GaussianLinear"])
    >>> [str(m) for m in dt["model"].values]
    ['GaussianLinear']
"""

from __future__ import annotations

import json
import time

import jax
import numpy as np

from bayesrank.studies import store
from bayesrank.studies.calibration import registry
from bayesrank.studies.calibration.inloop import run_inloop
from bayesrank.studies.calibration.ranks import pit_from_ranks
from bayesrank.studies.calibration.sbc import run_sbc
from bayesrank.studies.calibration.uniformity import power, uniformity_test
from bayesrank.studies.cells import run_cells

__all__ = ["ALPHA", "TEST_DESCRIPTION", "coverage90", "run_study", "save"]

ALPHA = 0.01

TEST_DESCRIPTION = (
    "PIT-ECDF simultaneous-band test (Säilynoja, Bürkner & Vehtari 2022) per "
    "coordinate on randomised PIT values (rank + U) / (M + 1); one p-value per model: "
    "Bonferroni min(1, D * min_j p_j) over its D coordinates (equal to Holm's for the "
    "global null), so a 1 % level is a 1 % family-wise false-alarm rate per model."
)


def coverage90(ranks, M: int) -> float:
    """Share of ranks inside the central 90 % (0.90 when calibrated)."""
    q = (np.asarray(ranks) + 0.5) / (M + 1.0)
    return float(np.mean((q > 0.05) & (q < 0.95)))


def _ks(u) -> float:
    """Largest |ECDF - identity| over coordinates (0 for perfect uniformity)."""
    u = np.sort(np.asarray(u), axis=0)
    N = u.shape[0]
    i = np.arange(1, N + 1)[:, None]
    return float(max(np.max(i / N - u), np.max(u - (i - 1) / N)))


def _resolve(names, settings):
    known = registry.model_names(settings)
    if names is None:
        return known
    names = list(names)
    prefix = registry.INLOOP.prefix
    bad = [n for n in names if n not in known and not n.startswith(prefix)]
    if bad:
        raise ValueError(f"models: unknown {bad}; expected some of {known}")
    for n in names:
        if n.startswith(registry.INLOOP.prefix):
            tail = n[len(registry.INLOOP.prefix):]
            if not tail.isdigit() or int(tail) < 1:
                raise ValueError(f"models: {n!r} must end in a round number >= 1")
    return names


def _node(ranks, M, test, attrs):
    import xarray as xr

    N, D = ranks.shape
    return xr.Dataset(
        {
            "ranks": (("simulation", "coordinate"), ranks),
            "gamma": (("coordinate",), test.gamma),
            "p_coordinate": (("coordinate",), test.p_coordinate),
        },
        coords={"coordinate": _coordinate_labels(D, attrs)},
        attrs={"N": N, "draws": M, **attrs},
    )


def _coordinate_labels(D, attrs):
    L = int(attrs["L"])
    p = D // L
    if p == int(attrs["d"]) + 1:  # a latent-w model: theta^l, then w_l
        return [f"position{l}_" + (f"dim{j}" if j < p - 1 else "w")
                for l in range(L) for j in range(p)]
    return [f"position{l}_dim{j}" for l in range(L) for j in range(p)]


MISFITS = (("exact", 1.0, 0.0), ("sd x 0.5", 0.5, 0.0), ("sd x 0.75", 0.75, 0.0),
           ("sd x 1.5", 1.5, 0.0), ("mean + 0.25 sd", 1.0, 0.25),
           ("mean + 0.5 sd", 1.0, 0.5))


def _power_node(s):
    """Power of the test at the in-loop sizes against the misfits above."""
    import xarray as xr

    D = s.design.L * s.design.d
    reps = 200 if s.inloop_runs >= 50 else 20
    pw = [power(s.inloop_runs, D, s.ref_draws, scale=sc, shift=sh, reps=reps,
                n_null=min(s.n_null, 4000)) for _, sc, sh in MISFITS]
    return xr.Dataset({"power": ("misfit", np.asarray(pw))},
                      coords={"misfit": np.array([m[0] for m in MISFITS], dtype=str)},
                      attrs={"N": s.inloop_runs, "D": D, "M": s.ref_draws,
                             "reps": reps, "alpha": ALPHA})


def _test(s):
    return lambda ranks, M: uniformity_test(pit_from_ranks(ranks, M, seed=s.seed),
                                            n_null=s.n_null, seed=s.seed + 2024)


def case_cell(payload: dict):
    """One SBC case of :func:`run_study` from a payload (keys settings, index,
    verbose): ``(name, node, row, by_n or None)``. A task of the study's executor."""
    s, i = payload["settings"], payload["index"]
    case, design, test = registry.CASES[i], s.design, _test(s)
    key = jax.random.key(s.seed)
    t0 = time.perf_counter()
    model = case.build(s, s.n_obs)
    gen = None if case.generative is None else case.generative()
    draws = s.nuts_draws if case.mcmc else s.draws
    thin = s.nuts_thin if case.mcmc else 1
    warm = s.nuts_warmup if case.mcmc else 0
    n_sims = s.nuts_sims if case.mcmc else s.n_sims
    res = run_sbc(jax.random.fold_in(key, i), model, generative=gen, design=design,
                  n_obs=s.n_obs, n_sims=n_sims, draws=draws, thin_every=thin,
                  warmup=warm)
    t = test(res.ranks, draws)
    attrs = {"L": design.L, "d": design.d, "thinning": thin, "warmup": warm,
             "n_obs": s.n_obs, "kind": case.kind, "lag1": res.lag1}
    node = _node(res.ranks, draws, t, attrs)
    row = (t, n_sims, draws, thin, warm, case.kind)
    if payload["verbose"]:
        print(f"{case.name}: p = {t.p_value:.3g} ({time.perf_counter() - t0:.0f} s)",
              flush=True)
    curve = None
    if case.kind == "approximate" and s.n_grid:
        curve = []
        for j, n in enumerate(s.n_grid):
            m_n = case.build(s, int(n))
            r = run_sbc(jax.random.fold_in(key, 1000 * (i + 1) + j), m_n,
                        generative=gen, design=design, n_obs=int(n),
                        n_sims=s.n_sims, draws=draws)
            u = pit_from_ranks(r.ranks, draws, seed=s.seed)
            curve.append((test(r.ranks, draws).p_value, coverage90(r.ranks, draws),
                          _ks(u)))
        curve = np.asarray(curve)
        if payload["verbose"]:
            print(f"{case.name}: by n done ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
    return case.name, node, row, curve


def inloop_cell(payload: dict) -> list:
    """The in-loop rounds of :func:`run_study` from a payload (keys settings,
    rounds, verbose): ``[(name, node, row), ...]``. A task of the executor."""
    s, rounds = payload["settings"], payload["rounds"]
    design, test = s.design, _test(s)
    t0 = time.perf_counter()
    res = run_inloop(
        jax.random.fold_in(jax.random.key(s.seed), 777),
        registry.INLOOP.build(s, rounds[-1]),
        lambda n: registry.INLOOP.reference(s, n), rounds=rounds,
        n_runs=s.inloop_runs, draws=s.ref_draws, thin_every=s.ref_thin,
        warmup=s.ref_warmup, design=design,
    )
    out = []
    for r_i, t_round in enumerate(res.rounds):
        name = f"{registry.INLOOP.prefix}{t_round}"
        t = test(res.ranks[r_i], res.M)
        attrs = {"L": design.L, "d": design.d, "thinning": s.ref_thin,
                 "warmup": s.ref_warmup, "n_obs": t_round - 1, "kind": "in-loop",
                 "lag1": res.lag1[r_i], "adapting_share": res.adapting[r_i],
                 "round": t_round,
                 "reference": "fresh-chain BayesGLM on the same t - 1 impressions"}
        out.append((name, _node(res.ranks[r_i], res.M, t, attrs),
                    (t, s.inloop_runs, res.M, s.ref_thin, s.ref_warmup, "in-loop")))
    if payload["verbose"]:
        print(f"in-loop rounds {list(rounds)}: done ({time.perf_counter() - t0:.0f} s)",
              flush=True)
    return out


def _dispatch(task):
    """Run ``(fn, payload)``: one picklable task for both kinds of cell."""
    fn, payload = task
    return fn(payload)


def run_study(settings: registry.Settings = registry.FULL, names=None, *,
              verbose: bool = False, executor: str = "local",
              scheduler: str | None = None, workers: int = 2):
    """Run the named registry entries (default: all) and test their ranks.

    Args:
        settings: sizes (``registry.FULL`` or ``registry.QUICK``).
        names: labels from :func:`registry.model_names` (in-loop labels may name any
            round), or None for all.
        verbose: print progress.
        executor: "local" (here, one case after the other) or "dask": each SBC case
            and the in-loop rounds a task (:func:`bayesrank.studies.cells.run_cells`,
            with ``scheduler`` and ``workers``); each case's keys come from the
            seed and its index, so the results do not depend on where it ran.

    Returns:
        xarray.DataTree (layout in the module docstring).

    Raises:
        ValueError: an unknown label.
    """
    import xarray as xr

    names = _resolve(names, settings)
    s = settings
    design = s.design
    common = {"settings": s, "verbose": verbose and executor == "local"}
    payloads = [{**common, "index": i} for i, case in enumerate(registry.CASES)
                if case.name in names]
    rounds = sorted(int(n[len(registry.INLOOP.prefix):]) for n in names
                    if n.startswith(registry.INLOOP.prefix))
    fns = [case_cell] * len(payloads)
    if rounds:
        payloads.append({**common, "rounds": rounds})
        fns.append(inloop_cell)
    results = run_cells(_dispatch, list(zip(fns, payloads)), executor=executor,
                        scheduler=scheduler, workers=workers,
                        progress=verbose and executor != "local", desc="calibrate")
    nodes, rows, by_n = {}, {}, {}
    for fn, res in zip(fns, results):
        if fn is case_cell:
            name, node, row, curve = res
            nodes[name], rows[name] = node, row
            if curve is not None:
                by_n[name] = curve
        else:
            for name, node, row in res:
                nodes[name], rows[name] = node, row

    order = [n for n in names if n in rows]
    ts = [rows[n][0] for n in order]
    kind = [rows[n][5] for n in order]
    p = np.array([t.p_value for t in ts])
    root = xr.Dataset(
        {
            "p_value": ("model", p),
            "statistic": ("model", np.array([t.statistic for t in ts])),
            "n_simulations": ("model", np.array([rows[n][1] for n in order])),
            "draws": ("model", np.array([rows[n][2] for n in order])),
            "thinning": ("model", np.array([rows[n][3] for n in order])),
            "warmup": ("model", np.array([rows[n][4] for n in order])),
            "kind": ("model", np.array(kind, dtype=str)),
            "passed": ("model", p >= ALPHA),
        },
        coords={"model": np.array(order, dtype=str)},
        attrs={
            "test": TEST_DESCRIPTION,
            "alpha": ALPHA,
            "settings": json.dumps(s._asdict(), default=lambda o: list(o)
                                   if isinstance(o, tuple) else str(o)),
            "design": (f"RankingEnv.paper(seed={design.seed}, K={design.K}, "
                       f"L={design.L}, d={design.d}, w_max={design.w_max}) items; "
                       "uniformly random lists (SBC) or RankTS argmax lists (in-loop)"),
            "N": s.n_sims, "draws": s.draws, "thinning": s.nuts_thin,
            "nuts_simulations": s.nuts_sims, "inloop_runs": s.inloop_runs,
            "n_null": s.n_null,
        },
    )
    tree = {"/": root}
    if by_n:
        labels = list(by_n)
        arr = np.stack([by_n[k] for k in labels])  # (models, n, 3)
        tree["/by_n"] = xr.Dataset(
            {
                "p_value_by_n": (("model_by_n", "n_obs"), arr[..., 0]),
                "coverage90_by_n": (("model_by_n", "n_obs"), arr[..., 1]),
                "ks_by_n": (("model_by_n", "n_obs"), arr[..., 2]),
            },
            coords={"model_by_n": np.array(labels, dtype=str),
                    "n_obs": np.array(s.n_grid)},
        )
    if rounds:
        tree["/power"] = _power_node(s)
    for name, ds in nodes.items():
        tree[f"/models/{name}"] = ds
    return xr.DataTree.from_dict(tree)


def save(dt, path) -> None:
    """Write the study's DataTree as one NetCDF file (h5netcdf engine)."""
    store.save_netcdf(dt, path, engine="h5netcdf")
