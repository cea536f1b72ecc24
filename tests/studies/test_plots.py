"""bayesrank.studies.plots: distinguishable curves, coinciding policies, the band's label."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr

import bayesrank as br
from bayesrank.studies import plots
from bayesrank.studies.paper import unknown_w


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


def _study_names():
    env = br.RankingEnv.paper(seed=0, K=6, L=3, d=2, w_max=2.0)
    return [list(unknown_w.policies(env)), list(unknown_w.glm_policies(env, n_max=10))]


@pytest.mark.parametrize("which", [0, 1], ids=["linear", "logistic"])
def test_every_curve_of_the_unknown_w_figures_has_its_own_colour_and_style(which):
    names = _study_names()[which]
    st = plots.figure_styles(names)
    assert len({c for c, _, _ in st.values()}) == len(names)
    assert len({(ls, m) for _, ls, m in st.values()}) == len(names)
    # the fixed styles of the paper's algorithms are kept
    assert plots.figure_styles(["RankTS", "x"])["RankTS"][0] == plots.COLORS["RankTS"]


def test_smoothed_curves_start_where_their_window_is_full_and_the_legend_sits_beside():
    r = np.ones((7, 2, 40))
    r[:, :, 0] = 9.0  # a first round unlike the rest
    ds = xr.Dataset({"regret": (("policy", "run", "round"), r)},
                    coords={"policy": [f"p{i}" for i in range(7)], "round": range(40)})
    fig = plots.regret_curves(ds, window=5)
    ax = fig.axes[0]
    x = ax.lines[0].get_xdata()
    assert x[0] == 5 and x[-1] == 40  # rounds 1-4 hold a partial mean: not drawn
    leg = ax.get_legend()
    assert leg is not None and leg.get_bbox_to_anchor().x0 > ax.bbox.x1 - 1
    assert "from round 5" in leg.get_title().get_text()
    plt.close(fig)
    fig = plots.regret_curves(ds.isel(policy=[0, 1]), cumulative=True)
    assert fig.axes[0].lines[0].get_xdata()[0] == 1  # cumulative: every round
    plt.close(fig)


def test_a_saved_figure_holds_its_title_beside_an_outside_legend(tmp_path):
    # the unknown-w study's long title over axes that an outside legend narrows:
    # every artist's extent (title included) must fit in the saved image
    rng = np.random.default_rng(2)
    names = ["RankTS (known w)", "RankTS (latent w)", "GenRankTS",
             "GenRankUCB (authors' alpha, c1 = 1/4)", "Baseline (RankTS, w = 0)"]
    ds = _ds(rng.random((5, 4, 300)), names)
    fig = plots.regret_curves(
        ds, window=20, title="Unknown w: K=100, L=4, d=5, logistic link, max|w| range 10")
    dpi = 100
    fig.set_dpi(dpi)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    drawn = fig.get_tightbbox(renderer)  # inches, figure coordinates
    title = fig.axes[0].title.get_window_extent(renderer)
    assert title.x0 < 0  # the case at hand: the title starts left of the figure
    plots.save(fig, tmp_path / "f.png", dpi=dpi)
    h, w = plt.imread(tmp_path / "f.png").shape[:2]
    assert w >= drawn.width * dpi - 1 and h >= drawn.height * dpi - 1
    assert w >= title.width  # the title's whole width is in the image
