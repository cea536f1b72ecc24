"""Tests of the prior-sensitivity sweep (bayesrank.studies.sensitivity)."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest
import xarray as xr

from bayesrank.studies import sensitivity as sens
from bayesrank.studies.sensitivity import run as run_mod

ENV = {"K": 10, "L": 3, "d": 4, "w_max": 5.0}
PRIORS = {
    "weak": {"family": "gaussian", "scale": 10.0},
    "wrong": {"family": "gaussian", "location": -1.0, "scale": 0.05},
    "misspecified": {"family": "gaussian", "noise_scale": [0.5, 2.0]},
}


def small_config(**sweep):
    base = {
        "T": 300,
        "runs": 3,
        "seed": 1,
        "checkpoints": [100, 300],
        "draws": 150,
        "chains": 2,
        "diagnostic_runs": 1,
        "positions": [0, ENV["L"] - 1],
    }
    base.update(sweep)
    return {"sweep": base, "env": dict(ENV), "priors": json.loads(json.dumps(PRIORS))}


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory):
    spec = sens.parse_config(small_config(save_posteriors=True))
    out = tmp_path_factory.mktemp("local")
    ds = sens.run_sweep(spec, out, progress=False)
    return spec, out, ds


def by_prior(ds, name):
    idx = np.flatnonzero(ds["prior"].values == name)
    assert idx.size, name
    return ds.isel(cell=idx)


# --------------------------------------------------------------------- numbers
def test_cell_regret_equals_simulate_of_the_same_rankts(local_sweep):
    """A conjugate cell (vmapped over the grid) equals br.simulate of RankTS."""
    from bayesrank.policies.ts import RankTS
    from bayesrank.posteriors import GaussianLinear
    from bayesrank.simulation.simulate import simulate

    spec, _, ds = local_sweep
    cell = next(c for c in spec.cells if c.prior.name == "wrong")
    env = cell.env.build()
    cov = cell.prior.covariance(env.d)
    model = GaussianLinear(
        prior_mean=np.full(env.d, -1.0), prior_scale=cov, noise_scale=1.0
    )
    ref = simulate(
        env,
        {
            "ts": lambda s: RankTS(
                model=model, items=env.items, w=env.w, v0=env.v0, seed=s
            )
        },
        T=spec.settings.T,
        runs=spec.settings.runs,
        seed=spec.settings.seed,
        progress=False,
    )
    got = ds["regret"].values[cell.index]
    np.testing.assert_allclose(got, ref["regret"].values[0], rtol=1e-9, atol=1e-9)


def test_settle_round_matches_brute_force():
    rng = np.random.default_rng(0)
    regret = (rng.random((50, 12)) < 0.3) * rng.random((50, 12))
    regret[:5] = 0.0
    got = run_mod.settle_round(regret, best_value=3.0)
    for r in range(regret.shape[0]):
        want = next(t for t in range(13) if np.all(regret[r, t:] == 0))
        assert got[r] == want


def test_confidently_wrong_prior_raises_regret_and_psense_flags_it(local_sweep):
    _, _, ds = local_sweep
    weak, wrong = by_prior(ds, "weak"), by_prior(ds, "wrong")
    regret_weak = float(weak["final_regret"].mean())
    regret_wrong = float(wrong["final_regret"].mean())
    assert regret_wrong > 2.0 * regret_weak
    red = ["diag_run", "position", "theta_dim"]
    thr = sens.PSENSE_THRESHOLD
    ps_wrong = wrong["psense_prior"].max(red).values
    ps_weak = weak["psense_prior"].max(red).values
    assert np.all(ps_wrong > thr), ps_wrong
    assert np.all(ps_weak < thr), ps_weak
    table = sens.diagnostics_table(ds)
    flagged = table[table["label"].str.startswith("wrong")]["diagnosis"]
    assert (flagged != "✓").all()
    assert (table[table["label"].str.startswith("weak")]["diagnosis"] == "✓").all()
    # the per-coordinate rule: the wrong prior is flagged on most coordinates
    wrong_rows = table[table["label"].str.startswith("wrong")]
    assert (wrong_rows["psense_flag_share"] > 0.5).all()


def test_stored_diagnostics_equal_arviz_on_stored_draws(local_sweep):
    import arviz as az

    spec, out, ds = local_sweep
    s = spec.settings
    checked = 0
    for cell in spec.cells:
        key = str(ds["cell_key"].values[cell.index])
        for cp in s.checkpoints:
            for pos in (0, ENV["L"] - 1):
                path = out / "posteriors" / key / f"run0_t{cp}_pos{pos}.nc"
                dt = xr.open_datatree(path).load()
                sel = ds.isel(cell=cell.index).sel(
                    diag_run=0, checkpoint=cp, position=pos
                )

                def ref(x):
                    x = x.to_dataset() if isinstance(x, xr.DataTree) else x
                    return x["theta"].values

                pairs = {
                    "rhat": az.rhat(dt, var_names=["theta"]),
                    "ess_bulk": az.ess(dt, var_names=["theta"], method="bulk"),
                    "ess_tail": az.ess(dt, var_names=["theta"], method="tail"),
                    "mcse_mean": az.mcse(dt, var_names=["theta"], method="mean"),
                    "psense_prior": az.psense(dt, var_names=["theta"], group="prior"),
                    "psense_likelihood": az.psense(
                        dt, var_names=["theta"], group="likelihood"
                    ),
                }
                for name, val in pairs.items():
                    np.testing.assert_allclose(
                        sel[name].values, ref(val), rtol=1e-12, err_msg=name
                    )
                assert int(sel["divergences"]) == int(
                    dt["sample_stats"]["diverging"].sum()
                )
                assert dt["posterior"]["theta"].shape == (s.chains, s.draws, ENV["d"])
                assert dt["log_likelihood"]["y"].shape[-1] == cp
                checked += 1
    assert checked == len(spec.cells) * len(s.checkpoints) * 2


# ------------------------------------------------------------------- executors
def test_dask_executor_gives_the_same_numbers(local_sweep, tmp_path):
    pytest.importorskip("distributed")
    spec, _, ds = local_sweep
    spec = spec.with_settings(save_posteriors=False)
    got = sens.run_sweep(
        spec, tmp_path, executor="dask", workers=2, processes=False, progress=False
    )
    for name in ("regret", "settle_round", *run_mod.DIAGNOSTICS):
        np.testing.assert_array_equal(got[name].values, ds[name].values, err_msg=name)
    assert list(got["label"].values) == list(ds["label"].values)


class Stop(Exception):
    pass


def test_interrupted_sweep_resumes_without_recomputing(local_sweep, tmp_path):
    spec, _, ds = local_sweep
    spec = spec.with_settings(
        batch_cells=1, save_posteriors=False, positions=(0,), checkpoints=(300,)
    )
    n = len(spec.cells)
    done = []

    def interrupt(cell):
        done.append(cell.index)
        if len(done) == 2:
            raise Stop

    with pytest.raises(Stop):
        sens.run_sweep(spec, tmp_path, progress=False, on_cell=interrupt)
    assert len(list((tmp_path / "cells").glob("*.nc"))) == 2
    assert not (tmp_path / "results.nc").exists()

    resumed = []
    got = sens.run_sweep(
        spec, tmp_path, progress=False, on_cell=lambda c: resumed.append(c.index)
    )
    assert sorted(resumed) == sorted(set(range(n)) - set(done))
    # batch_cells=1 vmaps one cell at a time: the same lists, last-bit rounding.
    np.testing.assert_allclose(
        got["regret"].values, ds["regret"].values, rtol=0, atol=1e-12
    )

    again = []
    sens.run_sweep(spec, tmp_path, progress=False, on_cell=lambda c: again.append(c))
    assert again == []
    # A change that alters the numbers gives new cells (no stale reuse).
    fresh = []
    sens.run_sweep(
        spec.with_settings(seed=2),
        tmp_path,
        progress=False,
        on_cell=lambda c: fresh.append(c),
    )
    assert len(fresh) == n


# ---------------------------------------------------------------------- config
@pytest.mark.parametrize(
    ("mutate", "key"),
    [
        (lambda c: c["priors"]["weak"].update(family="gamma"), "priors.weak.family"),
        (lambda c: c["priors"]["weak"].update(scale=-1.0), "priors.weak.scale"),
        (
            lambda c: c["priors"]["weak"].update(noise_scale=[1.0, 0.0]),
            "priors.weak.noise_scale",
        ),
        (lambda c: c["priors"]["weak"].update(scale=[]), "priors.weak.scale"),
        (lambda c: c["priors"]["weak"].update(sigma=1.0), "priors.weak.sigma"),
        (lambda c: c["priors"]["weak"].update(df=3.0), "priors.weak.df"),
        (
            lambda c: c["priors"]["weak"].update(correlation=1.0),
            "priors.weak.correlation",
        ),
        (lambda c: c.update(priors={}), "priors"),
        (lambda c: c["env"].update(K=[]), "env.K"),
        (lambda c: c["env"].update(colour="red"), "env.colour"),
        (lambda c: c["sweep"].update(rounds=10), "sweep.rounds"),
        (lambda c: c["sweep"].update(T=-5), "sweep.T"),
        (lambda c: c["sweep"].update(checkpoints=[1000]), "sweep.checkpoints"),
        (lambda c: c["sweep"].update(positions=[7]), "sweep.positions"),
        (lambda c: c["sweep"].update(executor="ray"), "sweep.executor"),
        (lambda c: c.update(extra={}), "extra"),
        (
            lambda c: c["priors"].update(
                h={"family": "student_t", "nuts": {"steps": 2}}
            ),
            "priors.h.nuts.steps",
        ),
    ],
)
def test_invalid_config_message_names_the_key(mutate, key):
    cfg = small_config()
    mutate(cfg)
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        sens.parse_config(cfg)


def test_toml_config_and_cli_write_results_and_report(tmp_path, capsys):
    toml = tmp_path / "sweep.toml"
    toml.write_text(
        "[sweep]\nT = 300\nruns = 3\nseed = 1\ncheckpoints = [100, 300]\n"
        "draws = 150\nchains = 2\n[sweep.quick]\nT = 300\nruns = 2\n"
        "[env]\nK = 10\nL = 3\nd = 4\nw_max = 5.0\n"
        "[priors.weak]\nfamily = 'gaussian'\nscale = [1.0, 10.0]\n"
        "[priors.bad]\nfamily = 'gaussian'\nscale = -2\n"
    )
    with pytest.raises(ValueError, match=r"priors\.bad\.scale"):
        sens.run_sweep_cli(toml, out=tmp_path / "never")
    assert not (tmp_path / "never").exists()

    toml.write_text(toml.read_text().split("[priors.bad]")[0])
    spec = sens.load_config(toml, quick=True)
    assert (spec.settings.T, spec.settings.runs) == (300, 2)
    report = sens.run_sweep_cli(toml, quick=True, out=tmp_path / "out")
    text = report.read_text()
    assert "psense" in text and "| cell | label |" in text
    for name in ("regret_heatmap.png", "regret_curves.png", "psense.png", "results.nc"):
        assert (tmp_path / "out" / name).stat().st_size > 0
    ds = xr.open_dataset(tmp_path / "out" / "results.nc")
    assert ds.sizes["cell"] == 2 and ds.sizes["run"] == 2


def test_example_configs_are_valid():
    from pathlib import Path

    root = Path(__file__).resolve().parents[3] / "examples"
    for name in ("sweep.toml", "sweep_nuts.toml"):
        for quick in (False, True):
            spec = sens.load_config(root / name, quick=quick)
            assert spec.cells and max(spec.settings.checkpoints) <= spec.settings.T


# ------------------------------------------------------------------------ NUTS
@pytest.mark.slow
def test_heavy_tailed_nuts_cell_runs_and_is_diagnosed(tmp_path):
    cfg = {
        "sweep": {
            "T": 100,
            "runs": 2,
            "checkpoints": [100],
            "positions": [0],
            "draws": 150,
            "chains": 2,
        },
        "env": dict(ENV),
        "priors": {"t": {"family": "student_t", "df": 2.0, "scale": 0.5}},
    }
    ds = sens.run_sweep(sens.parse_config(cfg), tmp_path, progress=False)
    assert ds["family"].values.tolist() == ["student_t"]
    for name in run_mod.DIAGNOSTICS:
        assert np.all(np.isfinite(ds[name].values)), name
    assert float(ds["rhat"].max()) < 1.1
    assert ds["loop_divergences"].dtype.kind == "i"
    assert np.all(ds["regret"].values >= -1e-9)


# ------------------------------------------------------------- the psense flag
def test_coordinate_diagnosis_is_arviz_rule_per_coordinate():
    from bayesrank.studies.sensitivity import plots as sp

    rng = np.random.default_rng(0)
    p, lk = rng.random(50) * 0.1, rng.random(50) * 0.1
    got = sp.coordinate_diagnosis(p, lk, 0.05)
    for a, b, g in zip(p, lk, got):  # the rule of arviz.psense_summary, by hand
        want = ("potential prior-data conflict" if a >= 0.05 and b >= 0.05
                else "potential strong prior / weak likelihood" if a >= 0.05
                else "✓")
        assert g == want
    with pytest.raises(ValueError, match="likelihood: expected the prior's shape"):
        sp.coordinate_diagnosis(p, lk[:3])


def _psense_ds(prior, like):
    """A sweep-shaped Dataset with the given (cell, coordinate) sensitivities."""
    prior, like = np.asarray(prior, float), np.asarray(like, float)
    n, p = prior.shape
    shape = (n, 1, 1, 1, p)
    dims = ("cell", "diag_run", "checkpoint", "position", "theta_dim")
    ones = np.ones(shape)
    return xr.Dataset(
        {
            "psense_prior": (dims, prior.reshape(shape)),
            "psense_likelihood": (dims, like.reshape(shape)),
            "rhat": (dims, ones), "ess_bulk": (dims, 100 * ones),
            "ess_tail": (dims, 100 * ones), "mcse_mean": (dims, 0.01 * ones),
            "divergences": (("cell", "diag_run", "checkpoint", "position"),
                            np.zeros(shape[:-1], int)),
        },
        coords={"cell": np.arange(n), "checkpoint": [100],
                "label": ("cell", [f"c{i}" for i in range(n)])},
        attrs={"psense_threshold": 0.05},
    )


def test_flag_needs_most_coordinates_and_the_same_coordinate():
    from bayesrank.studies.sensitivity import plots as sp

    ds = _psense_ds(
        prior=[[0.2, 0.01, 0.01, 0.01],   # one sensitive coordinate: not flagged
               [0.2, 0.2, 0.2, 0.01],     # most coordinates in conflict: flagged
               [0.2, 0.2, 0.2, 0.01],     # prior high, likelihood low: strong prior
               [0.2, 0.01, 0.01, 0.01]],  # max prior and max likelihood differ
        like=[[0.1, 0.1, 0.1, 0.1],
              [0.1, 0.1, 0.1, 0.1],
              [0.01, 0.01, 0.01, 0.01],
              [0.01, 0.1, 0.1, 0.1]],
    )
    t = sp.diagnostics_table(ds)
    assert t["diagnosis"].tolist() == [
        "✓", "potential prior-data conflict",
        "potential strong prior / weak likelihood", "✓",
    ]
    np.testing.assert_allclose(t["psense_flag_share"], [0.25, 0.75, 0.75, 0.25])


def test_progress_off_imports_no_tqdm():
    import subprocess
    import sys

    code = (
        "import sys; from bayesrank.studies.sensitivity.run import progress_bar; "
        "b = progress_bar(False, total=3); b.update(1); b.close(); "
        "print(any(m.startswith('tqdm') for m in sys.modules))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True)
    assert res.stdout.strip() == "False"


# ------------------------------------------------------------------ latent w
LATENT_CFG = {
    "sweep": {"T": 60, "runs": 2, "seed": 3, "checkpoints": [60], "draws": 100,
              "chains": 2, "diagnostic_runs": 1, "positions": [1]},
    "env": {"K": 6, "L": 2, "d": 3, "w_max": 5.0},
    "priors": {"lw": {"family": "gaussian", "w_prior": ["normal", "cauchy"],
                      "w_scale": 2.0}},
}


@pytest.fixture(scope="module")
def latent_sweep(tmp_path_factory):
    spec = sens.parse_config(json.loads(json.dumps(LATENT_CFG)))
    ds = sens.run_sweep(spec, tmp_path_factory.mktemp("latent"), progress=False)
    return spec, ds


def test_latent_w_cell_equals_simulate_of_rankts_with_that_prior(latent_sweep):
    """A w_prior cell is br.simulate of RankTS(w=<that prior>), seed for seed."""
    import numpyro.distributions as dist

    from bayesrank.policies.ts import RankTS
    from bayesrank.posteriors import GaussianLinear
    from bayesrank.simulation.simulate import simulate

    spec, ds = latent_sweep
    # float32: the sweep's program and simulate's round the regret differently in the
    # last bit (1 ulp seen); one different list in a run moves it by far more than 1e-5
    tol = 1e-9 if jax.config.jax_enable_x64 else 1e-5
    for cell, prior in zip(spec.cells, (dist.Normal(0.0, 2.0), dist.Cauchy(0.0, 2.0))):
        env = cell.env.build()
        ref = simulate(
            env,
            {"ts": lambda s, prior=prior, env=env: RankTS(
                model=GaussianLinear(prior_scale=1.0, noise_scale=1.0),  # the family's
                items=env.items, L=env.L, w=prior, v0=env.v0, seed=s)},
            T=spec.settings.T, runs=spec.settings.runs, seed=spec.settings.seed,
            progress=False,
        )
        np.testing.assert_allclose(ds["regret"].values[cell.index],
                                   ref["regret"].values[0], rtol=tol, atol=tol)
    assert ds["w_prior"].values.tolist() == ["normal", "cauchy"]


def test_latent_w_cell_is_diagnosed_without_a_likelihood_group(latent_sweep):
    _, ds = latent_sweep
    for name in ("rhat", "ess_bulk", "psense_prior"):
        assert np.all(np.isfinite(ds[name].values)), name
    assert float(ds["rhat"].max()) < 1.05  # independent exact draws
    assert np.all(np.isnan(ds["psense_likelihood"].values))


@pytest.mark.parametrize(("block", "key"), [
    ({"w_prior": "gamma"}, "priors.lw.w_prior"),
    ({"w_prior": "normal", "w_scale": 0.0}, "priors.lw.w_scale"),
    ({"w_prior": "normal", "w_location": float("inf")}, "priors.lw.w_location"),
])
def test_invalid_w_prior_names_the_key(block, key):
    cfg = json.loads(json.dumps(LATENT_CFG))
    cfg["priors"]["lw"] = {"family": "gaussian", **block}
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        sens.parse_config(cfg)


def test_w_prior_is_refused_for_nuts_families():
    cfg = json.loads(json.dumps(LATENT_CFG))
    cfg["priors"]["lw"] = {"family": "student_t", "w_prior": "normal"}
    with pytest.raises(ValueError, match=r"priors\.lw\.w_prior"):
        sens.parse_config(cfg)


# ------------------------------------------------------- learnt scales (issue 44)
LEARNT_CFG = {
    "sweep": {"T": 50, "runs": 2, "seed": 4, "checkpoints": [50], "draws": 100,
              "chains": 2, "diagnostic_runs": 1, "positions": [1]},
    "env": {"K": 6, "L": 2, "d": 3, "w_max": 5.0, "noise_sd": [0.1, 10.0]},
    "priors": {"ls": {"family": "gaussian_learnt",
                      "hyperprior": ["half_cauchy", "half_normal"],
                      "hyper_scale": 0.5}},
}


@pytest.fixture(scope="module")
def learnt_sweep(tmp_path_factory):
    spec = sens.parse_config(json.loads(json.dumps(LEARNT_CFG)))
    ds = sens.run_sweep(spec, tmp_path_factory.mktemp("learnt"), progress=False)
    return spec, ds


def test_learnt_scale_cell_equals_simulate_of_rankts_with_that_hyperprior(learnt_sweep):
    """The hyperprior is a grid axis: each cell is br.simulate of RankTS with
    GaussianLinear(prior_scale=<that hyperprior>), seed for seed."""
    import numpyro.distributions as dist

    from bayesrank.policies.ts import RankTS
    from bayesrank.posteriors import GaussianLinear
    from bayesrank.simulation.simulate import simulate

    spec, ds = learnt_sweep
    tol = 1e-9 if jax.config.jax_enable_x64 else 1e-5
    hyper = {"half_cauchy": dist.HalfCauchy(0.5), "half_normal": dist.HalfNormal(0.5)}
    assert len(spec.cells) == 4
    for cell in spec.cells:
        env = cell.env.build()
        prior = hyper[cell.prior.hyperprior]
        ref = simulate(
            env,
            {"ts": lambda s, prior=prior, env=env: RankTS(
                model=GaussianLinear(prior_scale=prior), items=env.items, w=env.w,
                v0=env.v0, seed=s)},
            T=spec.settings.T, runs=spec.settings.runs, seed=spec.settings.seed,
            progress=False,
        )
        np.testing.assert_allclose(ds["regret"].values[cell.index],
                                   ref["regret"].values[0], rtol=tol, atol=tol)
    assert sorted(set(ds["hyperprior"].values.tolist())) == ["half_cauchy",
                                                              "half_normal"]
    for name in ("rhat", "ess_bulk", "psense_prior"):
        assert np.all(np.isfinite(ds[name].values)), name


@pytest.mark.parametrize(("block", "key"), [
    ({"hyperprior": "gamma"}, "priors.ls.hyperprior"),
    ({"hyper_scale": 0.0}, "priors.ls.hyper_scale"),
    ({"noise_scale": 1.0}, "priors.ls"),
    ({"scale": 1.0}, "priors.ls"),
])
def test_invalid_hyperprior_names_the_key(block, key):
    cfg = json.loads(json.dumps(LEARNT_CFG))
    cfg["priors"]["ls"] = {"family": "gaussian_learnt", **block}
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        sens.parse_config(cfg)
