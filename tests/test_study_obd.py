"""``bayesrank study obd``: the real-items study end to end (quick scale)."""

import json

import numpy as np
import pytest
import xarray as xr

from bayesrank.cli import main
from bayesrank.studies import obd, obd_report


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("obd")
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
    shape = (len(obd.QUICK.w_max), len(obd.POLICIES), cfg["runs"], cfg["T"])
    assert res["regret"].shape == shape
    np.testing.assert_array_equal(res["w_max"], obd.QUICK.w_max)
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
    assert len(aware) >= 3
    for name in aware:
        assert float(big.sel(policy=name)) < float(big.sel(policy="Baseline")), name


def test_environment_is_stored_and_matches_the_generator(quick_run):
    res = xr.load_dataset(quick_run / "results.nc")
    for w_max in res["w_max"].values:
        env = obd.build_env(obd.QUICK, float(w_max))
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
