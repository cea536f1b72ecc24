"""The tests run in float32, the users' default, except those listed in
``tests/conftest.py``'s X64 (each asserts a precision float32 cannot give)."""

from __future__ import annotations

from pathlib import Path

import conftest
import jax
import jax.numpy as jnp

ROOT = Path(__file__).resolve().parent.parent


def test_a_test_not_listed_runs_in_float32():
    if conftest.ALL_X64:
        assert jnp.asarray(1.0).dtype == jnp.float64
        return
    assert not jax.config.jax_enable_x64
    assert jnp.asarray(1.0).dtype == jnp.float32
    assert not conftest._x64_file(__file__)


def test_every_x64_entry_names_a_test_file_or_test():
    for entry in conftest.X64:
        path, _, name = entry.partition("::")
        assert (ROOT / path).is_file(), entry
        if name:
            assert f"def {name}(" in (ROOT / path).read_text(), entry


def test_a_listed_file_is_recognised():
    assert conftest._x64_file(ROOT / "tests" / "test_theorems.py")
    assert not conftest._x64_file(ROOT / "tests" / "test_cli.py")
