"""Progress on long work: tqdm on a terminal, whole lines in a file (no ``\\r``
redraws), nothing when off; simulate's bar says it compiles until its first runs end."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from bayesrank._progress import _Lines, progress


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_a_file_gets_lines_not_redraws():
    out = io.StringIO()
    bar = progress(50, "sweep", unit="cell", file=out)
    assert isinstance(bar, _Lines)
    for _ in range(50):
        bar.update(1)
    bar.close()
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    # a start line, one per tenth (the last tenth is the end line), an end line
    assert len(lines) == 1 + 9 + 1, lines
    assert lines[0].startswith("sweep: 0/50 cell") and lines[-1].startswith("sweep: 50/50")


def test_a_terminal_gets_tqdm():
    out = _Tty()
    bar = progress(3, "demo", file=out)
    assert type(bar).__module__.startswith("tqdm")
    bar.update(3)
    bar.close()
    assert "\r" in out.getvalue()  # redrawn in place on a terminal


def test_off_writes_nothing():
    out = io.StringIO()
    with progress(3, "demo", enabled=False, file=out) as bar:
        bar.update(3)
        bar.set_postfix_str("x")
    assert out.getvalue() == ""


@pytest.mark.parametrize("code", [
    # the sweep's bar and simulate's bar, their stderr sent to a file (a pipe)
    "from bayesrank.studies.sensitivity.run import progress_bar; "
    "b = progress_bar(True, total=20, desc='cells', unit='cell'); "
    "[b.update(1) for _ in range(20)]; b.close()",
    "import bayesrank as br; env = br.RankingEnv.paper(seed=0, K=5, L=2, d=2); "
    "br.simulate(env, {'RankTS': lambda s: br.RankTS(items=env.items, w=env.w, seed=s)}, "
    "T=3, runs=2, progress=True)",
])
def test_stderr_to_a_file_holds_readable_lines(code):
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert "\r" not in res.stderr and res.stderr.strip(), res.stderr
