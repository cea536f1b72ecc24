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
    (("demo", "--K", "0"), "argument --K: expected an integer >= 1, got 0"),
])
def test_argument_errors_name_what_the_user_typed(args, words, tmp_path):
    res = _cli(*args, cwd=tmp_path)
    assert res.returncode == 2, res
    assert words in res.stderr, res.stderr
    assert " what" not in res.stderr and "name" not in res.stderr.split("error:")[-1]
    assert list(tmp_path.iterdir()) == []  # nothing started, nothing written
