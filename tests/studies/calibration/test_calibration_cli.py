"""``bayesrank calibrate --quick``: the verdicts, the NetCDF layout, the report.

The quick study runs once (module fixture) through the command line's entry point.
"""

import json

import numpy as np
import pytest
import xarray as xr

from bayesrank import cli
from bayesrank.studies.calibration import registry

ALPHA = 0.01


#: The quick study through the command line takes about 85 s on a cold cache: the
#: tests that read it run with ``-m slow``; ``test_calibration_study`` runs a tiny
#: study through the same ``run_study`` and report in the default suite.
slow = pytest.mark.slow


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("calibrate")
    assert cli.main(["calibrate", "--quick", "--out", str(out)]) == 0
    return out, xr.open_datatree(out / "calibration.nc", engine="h5netcdf")


@slow
def test_p_value_over_the_named_models(quick):
    _, dt = quick
    names = list(dt["model"].values)
    assert names == registry.model_names(registry.QUICK)
    for want in ("GaussianLinear", "GaussianLinearUnknownNoise", "LaplaceGLM-logistic",
                 "LaplaceGLM-exp", "BayesGLM-logistic", "RankTS-NUTS-round-10",
                 "RankTS-NUTS-round-100", "negative_control"):
        assert want in names
    assert dt["p_value"].dims == ("model",)
    assert np.all((dt["p_value"] > 0) & (dt["p_value"] <= 1))


@slow
def test_exact_models_pass_and_the_negative_control_is_flagged(quick):
    _, dt = quick
    p = dt["p_value"]
    assert float(p.sel(model="GaussianLinear")) >= ALPHA
    assert float(p.sel(model="GaussianLinearUnknownNoise")) >= ALPHA
    assert float(p.sel(model="negative_control")) < ALPHA
    assert not bool(dt["passed"].sel(model="negative_control"))


#: coordinates per position beyond theta (and w) of the models whose draws carry
#: their scales (ScaleDraws: log g and log s, log g alone, or log tau)
SCALE_COORDINATES = {"GaussianLinear-learnt": 2, "GaussianLinear-learnt-prior-scale": 1,
                     "LaplaceGLM-logistic-learnt": 1}


@slow
def test_every_model_node_holds_its_ranks_and_settings(quick):
    _, dt = quick
    s = registry.QUICK
    for name in dt["model"].values:
        # theta per position, and w_l too where w is latent (RankTS(w=<prior>))
        # ... and the learnt scales' coordinates: log g and log s, or log tau
        scales = SCALE_COORDINATES.get(name, 0)
        D = s.design.L * (s.design.d + ("Latent" in name) + scales)
        ds = dt[f"models/{name}"].to_dataset()
        ranks = ds["ranks"]
        assert ranks.dims == ("simulation", "coordinate")
        M = int(ds.attrs["draws"])
        assert ranks.shape[1] == D and ranks.shape[0] == int(ds.attrs["N"])
        assert int(ranks.min()) >= 0 and int(ranks.max()) <= M
        for key in ("thinning", "warmup", "kind"):
            assert key in ds.attrs
        # the model's p-value is Bonferroni over its coordinates' p-values
        p_coord = ds["p_coordinate"].values
        want = min(1.0, D * p_coord.min())
        assert float(dt["p_value"].sel(model=name)) == pytest.approx(want)
    settings = json.loads(dt.attrs["settings"])
    assert settings["n_sims"] == s.n_sims and settings["draws"] == s.draws
    assert dt.attrs["N"] == s.n_sims and "Bonferroni" in dt.attrs["test"]


@slow
def test_report_states_the_inloop_verdict_and_links_the_figures(quick):
    out, dt = quick
    text = (out / "calibration.md").read_text()
    assert "calibrated at rounds:" in text and "NOT calibrated at rounds:" in text
    for name in dt["model"].values:
        assert f"| {name} |" in text
    for png in ("ecdf.png", "ranks.png"):
        assert (out / png).stat().st_size > 5_000
        assert f"({png})" in text


def test_unknown_model_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["calibrate", "--quick", "--out", str(tmp_path), "--models", "Nope"])
    assert exc.value.code == 2
    assert "models: unknown ['Nope']" in capsys.readouterr().err
    assert not (tmp_path / "calibration.nc").exists()


def test_two_models_through_the_command_line(tmp_path):
    """The default suite's end-to-end run: an exact model and the negative control
    through ``bayesrank calibrate --quick --models``, report and figures included."""
    assert cli.main(["calibrate", "--quick", "--out", str(tmp_path), "--models",
                     "GaussianLinear", "negative_control"]) == 0
    dt = xr.open_datatree(tmp_path / "calibration.nc", engine="h5netcdf")
    assert list(dt["model"].values) == ["GaussianLinear", "negative_control"]
    assert float(dt["p_value"].sel(model="GaussianLinear")) >= ALPHA
    assert float(dt["p_value"].sel(model="negative_control")) < ALPHA
    text = (tmp_path / "calibration.md").read_text()
    for name in ("GaussianLinear", "negative_control"):
        assert f"| {name} |" in text
    for png in ("ecdf.png", "ranks.png"):
        assert (tmp_path / png).stat().st_size > 5_000 and f"({png})" in text
