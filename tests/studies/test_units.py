"""The units study (``bayesrank study units``) at a tiny scale: the learnt default's
regret / c and coverage do not move with the reward's units (exactly, in float64),
the old default's do, and the report and figure are written."""

import numpy as np
import pytest

from bayesrank.studies import units

pytestmark = [pytest.mark.x64, pytest.mark.heavy]  # about 25 s: compiles 3 priors


@pytest.fixture(scope="module")
def cells(monkeypatch_module):
    monkeypatch_module.setitem(units.SCALES, "tiny", {
        "K": 8, "d": 3, "rounds": (10, 30), "runs": 2, "cs": (0.01, 100.0), "draws": 60})
    return units.units_cells("tiny", ws=("known", "latent"), progress=False)


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_the_default_is_flat_in_the_units_and_the_old_default_is_not(cells):
    reg = cells["regret"].sel(w="known")
    d = reg.sel(prior="default").values  # (c, run, round)
    np.testing.assert_allclose(d[0], d[1], rtol=1e-6)
    np.testing.assert_array_equal(cells["cover_theta"].sel(w="known", prior="default")
                                  .values[0],
                                  cells["cover_theta"].sel(w="known", prior="default")
                                  .values[1])
    old = reg.sel(prior="old default").values
    assert not np.allclose(old[0], old[1], rtol=0.05)
    assert np.all(np.isnan(cells["cover_w"].sel(w="known").values))  # no w intervals
    assert not np.any(np.isnan(cells["cover_w"].sel(w="latent").values))


def test_report_and_figure(cells, tmp_path):
    text = units.report(cells)
    assert "known w: regret / c at round 30" in text and "| default |" in text
    # every w's heading names the regret (the coverage tables once overwrote it)
    for w in cells["w"].values:
        assert f"## {w} w: regret / c at round 30" in text
    units.figure(cells, tmp_path / "u.png")
    assert (tmp_path / "u.png").stat().st_size > 10_000


def test_logistic_rows(monkeypatch_module, tmp_path):
    """The logistic rows: theta alone times c, Bernoulli clicks, known w; the regret is
    not divided by c, and the learnt default's tau follows c (its theta intervals are
    reported beside the old default's and the oracle's)."""
    monkeypatch_module.setitem(units.SCALES, "tiny", {
        "K": 8, "d": 3, "rounds": (10, 30), "runs": 2, "cs": (0.1, 3.0), "draws": 60})
    ds = units.units_cells("tiny", link="logistic", ws=("known",), progress=False)
    assert list(ds["w"].values) == ["known"] and ds.attrs["link"] == "logistic"
    assert ds.attrs["regret_over_c"] == 0
    reg = ds["regret"].values
    assert np.all(np.isfinite(reg)) and np.all(reg >= 0)
    # sharper clicks (c = 3) cost more clicks to learn than c = 0.1
    assert reg[..., 1, :, -1].mean() > reg[..., 0, :, -1].mean()
    units.write_outputs(ds, tmp_path)
    text = (tmp_path / "units_logistic.md").read_text()
    assert "logistic link" in text and "regret at round 30" in text


def test_unknown_link_is_refused():
    with pytest.raises(ValueError, match="link: expected 'identity' or 'logistic'"):
        units.units_cells("quick", link="probit")


def test_logistic_latent_cells_run_apart_equal_one_call(monkeypatch_module):
    """Latent w with the logistic link (LatentLaplace; the learnt tau's per-node
    expansions): cells run one by one and joined by merge_cells equal one call, cell
    for cell, whatever order the pieces come in; w's intervals are recorded."""
    monkeypatch_module.setitem(units.SCALES, "tiny", {
        "K": 8, "d": 3, "rounds": (8, 16), "runs": 2, "cs": (0.3, 3.0), "draws": 40})
    priors = ("default", "oracle")
    whole = units.units_cells("tiny", link="logistic", ws=("latent",), priors=priors,
                              progress=False)
    pieces = [units.units_cells("tiny", link="logistic", ws=("latent",), priors=(p,),
                                cs=(c,), progress=False)
              for c in (3.0, 0.3) for p in priors[::-1]]
    merged = units.merge_cells(pieces)
    assert list(merged["prior"].values) == list(priors)
    assert list(merged["c"].values) == [0.3, 3.0]
    for var in ("regret", "cover_theta", "cover_w"):
        np.testing.assert_array_equal(merged[var].values, whole[var].values)
    cw = whole["cover_w"].values
    assert np.all((cw >= 0) & (cw <= 1))  # latent w: w's intervals exist
    with pytest.raises(ValueError, match="the same"):
        units.merge_cells(pieces + pieces[:1])
    with pytest.raises(ValueError, match="one scale, seed and link"):
        units.merge_cells([pieces[0], pieces[1].assign_attrs(seed=5)])


def test_bad_ws_and_scale_are_refused():
    with pytest.raises(ValueError, match="ws: expected"):
        units.units_cells("quick", ws=("unknown",))
    with pytest.raises(ValueError, match="scale: expected one of"):
        units.units_cells("huge")
