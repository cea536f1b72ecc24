import os
from pathlib import Path

import pytest

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
# Many tests build the same computation from fresh closures, which the in-memory jit
# cache cannot share; JAX's persistent cache is keyed by the compiled program, so they
# compile once per session (and once per machine across runs). The directory is the
# repository's own ignored .pytest_cache (the cache is trusted code: never a shared
# /tmp path), one folder per pytest-xdist worker; subprocesses (the CLI, notebook
# kernels) inherit their worker's. One folder per process, never shared while in use:
# an unbounded cache does not lock, and a worker that read a program the other was
# still writing crashed. Unbounded, because a bounded cache (what users get,
# bayesrank._cache.MAX_BYTES) reads every entry's size and access time on each write,
# which after the default tier's thousands of programs slowed every later compilation
# (figures: docs/testing.md).
_JAX_CACHE = Path(__file__).resolve().parent.parent / ".pytest_cache" / "jax-compilation"
os.environ["JAX_COMPILATION_CACHE_DIR"] = str(
    _JAX_CACHE / os.environ.get("PYTEST_XDIST_WORKER", "main"))
os.environ["JAX_COMPILATION_CACHE_MAX_SIZE"] = "-1"
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "-1")
os.environ.setdefault("MPLBACKEND", "Agg")

import jax  # noqa: E402

# float32, the users' default; float64 only for the tests that assert exactness a
# float32 run cannot give (X64 below; BAYESRANK_TEST_X64=1: everything in float64)
ALL_X64 = os.environ.get("BAYESRANK_TEST_X64", "0") == "1"
jax.config.update("jax_enable_x64", ALL_X64)
# the same random streams on every supported jax (the default since jax 0.5; the
# floors in .ci/floors.txt are older), so seeded statistical checks see the same draws
jax.config.update("jax_threefry_partitionable", True)
# The tests run on the CPU by default (exact float64 references, the C kernel); set
# BAYESRANK_TEST_PLATFORMS=cuda (or "cuda,cpu") to run them on a GPU: the C-kernel
# tests then skip with their reason.
jax.config.update("jax_platforms", os.environ.get("BAYESRANK_TEST_PLATFORMS", "cpu"))


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


