"""Items and log statistics of the Open Bandit Dataset (OBD) sample.

The OBD (Saito et al., "Open Bandit Dataset and Pipeline", NeurIPS 2021 Datasets and
Benchmarks track) logs ZOZOTOWN fashion recommendations: three positions shown together,
one click indicator per (item, position) impression. bayesrank vendors the small sample
shipped in the ``obp`` 0.5.7 source archive (Apache-2.0; licence and citation in
``bayesrank/datasets/data/obd/NOTICE``), for the uniform-random logging policy only:

* the item features (``item_context.csv``; 80 / 34 / 46 items for the campaigns
  "all" / "men" / "women"): one numeric feature (``item_feature_0``) and three hashed
  categorical features (``item_feature_1..3``);
* a summary of each 10,000-row log (per-position impressions and clicks, how many rows
  share a timestamp), derived by ``scripts/obd_vendor.py``; the logs are not vendored.

Everything loads from the package's own files (plain CSV and JSON), with no network.

Example:
    >>> import bayesrank as br
    >>> br.datasets.obd_items("men").shape
    (34, 28)
    >>> br.datasets.obd_items("women", d=5).shape
    (46, 5)
"""

from __future__ import annotations

import csv
import functools
import json
from importlib import resources
from typing import NamedTuple

import numpy as np

from bayesrank._validate import check_choice, check_int

__all__ = [
    "CAMPAIGNS",
    "PositionClicks",
    "obd_feature_names",
    "obd_item_ids",
    "obd_items",
    "obd_log_summary",
    "obd_position_clicks",
]

#: The dataset's campaigns ("all", "men" and "women").
CAMPAIGNS = ("all", "men", "women")
#: the logging policies whose files are vendored
POLICIES = ("random",)
_CATEGORICAL = ("item_feature_1", "item_feature_2", "item_feature_3")
_NUMERIC = "item_feature_0"


def _data_dir():
    return resources.files("bayesrank.datasets").joinpath("data", "obd")


def _refuse_unknown(campaign, policy) -> None:
    check_choice(campaign, "campaign", CAMPAIGNS)
    if not isinstance(policy, str) or policy not in POLICIES:
        raise ValueError(
            f"policy: expected one of {POLICIES} (only the uniform-random log's files "
            f"are vendored), got {policy!r}"
        )


@functools.cache
def _context(campaign: str, policy: str) -> tuple[dict, ...]:
    path = _data_dir().joinpath(policy, campaign, "item_context.csv")
    with path.open("r", encoding="utf-8", newline="") as f:
        rows = tuple(csv.DictReader(f))
    ids = [int(r["item_id"]) for r in rows]
    if ids != list(range(len(rows))):  # the files list items 0..K-1 in order
        raise ValueError(f"{path}: item ids are not 0..K-1 in order")
    return rows


@functools.cache
def _encoded(campaign: str, policy: str) -> tuple[np.ndarray, tuple[str, ...]]:
    """One-hot categoricals (sorted category codes) then the standardised numeric."""
    rows = _context(campaign, policy)
    blocks, names = [], []
    for col in _CATEGORICAL:
        values = [r[col] for r in rows]
        cats = sorted(set(values))
        index = {c: i for i, c in enumerate(cats)}
        onehot = np.zeros((len(rows), len(cats)))
        onehot[np.arange(len(rows)), [index[v] for v in values]] = 1.0
        blocks.append(onehot)
        names += [f"{col}={c}" for c in cats]
    num = np.array([float(r[_NUMERIC]) for r in rows])
    num = (num - num.mean()) / num.std()
    blocks.append(num[:, None])
    names.append(f"{_NUMERIC} (standardised)")
    X = np.concatenate(blocks, axis=1)
    X.setflags(write=False)
    return X, tuple(names)


def _pca(X: np.ndarray, d: int) -> np.ndarray:
    """Scores on the first ``d`` principal components (centred X, NumPy SVD).

    Signs follow scikit-learn's convention: each component's largest-magnitude
    loading is positive.
    """
    Xc = X - X.mean(axis=0)
    U, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    signs = np.sign(Vt[np.arange(Vt.shape[0]), np.argmax(np.abs(Vt), axis=1)])
    signs[signs == 0] = 1.0
    return (U[:, :d] * s[:d]) * signs[:d]


