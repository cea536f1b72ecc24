"""Parsing of long-format log columns into the arrays of a log (no Dataset here).

The layout is documented in :mod:`bayesrank.ope.formats.frame`. Kept apart from
:mod:`bayesrank.ope.log` and :mod:`bayesrank.ope.formats.frame` so that ``as_log(df)`` (in
``log``) and ``from_columns`` (in ``frame``) share it without an import circle.
"""

from __future__ import annotations

import re

import numpy as np

from bayesrank.ope._common import PSCORE_VARS

__all__ = ["PER_POSITION", "columns_to_arrays"]

PER_POSITION = [v for v, dims in PSCORE_VARS.items() if dims == ("round", "position")]
_REQUIRED = ("round", "position", "item", "reward")
#: the optional per-position column saying whether the position was examined
_EXAMINED = "examined"
_INTEGER = ("round", "position", "item")
_V0 = re.compile(r"v0_(0|[1-9][0-9]*)")


def _v0_columns(names) -> list[str]:
    v0 = sorted((c for c in names if _V0.fullmatch(c)), key=lambda c: int(c[3:]))
    if not v0 or [int(c[3:]) for c in v0] != list(range(len(v0))):
        raise ValueError(f"v0: expected columns v0_0 .. v0_{{d-1}}, got {v0}")
    return v0


def _valid_names(names) -> list[str]:
    """The v0 columns; raises on duplicated, missing or unknown columns."""
    seen = set()
    for c in names:
        if c in seen:
            raise ValueError(f"{c}: duplicated column")
        seen.add(c)
    for c in _REQUIRED:
        if c not in seen:
            raise ValueError(f"{c}: missing column")
    v0 = _v0_columns([c for c in names if isinstance(c, str)])
    known = {*_REQUIRED, _EXAMINED, *PSCORE_VARS, *v0}
    unknown = [str(c) for c in names if c not in known]
    if unknown:
        raise ValueError(
            f"{', '.join(unknown)}: unknown column(s); the long format has round, "
            "position, item, reward, v0_0 .. v0_{d-1} and optionally examined, "
            f"{', '.join(PSCORE_VARS)}"
        )
    return v0


def grid_cells(keys, pos):
    """Long rows (key, position) onto an (n, L) grid: ``(unique keys (n,), L, each
    row's cell, rows per cell (n * L,))``; the callers word the errors."""
    ids, r_idx = np.unique(keys, return_inverse=True)
    n, L = ids.size, int(pos.max()) + 1
    cell = r_idx.reshape(-1) * L + pos
    return ids, L, cell, np.bincount(cell, minlength=n * L)


def _cells(rnd, pos):
    """(n, L, inverse order of the rows into the (n, L) grid); raises naming
    ``position`` on a missing or duplicated (round, position)."""
    if pos.min() < 0:
        raise ValueError(f"position: expected positions >= 0, got {pos.min()}")
    rounds, L, cell, counts = grid_cells(rnd, pos)
    n = rounds.size
    if (counts > 1).any():
        k = int(np.argmax(counts > 1))
        raise ValueError(
            f"position: (round, position) = ({rounds[k // L]}, {k % L}) appears "
            f"{counts[k]} times; each must appear once"
        )
    if (counts == 0).any():
        k = int(np.argmin(counts))
        raise ValueError(
            f"position: round {rounds[k // L]} has no row for position {k % L}; every "
            f"round needs positions 0 .. {L - 1}"
        )
    return rounds, n, L, np.argsort(cell)


def columns_to_arrays(columns) -> dict:
    """The arguments of :func:`~bayesrank.ope.as_log` from long-format columns.

    Args:
        columns: sequence of (name, (m,) array) pairs, one per column, rows in any
            order; rounds are ordered by their ``round`` label.

    Returns:
        dict with ``lists``, ``rewards``, ``v0``, the pscore arrays present and
        ``examined`` when the column is there.

    Raises:
        ValueError, TypeError: naming the column when one is missing, unknown,
            duplicated or of the wrong dtype, when a round lacks a position or has
            one twice, or when a per-round column differs within a round.

    Examples:
        >>> import numpy as np
        >>> cols = [("round", np.array([7, 7])), ("position", np.array([1, 0])),
        ...         ("item", np.array([2, 0])), ("reward", np.array([0.0, 1.0])),
        ...         ("v0_0", np.array([0.5, 0.5]))]
        >>> columns_to_arrays(cols)["lists"].tolist()
        [[0, 2]]
    """
    names = [c for c, _ in columns]
    v0_cols = _valid_names(names)
    col = {c: np.asarray(a) for c, a in columns}
    for c, a in col.items():
        if a.ndim != 1:
            raise ValueError(f"{c}: expected a 1-d column, got shape {a.shape}")
        kinds = "iu" if c in _INTEGER else "biuf"
        if a.dtype.kind not in kinds:
            what = "integers" if c in _INTEGER else "real numbers"
            raise TypeError(f"{c}: expected {what}, got dtype {a.dtype}")
    if col["round"].size == 0:
        raise ValueError("round: expected at least one row, got an empty table")
    rounds, n, L, order = _cells(col["round"], col["position"].astype(np.int64))

    def grid(c):
        return col[c][order].reshape(n, L)

    def per_round(c):
        g = grid(c).astype(float)
        same = (g == g[:, :1]) | (np.isnan(g) & np.isnan(g[:, :1]))
        if not same.all():
            r = rounds[int(np.argmin(same.all(axis=1)))]
            raise ValueError(f"{c}: differs between the positions of round {r}")
        return g[:, 0]

    pscores = {v: grid(v) for v in PER_POSITION if v in col}
    if "pscore_list" in col:
        pscores["pscore_list"] = per_round("pscore_list")
    v0 = np.stack([per_round(c) for c in v0_cols], axis=1)
    out = {"lists": grid("item"), "rewards": grid("reward"), "v0": v0, **pscores}
    if _EXAMINED in col:
        out["examined"] = grid(_EXAMINED)
    return out


