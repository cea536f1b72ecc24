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


def _cli(*args, **env) -> str:
    return _python(f"from bayesrank.cli import main\nmain({list(args)!r})", **env)


def test_bayesrank_cache_counts_and_clears_only_jax_programs(tmp_path):
    """``bayesrank cache`` counts the programs a real run wrote (each is a -cache and an
    -atime file in a bounded cache, beside JAX's lock file); ``--clear`` removes them and
    nothing else."""
    folder = tmp_path / "c"
    _python(COMPILE_AND_REPORT, BAYESRANK_CACHE_DIR=str(folder))
    written = sorted(f.name for f in folder.iterdir() if f.name != ".lockfile")
    programs = len(written) // 2
    assert programs > 0 and len(written) == 2 * programs
    decoys = ["notes.txt", "mine-cache", "x-" + "0" * 63 + "-cache"]  # not JAX's names
    for name in decoys:
        (folder / name).write_text("keep")
    env = {"BAYESRANK_CACHE_DIR": str(folder)}
    assert f"\n{programs:,} compiled programs" in _cli("cache", **env)
    assert f"removed {programs:,} compiled programs" in _cli("cache", "--clear", **env)
    assert sorted(f.name for f in folder.iterdir()) == sorted([*decoys, ".lockfile"])
    assert "\n0 compiled programs" in _cli("cache", **env)


@pytest.mark.parametrize(("env", "says"), [
    ({"BAYESRANK_CACHE_DIR": ""}, "compilation cache: off"),
    ({"JAX_ENABLE_COMPILATION_CACHE": "false"}, "compilation cache: off"),
    ({"JAX_COMPILATION_CACHE_DIR": "/nowhere/mine"}, "/nowhere/mine\n0 compiled programs"),
])
def test_bayesrank_cache_follows_the_same_rules_as_import(env, says, tmp_path):
    out = _cli("cache", XDG_CACHE_HOME=str(tmp_path), **env)
    assert says in out
    # and import bayesrank agrees
    where = _python("import bayesrank as br\nprint(br.compilation_cache())",
                    XDG_CACHE_HOME=str(tmp_path), **env)
    assert where == ("None" if "off" in says else "/nowhere/mine")


@pytest.mark.parametrize(
    "argv", [["--help"], ["--version"], ["demo", "--K", "x"], ["study", "--help"],
             ["calibrate", "--help"], ["cache"]]
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
