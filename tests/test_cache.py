"""The persistent compilation cache: on by default, movable, off by request; and a
command line that answers without importing JAX."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import bayesrank as br

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str, **env) -> str:
    base = {k: v for k, v in os.environ.items()
            if k not in ("JAX_COMPILATION_CACHE_DIR", "BAYESRANK_CACHE_DIR",
                         "JAX_ENABLE_COMPILATION_CACHE")}
    out = subprocess.run([sys.executable, "-c", code], env={**base, **env},
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return out.stdout.strip()


COMPILE_AND_REPORT = (
    "import bayesrank as br, jax.numpy as jnp\n"
    "env = br.RankingEnv.paper(seed=0, K=5, L=2, d=2)\n"
    "br.RankTS(items=env.items, w=env.w).select()\n"
    "print(br.compilation_cache())\n"
)


def test_the_cache_is_on_by_default_in_the_user_cache_folder(tmp_path):
    out = _python(COMPILE_AND_REPORT, XDG_CACHE_HOME=str(tmp_path))
    where = tmp_path / "bayesrank" / "jax"
    assert out == str(where)
    assert any(where.iterdir())  # compiled programs were written there


def test_the_environment_variable_moves_the_cache_or_turns_it_off(tmp_path):
    moved = tmp_path / "elsewhere"
    out = _python(COMPILE_AND_REPORT, BAYESRANK_CACHE_DIR=str(moved),
                  XDG_CACHE_HOME=str(tmp_path / "xdg"))
    assert out == str(moved) and any(moved.iterdir())
    assert not (tmp_path / "xdg").exists()
    off = _python(COMPILE_AND_REPORT, BAYESRANK_CACHE_DIR="",
                  XDG_CACHE_HOME=str(tmp_path / "xdg"))
    assert off == "None" and not (tmp_path / "xdg").exists()


def test_a_users_own_jax_setting_is_left_alone(tmp_path):
    mine = tmp_path / "mine"
    out = _python(COMPILE_AND_REPORT, JAX_COMPILATION_CACHE_DIR=str(mine),
                  XDG_CACHE_HOME=str(tmp_path / "xdg"))
    assert out == str(mine) and not (tmp_path / "xdg").exists()


def test_compilation_cache_turns_off_and_moves_in_process(tmp_path):
    before = br.compilation_cache()
    try:
        assert br.compilation_cache(False) is None
        assert br.compilation_cache() is None
        assert br.compilation_cache(tmp_path) == tmp_path
        assert br.compilation_cache() == tmp_path
    finally:
        br.compilation_cache(before if before is not None else False)


@pytest.mark.parametrize(("path", "error"), [(3, TypeError), ("", ValueError)])
def test_compilation_cache_refuses_what_is_not_a_folder(path, error):
    before = br.compilation_cache()
    with pytest.raises(error, match="path"):
        br.compilation_cache(path)
    assert br.compilation_cache() == before  # unchanged


@pytest.mark.parametrize(
    "argv", [["--help"], ["--version"], ["demo", "--K", "x"], ["study", "--help"],
             ["calibrate", "--help"]]
)
def test_the_command_line_answers_without_importing_jax(argv):
    code = (
        "import sys\nfrom bayesrank.cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        "print('jax imported' if 'jax' in sys.modules else 'no jax')\n"
    )
    assert _python(code).splitlines()[-1] == "no jax"


def test_the_import_check_above_can_fail():
    code = "import sys, bayesrank as br\nbr.RankingEnv\nprint('jax' in sys.modules)"
    assert _python(code) == "True"