#: The heavy tier (``pytest -m heavy``, run by .ci/run after the default tier): NUTS
#: reference runs, calibration studies, sweeps, the CLI end to end and the notebooks'
#: execution. The default tier still touches each of these surfaces at small sizes
#: (the modules' docstring examples, tests/test_cache.py's command-line checks).
HEAVY = (
    "tests/test_notebooks.py::test_notebook_runs",
    "tests/test_cli.py",
    "tests/test_readme_code.py::test_every_block_runs_as_written",
    "tests/policies/test_policy_posteriors.py::test_a_fresh_policy_gives_its_prior",
    "tests/studies/calibration/test_calibration_cli.py",
    "tests/studies/calibration/test_calibration_sbc.py",
    "tests/studies/calibration/test_calibration_study.py",
    "tests/studies/calibration/test_calibration_inloop.py",
    "tests/posteriors/nuts/test_nuts_posterior.py",
    "tests/studies/sensitivity/test_sensitivity.py",
    "tests/studies/obd/test_study_obd.py",
    # measured at 15-65 s each on a cold cache (2 cores): NUTS and latent-w GLM runs,
    # convergence checks, vmap-against-loop equivalences at larger sizes
    "tests/posteriors/latent/test_latent_glm.py",
    # 350 s on 2 cores (float64 quadrature over w of the learnt scales' posterior)
    "tests/posteriors/latent/test_latent_w_summaries.py::test_latent_learnt_scales_match_quadrature_over_w",
    # one wide prior stays in the default tier (Normal(0, 1e6)); each prior compiles anew
    *(f"tests/posteriors/latent/test_latent_w.py::test_wide_and_one_sided_priors_give_the_"
      f"quadrature_mean_and_sd[{name}]" for name in (
          "Cauchy(0, 1e4)", "Laplace(5, 1e5)", "HalfNormal(50)",
          "TruncatedNormal(0, 3, low=1)", "StudentT(3, 0, 1e3)", "Uniform(-1e5, 1e5)")),
    "tests/studies/calibration/test_calibration_latent.py",
    "bayesrank/studies/calibration/latent.py::bayesrank.studies.calibration.latent.JointMAPDraws",
    "bayesrank/posteriors/nuts_glm.py::bayesrank.posteriors.nuts.glm.BayesGLM",
    "bayesrank/posteriors/latent_nuts.py::",
    "bayesrank/posteriors/latent_w.py::bayesrank.posteriors.latent.gaussian.LatentW",
    "tests/decoding/test_prefix.py::test_vmap_equals_one_by_one",
    "tests/decoding/test_native.py::test_early_rounds_score_fewer_pairs",
    "tests/posteriors/laplace/test_laplace_posterior.py::test_jit_scan_and_vmap_over_runs",
    "tests/policies/test_unknown_w.py::test_posterior_holds_w_draws",
    "tests/simulation/test_simulate.py::test_nuts_policy_runs_run_by_run",
    "tests/policies/test_fit.py::test_nuts_fit",
    "tests/policies/test_glm_ucb.py::test_glm_ucb_learns[nuts]",
    "tests/policies/parts/test_bonus.py::test_window_bonuses_equal_per_tuple_norms",
    "tests/policies/test_ts.py::test_core_jits_and_vmaps",
    "tests/policies/test_ts.py::test_window_model_learns",
    "tests/policies/parts/test_estimate.py::test_thompson_draws_have_the_posteriors_mean",
    "tests/policies/test_ucb.py::test_baseline_stays_suboptimal_and_rank_ucb",
    "tests/policies/test_ucb.py::test_with_w_zero_every_policy_converges",
    "tests/decoding/test_prefix.py::test_late_rounds_score_a_small_part",
    "tests/studies/ope/test_ope_study.py::test_writes_report_plots_and_netcdf",
    "bayesrank/posteriors/latent_laplace.py::bayesrank.posteriors.latent.laplace",
    "bayesrank/posteriors/nuts_kernel.py::bayesrank.posteriors.nuts.kernel.NutsState",
    "bayesrank/studies/sensitivity/plots.py::bayesrank.studies.sensitivity.plots.diagnostics_table",
)


#: Tests (files, or single tests) that run in float64: each asserts a reference to a
#: precision float32 cannot give (exact decoders against brute force on near-ties,
#: float64 references of the environment and the posteriors, compensated sums, the
#: theorems' bounds at 1e-10, loops compared at 1e-9). Found by running both tiers in
#: float32 (before this list: 122 of 2,522 default and 33 of 323 heavy tests failed,
#: all in these).
X64 = (
    "tests/decoding/test_monotone.py",
    "tests/decoding/test_prefix.py",
    "tests/decoding/test_bounded.py",
    "tests/decoding/test_graph.py",
    "tests/decoding/test_native.py",
    "tests/simulation/test_env_semi_synthetic.py",
    "tests/simulation/test_env.py",
    "tests/posteriors/conjugate/test_gaussian_posterior.py",
    "tests/posteriors/conjugate/test_gaussian_numerics.py",
    "tests/posteriors/conjugate/test_learnt_scale.py",  # quadrature references at 2e-4
    "tests/posteriors/laplace/test_laplace_posterior.py",
    "tests/posteriors/nuts/test_nuts_chains.py",
    "tests/model/test_links_noise.py",
    "tests/test_theorems.py",
    "tests/policies/test_policies_core.py",
    "tests/policies/runtime/test_persist.py",  # its module fixture feeds a float64 round trip
    "tests/policies/test_glm_ucb.py",
    "tests/policies/test_baseline.py",
    "tests/policies/test_ucb.py",
    "tests/policies/parts/test_features.py",
    "tests/policies/parts/test_bonus.py",
    "tests/policies/test_fit.py",
    "tests/policies/test_unknown_w.py",
    "tests/policies/runtime/test_program.py::test_play_equals_the_policy_classes_loop",
    "tests/posteriors/nuts/test_nuts_posterior.py",
    "tests/simulation/test_simulate.py",
    "tests/model/test_feedback.py::test_cascade_log_updates_only_examined_positions",
    "tests/studies/ope/test_ope_study.py",  # a module fixture feeds a 1e-8 recomputation
    "tests/studies/obd/test_study_obd.py",  # regret >= -1e-9 (float32 rounds to -3e-8)
    "tests/studies/calibration/test_calibration_inloop.py",
    "tests/posteriors/conjugate/test_tridiagonal.py::test_loglik_equals_the_marginal_likelihood",
    "tests/posteriors/conjugate/test_tridiagonal.py::test_draw_has_mean_and_covariance_of_the_inverse",
)


