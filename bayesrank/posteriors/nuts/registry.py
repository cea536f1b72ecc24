"""An explicit registry of user NumPyro model functions, for save/load by name.

A saved :class:`~bayesrank.posteriors.nuts.NumPyroModel` stores its model function by
name. Loading resolves that name ONLY through this registry: no attribute walk, no
import of a module named by the file, so a tampered file cannot reach arbitrary code.
The functions of :mod:`bayesrank.posteriors.nuts.numpyro_models` are pre-registered under
``f"{BUILTIN_PREFIX}:<name>"`` (:data:`BUILTIN_PREFIX` is the module's path before the
posteriors were grouped by family, kept so that every saved file still loads);
register your own before loading, or pass the function as ``model=`` to
``from_config`` / ``load``.

Example:
    >>> def my_model(x, y=None): ...
    >>> register_model(my_model, "my_model")
    'my_model'
    >>> resolve_model("my_model") is my_model
    True
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

from bayesrank.posteriors.nuts import numpyro_models as models
__all__ = ["BUILTIN_PREFIX", "function_path", "register_model", "registered_models",
           "resolve_model"]

_REGISTRY: dict[str, Callable] = {}

#: The prefix of the built-in model functions' names in files (a file-format name, not
#: a module path: the functions live in bayesrank.posteriors.nuts.numpyro_models).
BUILTIN_PREFIX = "bayesrank.posteriors.numpyro_models"


def _default_name(fn) -> str:
    qual = getattr(fn, "__qualname__", "")
    mod = getattr(fn, "__module__", None)
    if not mod or not qual or "<" in qual:
        raise ValueError(
            f"name: {fn!r} has no stable module-level name (a lambda or a local "
            "function); pass name= explicitly"
        )
    return f"{mod}:{qual}"


def register_model(fn: Callable, name: str | None = None) -> str:
    """Register a model function so that saved configurations can name it.

    Args:
        fn: the NumPyro model function ``model(x, y=None, **kwargs)`` (not a partial:
            keywords are saved separately).
        name: the name stored in files; default ``"module:qualname"``.

    Returns:
        The registered name.

    Raises:
        TypeError: ``fn`` not callable, a ``functools.partial``, or ``name`` not a str.
        ValueError: the name is taken by another function, or no default exists.

    Example:
        >>> import numpyro, numpyro.distributions as dist
        >>> from bayesrank.posteriors import register_model
        >>> def clicks(x, y=None):
        ...     theta = numpyro.sample(
        ...         "theta", dist.Normal(0.0, 1.0).expand([x.shape[-1]]).to_event(1))
        ...     numpyro.sample("y", dist.Bernoulli(logits=x @ theta), obs=y)
        >>> register_model(clicks, name="example:clicks")   # before save and load
        'example:clicks'
    """
    if not callable(fn):
        raise TypeError(f"fn: expected a callable, got {type(fn).__name__}")
    if isinstance(fn, functools.partial):
        raise TypeError(
            "fn: register the underlying function, not a functools.partial (its "
            "keywords are saved with the configuration)"
        )
    if name is None:
        name = _default_name(fn)
    if not isinstance(name, str) or not name:
        raise TypeError(f"name: expected a non-empty str, got {name!r}")
    current = _REGISTRY.get(name)
    if current is not None and current is not fn:
        raise ValueError(f"name: {name!r} is already registered to {current!r}")
    _REGISTRY[name] = fn
    return name


def resolve_model(name) -> Callable:
    """The function registered under ``name``; ValueError if there is none.

    Example:
        >>> from bayesrank.posteriors import register_model, resolve_model
        >>> def my_model(x, y=None): ...
        >>> resolve_model(register_model(my_model, name="example:resolve")) is my_model
        True
    """
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(
            f"model: {name!r} is not a registered model function; register it with "
            "bayesrank.posteriors.register_model(fn, name) before loading, or pass "
            "model=<the function> to load it"
        )
    return _REGISTRY[name]


def registered_models() -> dict[str, Callable]:
    """A copy of the registry (name -> function)."""
    return dict(_REGISTRY)


def function_path(fn) -> tuple[str, dict]:
    """The stored name and JSON-able keywords of a model function or partial.

    The name is the function's registered name when it has one, else
    ``"module:qualname"`` (such a file loads only after ``register_model`` or with
    ``model=``).

    Raises:
        TypeError: a partial with positional arguments, non-JSON-able keywords, or a
            function without a module-level name that is not registered.
    """
    kwargs: dict = {}
    if isinstance(fn, functools.partial):
        if fn.args:
            raise TypeError(
                "config: model partials with positional args cannot be saved"
            )
        kwargs = dict(fn.keywords)
        fn = fn.func
    try:
        json.dumps(kwargs)
    except TypeError:
        raise TypeError(
            f"config: model keywords {sorted(kwargs)} are not JSON-able"
        ) from None
    for name, registered in _REGISTRY.items():
        if registered is fn:
            return name, kwargs
    try:
        return _default_name(fn), kwargs
    except ValueError:
        raise TypeError(
            f"config: model {fn!r} is not a module-level function; register it with "
            "register_model(fn, name) to save it"
        ) from None


for _fn in (models.glm, models.student_t_glm, models.hierarchical_glm):
    register_model(_fn, f"{BUILTIN_PREFIX}:{_fn.__name__}")
del _fn
