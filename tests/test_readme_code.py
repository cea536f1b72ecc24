"""Every Python block of the README runs as written, each in a fresh interpreter in an
empty folder (a block that needs set-up shows it): what a reader pastes works."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(text: str) -> list[str]:
    return _BLOCK.findall(text)


BLOCKS = python_blocks(README.read_text())


def test_the_readme_has_its_python_blocks():
    assert len(BLOCKS) >= 2  # "In ten lines" and the serving example
    assert python_blocks("x\n```python\nprint(1)\n```\n```bash\nls\n```\n") == ["print(1)\n"]


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_every_block_is_valid_python(i):
    compile(BLOCKS[i], f"README block {i}", "exec")


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_every_block_runs_as_written(i, tmp_path):
    res = subprocess.run([sys.executable, "-c", BLOCKS[i]], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"README block {i}:\n{BLOCKS[i]}\n{res.stderr[-3000:]}"


def test_a_block_with_a_missing_name_fails(tmp_path):
    """The check can fail: a block using a name it never defines."""
    res = subprocess.run([sys.executable, "-c", "policy = br.RankTS(items=V)"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and "NameError" in res.stderr