def _x64_file(path) -> bool:
    rel = Path(path).resolve().relative_to(Path(__file__).resolve().parent.parent)
    return str(rel) in X64


@pytest.fixture(scope="module", autouse=True)
def _float64_module(request):
    """A file listed in X64 runs in float64, its module fixtures included (autouse
    fixtures are set up first in their scope)."""
    if ALL_X64 or not _x64_file(request.path):
        yield
        return
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", False)


@pytest.fixture(autouse=True)
def _float64_test(request):
    """A single test listed in X64 (marker ``x64``) runs in float64."""
    if ALL_X64 or jax.config.jax_enable_x64 or request.node.get_closest_marker("x64") is None:
        yield
        return
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", False)


@pytest.fixture(autouse=True)
def _forget_programs_traced_under_a_patch(request):
    """Programs are compiled once per configuration and shared (module-level jits), and
    module globals such as a decoder's size thresholds are read when a program is
    traced. A test that monkeypatches them would leave programs traced under the patch
    to every later test of its worker; forget them when such a test ends."""
    yield
    if "monkeypatch" in request.fixturenames:
        jax.clear_caches()


def _measured(name: str) -> frozenset:
    """Node ids (exact match) listed in tests/<name>, see the file's header."""
    return frozenset(
        line.strip()
        for line in (Path(__file__).with_name(name)).read_text().splitlines()
        if line.strip() and not line.startswith("#")
    )


#: default-tier tests measured at 3 s or more on a cold cache: marked heavy
HEAVY_MEASURED = _measured("heavy-measured.txt")
#: heavy tests measured at 15 s or more in .ci/run's order: marked slow (by hand)
SLOW_MEASURED = _measured("slow-measured.txt")


#: docstring examples that need an optional extra: node id -> the module it needs
NEEDS_EXTRA = {
    "bayesrank/studies/sensitivity/executors.py::"
    "bayesrank.studies.sensitivity.executors.DaskExecutor": "distributed",
}


@pytest.hookimpl(tryfirst=True)  # before -m selects on the markers
def pytest_collection_modifyitems(config, items):
    import importlib.util

    for item in items:
        needs = NEEDS_EXTRA.get(item.nodeid)
        if needs and importlib.util.find_spec(needs) is None:
            item.add_marker(pytest.mark.skip(reason=f"needs {needs} (pip install "
                                                    "'bayesrank[dask]')"))
        if item.nodeid.startswith(HEAVY) or item.nodeid in HEAVY_MEASURED:
            item.add_marker(pytest.mark.heavy)
        if item.nodeid in SLOW_MEASURED:
            item.add_marker(pytest.mark.heavy)
            item.add_marker(pytest.mark.slow)
        if item.nodeid.startswith(X64):
            item.add_marker(pytest.mark.x64)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
