"""Parts of a policy as JAX pytrees: compiled once per configuration.

A policy's parts (posterior model, estimate, tables, features and the core that
composes them) are plain Python objects. Registered here as pytrees, they travel into
``jax.jit`` as *arguments*: their array attributes (the dependency weights w, a
vector prior, the initial item vectors) become traced leaves, and everything else
(floats, ints, strings, links, callables, NumPyro prior distributions) becomes the
static part of the tree structure, compared by value. Module-level jitted functions
(:mod:`bayesrank.policies.runtime.program`) therefore compile once per *configuration*
(model family and settings, link, L, d, dtype, decoder path, shapes) and every other
policy of that configuration, whatever its seed, items or w, reuses the program.

Attributes named in a class's ``_derived`` tuple (caches, jitted helpers) are carried
along but left out of the comparison: they must be functions of the compared ones.

    class MyTables(Part):            # every subclass is registered on definition
        _derived = ("_cache",)

This module imports nothing from bayesrank (the lowest layer).
"""

from __future__ import annotations

import functools
import types

import jax
import numpy as np

__all__ = ["Part", "jit_method", "static_key"]


def _is_dynamic(value) -> bool:
    """Array attributes (and nested parts) are leaves; everything else is static."""
    return isinstance(value, (jax.Array, np.ndarray, Part))


def static_key(value):
    """A hashable description of a static attribute, equal for equal values.

    Scalars by value (with their type), tuples and NamedTuples (e.g. a
    :class:`~bayesrank.model.links.Link`) element by element, ``functools.partial`` by
    its function and arguments, NumPyro distributions by their type and parameter
    values, NumPy scalars and small arrays by value; functions and other hashable
    objects by identity; anything else unhashable by identity (never shared).

    Example:
        >>> import numpyro.distributions as dist
        >>> static_key(dist.Normal(0.0, 5.0)) == static_key(dist.Normal(0.0, 5.0))
        True
        >>> static_key(dist.Normal(0.0, 5.0)) == static_key(dist.Normal(0.0, 4.0))
        False
    """
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return (type(value), value)
    if isinstance(value, type):
        return ("type", value)
    if isinstance(value, tuple):
        return (type(value), tuple(static_key(v) for v in value))
    if isinstance(value, list):
        return (list, tuple(static_key(v) for v in value))
    if isinstance(value, dict):
        return (dict, tuple(sorted((str(k), static_key(v)) for k, v in value.items())))
    if isinstance(value, (np.ndarray, np.generic)):
        a = np.asarray(value)
        return ("array", a.shape, a.dtype.str, a.tobytes())
    if isinstance(value, jax.Array):
        try:
            return static_key(np.asarray(value))
        except (jax.errors.ConcretizationTypeError,
                jax.errors.TracerArrayConversionError):  # a tracer: never shared
            return ("id", id(value))
    if isinstance(value, functools.partial):
        return ("partial", static_key(value.func), static_key(value.args),
                static_key(value.keywords))
    if _is_distribution(value):
        leaves, treedef = jax.tree_util.tree_flatten(value)
        return ("dist", type(value), treedef, tuple(static_key(x) for x in leaves))
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
        return ("fn", value)
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return ("obj", value)


def _is_distribution(value) -> bool:
    return hasattr(value, "batch_shape") and hasattr(value, "log_prob") and hasattr(
        value, "tree_flatten"
    )


class _Static:
    """A static attribute with value equality (hash of :func:`static_key`)."""

    __slots__ = ("hash", "key", "value")

    def __init__(self, value, compared: bool = True):
        self.value = value
        self.key = static_key(value) if compared else None
        self.hash = hash(self.key)

    def __eq__(self, other) -> bool:
        return isinstance(other, _Static) and self.key == other.key

    def __hash__(self) -> int:
        return self.hash


#: where an unflattened part remembers which attributes were leaves
_NAMES = "_tree_leaf_names"


def _flatten(obj):
    derived = type(obj)._derived
    items = sorted((k, v) for k, v in vars(obj).items() if k != _NAMES)
    # A part rebuilt by JAX keeps the leaves it was built from, whatever JAX put in
    # their place (tracers, or the placeholders of an ahead-of-time compilation that
    # are not arrays): flatten(unflatten(tree, anything)) is the same tree
    names = vars(obj).get(_NAMES)
    if names is None:
        names = tuple(k for k, v in items if _is_dynamic(v) and k not in derived)
    children = [getattr(obj, k) for k in names]
    static = tuple(
        (k, _Static(v, compared=k not in derived))
        for k, v in items
        if k not in names
    )
    return children, (names, static)


def _unflatten(cls, aux, children):
    names, static = aux
    obj = object.__new__(cls)
    d = obj.__dict__
    d[_NAMES] = names
    for k, s in static:
        d[k] = s.value
    for k, v in zip(names, children):
        d[k] = v
    return obj


class Part:
    """Base of every policy part: subclasses are registered as JAX pytrees.

    Array attributes are leaves; the rest is static and compared by value
    (:func:`static_key`), so jitted functions taking a part as an argument compile
    once per configuration. ``_derived`` names attributes carried but not compared.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> class Scale(Part):
        ...     def __init__(self, factor, offset):
        ...         self.factor, self.offset = factor, jnp.asarray(offset)
        >>> [leaf.shape for leaf in jax.tree_util.tree_leaves(Scale(2.0, [1.0, 2.0]))]
        [(2,)]
        >>> f = jax.jit(lambda s, x: s.factor * x + s.offset)
        >>> f(Scale(2.0, [1.0, 2.0]), 1.0).tolist(), f(Scale(2.0, [0.0, 0.0]), 1.0).tolist()
        ([3.0, 4.0], [2.0, 2.0])
        >>> f._cache_size()                      # one program for both offsets
        1
    """

    _derived: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        jax.tree_util.register_pytree_node(
            cls, _flatten, functools.partial(_unflatten, cls)
        )


def jit_method(name: str, **jit_kwargs):
    """``jax.jit`` of ``self.<name>(*args)`` with ``self`` (a :class:`Part`) passed
    as the first argument: one compiled program per configuration of ``self``, not
    one per instance. ``static_argnums`` count ``self`` as argument 0.

    Example:
        >>> import jax.numpy as jnp
        >>> class Shift(Part):
        ...     def __init__(self, by):
        ...         self.by = jnp.asarray(by)
        ...     def apply(self, x):
        ...         return x + self.by
        >>> apply = jit_method("apply")
        >>> apply(Shift(1.0), 1.0).tolist(), apply(Shift(2.0), 1.0).tolist()
        (2.0, 3.0)
        >>> apply._cache_size()
        1
    """

    def call(self, *args):
        return getattr(self, name)(*args)

    call.__name__ = call.__qualname__ = name
    return jax.jit(call, **jit_kwargs)
