"""One constructor convention for every policy: the catalogue first, the rest by name.

Every policy constructor takes one positional argument, the catalogue (``items``, the
(K, d) item vectors, or ``K`` for the click baselines that have none), and every other
argument by keyword, in one order: ``L``, ``w``, ``v0``, ``model``, the policy's own
settings, ``distinct``, ``mask``, ``seed``. :func:`keyword_only` refuses the forms
of earlier versions (``RankTS(model, V)``, ``GenRankTS(V, 4)``) with a ``TypeError``
that shows the call to write instead.

Example:
    >>> import numpy as np, bayesrank as br
    >>> br.GenRankTS(np.eye(3), 2)
    Traceback (most recent call last):
    ...
    TypeError: GenRankTS: every argument after the first (the items) is keyword-only; write GenRankTS(items, L=2)
"""

from __future__ import annotations

import functools
import inspect

__all__ = ["keyword_only"]

_SHOWN = (bool, int, float, str, type(None))


def _looks_like_model(arg) -> bool:
    """A posterior object (the first argument of the old RankTS/RankUCB forms)."""
    return (all(hasattr(arg, a) for a in ("init", "update", "link"))
            and not hasattr(arg, "__array__"))


def _shown(name: str, value) -> str:
    return repr(value) if isinstance(value, _SHOWN) else name


def new_call(cls: str, first: str, old: tuple[str, ...], args, kwargs) -> str:
    """The keyword form of an old positional call: ``cls(first, name=value, ...)``.

    ``old`` names the positional parameters of the old signature in order; values are
    shown when they are plain scalars, else by their parameter's name.

    Example:
        >>> import numpy as np
        >>> new_call("GenRankTS", "items", ("items", "L", "v0"), (np.eye(2), 4, np.ones(2)),
        ...          {"seed": 1})
        'GenRankTS(items, L=4, v0=v0, seed=1)'
    """
    named = dict(zip(old, args))
    extra = len(args) - len(old)
    parts = [first if first in named or first in kwargs else f"{first}=..."]
    parts += [f"{k}={_shown(k, v)}" for k, v in named.items() if k != first]
    parts += [f"{k}={_shown(k, v)}" for k, v in kwargs.items() if k != first]
    if extra > 0:
        parts.append(f"<{extra} more positional>")
    return f"{cls}({', '.join(parts)})"


def keyword_only(*old: str):
    """Decorate a policy's ``__init__(self, first, *, ...)``: a call with more than one
    positional argument, or whose one positional argument is a posterior model where
    the old signature took ``model`` first, raises a ``TypeError`` showing the new
    call. ``old`` names the old signature's positional parameters, in order.

    The decorated ``__init__`` keeps its signature (``inspect.signature`` and the
    documentation show the keyword-only form).
    """

    def wrap(init):
        first = list(inspect.signature(init).parameters)[1]
        model_first = bool(old) and old[0] == "model" and first != "model"

        @functools.wraps(init)
        def checked(self, *args, **kwargs):
            model_given = model_first and args and _looks_like_model(args[0])
            if len(args) > 1 or model_given:
                name = type(self).__name__
                # RankTS(V, 3, w): the items already first, the rest in the old order
                names = old[1:] if model_first and not model_given else old
                raise TypeError(
                    f"{name}: every argument after the first (the {first}) is "
                    f"keyword-only; write {new_call(name, first, names, args, kwargs)}"
                )
            init(self, *args, **kwargs)

        return checked

    return wrap
