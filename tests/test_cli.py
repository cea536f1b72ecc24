"""The command line: every subcommand at a small scale, and usage errors."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import bayesrank as br
from bayesrank import cli, theorems
from bayesrank.studies.paper import reproduce as rep


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


@pytest.mark.parametrize("args", [["--nope"], ["--nope", "demo"], ["--quick=1", "demo"]])
def test_an_unknown_top_level_flag_is_named(args, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(args)
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert f"unrecognized arguments: {args[0]} (expected a COMMAND first" in err, err
    assert "required: COMMAND" not in err


@pytest.mark.parametrize(
    "args, usage",
    [
        (["demo", "--nope"], "usage: bayesrank demo"),
        (["demo", "--K", "0"], "usage: bayesrank demo"),
        (["demo", "--T", "-5"], "usage: bayesrank demo"),
        (["demo", "--runs", "0"], "usage: bayesrank demo"),
        (["demo", "--w-max", "nan"], "usage: bayesrank demo"),
        (["reproduce", "--nope"], "usage: bayesrank reproduce"),
        (["reproduce", "--quick", "--scale", "full"], "usage: bayesrank reproduce"),
        (["bench", "--nope"], "usage: bayesrank bench"),
    ],
)
def test_bad_subcommand_flag_prints_that_subcommands_usage(args, usage, tmp_path,
                                                           capsys):
    out = tmp_path / "never"
    with pytest.raises(SystemExit) as exc:
        cli.main([*args, "--out", str(out)] if args[0] == "demo" else args)
    err = capsys.readouterr()
    assert exc.value.code == 2
    assert err.err.startswith(usage), err.err[:200]
    # checked before anything runs: no header printed, no folder made
    assert err.out == "" and not out.exists()


def test_version_flag():
    from bayesrank import __version__

    res = run_cli("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"bayesrank {__version__}"


def test_demo_help_names_the_files_it_writes():
    res = run_cli("demo", "--help")
    assert res.returncode == 0
    assert "regret.png" in res.stdout and "results.nc" in res.stdout


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
    assert set(ds["policy"].values) == {"RankTS", "RankUCB", "GenRankUCB", "Baseline",
                                         "RankTS (latent w)"}
    # the baseline ignores the neighbour dependency and ends with the highest regret
    final = ds["regret"].isel(round=slice(-50, None)).mean(("run", "round"))
    assert final.sel(policy="Baseline") == final.max()


@pytest.fixture
def tiny_scale(monkeypatch):
    monkeypatch.setitem(rep.SCALES, "quick", {"T": 60, "runs": 2})


# figure1 compiles four panels (about 50 s on a cold cache): -m slow; tightness stays.
@pytest.mark.parametrize("part", [pytest.param("figure1", marks=pytest.mark.slow),
                                  "tightness"])
def test_reproduce_parts_write_their_files(part, tmp_path, tiny_scale):
    assert cli.main(["reproduce", part, "--quick", "--out", str(tmp_path)]) == 0
    report = (tmp_path / f"report_{part}.md").read_text()
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert pngs and all(f"({p})" in report for p in pngs)
    assert list(tmp_path.glob("*.nc"))
    if part == "figure1":
        # both the caption's d = 10 and the authors' script's d = 5
        assert {p.stem for p in tmp_path.glob("figure1*.nc")} == {
            "figure1_w0", "figure1_w10", "figure1_d5_w0", "figure1_d5_w10"
        }
        for d, tag in ((10, "figure1_w10"), (5, "figure1_d5_w10")):
            ds = xr.load_dataset(tmp_path / f"{tag}.nc")
            env = br.RankingEnv.paper(seed=0, K=100, L=4, d=d, w_max=10.0)
            want = float(np.abs(np.asarray(env.w))[1:].max())  # w_1 * v0 = 0
            assert ds.attrs["w_max_realised"] == pytest.approx(want)
            assert ds.attrs["w_max_sampling"] == 10.0
            assert f"realised {want:.3g}" in report
    else:
        _check_tightness_constants(tmp_path)


def _check_tightness_constants(folder):
    """Runs and bounds share their constants, checked against values by hand."""
    ds = xr.load_dataset(folder / "tightness.nc")
    consts = json.loads(ds.attrs["bound_constants"])
    env = br.RankingEnv.paper(seed=0, K=10, L=4, d=10, w_max=10.0)
    m1, m2 = math.sqrt(2.0), math.sqrt(0.5)  # v = (unit, 1), theta = (unit, 1)/2
    w_max = float(np.abs(np.asarray(env.w))[1:].max())
    for name in ("RankUCB", "GenRankUCB", "RankTS"):
        c = consts[name]
        assert c["m1"] == pytest.approx(m1) and c["m2"] == pytest.approx(m2)
        assert c.get("w_max", c.get("m3")) == pytest.approx(w_max)
        assert json.loads(ds.attrs[f"constants_{name}"]) == c
    # the plotted bound is the theorem at exactly these constants
    T = ds.sizes["round"]
    t = np.arange(1, T + 1)
    np.testing.assert_allclose(
        ds["bound"].sel(policy="RankUCB").values,
        theorems.rank_ucb_bound(t, L=4, d=10, lam=1.0, delta=0.1, m1=m1, m2=m2,
                              w_max=w_max),
        rtol=1e-6,
    )
    np.testing.assert_allclose(
        ds["bound"].sel(policy="RankTS").values,
        theorems.rank_ts_bound(t, L=4, d=10, m1=m1, m2=m2, w_max=w_max),
        rtol=1e-6,
    )
    # and the runs were configured with them
    pols = {n: f(0) for n, f in rep.tightness_policies(env, consts).items()}
    assert pols["RankUCB"].m2 == pytest.approx(m2) and pols["RankUCB"].alpha is None
    assert pols["GenRankUCB"].m2 == pytest.approx(m2)
    assert pols["GenRankUCB"].m3 == pytest.approx(w_max)
    assert pols["GenRankUCB"].lam == consts["GenRankUCB"]["lam"] == 1.0
    # RankTS's prior N(0, m2^2 I) is the proof's lam = 1 / m2^2
    assert float(np.ravel(pols["RankTS"].model.prior_scale)[0]) == pytest.approx(m2)


@pytest.mark.slow  # 16 compiled simulations (about 25 s); the table's maths is below
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
    # figure1 (2 x 2) + appendix (3) + robustness (3) + nonlinear (2) + tightness (3)
    assert len(list(tmp_path.glob("*.png"))) == 15


@pytest.mark.slow
def test_bench_decode_quick():
    res = run_cli("bench", "decode", "--quick")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "networkx" in res.stdout


BENCHES = sorted(
    p.stem for p in (Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py")
    if not p.stem.startswith("_") and p.stem != "decode"
)


@pytest.mark.slow
@pytest.mark.parametrize("name", BENCHES)
def test_every_benchmark_runs_at_quick_scale(name):
    """``bayesrank bench NAME --quick`` runs each script to the end (the scripts are
    not imported by the library, so an API change can break them silently)."""
    res = run_cli("bench", name, "--quick")
    assert res.returncode == 0, res.stderr[-2000:]
    out = res.stdout.split(f"## benchmarks/{name}.py", 1)
    assert len(out) == 2 and len(out[1].strip().splitlines()) >= 3  # it printed results


@pytest.mark.parametrize("case", ["out is a file", "config not UTF-8", "config missing",
                                  "config a folder", "out under a file"])
def test_file_errors_are_one_line_not_a_traceback(case, tmp_path, capsys):
    """OSError and bad files at the CLI boundary: one line naming the problem, exit 2."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_bytes(b'name = "\xff\xfe"\n')
    argv = {
        "out is a file": ["demo", "--quick", "--out", str(afile)],
        "config not UTF-8": ["sweep", str(bad_toml), "--quick"],
        "config missing": ["sweep", str(tmp_path / "none.toml"), "--quick"],
        "config a folder": ["sweep", str(tmp_path), "--quick"],
        "out under a file": ["demo", "--quick", "--out", str(afile / "sub")],
    }[case]
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"bayesrank {argv[0]}: error:")
    assert "Traceback" not in err
