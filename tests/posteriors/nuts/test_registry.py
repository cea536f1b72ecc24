"""Model functions are resolved from saved configurations only through the registry."""

import builtins
import functools
import json
import os

import numpyro
import numpyro.distributions as dist
import pytest

from bayesrank.posteriors.nuts import numpyro_models as models
from bayesrank.posteriors import register_model, resolve_model
from bayesrank.posteriors.nuts import NumPyroModel
from bayesrank.posteriors.nuts.registry import function_path, registered_models

TAMPERED = [
    "bayesrank.posteriors.numpyro_models:dist.distribution.inspect.builtins.print",
    "bayesrank.posteriors.numpyro_models:numpyro.logging.os.system",
    "bayesrank.posteriors.numpyro_models:glm.__globals__",
    "os:system",
    "builtins:print",
    "bayesrank.posteriors.nuts.numpyro_models",
    "",
]


@pytest.fixture
def canary(tmp_path, monkeypatch):
    """builtins.print and os.system replaced by functions that write a file."""
    path = tmp_path / "canary"

    def touch(*args, **kwargs):
        path.write_text("reached")
        return 0

    monkeypatch.setattr(builtins, "print", touch)
    monkeypatch.setattr(os, "system", touch)
    return path


@pytest.mark.parametrize("name", TAMPERED)
def test_tampered_model_names_raise_and_reach_no_code(name, canary):
    cfg = json.loads(json.dumps(NumPyroModel(models.student_t_glm).config()))
    cfg["model"] = name
    with pytest.raises(ValueError, match="register_model") as err:
        NumPyroModel.from_config(cfg)
    assert repr(name) in str(err.value) and "model=" in str(err.value)
    assert not canary.exists()


@pytest.mark.parametrize("name", [None, 3, ["glm"], {"a": 1}])
def test_non_string_model_names_raise(name):
    cfg = NumPyroModel(models.student_t_glm).config()
    cfg["model"] = name
    with pytest.raises(ValueError, match="model"):
        NumPyroModel.from_config(cfg)


def test_builtin_models_are_preregistered_and_round_trip():
    for fn in (models.glm, models.student_t_glm, models.hierarchical_glm):
        name = f"bayesrank.posteriors.numpyro_models:{fn.__name__}"
        assert resolve_model(name) is fn
        assert registered_models()[name] is fn
    user = NumPyroModel(functools.partial(models.student_t_glm, df=5.0))
    again = NumPyroModel.from_config(json.loads(json.dumps(user.config())))
    assert again.model.func is models.student_t_glm
    assert again.model.keywords == {"df": 5.0}


def _clicks(x, y=None):
    theta = numpyro.sample("theta", dist.Normal(0, 1).expand([x.shape[-1]]).to_event(1))
    with numpyro.plate("obs", x.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=x @ theta), obs=y)


def test_user_model_loads_after_registration_or_with_model_argument():
    cfg = json.loads(json.dumps(NumPyroModel(_clicks).config()))
    assert cfg["model"] == f"{__name__}:_clicks"
    with pytest.raises(ValueError, match="_clicks"):
        NumPyroModel.from_config(cfg)
    assert NumPyroModel.from_config(cfg, model=_clicks).model is _clicks
    name = register_model(_clicks, "test_registry.clicks")
    assert name == "test_registry.clicks"
    assert register_model(_clicks, name) == name  # idempotent
    cfg = json.loads(json.dumps(NumPyroModel(_clicks).config()))
    assert cfg["model"] == "test_registry.clicks"
    assert NumPyroModel.from_config(cfg).model is _clicks


def test_registration_errors():
    with pytest.raises(ValueError, match="already registered"):
        register_model(_clicks, "bayesrank.posteriors.numpyro_models:glm")
    with pytest.raises(ValueError, match="name"):
        register_model(lambda x, y=None: None)
    with pytest.raises(TypeError, match="partial"):
        register_model(functools.partial(models.glm, link="exp"), "p")
    with pytest.raises(TypeError, match="fn"):
        register_model("bayesrank.posteriors.numpyro_models:glm")
    with pytest.raises(TypeError, match="name"):
        register_model(_clicks, 3)
    with pytest.raises(TypeError, match="config"):
        function_path(lambda x, y=None: None)
