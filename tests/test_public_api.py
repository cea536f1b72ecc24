"""The public surface: every exported name resolves, and the DESIGN.md names exist."""

import importlib

import pytest

import bayesrank as br

MODULES = [
    "bayesrank", "bayesrank.posteriors", "bayesrank.studies.sensitivity", "bayesrank.simulation",
    "bayesrank.decoding", "bayesrank.studies.plots", "bayesrank.datasets",
    *(f"bayesrank.decoding.{m}" for m in (
        "api", "backward", "bounded", "checks", "dense", "dispatch", "graph", "monotone",
        "native", "prefix", "search", "separable", "window")),
    *(f"bayesrank.model.{m}" for m in ("feedback", "links", "noise", "scores")),
    "bayesrank.simulation.env", "bayesrank.simulation.play", "bayesrank.theorems",
    "bayesrank.policies", *(f"bayesrank.policies.{m}" for m in (
        "base", "baseline", "bonus", "context", "core", "estimate",
        "features", "gen_ucb", "tables", "ts", "ucb", "width", "window_ucb")),
    "bayesrank.studies.obd.study", "bayesrank.studies.obd.config", "bayesrank.ope",
    "bayesrank.posteriors.latent_w", "bayesrank.policies.gen_ts",
]


@pytest.mark.parametrize("module", MODULES)
def test_every_exported_name_resolves(module):
    mod = importlib.import_module(module)
    for name in mod.__all__:
        assert getattr(mod, name) is not None, f"{module}.{name}"


def test_design_contract_names():
    for name in ["best_list", "RankingEnv", "GaussianLinear", "BayesGLM", "RankTS",
                 "RankUCB", "GenRankUCB", "WindowRankUCB", "RankedBaseline", "simulate"]:
        assert name in br.__all__ and callable(getattr(br, name))
    for name in ["Gaussian", "Laplace", "Bernoulli", "Poisson"]:
        assert callable(getattr(br.noise, name))


def test_importing_bayesrank_keeps_heavy_libraries_out():
    import subprocess
    import sys

    code = ("import sys, bayesrank; bad = [m for m in ('arviz', 'matplotlib', 'dask') "
            "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False)
    assert res.returncode == 0, res.stdout + res.stderr
