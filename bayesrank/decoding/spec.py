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
import numpy as np

from bayesrank._validate import check_bool
from bayesrank.decoding.checks import as_float, is_tracer, refuse_bad_scores
from bayesrank.decoding.window import valid_window_scores
from bayesrank.model.links import LINKS, Link, get_link

__all__ = [
    "KINDS",
    "METHODS",
    "BonusTables",
    "DecodeSpec",
    "MonotoneTables",
    "SeparableTables",
    "WindowScores",
    "apply_link",
    "dense_bonus",
    "dense_pairs",
    "valid_spec",
    "valid_tables",
]

#: The table kinds, in the order of the module docstring's table.
KINDS = ("separable", "monotone", "bonus", "window")
#: The decoding methods a spec may name.
METHODS = ("auto", "fast", "dense")


class DecodeSpec(NamedTuple):
    """How to decode: static, hashable fields read at trace time.

    Attributes:
        kind: one of :data:`KINDS` (must match the tables' type).
        link: the link of the monotone and bonus tables (ignored by the separable and
            window kinds), in any form :func:`~bayesrank.model.links.get_link` takes:
            a name ("logistic"), a :class:`~bayesrank.model.links.Link` or a callable;
            the entry points normalise it to a ``Link`` (:func:`valid_spec`).
        distinct: forbid repeated items in a list (pairwise kinds only; a bool).
        method: "auto", "fast" or "dense" (see :mod:`bayesrank.decoding.dispatch`).

    Example:
        >>> from bayesrank.decoding.spec import DecodeSpec
        >>> spec = DecodeSpec("monotone", distinct=True)
        >>> spec.link.name, hash(spec) == hash(DecodeSpec("monotone", distinct=True))
        ('identity', True)
        >>> valid_spec(DecodeSpec("monotone", "logistic")).link.name
        'logistic'
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


def valid_spec(spec, tables=None) -> DecodeSpec:
    """Check a spec (and the type of its tables) and return it with its link as a
    :class:`~bayesrank.model.links.Link`.

    Args:
        spec: a :class:`DecodeSpec`; its ``link`` may be a name, a ``Link`` or a
            callable (:func:`~bayesrank.model.links.get_link`).
        tables: the NamedTuple of the spec's kind, or None (not checked).

    Returns:
        The spec, with ``link`` a ``Link`` and ``distinct`` a Python bool (the same
        object when both already were).

    Raises:
        TypeError: not a DecodeSpec, a link of no known form, a ``distinct`` that is
            not a bool, or tables of another kind.
        ValueError: an unknown kind, method or link name.
    """
    if not isinstance(spec, DecodeSpec):
        raise TypeError(f"spec: expected a DecodeSpec, got {type(spec).__name__}")
    if spec.kind not in _TYPES:
        raise ValueError(f"spec.kind: expected one of {KINDS}, got {spec.kind!r}")
    if spec.method not in METHODS:
        raise ValueError(f"method: expected one of {METHODS}, got {spec.method!r}")
    link = get_link(spec.link, argname="spec.link")
    distinct = check_bool(spec.distinct, "spec.distinct")
    want = _TYPES[spec.kind]
    if tables is not None and type(tables) is not want:
        raise TypeError(
            f"tables: a {spec.kind!r} spec expects {want.__name__}, "
            f"got {type(tables).__name__}"
        )
    if link is spec.link and distinct is spec.distinct:
        return spec
    return spec._replace(link=link, distinct=distinct)


def _real(x, name: str):
    """``x`` as an array of a floating dtype (integers promoted by
    :func:`~.checks.as_float`); a ``TypeError`` naming ``name`` for bool, complex,
    object or string data."""
    if not (hasattr(x, "dtype") and hasattr(x, "shape")):  # lists, scalars
        try:
            x = np.asarray(x)
        except (TypeError, ValueError):  # ragged nested lists
            raise TypeError(
                f"{name}: expected real scores (an int or float array), got "
                f"{type(x).__name__}"
            ) from None
    dt = x.dtype
    if not (jnp.issubdtype(dt, jnp.integer) or jnp.issubdtype(dt, jnp.floating)):
        raise TypeError(
            f"{name}: expected real scores (an int or float array), got dtype {dt}"
        )
    return as_float(x)


def _shape_error(name: str, form: str, want, got) -> ValueError:
    dims = ", ".join(str(w) for w in want) + ("," if len(want) == 1 else "")
    return ValueError(f"{name}: expected shape {form} = ({dims}), got {tuple(got)}")


def _pair_tables(kind: str, tables, K_hint: int | None):
    """Shapes, dtypes and values of pairwise tables; returns ``(tables, K, L)`` with
    every field a float array of one dtype. K and L-1 are read from ``tables.A``;
    ``K_hint`` (the length of ``first``, when known) only words the message about a
    malformed ``A``."""
    fields = {f: _real(getattr(tables, f), f"tables.{f}") for f in tables._fields}
    sa = tuple(fields["A"].shape)
    if len(sa) != 2:
        hint = "" if K_hint is None else f" = (L-1, {K_hint})"
        raise ValueError(f"tables.A: expected shape (L-1, K){hint}, got {sa}")
    if sa[1] < 1:
        raise ValueError(f"tables.A: expected K >= 1 items, got shape {sa}")
    Lm1, K = sa
    if tuple(fields["B"].shape) != sa:
        raise _shape_error("tables.B", "(L-1, K)", sa, fields["B"].shape)
    if kind == "bonus":
        su = tuple(fields["Ua"].shape)
        if len(su) != 3 or su[0] != Lm1 or su[2] != K:
            raise ValueError(
                f"tables.Ua: expected shape (L-1, q, K) = ({Lm1}, q, {K}), got {su}"
            )
        if tuple(fields["Ub"].shape) != su:
            raise _shape_error("tables.Ub", "(L-1, q, K)", su, fields["Ub"].shape)
        if tuple(fields["c"].shape) != (Lm1,):
            raise _shape_error("tables.c", "(L-1,)", (Lm1,), fields["c"].shape)
    for f in ("A", "B"):
        refuse_bad_scores(fields[f], f"tables.{f}")
    if kind == "bonus":
        for f in ("Ua", "Ub"):
            u = fields[f]
            if not is_tracer(u) and not np.isfinite(np.asarray(u)).all():
                raise ValueError(
                    f"tables.{f}: expected finite values, found NaN or inf"
                )
        c = fields["c"]
        if not is_tracer(c) and c.size:
            c_host = np.asarray(c)
            if not (np.isfinite(c_host) & (c_host >= 0)).all():
                raise ValueError(
                    "tables.c: expected finite widths >= 0, got min "
                    f"{c_host.min()} and max {c_host.max()}"
                )
    dtype = jnp.result_type(*fields.values())
    fields = {f: x if x.dtype == dtype else x.astype(dtype) for f, x in fields.items()}
    return type(tables)(**fields), K, Lm1 + 1


def valid_tables(spec, tables, first=None, mask=None):
    """Check a spec, its tables, position 1's scores and a mask against each other.

    The one check of every decoder entry point (:func:`dense_pairs`,
    :func:`~bayesrank.decoding.dispatch.decode_tables`,
    :func:`~bayesrank.decoding.dispatch.backward`): shapes and dtypes are checked
    for traced arrays too (they are static), values (finite or ``-inf`` scores,
    finite whitened vectors, widths >= 0) only for concrete ones. K and L-1 are read
    from ``tables.A`` (``tables.scores[0]`` for the window kind); every message names
    the table field that does not fit.

    Args:
        spec: a :class:`DecodeSpec` (see :func:`valid_spec`).
        tables: the NamedTuple of the spec's kind; pairwise fields (L-1, K) for ``A``
            and ``B``, (L-1, q, K) for ``Ua``/``Ub``, (L-1,) for ``c``; real (int or
            float) arrays or nested lists.
        first: (K,) position 1's scores of a pairwise kind, None for the window kind
            (its ``scores[0]``) or where no position 1 is read.
        mask: (K,) bool, or None.

    Returns:
        ``(spec, first, tables, mask)``: the spec of :func:`valid_spec`, ``first``
        and every table field as float arrays (the pairwise fields of one dtype,
        integers promoted), the mask as given (an array when a list was given).

    Raises:
        TypeError: a bad spec, tables of another kind, non-real scores, or a mask
            that is not boolean.
        ValueError: shapes that do not fit together, NaN or +inf scores, non-finite
            whitened vectors, negative widths, ``first`` given for the window kind,
            or ``distinct=True`` with fewer items than positions.

    Example:
        >>> import jax.numpy as jnp
        >>> spec = DecodeSpec("separable")
        >>> valid_tables(spec, SeparableTables(jnp.zeros((3, 10)), jnp.zeros((3, 9))))
        Traceback (most recent call last):
        ...
        ValueError: tables.B: expected shape (L-1, K) = (3, 10), got (3, 9)
    """
    spec = valid_spec(spec, tables)
    if spec.kind == "window":
        if first is not None:
            raise ValueError(
                "first: expected None for the window kind (position 1's scores are "
                "tables.scores[0])"
            )
        K, L = valid_window_scores(tables.scores)[0], len(tables.scores)
    else:
        if first is not None:
            first = _real(first, "first")
        K_hint = first.shape[0] if first is not None and first.ndim == 1 else None
        tables, K, L = _pair_tables(spec.kind, tables, K_hint)
        if first is not None:
            if tuple(first.shape) != (K,):
                raise _shape_error("first", "(K,)", (K,), first.shape)
            refuse_bad_scores(first, "first")
    if mask is not None:
        if not (hasattr(mask, "dtype") and hasattr(mask, "shape")):
            mask = np.asarray(mask)
        if tuple(mask.shape) != (K,):
            raise ValueError(
                f"mask: expected a (K,) = ({K},) bool array, got shape "
                f"{tuple(mask.shape)}"
            )
        if mask.dtype != bool:
            raise TypeError(f"mask: expected a bool array, got dtype {mask.dtype}")
    if spec.distinct and spec.kind != "window" and K < L:
        raise ValueError(f"distinct=True needs K >= L, got K={K} items and L={L}")
    return spec, first, tables, mask


def apply_link(link, z):
    """``link.mean(z)``, skipping the call for the identity link."""
    return z if link.name == "identity" else link.mean(z)


def _dense_bonus(tables: BonusTables, link: Link):
    """:func:`dense_bonus` of checked tables and a ``Link`` (no checks)."""
    na = jnp.sum(tables.Ua * tables.Ua, axis=1)  # (L-1, K)
    nb = jnp.sum(tables.Ub * tables.Ub, axis=1)
    cross = jnp.einsum("lqi,lqj->lij", tables.Ub, tables.Ua)  # (L-1, K_prev, K_next)
    sq = jnp.maximum(na[:, None, :] + 2.0 * cross + nb[:, :, None], 0.0)
    z = (tables.A[:, None, :] + tables.B[:, :, None]
         + tables.c[:, None, None] * jnp.sqrt(sq))
    return apply_link(link, z)


def dense_bonus(tables: BonusTables, link):
    """(L-1, K, K) optimistic tables from the factored form (Gram form of the norm).

    Args:
        tables: :class:`BonusTables`: A, B (L-1, K); Ua, Ub (L-1, q, K); c (L-1,).
        link: a link name, a :class:`~bayesrank.model.links.Link` or a callable.

    Returns:
        (L-1, K, K) array, ``[l-2, i, j]`` the score of item j at position l after i.

    Raises:
        TypeError, ValueError: as :func:`valid_tables`.
    """
    spec, _, tables, _ = valid_tables(DecodeSpec("bonus", link), tables)
    return _dense_bonus(tables, spec.link)


def _dense_pairs(spec: DecodeSpec, tables):
    """:func:`dense_pairs` of a checked spec and tables (no checks)."""
    if spec.kind == "separable":
        return tables.A[:, None, :] + tables.B[:, :, None]
    if spec.kind == "monotone":
        return apply_link(spec.link, tables.A[:, None, :] + tables.B[:, :, None])
    if spec.kind == "bonus":
        return _dense_bonus(tables, spec.link)
    raise ValueError("spec.kind: window tables have no pairwise (L-1, K, K) form")


def dense_pairs(spec: DecodeSpec, tables):
    """The (L-1, K, K) tables ``[l-2, i, j]`` (item j at position l after item i) of a
    pairwise kind (O(L K^2) memory: what the dense DP and inspection read).

    Args:
        spec: a :class:`DecodeSpec` of a pairwise kind (its link in any form
            :func:`~bayesrank.model.links.get_link` takes).
        tables: the NamedTuple of the spec's kind (fields as in :func:`valid_tables`).

    Returns:
        (L-1, K, K) float array.

    Raises:
        TypeError, ValueError: as :func:`valid_tables`; the window kind.
    """
    spec, _, tables, _ = valid_tables(spec, tables)
    return _dense_pairs(spec, tables)
