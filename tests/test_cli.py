"""The command line: every subcommand at a small scale, and usage errors."""

import subprocess
import sys

import pytest
import xarray as xr

from bayesrank import cli
from bayesrank.experiments import reproduce as rep


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "bayesrank", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["--nope"],
        ["demo", "--K", "ten"],
        ["reproduce", "figure9"],
        ["sweep"],
        ["frobnicate"],
        [],
    ],
)
def test_bad_flags_print_usage_not_a_traceback(args):
    res = run_cli(*args)
    assert res.returncode == 2
    assert "usage:" in res.stderr
    assert "Traceback" not in res.stderr


def test_errors_from_the_library_are_one_line(tmp_path):
    res = run_cli("sweep", str(tmp_path / "missing.toml"))
    assert res.returncode == 2
    assert "Traceback" not in res.stderr and "error" in res.stderr
    res = run_cli("bench", "no-such-benchmark")
    assert res.returncode == 2 and "no-such-benchmark" in res.stderr


def test_demo_quick_writes_png_and_netcdf(tmp_path, capsys):
    assert cli.main(["demo", "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "RankTS" in out and "Baseline" in out
    assert (tmp_path / "regret.png").stat().st_size > 10_000
    ds = xr.load_dataset(tmp_path / "results.nc")
    assert set(ds["policy"].values) == {"RankTS", "RankUCB", "GenRankUCB", "Baseline"}
    # the baseline ignores the neighbour dependency and ends with the highest regret
    final = ds["regret"].isel(round=slice(-50, None)).mean(("run", "round"))
    assert final.sel(policy="Baseline") == final.max()


@pytest.fixture
def tiny_scale(monkeypatch):
    monkeypatch.setitem(rep.SCALES, "quick", {"T": 60, "runs": 2})


@pytest.mark.parametrize("part", ["figure1", "tightness"])
def test_reproduce_parts_write_their_files(part, tmp_path, tiny_scale):
    assert cli.main(["reproduce", part, "--quick", "--out", str(tmp_path)]) == 0
    report = (tmp_path / f"report_{part}.md").read_text()
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert pngs and all(f"({p})" in report for p in pngs)
    assert list(tmp_path.glob("*.nc"))


def test_reproduce_timing_table(tmp_path, tiny_scale, monkeypatch):
    monkeypatch.setattr(
        rep,
        "response_times",
        lambda K, rounds=0, seed=0: {
            n: 1.0 for n in ("RankTS", "RankUCB", "GenRankUCB", "Baseline")
        },
    )
    assert cli.main(["reproduce", "timing", "--quick", "--out", str(tmp_path)]) == 0
    table = (tmp_path / "timing.md").read_text()
    assert (
        "730.9" in table and "729.6" in table
    )  # the paper's numbers stand beside ours


def test_response_times_measures_every_algorithm():
    art = rep.response_times(10, rounds=5)
    assert set(art) == {"RankTS", "RankUCB", "GenRankUCB", "Baseline"}
    assert all(v > 0 for v in art.values())


@pytest.mark.slow
def test_reproduce_all_quick(tmp_path):
    res = run_cli("reproduce", "all", "--quick", "--out", str(tmp_path))
    assert res.returncode == 0, res.stderr[-2000:]
    assert (tmp_path / "report.md").exists()
    # figure1 (2) + appendix (3) + robustness (3) + nonlinear (2) + tightness (3)
    assert len(list(tmp_path.glob("*.png"))) == 13


@pytest.mark.slow
def test_bench_decode_quick():
    res = run_cli("bench", "decode", "--quick")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "networkx" in res.stdout
