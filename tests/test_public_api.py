"""The public surface: every exported name resolves, and the DESIGN.md names exist."""

import importlib
from pathlib import Path

import numpy as np
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
        "base", "baseline", "parts.bonus", "parts.context", "parts.core",
        "parts.estimate", "parts.features", "gen_ucb", "parts.tables", "ts", "ucb",
        "window_ucb", "click", "runtime.checks", "runtime.persist")),
    *(f"bayesrank.posteriors.{m}" for m in (
        "conjugate", "laplace", "nuts", "latent", "base", "buffers", "hyperprior")),
    "bayesrank.studies.obd.study", "bayesrank.studies.obd.config", "bayesrank.ope",
    "bayesrank.posteriors.latent.gaussian", "bayesrank.policies.gen_ts",
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


# ------------------------------------------------ constructors are what they say
_DATA = Path(__file__).parent / "posteriors" / "data"
#: The jax release that chose the stored lists: float32 rounding differs between jax
#: releases (on .ci/floors.txt's jax 0.4.38 the learnt-scale default and the latent-w
#: policy pick other lists within 30 rounds, the fixed-scale and Laplace ones the
#: same), so the comparison is exact on this release and skipped on others.
_LISTS_JAX = "0.12.0"


def _constructor_policies():
    import numpyro.distributions as dist

    env = br.RankingEnv.paper(seed=0, K=12, L=3, d=4)
    return env, {
        "default": lambda: br.RankTS(items=env.items, L=3, w=env.w, seed=0),
        "laplace": lambda: br.RankTS(items=env.items, L=3, w=env.w, seed=0,
                                     model=br.LaplaceGLM()),
        "fixed": lambda: br.RankTS(
            items=env.items, L=3, w=env.w, seed=0,
            model=br.GaussianLinear(prior_scale=1.0, noise_scale=1.0)),
        "latent": lambda: br.RankTS(items=env.items, L=3, w=dist.Normal(0.0, 5.0),
                                    seed=0),
    }


def _play_30(ts, env, name):
    """30 rounds; at round 15 one more list (where the stored files were saved)."""
    import jax

    lists, extra = [], None
    for t in range(30):
        items = ts.select()
        lists.append(np.asarray(items))
        r = env.sample(jax.random.key(t), items)
        if name == "laplace":
            r = (np.asarray(r) > 0.5).astype(float)
        ts.update(items, r)
        if t == 14:
            extra = np.asarray(ts.select())
    return np.stack(lists), extra


@pytest.mark.parametrize("name", ["default", "laplace", "fixed", "latent"])
def test_policies_choose_the_lists_of_before_the_constructors_held_their_scale(name):
    """RankTS's default, with LaplaceGLM(), with a fixed GaussianLinear and with a
    latent w choose, over 30 rounds, the lists the code chose when
    ``GaussianLinear()``/``LaplaceGLM()`` returned their learnt-scale class (stored
    from commit 70b067f, float32 and float64)."""
    import jax

    if not jax.__version__.startswith(_LISTS_JAX) and name in ("default", "latent"):
        pytest.skip(f"lists stored with jax {_LISTS_JAX}, running {jax.__version__}")
    env, make = _constructor_policies()
    ts = make[name]()
    if name in ("default", "fixed"):
        assert type(ts.model) is br.GaussianLinear
    if name == "laplace":
        assert type(ts.model) is br.LaplaceGLM and ts.model.learnt_scale
    lists, extra = _play_30(ts, env, name)
    ref = np.load(_DATA / "constructors_lists.npz")
    suffix = "_x64" if jax.config.jax_enable_x64 else ""
    np.testing.assert_array_equal(lists, ref[name + suffix])
    np.testing.assert_array_equal(extra, ref[f"{name}_next_after_save{suffix}"])


@pytest.mark.parametrize("name", ["default", "laplace", "fixed", "latent"])
def test_files_saved_before_load_as_the_class_the_constructor_names(name):
    """A file saved by commit 70b067f after 15 rounds (its model named
    ``LearntScaleLinear``/``LearntScaleLaplace`` where learnt) loads with a
    GaussianLinear or LaplaceGLM inside and chooses the next list the saving
    policy chose."""
    import jax

    if jax.config.jax_enable_x64:
        pytest.skip("the stored files are float32 states")
    back = br.RankTS.load(_DATA / f"constructors_{name}_f32.npz")
    model = back.model.base if name == "latent" else back.model
    assert type(model) is (br.LaplaceGLM if name == "laplace" else br.GaussianLinear)
    assert model.learnt_scale is (name != "fixed")
    if name == "latent":
        assert back.model.learnt and not back.model.known_noise
    ref = np.load(_DATA / "constructors_lists.npz")
    np.testing.assert_array_equal(np.asarray(back.select()),
                                  ref[f"{name}_next_after_save"])
