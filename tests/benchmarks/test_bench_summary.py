"""The over-runs summary of ``benchmarks/decode_scale.py --runs N`` (plain arithmetic
on rows, checked against values worked out by hand)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from decode_scale import summary  # noqa: E402


def _row(policy, K, fast, dense=None, run=0):
    r = {"policy": policy, "K": K, "fast_ms": fast, "run": run}
    if dense is not None:
        r.update(dense_ms=dense, dense_over_fast=dense / fast)
    return r


def test_summary_medians_and_range_per_row():
    rows = []
    for run, (fast, dense, ident) in enumerate([(10.0, 200.0, 0.2), (8.0, 200.0, 0.4),
                                                (20.0, 100.0, 0.3)]):
        rows += [_row("ucb-early", 3000, fast, dense, run),
                 _row("ts-identity", 3000, ident, None, run)]
    out = summary(rows)
    assert [(r["policy"], r["runs"]) for r in out] == [("ucb-early", 3),
                                                       ("ts-identity", 3)]
    early, ident = out
    # ratios 20, 25, 5: median 20 (the mean, 16.7, would differ); times 10 and 200
    assert early["ratio_median"] == pytest.approx(20.0)
    assert early["ratio_min"] == pytest.approx(5.0)
    assert early["ratio_max"] == pytest.approx(25.0)
    assert early["fast_ms"] == pytest.approx(10.0)
    assert early["dense_ms"] == pytest.approx(200.0)
    assert ident["fast_ms"] == pytest.approx(0.3) and "dense_ms" not in ident


def test_summary_keeps_sizes_apart():
    rows = [_row("ucb-late", 1000, 1.0, 30.0), _row("ucb-late", 3000, 2.0, 200.0)]
    out = summary(rows)
    assert [(r["K"], r["ratio_median"]) for r in out] == [
        (1000, pytest.approx(30.0)), (3000, pytest.approx(100.0))]
