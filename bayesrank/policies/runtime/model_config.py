"""A policy's posterior model in a saved file: :func:`model_config` describes it by
its class name and ``config()``; :func:`model_from_config` rebuilds it, looking the
class up only among :mod:`bayesrank.posteriors`' own (``__all__``), never importing
what the file names (:mod:`~bayesrank.policies.runtime.persist` reads and writes the file). Files of earlier
versions name a learnt scale's part, ``"LearntScaleLinear"`` or
``"LearntScaleLaplace"``, where the model was built by ``GaussianLinear(...)`` or
``LaplaceGLM(...)``: they rebuild that model (:data:`FORMER`).

Example:
    >>> import bayesrank as br
    >>> cfg = model_config(br.LaplaceGLM(link="probit", prior_scale=1.0))
    >>> cfg["class"], type(model_from_config(cfg)).__name__
    ('LaplaceGLM', 'LaplaceGLM')
    >>> model_config(br.LaplaceGLM(link="probit"))["class"]  # the learnt default
    'LaplaceGLM'
    >>> old = {"class": "LearntScaleLaplace",                  # an earlier version's
    ...        "config": model_config(br.LaplaceGLM(link="probit"))["config"]}
    >>> type(model_from_config(old)).__name__
    'LaplaceGLM'
"""

from __future__ import annotations

from bayesrank import posteriors

__all__ = ["FORMER", "model_config", "model_from_config"]

#: The class names earlier versions wrote for a model whose constructor returned its
#: learnt-scale part, and the model that holds that part now.
FORMER = {"LearntScaleLinear": "GaussianLinear", "LearntScaleLaplace": "LaplaceGLM"}


def model_config(model) -> dict:
    """The JSON-able description of a posterior model: its class name and, where the
    model can describe itself, its ``config()``."""
    cfg = getattr(model, "config", None)
    return {"class": type(model).__name__, "config": cfg() if callable(cfg) else None}


def model_from_config(cfg: dict, override=None):
    """Rebuild a posterior model from :func:`model_config`'s output.

    No code execution: only bayesrank's own model classes are looked up, by name.
    """
    if override is not None:
        return override
    name = cfg.get("class")
    name = FORMER.get(name, name)
    known = {n: getattr(posteriors, n) for n in getattr(posteriors, "__all__", ())}
    cls = known.get(name)
    if cls is None or not hasattr(cls, "from_config") or cfg.get("config") is None:
        raise ValueError(
            f"model: the saved model {name!r} cannot be rebuilt from the file; "
            "pass model=... to load()"
        )
    return cls.from_config(cfg["config"])
