"""bayesrank.datasets.obd: the vendored Open Bandit Dataset items and log summary."""

import glob
import socket
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.decomposition import PCA

import bayesrank as br
from bayesrank.datasets import obd

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bayesrank" / "datasets" / "data" / "obd"
SIZES = {"all": (80, 41), "men": (34, 28), "women": (46, 33)}


def _reference(campaign):
    """Independent encoding with pandas: one-hot (sorted categories), z-scored price."""
    df = pd.read_csv(DATA / "random" / campaign / "item_context.csv", index_col=0)
    cats = [
        pd.get_dummies(df[c], dtype=float)
        for c in ("item_feature_1", "item_feature_2", "item_feature_3")
    ]
    num = df["item_feature_0"]
    num = (num - num.mean()) / num.std(ddof=0)
    return np.c_[np.concatenate([c.to_numpy() for c in cats], axis=1), num], df


@pytest.mark.parametrize("campaign", ["all", "men", "women"])
def test_items_match_an_independent_pandas_encoding(campaign):
    V = br.datasets.obd_items(campaign)
    ref, df = _reference(campaign)
    assert V.shape == SIZES[campaign]
    assert np.all(np.isfinite(V))
    np.testing.assert_allclose(V, ref, atol=1e-12)
    np.testing.assert_array_equal(br.datasets.obd_item_ids(campaign), df["item_id"])
    names = br.datasets.obd_feature_names(campaign)
    assert len(names) == V.shape[1] and names[-1].startswith("item_feature_0")


@pytest.mark.parametrize("campaign", ["all", "men", "women"])
@pytest.mark.parametrize("d", [1, 5, 20])
def test_pca_scores_match_scikit_learn(campaign, d):
    V = br.datasets.obd_items(campaign)
    Z = br.datasets.obd_items(campaign, d=d)
    ref = PCA(n_components=d, svd_solver="full").fit_transform(V)
    assert Z.shape == (V.shape[0], d) and np.all(np.isfinite(Z))
    signs = np.sign(np.sum(Z * ref, axis=0))  # components are defined up to sign
    np.testing.assert_allclose(Z, ref * signs, atol=1e-10)
    # our own convention: the largest-magnitude loading of each component is positive
    loadings = np.linalg.lstsq(V - V.mean(0), Z, rcond=None)[0]
    big = loadings[np.argmax(np.abs(loadings), axis=0), np.arange(d)]
    assert np.all(big > 0)


def test_returned_arrays_are_fresh_copies():
    V = br.datasets.obd_items("men")
    V[:] = 0.0
    assert np.abs(br.datasets.obd_items("men")).sum() > 0


def test_loads_without_network(monkeypatch):
    obd._context.cache_clear()
    obd._encoded.cache_clear()

    def no_network(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    for campaign, shape in SIZES.items():
        assert br.datasets.obd_items(campaign).shape == shape
        assert br.datasets.obd_position_clicks(campaign).impressions.sum() == 10_000


def test_position_clicks_are_those_of_the_summary():
    summary = br.datasets.obd_log_summary()
    for campaign in ("all", "men", "women"):
        entry = summary["campaigns"][campaign]
        pc = br.datasets.obd_position_clicks(campaign)
        assert entry["rows"] == 10_000 == pc.impressions.sum()
        assert entry["positions"] == [1, 2, 3]
        np.testing.assert_array_equal(pc.clicks, entry["clicks"])
        np.testing.assert_allclose(pc.rates, pc.clicks / pc.impressions)
        assert entry["items_in_log"] == SIZES[campaign][0]
    # the random log's rates for "all", as stated in the docs
    np.testing.assert_array_equal(
        br.datasets.obd_position_clicks("all").clicks, [13, 14, 11]
    )


def test_package_data_globs_cover_every_vendored_file():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = cfg["tool"]["setuptools"]["package-data"]["bayesrank.datasets"]
    files = [
        p.relative_to(ROOT / "bayesrank" / "datasets").as_posix()
        for p in DATA.rglob("*")
        if p.is_file()
    ]
    assert {"data/obd/LICENSE", "data/obd/NOTICE", "data/obd/log_summary.json"} <= set(
        files
    )
    assert len(files) == 6
    # setuptools expands the globs like glob.glob ("*" does not cross "/")
    root = ROOT / "bayesrank" / "datasets"
    matched = {
        m for g in globs for m in glob.glob(g, root_dir=root) if (root / m).is_file()
    }
    assert matched == set(files)


@pytest.mark.parametrize(
    "kwargs, argname, exc",
    [
        ({"campaign": "kids"}, "campaign", ValueError),
        ({"campaign": None}, "campaign", ValueError),
        ({"policy": "bts"}, "policy", ValueError),
        ({"d": 0}, "d", ValueError),
        ({"d": 42}, "d", ValueError),
        ({"campaign": "men", "d": 29}, "d", ValueError),
        ({"d": 2.5}, "d", TypeError),  # the wrong kind: a TypeError (_validate)
        ({"d": True}, "d", TypeError),
        ({"d": "3"}, "d", TypeError),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, argname, exc):
    with pytest.raises(exc, match=rf"^{argname}:"):
        br.datasets.obd_items(**kwargs)


@pytest.mark.parametrize(
    "fn", [br.datasets.obd_item_ids, br.datasets.obd_position_clicks]
)
def test_companions_reject_unknown_campaign(fn):
    with pytest.raises(ValueError, match="^campaign:"):
        fn("kids")
