"""bayesrank.studies.plots: distinguishable curves, coinciding policies, the band's label."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import xarray as xr

from bayesrank.studies import plots


def _ds(regret, names):
    r = np.asarray(regret, dtype=float)
    return xr.Dataset(
        {"regret": (("policy", "run", "round"), r)},
        coords={"policy": names, "round": np.arange(r.shape[-1])},
    )


def test_coinciding_groups_equal_policies_only():
    rng = np.random.default_rng(0)
    a = rng.random((3, 50))
    b = rng.random((3, 50))
    ds = _ds([a, b, a.copy(), b + 1e-3], ["RankTS", "RankUCB", "Baseline", "X"])
    # brute force over pairs
    ref = [["RankTS", "Baseline"]]
    assert plots.coinciding(ds) == ref


def test_regret_curves_label_coinciding_policies_and_differ_in_style():
    rng = np.random.default_rng(1)
    a = rng.random((4, 80))
    ds = _ds([a, a.copy(), rng.random((4, 80))], ["RankUCB", "Baseline", "RankTS"])
    fig = plots.regret_curves(ds, window=5)
    ax = fig.axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert "RankUCB (identical to Baseline)" in lines
    assert "Baseline (identical to RankUCB)" in lines
    l1 = lines["RankUCB (identical to Baseline)"]
    l2 = lines["Baseline (identical to RankUCB)"]
    # drawn on top of each other, yet different line style and marker
    np.testing.assert_array_equal(l1.get_ydata(), l2.get_ydata())
    assert l1.get_linestyle() != l2.get_linestyle()
    assert l1.get_marker() != l2.get_marker()
    title = ax.get_legend().get_title().get_text()
    assert "10-90 % of 4 runs" in title and "trailing mean over 5 rounds" in title


def test_every_paper_policy_has_its_own_style():
    names = ["RankTS", "RankUCB", "GenRankUCB", "Baseline"]
    styles = [plots.style_for(n) for n in names]
    assert len(set(map(str, styles))) == len(names)


@pytest.mark.parametrize("band, runs, want", [
    ("quantile", 8, "shaded: 10-90 % of 8 runs"),
    ("se", 3, "shaded: mean +- 2 s.e. over 3 runs"),
    (None, 8, None),
    ("quantile", 1, None),
])
def test_band_label(band, runs, want):
    assert plots.band_label(band, runs) == want
