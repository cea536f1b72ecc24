"""The study runner and the registry: labels, summaries, a tiny run's layout."""

import numpy as np
import pytest
from scipy import stats

from bayesrank.studies.calibration import registry
from bayesrank.studies.calibration.study import _ks, _resolve, coverage90, run_study


def test_model_names_put_inloop_rounds_before_the_negative_control():
    s = registry.FULL
    names = registry.model_names(s)
    assert names[:8] == ["GaussianLinear", "GaussianLinearUnknownNoise",
                         "GaussianLinear-learnt", "GaussianLinear-learnt-prior-scale",
                         "LaplaceGLM-logistic", "LaplaceGLM-exp",
                         "LaplaceGLM-logistic-learnt", "BayesGLM-logistic"]
    assert names[8:17] == ["LatentW-GaussianLinear", "LatentW-learnt",
                           "LatentW-UnknownNoise", "LatentLaplace-logistic",
                           "LatentJointMAP-logistic", "LatentLaplace-logistic-learnt",
                           "LatentW-rankts-draw", "LatentW-learnt-rankts-draw",
                           "LatentW-learnt-vague-rankts-draw"]
    assert names[17:20] == [f"RankTS-NUTS-round-{t}" for t in (10, 100, 1000)]
    assert names[-2:] == ["negative_control", "negative_control-LatentW"]


@pytest.mark.parametrize("bad, match", [
    (["Nope"], r"models: unknown \['Nope'\]"),
    (["RankTS-NUTS-round-x"], "must end in a round number >= 1"),
    (["RankTS-NUTS-round-0"], "must end in a round number >= 1"),
])
def test_unknown_labels_are_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        _resolve(bad, registry.QUICK)


def test_any_inloop_round_may_be_named():
    assert _resolve(["RankTS-NUTS-round-7"], registry.QUICK) == ["RankTS-NUTS-round-7"]


def test_coverage90_counts_ranks_in_the_central_90_percent():
    M = 99  # ranks 0..99: (r + 0.5) / 100 in (0.05, 0.95) for r = 5..94
    ranks = np.arange(M + 1)[:, None]
    assert coverage90(ranks, M) == pytest.approx(0.90)


@pytest.mark.parametrize("power", [0.7, 1.3])  # ECDF above / below the identity
def test_ks_distance_equals_scipy(power):
    u = np.random.default_rng(0).uniform(size=(60, 1)) ** power
    assert _ks(u) == pytest.approx(stats.kstest(u[:, 0], "uniform").statistic)


def test_tiny_study_with_a_by_n_sweep_has_the_stated_layout():
    # the by-n sweep runs for the approximate models only
    s = registry.QUICK._replace(n_sims=30, draws=9, n_obs=10, n_grid=(5,), n_null=500)
    dt = run_study(s, ["LaplaceGLM-logistic"])
    assert list(dt["model"].values) == ["LaplaceGLM-logistic"]
    by_n = dt["by_n"].to_dataset()
    assert list(by_n["model_by_n"].values) == ["LaplaceGLM-logistic"]
    assert by_n["p_value_by_n"].shape == (1, 1)
    assert list(by_n["n_obs"].values) == [5]
    assert np.all((by_n["coverage90_by_n"] >= 0) & (by_n["coverage90_by_n"] <= 1))
    node = dt["models/LaplaceGLM-logistic"].to_dataset()
    assert node["ranks"].shape == (30, s.design.L * s.design.d)
    assert node.attrs["kind"] == "approximate" and node.attrs["n_obs"] == 10
