"""Old import paths of modules that moved in 0.2, kept working with a warning.

``import bayesrank.decode`` (and the other names in :data:`MOVED`) returns a thin module
that forwards every attribute to the module's new home and raises a
``DeprecationWarning`` naming it. Nothing is copied: the forwarded names are the new
module's own objects.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings

#: old module path -> new module path (``bayesrank.decode`` was split into several)
MOVED = {
    "bayesrank.decode": (
        "bayesrank.decoding.api",
        "bayesrank.decoding.dense",
        "bayesrank.decoding.separable",
        "bayesrank.decoding.window",
        "bayesrank.decoding.search",
        "bayesrank.decoding.checks",
    ),
    "bayesrank.decode_bound": "bayesrank.decoding.bounded",
    "bayesrank.decode_monotone": "bayesrank.decoding.monotone",
    "bayesrank.decode_native": "bayesrank.decoding.native",
    "bayesrank.decode_prefix": "bayesrank.decoding.prefix",
    "bayesrank.backward": "bayesrank.decoding.backward",
    "bayesrank.graph": "bayesrank.decoding.graph",
    "bayesrank.scores": "bayesrank.decoding.scores",
    "bayesrank.policies.decoder": "bayesrank.decoding.dispatch",
    "bayesrank.env": "bayesrank.model.env",
    "bayesrank.links": "bayesrank.model.links",
    "bayesrank.noise": "bayesrank.model.noise",
    "bayesrank.feedback": "bayesrank.model.feedback",
    "bayesrank.bounds": "bayesrank.model.bounds",
}


#: names that were private in the old modules and are public in the new ones
RENAMED = {"_as_float": "as_float", "_max_argmax": "max_argmax", "_dp_host": "dp_host",
           "_check_shapes": "check_shapes", "_check_inputs": "check_inputs",
           "_check_values": "check_values", "_is_tracer": "is_tracer",
           "_host_search": "host_search"}


def _targets(old: str) -> tuple[str, ...]:
    new = MOVED[old]
    return (new,) if isinstance(new, str) else new


def _new_name(old: str) -> str:
    new = _targets(old)
    return new[0] if len(new) == 1 else "bayesrank.decoding"


def warn_moved(old: str, stacklevel: int) -> None:
    warnings.warn(
        f"{old} is deprecated: it moved to {_new_name(old)}; import from there (or use "
        "the names in bayesrank's namespace)",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


class _Forward(types.ModuleType):
    """A module whose attributes are those of its target."""

    def __init__(self, name: str, targets: list[types.ModuleType]):
        super().__init__(name, targets[0].__doc__)
        self.__dict__["_targets"] = targets

    def __getattr__(self, attr):
        for target in self.__dict__["_targets"]:
            for name in (attr, RENAMED.get(attr)):
                if name is not None and hasattr(target, name):
                    return getattr(target, name)
        raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")

    def __dir__(self):
        return sorted({n for t in self.__dict__["_targets"] for n in dir(t)})


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        warn_moved(spec.name, stacklevel=3)  # importlib's own frames are skipped
        targets = [importlib.import_module(t) for t in _targets(spec.name)]
        return _Forward(spec.name, targets)

    def exec_module(self, module):
        pass


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED:
            return importlib.machinery.ModuleSpec(fullname, _Loader())
        return None


def install() -> None:
    """Put the finder at the end of ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
