"""A study's cells on the sweeps' executor: Dask's results equal one process's, cell
for cell, for the units and click-models studies; bad executors are refused."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from bayesrank.cli import main
from bayesrank.studies import units
from bayesrank.studies.cells import run_cells
from bayesrank.studies.click_models import study as click_study
from bayesrank.studies.ope import click as ope_click
from bayesrank.studies.obd import study as obd_study
from bayesrank.studies.ope import study as ope_study

pytest.importorskip("distributed")


def test_local_and_dask_return_every_cell_in_order():
    payloads = [-3, 1, -2, 5]
    assert run_cells(abs, payloads, progress=False) == [3, 1, 2, 5]
    got = run_cells(abs, payloads, executor="dask", workers=2, processes=False,
                    progress=False)
    assert got == [3, 1, 2, 5]
    with pytest.raises(ValueError, match="^executor:"):
        run_cells(abs, payloads, executor="spark")


@pytest.mark.heavy  # a LocalCluster process: about 10 s
def test_dask_workers_compute_in_the_callers_precision():
    """A worker mirrors the caller's float64 switch (a process that ran the
    calibrate CLI is in float64; a fresh worker would not be)."""
    import sys

    import cloudpickle
    import jax

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the worker has no tests/
    before = bool(jax.config.jax_enable_x64)
    try:
        for x64 in (True, False):
            jax.config.update("jax_enable_x64", x64)
            got = run_cells(_dtype_of_a_draw, [0], executor="dask", workers=1,
                            progress=False)
            assert got == ["float64" if x64 else "float32"]
    finally:
        jax.config.update("jax_enable_x64", before)
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _dtype_of_a_draw(seed):
    import jax

    return str(jax.random.normal(jax.random.key(seed)).dtype)


def _dies_once(payload):
    """Kill this worker the first time (the marker file absent), answer the second."""
    import os
    from pathlib import Path

    marker = Path(payload["marker"])
    if not marker.exists():
        marker.write_text("killed once")
        os._exit(1)  # the worker process dies mid-task, as a killed worker would
    return payload["value"] * 2


@pytest.mark.heavy  # a LocalCluster whose worker dies and restarts: about 15 s
def test_a_killed_workers_cell_is_rerun_not_lost(tmp_path):
    import sys

    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        payloads = [{"marker": str(tmp_path / "m"), "value": 21}, {"marker": str(
            tmp_path / "m2"), "value": 1}]
        (tmp_path / "m2").write_text("never killed")
        got = run_cells(_dies_once, payloads, executor="dask", workers=2,
                        progress=False)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert got == [42, 2]
    assert (tmp_path / "m").read_text() == "killed once"


@pytest.mark.heavy  # Dask workers and a study's cells: 5-15 s each
def test_units_cells_on_dask_equal_one_call():
    """Two (w, prior, c) cells as Dask tasks, merged, against one units_cells call."""
    base = {"scale": "quick", "seed": 3, "link": "identity", "w": "known", "c": 1.0}
    payloads = [{**base, "prior": p} for p in ("oracle", "default")]
    merged = units.merge_cells(run_cells(units.units_cell, payloads, executor="dask",
                                         workers=2, processes=False, progress=False))
    one = units.units_cells("quick", seed=3, progress=False, priors=("default", "oracle"),
                            cs=(1.0,), ws=("known",))
    for v in ("regret", "cover_theta"):
        np.testing.assert_array_equal(merged[v].values, one[v].values)
    assert list(merged["prior"].values) == ["default", "oracle"]


@pytest.mark.heavy  # Dask workers and a study's cells: 5-15 s each
def test_click_models_on_dask_equal_one_process(tmp_path):
    scale = {"K": 6, "d": 3, "L": 2, "T": 30, "runs": 2, "points": 3, "nuts_T": 10,
             "nuts_runs": 1}
    names = [n for n in click_study.POLICIES if n != click_study.SHORT][:2]
    envs = list(click_study.environments(click_study._config(scale), 0))[:2]
    one = click_study.click_cells(scale, names=names, envs=envs, progress=False)
    payloads = [{"scale": scale, "seed": 0, "env": e, "names": names, "workers": 1}
                for e in envs]
    merged = click_study.merge_cells(run_cells(
        click_study.click_cell, payloads, executor="dask", workers=2, processes=False,
        progress=False))
    np.testing.assert_array_equal(merged["regret"].values, one["regret"].values)
    np.testing.assert_array_equal(merged["best_value"].values, one["best_value"].values)


@pytest.mark.heavy  # Dask workers and a study's cells: 5-15 s each
def test_ope_click_grid_on_dask_equals_one_process():
    cfg = ope_click.ClickStudyConfig(envs=("pbm", "cascade"), K=4, L=3, n=(200, 400),
                                     logs=2, model_max_n=200)
    one = ope_click.run_click_grid(cfg, seed=1, progress=False)
    dask = ope_click.run_click_grid(cfg, seed=1, progress=False, executor="dask",
                                    workers=2)
    xr.testing.assert_identical(one, dask)
    assert np.isfinite(one["exam_estimate"].sel(env="pbm").values).all()


@pytest.mark.heavy  # Dask workers and a study's cells: 5-15 s each
def test_ope_grid_on_dask_equals_one_process():
    cfg = ope_study.OPEStudyConfig(K=(3,), L=(2,), w_max=(0.0, 1.0), n=(40,), logs=2,
                                   loggers=("uniform",), ts_K=0, obd_campaigns=())
    one = ope_study.run_grid(cfg, seed=2, progress=False)
    dask = ope_study.run_grid(cfg, seed=2, progress=False, executor="dask", workers=2)
    xr.testing.assert_identical(one, dask)


@pytest.mark.heavy  # Dask workers and a study's cells: 5-15 s each
def test_obd_study_on_dask_equals_one_process(tmp_path):
    cfg = obd_study.StudyConfig(w_max=(0.0, 1.0), T=20, runs=2)
    kw = {"cfg": cfg, "names": ["RankUCB", "Baseline"], "progress": False}
    one = obd_study.run_obd_study(tmp_path / "one", **kw)
    dask = obd_study.run_obd_study(tmp_path / "dask", executor="dask", workers=2, **kw)
    for v in ("regret", "best_value", "w"):
        np.testing.assert_array_equal(one[v].values, dask[v].values)


@pytest.mark.heavy  # two quick tightness runs: about 30 s
def test_reproduce_on_dask_equals_one_process(tmp_path):
    from bayesrank.studies.paper.reproduce import reproduce

    one = reproduce("tightness", out=tmp_path / "one", quick=True)
    dask = reproduce("tightness", out=tmp_path / "dask", quick=True, executor="dask",
                     workers=1)
    assert one.read_text() == dask.read_text()
    for f in ("tightness.nc", "tightness_RankTS_prior_averaged.nc"):
        a, b = (xr.load_dataset(d / f).drop_vars("seconds", errors="ignore")
                for d in (tmp_path / "one", tmp_path / "dask"))
        a.attrs, b.attrs = {}, {}
        xr.testing.assert_identical(a, b)


@pytest.mark.heavy  # Dask workers and two tiny SBC cases: about 20 s
def test_calibration_on_dask_equals_one_process():
    from bayesrank.studies.calibration import registry
    from bayesrank.studies.calibration.study import run_study

    s = registry.QUICK._replace(n_sims=20, draws=9, n_obs=10, n_grid=(5,), n_null=200)
    names = ["LaplaceGLM-logistic", registry.model_names(s)[0]]
    one = run_study(s, names)
    dask = run_study(s, names, executor="dask", workers=2)
    assert list(one["model"].values) == list(dask["model"].values)
    np.testing.assert_array_equal(one["p_value"].values, dask["p_value"].values)
    np.testing.assert_array_equal(one["by_n"]["p_value_by_n"].values,
                                  dask["by_n"]["p_value_by_n"].values)
    for name in names:
        np.testing.assert_array_equal(one[f"models/{name}"]["ranks"].values,
                                      dask[f"models/{name}"]["ranks"].values)


@pytest.mark.parametrize("argv, name", [
    (["study", "units", "--scheduler", "tcp://x:1"], "--scheduler"),
    (["study", "units", "--executor", "dask", "--workers", "0"], "--workers"),
    (["reproduce", "tightness", "--scheduler", "tcp://x:1"], "--scheduler"),
    (["calibrate", "--quick", "--scheduler", "tcp://x:1"], "--scheduler"),
])
def test_the_cli_refuses_executor_options_it_cannot_honour(argv, name, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main([*argv, "--out", str(tmp_path)])
    assert info.value.code == 2
    assert f"error: {name}:" in capsys.readouterr().err
