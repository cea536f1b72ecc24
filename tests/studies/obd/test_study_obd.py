"""``bayesrank study obd``: the real-items study end to end (quick scale)."""

import json

import numpy as np
import pytest
import xarray as xr

import bayesrank as br
from bayesrank.cli import main
from bayesrank.studies.obd import report as obd_report
from bayesrank.studies.obd import study as obd

#: the scale of the module's run: the largest w_max of the study only, short runs
#: (under 90 s on two shared cores); the real --quick scale runs in the slow test
SMALL = obd.StudyConfig(w_max=(5.0,), T=200, runs=2)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """``bayesrank study obd --quick`` through the CLI, at the SMALL scale."""
    out = tmp_path_factory.mktemp("obd")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(obd, "QUICK", SMALL)
        assert main(["study", "obd", "--quick", "--out", str(out)]) == 0
    return out


def test_writes_png_netcdf_and_report_with_every_policy(quick_run):
    png = quick_run / "regret.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size < 300_000
    res = xr.load_dataset(quick_run / "results.nc")
    assert list(res["policy"].values) == list(obd.POLICIES)
    assert res["regret"].dims == ("w_max", "policy", "run", "round")
    cfg = json.loads(res.attrs["config"])
    assert cfg["T"] == SMALL.T and cfg["runs"] == SMALL.runs
    shape = (len(SMALL.w_max), len(obd.POLICIES), SMALL.runs, SMALL.T)
    assert res["regret"].shape == shape
    np.testing.assert_array_equal(res["w_max"], SMALL.w_max)
    assert np.all(np.isfinite(res["regret"])) and np.all(res["regret"] >= -1e-9)
    text = (quick_run / "report.md").read_text()
    for name in obd.POLICIES:
        assert name in text
    assert "cannot be rebuilt" in text and "not identifiable" in text


def test_neighbour_aware_policies_beat_the_baseline_at_the_largest_w_max(quick_run):
    res = xr.load_dataset(quick_run / "results.nc")
    end = obd_report.end_regret(res).mean("run")
    big = end.sel(w_max=res["w_max"].max())
    aware = [n for n, e in obd.POLICIES.items() if e.neighbour_aware]
    assert len(aware) == 4 and len(obd.POLICIES) == 5
    for name in aware:
        assert float(big.sel(policy=name)) < float(big.sel(policy="Baseline")), name


def test_environment_is_stored_and_matches_the_generator(quick_run):
    res = xr.load_dataset(quick_run / "results.nc")
    for w_max in res["w_max"].values:
        env = obd.build_env(SMALL, float(w_max))
        s = res.sel(w_max=w_max)
        np.testing.assert_allclose(s["w"], np.asarray(env.w))
        np.testing.assert_allclose(s["theta"], np.asarray(env.theta))
        assert float(s["w_max_realised"]) == pytest.approx(np.abs(env.w[1:]).max())
        assert float(s["best_value"]) == pytest.approx(float(env.best_value))


def test_log_checks_against_hand_computation():
    chk = obd_report.log_checks("all")
    assert chk["clicks"] == [13, 14, 11] and chk["full_lists"] == 0
    lo, hi = chk["intervals"][0]
    assert lo < 13 / 3322 < hi
    # Wilson interval of 13 / 3322, by the textbook formula (z = 1.96)
    p, n, z = 13 / 3322, 3322, 1.959964
    c = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    h = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    assert (lo, hi) == pytest.approx((c - h, c + h))
    # likelihood-ratio statistic against scipy's G-test of the 2 x 3 table
    from scipy.stats import chi2_contingency

    table = np.array([chk["clicks"], np.subtract(chk["impressions"], chk["clicks"])])
    g, pval, *_ = chi2_contingency(table, lambda_="log-likelihood", correction=False)
    assert chk["lr"] == pytest.approx(g) and chk["p_value"] == pytest.approx(pval)


@pytest.mark.parametrize(
    "argv",
    [
        ["study", "nope"],
        ["study", "obd", "--seed", "x"],
        ["study", "obd", "--bogus"],
    ],
)
def test_bad_flags_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2


def test_registry_rejects_unknown_names():
    env = obd.build_env(obd.QUICK, 1.0)
    with pytest.raises(ValueError, match="^names:"):
        obd.policy_factories(env, obd.QUICK, ["RankTS-Magic"])


def test_five_policies_and_their_models():
    env = obd.build_env(SMALL, 5.0)
    pols = {n: f(0) for n, f in obd.policy_factories(env, SMALL).items()}
    assert list(pols) == [
        "RankTS-Laplace", "RankTS-NUTS", "RankUCB", "GenRankUCB", "Baseline"
    ]
    lap, nuts = pols["RankTS-Laplace"].model, pols["RankTS-NUTS"].model
    assert isinstance(lap, br.LaplaceGLM) and lap.link.name == "logistic"
    assert lap.prior_scale == SMALL.prior_scale and lap.n_max == SMALL.T
    assert isinstance(nuts, br.BayesGLM) and nuts.link.name == "logistic"
    for n in ("RankUCB", "GenRankUCB", "Baseline"):
        assert pols[n].model.link.name == "identity" and pols[n].alpha == SMALL.alpha
    np.testing.assert_allclose(pols["RankTS-Laplace"].w, env.w)
    np.testing.assert_allclose(pols["RankUCB"].w, env.w)


@pytest.mark.slow
def test_quick_scale_through_the_cli(tmp_path):
    """The real ``--quick`` scale (two w_max, a few minutes)."""
    assert main(["study", "obd", "--quick", "--out", str(tmp_path)]) == 0
    res = xr.load_dataset(tmp_path / "results.nc")
    assert list(res["policy"].values) == list(obd.POLICIES)
    np.testing.assert_array_equal(res["w_max"], obd.QUICK.w_max)
    end = obd_report.end_regret(res).mean("run").sel(w_max=max(obd.QUICK.w_max))
    for name, e in obd.POLICIES.items():
        if e.neighbour_aware:
            assert float(end.sel(policy=name)) < float(end.sel(policy="Baseline"))
    # w = 0: RankUCB's model is the baseline's, same width, same noise draws
    r0 = res["regret"].sel(w_max=0.0)
    np.testing.assert_array_equal(r0.sel(policy="RankUCB"), r0.sel(policy="Baseline"))
