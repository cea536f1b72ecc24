"""Saving and rebuilding the NUTS models: their JSON-able configurations.

:func:`model_config` / :func:`model_from_config` for
:class:`~bayesrank.posteriors.nuts.NumPyroModel` (the model function by its registered
name, :mod:`~bayesrank.posteriors.nuts.registry`), :func:`glm_config` / :func:`glm_from_config` for
:class:`~bayesrank.posteriors.nuts.BayesGLM` (a hyperprior on a scale by its class
and parameters, :mod:`.w_prior`), and the checks of the GLM's scales.

Example:
    >>> from bayesrank.posteriors.nuts import BayesGLM
    >>> cfg = glm_config(BayesGLM("probit", n_max=30))
    >>> cfg["type"], cfg["link"], cfg["n_max"]
    ('BayesGLM', 'probit', 30)
    >>> glm_from_config(BayesGLM, cfg).n_max
    30
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpyro

from bayesrank._validate import check_bool, check_int, check_real
from bayesrank.model.links import Link
from bayesrank.posteriors.hyperprior import valid_hyperprior
from bayesrank.posteriors.nuts import numpyro_models as models
from bayesrank.posteriors.nuts.registry import function_path, resolve_model
from bayesrank.posteriors.w_prior import prior_config, prior_from_config

__all__ = [
    "SUPPORT_BY_LINK",
    "glm_config",
    "glm_from_config",
    "model_config",
    "model_from_config",
    "options",
    "scale_config",
    "scale_or_hyperprior",
    "valid_glm",
    "valid_options",
]

#: The reward support of each GLM link's likelihood.
SUPPORT_BY_LINK = {
    "identity": "real",
    "logistic": "binary",
    "probit": "binary",
    "exp": "count",
}


def options(model) -> dict:
    """The sampler options of a NUTS model (the keyword arguments after the link)."""
    return {
        "n_max": model.n_max,
        "num_warmup": model.num_warmup,
        "steps_per_round": model.steps_per_round,
        "readapt_start": model.readapt_start,
        "readapt_growth": model.readapt_growth,
        "refit_every": model.refit_every,
        "max_tree_depth": model.max_tree_depth,
        "target_accept_prob": model.target_accept_prob,
        "dense_mass": model.dense_mass,
        "mean_window": model.mean_window,
        "overflow": model.overflow,
    }


def _link_name(model) -> str:
    if model.link.name == "custom":
        raise TypeError("config: a custom link callable cannot be saved")
    return model.link.name


def model_config(model) -> dict:
    """A NumPyroModel's JSON-able description (see ``NumPyroModel.config``)."""
    path, kwargs = function_path(model.model)
    return {
        "type": "NumPyroModel",
        "model": path,
        "model_kwargs": kwargs,
        "theta_site": model.theta_site,
        "w_site": model.w_site,
        "link": _link_name(model),
        "reward_support": model.reward_support,
        **options(model),
    }


def _without_type(cfg, kind: str) -> dict:
    """A copy of ``cfg`` (a dict) without its ``type``, which must be ``kind`` if set."""
    if not isinstance(cfg, dict):
        raise TypeError(f"cfg: expected a dict, got {type(cfg).__name__}")
    cfg = dict(cfg)
    found = cfg.pop("type", kind)
    if found != kind:
        raise ValueError(f"cfg: expected type {kind!r}, got {found!r}")
    return cfg


def model_from_config(cls, cfg: dict, model: Callable | None = None):
    """``cls`` rebuilt from :func:`model_config` (see ``NumPyroModel.from_config``)."""
    cfg = _without_type(cfg, "NumPyroModel")
    name = cfg.pop("model", None)
    if model is None:
        fn = resolve_model(name)
    elif not callable(model):
        raise TypeError(f"model: expected a callable, got {type(model).__name__}")
    else:
        fn = model
    kwargs = cfg.pop("model_kwargs", {})
    if not isinstance(kwargs, dict):
        raise ValueError(f"cfg: model_kwargs must be a dict, got {kwargs!r}")  # noqa: TRY004
    model = functools.partial(fn, **kwargs) if kwargs else fn
    return cls(model, **cfg)


def scale_or_hyperprior(value, name: str):
    """A positive number (as float) or a NumPyro distribution on (0, inf)."""
    if isinstance(value, numpyro.distributions.Distribution):
        return valid_hyperprior(value, name)
    return float(check_real(value, name, low=0, inclusive="neither"))


def scale_config(value, name: str):
    """A scale for a config: the number, or the hyperprior's class and parameters."""
    if not isinstance(value, numpyro.distributions.Distribution):
        return value
    cfg = prior_config(value)
    if cfg["params"] is None:
        raise TypeError(f"config: {name}: the hyperprior cannot be saved: {cfg['why']}")
    return cfg


