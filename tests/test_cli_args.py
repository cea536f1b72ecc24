"""The command line's argument errors speak the user's words (PART, STUDY, not the
parser's internal names), and `bayesrank reproduce` without a part starts nothing (it
used to start the whole full-scale study, hours on a laptop)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "bayesrank", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args, words", [
    (("reproduce",), "the following arguments are required: PART"),
    (("reproduce", "figure9"), "argument PART: invalid choice: 'figure9'"),
    (("study",), "the following arguments are required: STUDY"),
    (("study", "x"), "argument STUDY: invalid choice: 'x'"),
    (("study", "units", "--link", "probit"), "argument --link: invalid choice: 'probit'"),
    (("study", "units", "--w", "unknown"), "argument --w: invalid choice: 'unknown'"),
    (("demo", "--K", "0"), "argument --K: expected an integer >= 1, got 0"),
])
def test_argument_errors_name_what_the_user_typed(args, words, tmp_path):
    res = _cli(*args, cwd=tmp_path)
    assert res.returncode == 2, res
    assert words in res.stderr, res.stderr
    assert " what" not in res.stderr and "name" not in res.stderr.split("error:")[-1]
    assert list(tmp_path.iterdir()) == []  # nothing started, nothing written


def _study_args(name, **kw):
    import argparse

    base = dict(name=name, out=None, quick=True, seed=0, click_models=False,
                link="identity", ws=None)
    return argparse.Namespace(**{**base, **kw})


def test_w_reaches_the_units_study_and_only_it(monkeypatch, tmp_path):
    """``bayesrank study units --w latent --link logistic`` runs the latent cells alone
    (the runner receives ``ws``); ``--w`` on another study is refused before it starts."""
    from bayesrank.studies import cli, units

    seen = {}
    monkeypatch.setattr(units, "run_units_study", lambda out, **kw: seen.update(kw))
    cli.run(_study_args("units", out=tmp_path, ws=["latent"], link="logistic"))
    assert seen == {"quick": True, "seed": 0, "link": "logistic", "ws": ("latent",),
                    "executor": "local", "scheduler": None, "workers": 2}
    seen.clear()
    cli.run(_study_args("units", out=tmp_path))
    assert "ws" not in seen  # the runner's default: both
    with pytest.raises(ValueError, match="--w: applies to the units study only"):
        cli.run(_study_args("obd", ws=["known"]))


def test_workers_reach_the_sweep_and_a_bad_count_is_refused(monkeypatch, tmp_path, capsys):
    from bayesrank.cli import main
    from bayesrank.studies.sensitivity import cli as sweep_cli

    seen = {}
    monkeypatch.setattr(sweep_cli, "run_sweep_cli", lambda path, **kw: seen.update(kw))
    assert main(["sweep", "examples/sweep.toml", "--executor", "dask", "--workers",
                 "3"]) == 0
    assert seen["workers"] == 3 and seen["executor"] == "dask"
    with pytest.raises(SystemExit):
        main(["sweep", "examples/sweep.toml", "--workers", "0"])
    assert "--workers" in capsys.readouterr().err
