# Over 450 lines because: one format, obp's slate feedback, read and written; most of it
# is the reading's check of every key (the refusals a file or dict must meet).
"""Open Bandit Pipeline (obp) slate logs in and out: :func:`from_obp`, :func:`to_obp`.

obp (0.5.x) keeps a slate log as a dict of long-format rows, one per (slate, position),
the ``bandit_feedback`` of ``SyntheticSlateBanditDataset.obtain_batch_bandit_feedback``.
The keys and their bayesrank counterparts:

=========================  ============  ===========================================
obp key                    shape         in the bayesrank log
=========================  ============  ===========================================
n_rounds                   int           the size of dim "round"
n_unique_action            int           the attribute ``K``
slate_id                   (rows,)       the rounds, ordered by slate_id; the
                                         coordinate ``slate_id`` when not 0 .. n-1
position                   (rows,)       dim "position" (0-based in both)
action                     (rows,)       ``lists``
reward                     (rows,)       ``rewards`` (NaN = not observed)
pscore                     (rows,)       ``pscore_list`` (one per round; obp repeats
                                         it on every row of the slate)
pscore_item_position       (rows,)       ``pscore_position``
pscore_cascade             (rows,)       ``pscore_cascade`` (the prefix up to and
                                         including the position, in both)
context                    (n, dim_ctx)  ``context`` (round, context_dim)
action_context             (K, dim)      ``items`` (item, dim)
expected_reward_factual    (rows,)       ``expected_reward_factual`` (round, position)
(none)                                   ``v0``: zeros (round, dim)
(none)                                   ``pscore_pair``: left out
=========================  ============  ===========================================

:func:`to_obp` writes two more keys that obp does not read, so that a bayesrank log
comes back whole: ``v0`` (n, dim) and ``pscore_pair`` (rows,).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr

from bayesrank._validate import check_int
from bayesrank.ope._common import pscore_tolerance, refuse_pscore_contradictions
from bayesrank.ope._long import grid_cells
from bayesrank.ope.log import as_log, check_log

__all__ = ["OBP_KEYS", "from_obp", "to_obp"]

#: The obp pscore keys and the log variables they become.
_PSCORES = {
    "pscore": "pscore_list",
    "pscore_item_position": "pscore_position",
    "pscore_cascade": "pscore_cascade",
}
_REQUIRED = ("n_rounds", "n_unique_action", "slate_id", "position", "action", "reward")
_OPTIONAL = ("context", "action_context", "expected_reward_factual", *_PSCORES)
#: Keys obp does not have, written by :func:`to_obp` so that a log round-trips.
_EXTRA = ("v0", "pscore_pair", "feedback", "examined")
#: What a log without a declared feedback model writes as ``feedback`` (obp drops None).
UNDECLARED = "undeclared"

#: Every key :func:`from_obp` reads (obp's, then bayesrank's two extras); it ignores
#: any other (listed in the log's attribute ``ignored_keys``).
OBP_KEYS = (*_REQUIRED, *_OPTIONAL, *_EXTRA)
#: The log variable of each pscore key, as named in from_obp's messages.
_PSCORE_KEY = {**{v: k for k, v in _PSCORES.items()}, "pscore_pair": "pscore_pair"}


def _key(k) -> str:
    return f"bandit_feedback[{k!r}]"


def _array(bf, k, kinds: str, ndim: int, what: str) -> np.ndarray:
    arr = np.asarray(bf[k])
    if arr.dtype.kind not in kinds:
        raise TypeError(f"{_key(k)}: expected {what}, got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise ValueError(f"{_key(k)}: expected a {ndim}-d array, got shape {arr.shape}")
    return arr


def _rows(bf, k, m: int, kinds: str = "biuf") -> np.ndarray:
    """A per-row column: 1-d, ``m`` long, of the given dtype kinds."""
    what = "integers" if kinds == "iu" else "real numbers"
    arr = _array(bf, k, kinds, 1, what)
    if arr.shape[0] != m:
        raise ValueError(
            f"{_key(k)}: expected {m} rows (as bandit_feedback['slate_id']), got "
            f"{arr.shape[0]}"
        )
    return arr.astype(np.int64) if kinds == "iu" else arr.astype(float)


def _no_inf(arr: np.ndarray, k) -> np.ndarray:
    if np.isinf(arr).any():
        raise ValueError(f"{_key(k)}: expected finite values or NaN (not observed), found inf")
    return arr


def _propensity(arr: np.ndarray, k) -> np.ndarray:
    if np.isnan(arr).any():
        raise ValueError(f"{_key(k)}: propensities must lie in (0, 1], found NaN")
    if (arr <= 0).any() or (arr > 1).any():
        raise ValueError(
            f"{_key(k)}: propensities must lie in (0, 1], got min {arr.min()} and max "
            f"{arr.max()}"
        )
    return arr


def _matrix(bf, k, rows: int, rows_of: str, dim: int | None = None) -> np.ndarray:
    """A finite real (rows, dim) array."""
    arr = _array(bf, k, "biuf", 2, "real numbers").astype(float)
    if arr.shape[0] != rows or arr.shape[1] < 1 or (dim is not None and arr.shape[1] != dim):
        want = f"({rows}, {dim if dim is not None else 'dim'})"
        raise ValueError(f"{_key(k)}: expected shape {want} ({rows_of}), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{_key(k)}: expected finite values, found NaN or inf")
    return arr


def _grid(slate, pos):
    """(slate ids (n,), L, the rows' order into the (n, L) grid); raises naming
    ``position`` on a duplicated (slate_id, position) or a ragged slate."""
    ids, L, cell, counts = grid_cells(slate, pos)
    n = ids.size
    if (counts > 1).any():
        c = int(np.argmax(counts > 1))
        raise ValueError(
            f"{_key('position')}: (slate_id, position) = ({ids[c // L]}, {c % L}) appears "
            f"{counts[c]} times; each must appear once"
        )
    if (counts == 0).any():
        c = int(np.argmin(counts))
        raise ValueError(
            f"{_key('position')}: slate {ids[c // L]} has no row for position {c % L}, "
            f"but the log's slates have positions 0 .. {L - 1} (a ragged slate). A "
            "bayesrank list has one length L, and the obp log does not say which item, "
            "if any, was shown there: add the row (reward NaN = not observed, with the "
            "item and propensities shown there) or drop the slate"
        )
    return ids, n, L, np.argsort(cell, kind="stable")


def from_obp(bandit_feedback, *, feedback=None) -> xr.Dataset:
    """A checked bayesrank log (:mod:`bayesrank.ope`) from obp's slate
    ``bandit_feedback``.

    The conversion is exact (the key table is in the how-to "Bring your obp log").
    Rows may come in any order: rounds are ordered by ``slate_id`` and each round's
    positions by ``position``. Slate ids need not be 0 .. n-1: when they are not, the log keeps
    them as the coordinate ``slate_id`` (round,), which :func:`to_obp` writes back.
    obp's ``context`` row i belongs to the i-th smallest slate id (obp's own logs have
    ids 0 .. n_rounds-1).

    bayesrank's ``v0`` (the request's vector, in the item space) has no obp
    counterpart: it is zeros of ``action_context``'s dimension (1 without
    ``action_context``), and obp's ``context`` is stored as the variable ``context``
    (round, context_dim). A ``v0`` key (written by :func:`to_obp`) gives ``v0``
    instead, and ``context`` is then not stored when it equals it. obp has no pair
    propensity: ``pscore_pair`` is left out unless the key (also written by
    :func:`to_obp`) is there.

    **Ragged slates are refused.** obp accepts a slate with fewer rows than the
    others, but a bayesrank list has one length L, and the obp log does not say which
    item, if any, was shown at a missing position. Inventing one would give silently
    wrong list propensities (``list_ips`` scores the target's whole list against the
    logged one). A slate without a row for some position in 0 .. L-1 (L = the largest
    position + 1) raises a ValueError naming ``position``. A row whose reward is NaN
    is accepted: the item was shown and its reward not observed.

    The checks are obp's (lengths equal, propensities in (0, 1], positions and slate
    ids non-negative integers, (slate_id, position) unique, actions in
    [0, n_unique_action), ``pscore`` the same on every row of a slate,
    ``pscore_cascade`` non-increasing within a slate) plus finite contexts, item
    vectors and rewards (NaN allowed), ``n_rounds`` = the number of slates, and the
    propensities agreeing with each other as every logger's do (within rounding, see
    :func:`~bayesrank.ope.as_log`): a slate's last ``pscore_cascade`` is its
    ``pscore``, and its ``pscore_item_position`` (and ``pscore_pair``) are at least
    that. Nothing a key names is imported or called.

    **What was examined.** obp's slates record every position's reward. The keys
    ``feedback`` and ``examined`` (rows,), written by :func:`to_obp` for a log whose
    feedback is not ``"full"``, carry its declared model and mask. Without them every
    reward present reads as ``feedback="full"``; a NaN reward is refused unless
    ``feedback=`` says how to read it (``"cascade"``, ``"pbm"``, or ``"undeclared"``:
    missing at random), because an unexamined position and a missing record are
    estimated differently.

    Keys it does not read are ignored, as obp's own estimators ignore what they do
    not need (obp's dicts carry e.g. ``len_list`` or the evaluation policy's
    propensities): the log's attribute ``ignored_keys`` lists them (a string, the
    keys separated by ", "; absent when none was ignored). An optional key whose
    value is None counts as absent (obp writes None for a propensity it did not
    compute).

    Args:
        bandit_feedback: dict with the required keys ``n_rounds``,
            ``n_unique_action``, ``slate_id``, ``position``, ``action``, ``reward``,
            and optionally ``pscore``, ``pscore_item_position``, ``pscore_cascade``,
            ``context``, ``action_context``, ``expected_reward_factual``, ``v0`` and
            ``pscore_pair``, ``feedback``, ``examined``
            (``bayesrank.ope.formats.obp.OBP_KEYS``); any other key is ignored.
        feedback: for a dict without a ``feedback`` key: ``"full"``, ``"cascade"``,
            ``"pbm"`` or ``"undeclared"`` (see above); None: ``"full"``, refused
            where a reward is NaN.

    Returns:
        The log Dataset, with ``K`` = ``n_unique_action``, ``items`` from
        ``action_context``, the three pscore variables present and ``context`` and
        ``expected_reward_factual`` when given; the attribute ``ignored_keys`` when
        keys were ignored. An integer reward becomes float.

    Raises:
        ValueError, TypeError: with a message starting with the key, e.g.
            ``bandit_feedback['pscore']: ...`` (``bandit_feedback`` when it is not a
            dict).

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import from_obp
        >>> bf = {"n_rounds": 2, "n_unique_action": 3,
        ...       "slate_id": np.array([7, 7, 4, 4]), "position": np.array([1, 0, 0, 1]),
        ...       "action": np.array([2, 0, 1, 2]), "reward": np.array([0.0, 1.0, 1.0, 0.0]),
        ...       "pscore": np.full(4, 1 / 6), "pscore_item_position": np.full(4, 1 / 3),
        ...       "pscore_cascade": np.array([1 / 6, 1 / 3, 1 / 3, 1 / 6]),
        ...       "context": np.array([[0.5], [-1.0]]), "action_context": np.eye(3)}
        >>> log = from_obp(bf)
        >>> log.lists.values.tolist(), log.slate_id.values.tolist()
        ([[1, 2], [0, 2]], [4, 7])
        >>> log.pscore_cascade.values.tolist() == [[1 / 3, 1 / 6]] * 2
        True
        >>> from_obp({**bf, "len_list": 2}).attrs["ignored_keys"]  # not read
        'len_list'
        >>> bf["pscore"] = np.full(4, 1.5)
        >>> from_obp(bf)
        Traceback (most recent call last):
        ...
        ValueError: bandit_feedback['pscore']: propensities must lie in (0, 1], got min 1.5 and max 1.5
    """
    if not isinstance(bandit_feedback, Mapping):
        raise TypeError(
            f"bandit_feedback: expected a dict with obp's keys, got "
            f"{type(bandit_feedback).__name__}"
        )
    # obp's estimators take the whole dict and read what they need: so does from_obp
    ignored = [k for k in bandit_feedback if not (isinstance(k, str) and k in OBP_KEYS)]
    bf = {k: v for k, v in bandit_feedback.items()
          if isinstance(k, str) and k in OBP_KEYS and (v is not None or k in _REQUIRED)}
    missing = [k for k in _REQUIRED if k not in bf]
    if missing:
        raise ValueError(f"{', '.join(_key(k) for k in missing)}: missing (required)")
    n_rounds = check_int(bf["n_rounds"], _key("n_rounds"), low=1)
    K = check_int(bf["n_unique_action"], _key("n_unique_action"), low=1)

    slate = _array(bf, "slate_id", "iu", 1, "integers").astype(np.int64)
    m = slate.shape[0]
    if m == 0:
        raise ValueError(f"{_key('slate_id')}: expected at least one row, got none")
    pos = _rows(bf, "position", m, "iu")
    action = _rows(bf, "action", m, "iu")
    reward = _no_inf(_rows(bf, "reward", m), "reward")
    for k, a in (("slate_id", slate), ("position", pos)):
        if a.min() < 0:
            raise ValueError(f"{_key(k)}: expected non-negative integers, got min {a.min()}")
    if action.min() < 0 or action.max() >= K:
        raise ValueError(
            f"{_key('action')}: expected item indices in [0, n_unique_action) = [0, {K}), "
            f"got min {action.min()} and max {action.max()}"
        )
    pscores = {k: _propensity(_rows(bf, k, m), k) for k in (*_PSCORES, "pscore_pair")
               if k in bf}
    erf = (_no_inf(_rows(bf, "expected_reward_factual", m), "expected_reward_factual")
           if "expected_reward_factual" in bf else None)

    ids, n, L, order = _grid(slate, pos)
    if n != n_rounds:
        raise ValueError(
            f"{_key('n_rounds')}: {n_rounds}, but bandit_feedback['slate_id'] holds {n} "
            "distinct slates"
        )

    def grid(a):
        return a[order].reshape(n, L)

    items = context = v0 = None
    if "action_context" in bf:
        items = _matrix(bf, "action_context", K, "n_unique_action rows")
    if "context" in bf:
        context = _matrix(bf, "context", n, "n_rounds rows")
    if "v0" in bf:
        d = None if items is None else items.shape[1]
        v0 = _matrix(bf, "v0", n, "n_rounds rows, the dim of action_context", d)
    else:
        v0 = np.zeros((n, 1 if items is None else items.shape[1]))

    args = {}
    for k, a in pscores.items():
        g = grid(a)
        if k == "pscore":
            same = (g == g[:, :1]).all(axis=1)
            if not same.all():
                raise ValueError(
                    f"{_key(k)}: differs between the rows of slate {ids[np.argmin(same)]}; "
                    "it is the probability of the whole slate, the same on every row"
                )
            args["pscore_list"] = g[:, 0]
            continue
        args[_PSCORES.get(k, k)] = g
    # as_log checks the same, naming its arguments: here the keys and the slate ids
    refuse_pscore_contradictions(
        args, *pscore_tolerance([np.asarray(bf[k]).dtype for k in pscores], L),
        name=lambda var: _key(_PSCORE_KEY[var]), row=lambda i: f"slate {ids[i]}")
    if feedback is not None and feedback not in ("full", "cascade", "pbm", UNDECLARED):
        raise ValueError(f"feedback: expected one of 'full', 'cascade', 'pbm', "
                         f"{UNDECLARED!r} or None, got {feedback!r}")
    examined = None
    if "feedback" in bf or "examined" in bf:
        fb = bf.get("feedback")
        if fb is not None and not isinstance(fb, str):
            raise TypeError(f"{_key('feedback')}: expected a string, got "
                            f"{type(fb).__name__}")
        fb = None if fb == UNDECLARED else fb
        if "examined" in bf:
            examined = grid(_rows(bf, "examined", m, "biu"))
    elif feedback is not None:
        fb = None if feedback == UNDECLARED else feedback
    elif np.isnan(grid(reward)).any():
        raise ValueError(
            f"{_key('reward')}: NaN (positions not observed) and no feedback model "
            "declared, so an unexamined position cannot be told from a missing record: "
            "pass feedback='cascade' (examined down to the first click), 'pbm', or "
            f"{UNDECLARED!r} (NaN as missing at random)")
    else:
        fb = "full"
    log = as_log(grid(action), grid(reward), v0, **args, K=K, items=items,
                 examined=examined, feedback=fb)
    if context is not None and not ("v0" in bf and np.array_equal(context, v0)):
        log["context"] = (("round", "context_dim"), context)
    if erf is not None:
        log["expected_reward_factual"] = (("round", "position"), grid(erf))
    if not np.array_equal(ids, np.arange(n)):
        log = log.assign_coords(slate_id=("round", ids))
    if ignored:  # one string, so that the log still saves to any NetCDF format
        log.attrs["ignored_keys"] = ", ".join(str(k) for k in ignored)
    return log


def _log_ids(log, n: int) -> np.ndarray:
    if "slate_id" not in log.coords and "slate_id" not in log:
        return np.arange(n, dtype=np.int64)
    ids = log["slate_id"]
    if ids.dims != ("round",) or ids.dtype.kind not in "iu":
        raise ValueError(f"slate_id: expected integers with dims ('round',), got dims "
                         f"{ids.dims} and dtype {ids.dtype}")
    ids = ids.values.astype(np.int64)
    if ids.min() < 0 or (np.diff(ids) <= 0).any():
        raise ValueError("slate_id: expected non-negative, strictly increasing integers")
    return ids


def _log_rows(log, name: str, dims: tuple) -> np.ndarray:
    if log[name].dims != dims:
        raise ValueError(f"{name}: expected dims {dims}, got {log[name].dims}")
    arr = log[name].values
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected real numbers, got dtype {arr.dtype}")
    return arr.astype(float)


def to_obp(log) -> dict:
    """obp's slate ``bandit_feedback`` dict of a bayesrank log (checked with
    :func:`~bayesrank.ope.check_log` first).

    One row per (round, position), ordered by slate then position, with obp's
    conventions: ``position`` 0-based, ``pscore`` (the whole list's probability)
    repeated on every row of the slate, ``pscore_cascade`` the prefix up to and
    including the position. Every position is a row: a NaN reward (not observed)
    stays a row with reward NaN (obp has no "not observed"; its estimates are then
    NaN). ``slate_id`` is the log's ``slate_id`` coordinate, else 0 .. n-1;
    ``n_unique_action`` is ``K``, else the rows of ``items``, else the largest item
    index + 1; ``context`` is the log's ``context``, else ``v0``; ``action_context``
    is ``items`` (left out without them). A pscore key, ``expected_reward_factual``
    and ``action_context`` are there only when the log has the variable.

    Two keys obp does not read carry what it has no place for: ``v0`` (n, dim)
    (left out when it is the zeros :func:`from_obp` makes: the log has ``context``
    and v0 is zero, of the items' dimension, or 1 without items) and
    ``pscore_pair`` (rows,), when the log has it. So ``from_obp(to_obp(log))`` is
    ``log`` (identical, when ``K`` is set: a log with items has it, and the log has
    no ``ignored_keys`` attribute, which is not written) and
    ``to_obp(from_obp(bf))`` is ``bf`` with the rows sorted by slate and position and
    the reward as float. One exception: a ``context`` equal to ``v0`` is not stored
    twice, so a log holding both comes back without ``context``.

    Args:
        log: a log Dataset of :mod:`bayesrank.ope`.

    Returns:
        dict of obp's keys (NumPy arrays; ``n_rounds`` and ``n_unique_action`` ints;
        ``slate_id``, ``position``, ``action`` int64, the rest float64).

    Raises:
        ValueError, TypeError: as :func:`~bayesrank.ope.check_log`, and naming
            ``slate_id``, ``context`` or ``expected_reward_factual`` when those are
            malformed.

    Examples:
        >>> import bayesrank as br
        >>> env = br.RankingEnv.paper(seed=0, K=5, L=2, d=3)
        >>> log = br.ope.collect(env, br.ope.UniformLogger(5, 2), 3, seed=0)
        >>> bf = br.ope.to_obp(log)
        >>> bf["slate_id"].tolist(), bf["position"].tolist(), bf["pscore"].tolist()
        ([0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 0, 1], [0.04, 0.04, 0.04, 0.04, 0.04, 0.04])
        >>> br.ope.from_obp(bf).identical(log)
        True
    """
    check_log(log)
    lists = log["lists"].values
    n, L = lists.shape
    if "K" in log.attrs:
        K = int(log.attrs["K"])
    elif "items" in log:
        K = int(log.sizes["item"])
    else:
        K = int(lists.max()) + 1
    v0 = log["v0"].values.astype(float)
    out = {
        "n_rounds": int(n),
        "n_unique_action": K,
        "slate_id": np.repeat(_log_ids(log, n), L),
    }
    if "context" in log:
        if log["context"].ndim != 2 or log["context"].dims[0] != "round":
            raise ValueError(f"context: expected dims ('round', context_dim), got "
                             f"{log['context'].dims}")
        out["context"] = _log_rows(log, "context", log["context"].dims)
    else:
        out["context"] = v0.copy()
    if "items" in log:
        out["action_context"] = log["items"].values.astype(float)
    out["action"] = lists.astype(np.int64).ravel()
    out["position"] = np.tile(np.arange(L, dtype=np.int64), n)
    out["reward"] = log["rewards"].values.astype(float).ravel()
    if "expected_reward_factual" in log:
        out["expected_reward_factual"] = _log_rows(
            log, "expected_reward_factual", ("round", "position")).ravel()
    if "pscore_cascade" in log:
        out["pscore_cascade"] = log["pscore_cascade"].values.astype(float).ravel()
    if "pscore_list" in log:
        out["pscore"] = np.repeat(log["pscore_list"].values.astype(float), L)
    if "pscore_position" in log:
        out["pscore_item_position"] = log["pscore_position"].values.astype(float).ravel()
    zeros_dim = log.sizes["dim"] if "items" in log else 1
    if not ("context" in log and not v0.any() and v0.shape[1] == zeros_dim):
        out["v0"] = v0
    if "pscore_pair" in log:
        out["pscore_pair"] = log["pscore_pair"].values.astype(float).ravel()
    if log.attrs.get("feedback") != "full":  # what obp's dicts do not say
        out["feedback"] = log.attrs.get("feedback", UNDECLARED)
        if "examined" in log:
            out["examined"] = log["examined"].values.astype(np.int64).ravel()
    return out