def glm_config(model) -> dict:
    """A BayesGLM's JSON-able description (a custom ``prior`` cannot be saved)."""
    if model.prior is not None:
        raise TypeError(
            "config: BayesGLM with a custom prior distribution cannot be saved"
        )
    return {
        "type": "BayesGLM",
        "link": model.link.name,
        "prior_scale": scale_config(model.prior_scale, "prior_scale"),
        "noise_scale": scale_config(model.noise_scale, "noise_scale"),
        "theta_site": model.theta_site,
        **options(model),
    }


def glm_from_config(cls, cfg: dict):
    """``cls`` (BayesGLM) rebuilt from :func:`glm_config`'s output."""
    cfg = _without_type(cfg, "BayesGLM")
    for name in ("prior_scale", "noise_scale"):
        if isinstance(cfg.get(name), dict):  # a hyperprior, by class name
            try:
                cfg[name] = prior_from_config(cfg[name])
            except ValueError as exc:
                raise ValueError(str(exc).replace("w_prior:", f"{name}:", 1)) \
                    from None
    return cls(**cfg)


def valid_options(model, theta_site, *, reward_support, n_max, num_warmup,
                  steps_per_round, readapt_start, readapt_growth, refit_every,
                  max_tree_depth, target_accept_prob, dense_mass, mean_window,
                  overflow, w_site) -> dict:
    """A NumPyroModel's arguments checked (in its signature's order of checks) and
    its sampler options normalised, as ``{attribute: value}``.

    Raises:
        TypeError, ValueError: naming the argument and what was expected.
    """
    if not callable(model):
        raise TypeError(f"model: expected a callable, got {type(model).__name__}")
    if not isinstance(theta_site, str):
        raise TypeError(f"theta_site: expected a str, got {theta_site!r}")
    if reward_support not in (None, "real", "binary", "count"):
        raise ValueError(
            "reward_support: expected 'real', 'binary' or 'count', "
            f"got {reward_support!r}"
        )
    if overflow not in ("raise", "window"):
        raise ValueError(
            f"overflow: expected 'raise' or 'window', got {overflow!r}"
        )
    if readapt_growth is not None and not (
        check_real(readapt_growth, "readapt_growth") > 1.0
    ):
        raise ValueError(
            f"readapt_growth: expected a number > 1 or None, got {readapt_growth}"
        )
    target_accept_prob = check_real(target_accept_prob, "target_accept_prob", low=0,
                                    high=1, inclusive="neither")
    if not isinstance(w_site, str):
        raise TypeError(f"w_site: expected a str, got {w_site!r}")
    out = {
        "n_max": check_int(n_max, "n_max", low=1),
        "num_warmup": check_int(num_warmup, "num_warmup", low=0),
        "steps_per_round": check_int(steps_per_round, "steps_per_round", low=1),
        "readapt_start": check_int(readapt_start, "readapt_start", low=1),
        "readapt_growth": None if readapt_growth is None else float(readapt_growth),
        "refit_every": check_int(refit_every, "refit_every", low=1),
        "max_tree_depth": check_int(max_tree_depth, "max_tree_depth", low=1),
        "target_accept_prob": float(target_accept_prob),
    }
    out["dense_mass"] = check_bool(dense_mass, "dense_mass")
    out["mean_window"] = check_int(mean_window, "mean_window", low=1)
    out["overflow"] = overflow
    return out


def valid_glm(link, prior_scale, prior, noise_scale):
    """BayesGLM's model arguments checked: ``(link name, prior_scale, noise_scale)``,
    each scale a float or a hyperprior distribution.

    Raises:
        TypeError, ValueError: naming the argument and what was expected.
    """
    name = link.name if isinstance(link, Link) else link
    if not isinstance(name, str) or name not in models.GLM_LINKS:
        raise ValueError(f"link: expected one of {models.GLM_LINKS}, got {link!r}")
    prior_scale = scale_or_hyperprior(prior_scale, "prior_scale")
    noise_scale = scale_or_hyperprior(noise_scale, "noise_scale")
    if isinstance(noise_scale, numpyro.distributions.Distribution) \
            and name != "identity":
        raise ValueError(
            f"noise_scale: a hyperprior needs the identity link (Gaussian noise), "
            f"got link {name!r}")
    if prior is not None and isinstance(
            prior_scale, numpyro.distributions.Distribution):
        raise ValueError("prior_scale: a hyperprior and prior= exclude each other")
    if prior is not None and not isinstance(
        prior, numpyro.distributions.Distribution
    ):
        raise TypeError(
            f"prior: expected a numpyro Distribution or None, got {type(prior).__name__}"
        )
    return name, prior_scale, noise_scale
