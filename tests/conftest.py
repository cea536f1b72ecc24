import os
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
# Many tests build the same computation from fresh closures, which the in-memory jit
# cache cannot share; JAX's persistent cache is keyed by the compiled program, so they
# compile once per session (and once per machine across runs). The directory is the
# repository's own ignored .pytest_cache (the cache is trusted code: never a shared
# /tmp path). Subprocesses (the CLI, notebook kernels) inherit it.
_JAX_CACHE = Path(__file__).resolve().parent.parent / ".pytest_cache" / "jax-compilation"
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(_JAX_CACHE))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "-1")
os.environ.setdefault("MPLBACKEND", "Agg")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")


#: The test files that take longest on a cold cache, longest first (measured with
#: ``--durations``). pytest-xdist hands out whole files (``--dist loadfile``) in
#: collection order; starting with the long ones keeps a long file from starting
#: last and leaving the other worker idle at the end.
LONGEST_FIRST = [
    "test_notebooks.py", "test_calibration_cli.py", "test_cli.py",
    "test_nuts_posterior.py", "test_simulate.py", "test_ucb.py", "test_study_obd.py",
    "test_unknown_w.py", "test_sensitivity.py", "test_laplace_posterior.py",
    "test_glm_ucb.py", "test_latent_w.py", "test_fit.py",
    "test_calibration_sbc.py", "test_calibration_study.py",
]


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