def obd_items(campaign: str = "all", *, policy: str = "random", d=None) -> np.ndarray:
    """Feature vectors of the OBD items of one campaign.

    Columns: a one-hot block for each categorical feature ``item_feature_1..3``
    (categories in sorted order of their hashed codes), then ``item_feature_0``
    standardised to mean 0 and sd 1 over the campaign's items (the files already
    store it so; names in :func:`obd_feature_names`). Row i is the item with id i
    (:func:`obd_item_ids`).
    With ``d``, the rows are instead their scores on the first ``d`` principal
    components of the centred feature matrix (NumPy SVD; the largest-magnitude loading
    of each component is positive).

    Args:
        campaign: "all" (80 items, 41 features), "men" (34, 28) or "women" (46, 33).
        policy: the logging policy whose item file is read; only "random" (the
            uniform-random log) is vendored.
        d: None for the full encoding, or an int in [1, min(K, D)] for PCA scores.

    Returns:
        (K, D) float array, or (K, d) with ``d``; a fresh copy the caller may modify.

    Raises:
        ValueError: an unknown campaign or policy, or ``d`` out of range.

    Example:
        >>> import bayesrank as br
        >>> V = br.datasets.obd_items("all")
        >>> V.shape, br.datasets.obd_item_ids("all")[:3]
        ((80, 41), array([0, 1, 2]))
    """
    _refuse_unknown(campaign, policy)
    X, _ = _encoded(campaign, policy)
    if d is None:
        return X.copy()
    K, D = X.shape
    d = check_int(d, "d")
    if not 1 <= d <= min(K, D):
        raise ValueError(
            f"d: expected an integer in [1, {min(K, D)}] for campaign {campaign!r}, "
            f"got {d}"
        )
    return _pca(X, int(d))


def obd_item_ids(campaign: str = "all", *, policy: str = "random") -> np.ndarray:
    """(K,) int array: the dataset's ``item_id`` of each row of :func:`obd_items`.

    Example:
        >>> import bayesrank as br
        >>> ids = br.datasets.obd_item_ids("men")
        >>> len(ids) == len(br.datasets.obd_items("men")), ids[:3].tolist()
        (True, [0, 1, 2])
    """
    _refuse_unknown(campaign, policy)
    return np.array([int(r["item_id"]) for r in _context(campaign, policy)])


def obd_feature_names(campaign: str = "all", *, policy: str = "random") -> list[str]:
    """The names of :func:`obd_items`' columns (without PCA), e.g.
    ``"item_feature_1=<hashed code>"``.

    Example:
        >>> import bayesrank as br
        >>> names = br.datasets.obd_feature_names("all")
        >>> len(names) == br.datasets.obd_items("all").shape[1]
        True
        >>> names[0].split("=")[0]
        'item_feature_1'
    """
    _refuse_unknown(campaign, policy)
    return list(_encoded(campaign, policy)[1])


class PositionClicks(NamedTuple):
    """Impressions and clicks per position in a logged campaign.

    Example:
        >>> import bayesrank as br
        >>> pc = br.datasets.obd_position_clicks("men")      # a PositionClicks
        >>> pc.impressions.shape, pc.clicks.shape
        ((3,), (3,))
    """

    impressions: np.ndarray  # (3,) int, rows at positions 1, 2, 3
    clicks: np.ndarray  # (3,) int, clicks at positions 1, 2, 3

    @property
    def rates(self) -> np.ndarray:
        """(3,) click rate per position (clicks / impressions)."""
        return self.clicks / self.impressions


def obd_log_summary() -> dict:
    """The summary of the uniform-random logs written by ``scripts/obd_vendor.py``:
    per campaign, rows, per-position impressions and clicks, distinct timestamps and
    ``rows_per_timestamp`` ({rows sharing a timestamp: how many timestamps}), and the
    SHA-256 of the source files (a fresh dict on every call).

    Example:
        >>> import bayesrank as br
        >>> summary = br.datasets.obd_log_summary()
        >>> summary["policy"], sorted(summary["campaigns"])
        ('random', ['all', 'men', 'women'])
    """
    text = _data_dir().joinpath("log_summary.json").read_text(encoding="utf-8")
    return json.loads(text)


def obd_position_clicks(campaign: str = "all", *, policy: str = "random"):
    """Per-position impressions and clicks of a campaign's uniform-random log.

    Example:
        >>> import bayesrank as br
        >>> pc = br.datasets.obd_position_clicks("all")
        >>> pc.impressions.tolist(), pc.clicks.tolist()
        ([3322, 3412, 3266], [13, 14, 11])
    """
    _refuse_unknown(campaign, policy)
    entry = obd_log_summary()["campaigns"][campaign]
    return PositionClicks(
        np.asarray(entry["impressions"], dtype=int), np.asarray(entry["clicks"], int)
    )
