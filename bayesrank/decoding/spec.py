"""What the dispatcher decodes: a static :class:`DecodeSpec` and score tables as arrays.

The decoder of :mod:`bayesrank.decoding.dispatch` reads nothing but these NamedTuples
(no object of the layers above): a policy turns its estimate into one of the table
kinds below and passes it with a spec. The spec holds only hashable, static fields
(the kind, the pair tables' link, ``distinct``, ``method``) and is read at trace time,
so the route is fixed when a policy's program is compiled; the tables are pytrees of
arrays (traced).

============================  ===============================================  =========
tables                        the pair score of item j at position l after i   kind
============================  ===============================================  =========
:class:`SeparableTables`      ``A[l, j] + B[l, i]``                            separable
:class:`MonotoneTables`       ``f(A[l, j] + B[l, i])``, f = ``spec.link``      monotone
:class:`BonusTables`          ``f(A_j + B_i + c_l ||Ua_j + Ub_i||)``           bonus
:class:`WindowScores`         a window of S-1 previous items (S > 2)           window
============================  ===============================================  =========

Example:
    Separable tables of 3 items over positions 2..3, decoded with position 1's scores:

    >>> import jax.numpy as jnp
    >>> from bayesrank.decoding.spec import DecodeSpec, SeparableTables, dense_pairs
    >>> from bayesrank.decoding import decode_tables
    >>> tabs = SeparableTables(A=jnp.array([[0.0, 1.0, 2.0]] * 2), B=jnp.zeros((2, 3)))
    >>> dense_pairs(DecodeSpec("separable"), tabs).shape
    (2, 3, 3)
    >>> items, value = decode_tables(DecodeSpec("separable"), jnp.array([3.0, 0.0, 0.0]),
    ...                              tabs, jnp.ones(3, bool))
    >>> items.tolist(), float(value)
    ([0, 2, 2], 7.0)
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp

from bayesrank.model.links import LINKS, Link

__all__ = [
    "KINDS",
    "METHODS",
    "BonusTables",
    "DecodeSpec",
    "MonotoneTables",
    "SeparableTables",
    "WindowScores",
    "apply_link",
    "valid_spec",
    "dense_bonus",
    "dense_pairs",
]

#: The table kinds, in the order of the module docstring's table.
KINDS = ("separable", "monotone", "bonus", "window")
#: The decoding methods a spec may name.
METHODS = ("auto", "fast", "dense")


class DecodeSpec(NamedTuple):
    """How to decode: static, hashable fields read at trace time.

    Attributes:
        kind: one of :data:`KINDS` (must match the tables' type).
        link: the :class:`~bayesrank.model.links.Link` of the monotone and bonus
            tables (ignored by the separable and window kinds).
        distinct: forbid repeated items in a list (pairwise kinds only).
        method: "auto", "fast" or "dense" (see :mod:`bayesrank.decoding.dispatch`).

    Example:
        >>> from bayesrank.decoding.spec import DecodeSpec
        >>> spec = DecodeSpec("monotone", distinct=True)
        >>> spec.link.name, hash(spec) == hash(DecodeSpec("monotone", distinct=True))
        ('identity', True)
    """

    kind: str
    link: Link = LINKS["identity"]
    distinct: bool = False
    method: str = "auto"


class SeparableTables(NamedTuple):
    """Positions 2..L of scores ``A[l, j] + B[l, i]`` (each (L-1, K)).

    Example:
        >>> import jax.numpy as jnp
        >>> from bayesrank.decoding import decode_tables
        >>> from bayesrank.decoding.spec import DecodeSpec, SeparableTables
        >>> first, mask = jnp.array([0.0, 0.1, 0.3]), jnp.ones(3, bool)  # L = 2, K = 3
        >>> A, B = jnp.array([[0.0, 1.0, 0.5]]), jnp.array([[0.2, 0.0, 0.0]])
        >>> items, value = decode_tables(DecodeSpec("separable"), first,
        ...                              SeparableTables(A, B), mask)
        >>> items.tolist(), round(float(value), 2)          # 0.3 + (1.0 + 0.0)
        ([2, 1], 1.3)
    """

    A: Any  # (L-1, K) the part of position l's score that depends on the item there
    B: Any  # (L-1, K) the part that depends on the item before it


class MonotoneTables(NamedTuple):
    """Positions 2..L of scores ``f(A[l, j] + B[l, i])``, f the spec's link
    (nondecreasing).

    Example:
        >>> import jax.numpy as jnp
        >>> from bayesrank.decoding import decode_tables
        >>> from bayesrank.decoding.spec import DecodeSpec, MonotoneTables
        >>> first, mask = jnp.array([0.0, 0.1, 0.3]), jnp.ones(3, bool)  # L = 2, K = 3
        >>> A, B = jnp.array([[0.0, 1.0, 0.5]]), jnp.array([[0.2, 0.0, 0.0]])
        >>> spec = DecodeSpec("monotone")                   # the identity link
        >>> items, value = decode_tables(spec, first, MonotoneTables(A, B), mask)
        >>> items.tolist(), round(float(value), 2)
        ([2, 1], 1.3)
    """

    A: Any  # (L-1, K)
    B: Any  # (L-1, K)


class BonusTables(NamedTuple):
    """Positions 2..L of optimistic scores ``f(A_j + B_i + c ||Ua_j + Ub_i||)``.

    Example:
        A width of 0.8 along item 2's direction makes it the optimistic choice at
        position 2 too (0.5 + 0.8 > 1.0):

        >>> import jax.numpy as jnp
        >>> from bayesrank.decoding import decode_tables
        >>> from bayesrank.decoding.spec import DecodeSpec, BonusTables
        >>> first, mask = jnp.array([0.0, 0.1, 0.3]), jnp.ones(3, bool)  # L = 2, K = 3
        >>> A, B = jnp.array([[0.0, 1.0, 0.5]]), jnp.array([[0.2, 0.0, 0.0]])
        >>> Ua, Ub = jnp.array([[[0.0, 0.0, 1.0]]]), jnp.zeros((1, 1, 3))  # q = 1
        >>> items, value = decode_tables(DecodeSpec("bonus"), first,
        ...                              BonusTables(A, B, Ua, Ub, jnp.array([0.8])), mask)
        >>> items.tolist(), round(float(value), 2)          # 0.3 + (0.5 + 0.8)
        ([2, 2], 1.6)
    """

    A: Any  # (L-1, K) estimate part of the item at position l
    B: Any  # (L-1, K) estimate part of the item before it
    Ua: Any  # (L-1, q, K) whitened vectors of the item at position l
    Ub: Any  # (L-1, q, K) whitened vectors of the item before it
    c: Any  # (L-1,) widths, >= 0


class WindowScores(NamedTuple):
    """All L tables of a window of S-1 previous items (layout of
    :func:`bayesrank.decoding.window.window_decode`).

    Example:
        S = 2: position 1's (K,) scores and position 2's dense (K, K) table:

        >>> import jax.numpy as jnp
        >>> from bayesrank.decoding import decode_tables
        >>> from bayesrank.decoding.spec import DecodeSpec, WindowScores
        >>> first, mask = jnp.array([0.0, 0.1, 0.3]), jnp.ones(3, bool)  # L = 2, K = 3
        >>> A, B = jnp.array([[0.0, 1.0, 0.5]]), jnp.array([[0.2, 0.0, 0.0]])
        >>> pairs = A[0][None, :] + B[0][:, None]           # pairs[i, j]
        >>> items, value = decode_tables(DecodeSpec("window"), None,
        ...                              WindowScores([first, pairs]), mask)
        >>> items.tolist(), round(float(value), 2)
        ([2, 1], 1.3)
    """

    scores: Any  # a list of L arrays; scores[l] has min(l, S-1) + 1 axes of length K


_TYPES = {
    "separable": SeparableTables,
    "monotone": MonotoneTables,
    "bonus": BonusTables,
    "window": WindowScores,
}


def valid_spec(spec, tables=None) -> None:
    """Raise TypeError/ValueError unless ``spec`` is a :class:`DecodeSpec` with a known
    kind and method and ``tables`` (when given) is the NamedTuple of that kind."""
    if not isinstance(spec, DecodeSpec):
        raise TypeError(f"spec: expected a DecodeSpec, got {type(spec).__name__}")
    if spec.kind not in _TYPES:
        raise ValueError(f"spec.kind: expected one of {KINDS}, got {spec.kind!r}")
    if spec.method not in METHODS:
        raise ValueError(f"method: expected one of {METHODS}, got {spec.method!r}")
    want = _TYPES[spec.kind]
    if tables is not None and type(tables) is not want:
        raise TypeError(
            f"tables: a {spec.kind!r} spec expects {want.__name__}, "
            f"got {type(tables).__name__}"
        )


def apply_link(link, z):
    """``link.mean(z)``, skipping the call for the identity link."""
    return z if link.name == "identity" else link.mean(z)


def dense_bonus(tables: BonusTables, link):
    """(L-1, K, K) optimistic tables from the factored form (Gram form of the norm)."""
    na = jnp.sum(tables.Ua * tables.Ua, axis=1)  # (L-1, K)
    nb = jnp.sum(tables.Ub * tables.Ub, axis=1)
    cross = jnp.einsum("lqi,lqj->lij", tables.Ub, tables.Ua)  # (L-1, K_prev, K_next)
    sq = jnp.maximum(na[:, None, :] + 2.0 * cross + nb[:, :, None], 0.0)
    z = (tables.A[:, None, :] + tables.B[:, :, None]
         + tables.c[:, None, None] * jnp.sqrt(sq))
    return apply_link(link, z)


def dense_pairs(spec: DecodeSpec, tables):
    """The (L-1, K, K) tables ``[l-2, i, j]`` (item j at position l after item i) of a
    pairwise kind (O(L K^2) memory: what the dense DP and inspection read)."""
    valid_spec(spec, tables)
    if spec.kind == "separable":
        return tables.A[:, None, :] + tables.B[:, :, None]
    if spec.kind == "monotone":
        return apply_link(spec.link, tables.A[:, None, :] + tables.B[:, :, None])
    if spec.kind == "bonus":
        return dense_bonus(tables, spec.link)
    raise ValueError("spec.kind: window tables have no pairwise (L-1, K, K) form")
