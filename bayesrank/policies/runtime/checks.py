"""The checks a policy makes on the host before its core runs: the constructor's items,
weights and v0 (:func:`as_items_w_v0`), the posterior model (:func:`refuse_non_model`),
the contexts and masks of a batch or of many lists, new item vectors, rewards
(:func:`as_rewards`), repeated items of a ``distinct=True`` policy, a
log to warm start from (:func:`as_fit_log`), a round counter (:func:`as_round`) and
a state passed in by the caller (:func:`refuse_foreign_state`). Each raises
ValueError/TypeError naming the argument; none changes any state.

Example:
    >>> import numpy as np
    >>> V, W, v0, L = as_items_w_v0(np.eye(3), None, [0.0, 0.5], None)
    >>> V.shape, W.tolist(), v0.tolist(), L
    ((3, 3), [0.0, 0.5], [0.0, 0.0, 0.0], 2)
"""

from __future__ import annotations

import jax
import numpy as np

from bayesrank._validate import check_array, check_int, check_mask, check_v0

__all__ = [
    "MAX_ROUND",
    "as_batch_mask",
    "as_batch_v0",
    "as_fit_log",
    "as_items_w_v0",
    "as_lists_v0",
    "as_new_items",
    "as_rewards",
    "as_round",
    "refuse_foreign_state",
    "refuse_non_model",
]

#: The largest round counter a policy holds: an int64, as a saved file stores it.
MAX_ROUND = 2**63 - 1


def as_items_w_v0(items, L, w, v0):
    """Validate and normalise the item matrix, the dependency weights and v0.

    Returns:
        items (K, d) float array, w as (L,) or (L, S-1), v0 (d,), L.
    """
    if items is None:
        raise ValueError("items: expected a (K, d) array of item vectors, got None")
    V = check_array(items, "items", finite=None)
    if V.ndim != 2 or V.shape[0] < 1 or V.shape[1] < 1:
        raise ValueError(f"items: expected a (K, d) array, got shape {V.shape}")
    if not np.all(np.isfinite(V)):
        raise ValueError("items: expected finite values, found NaN or inf")
    d = V.shape[1]
    if L is not None:
        L = check_int(L, "L", low=1)
    if w is None:
        if L is None:
            raise ValueError("L: give the list length L or the weights w")
        W = np.zeros(int(L))
    else:
        W = check_array(w, "w", finite=None)
        if W.ndim not in (1, 2) or W.shape[0] < 1 or (W.ndim == 2 and W.shape[1] < 1):
            raise ValueError(f"w: expected shape (L,) or (L, S-1), got {W.shape}")
        if not np.all(np.isfinite(W)):
            raise ValueError("w: expected finite values, found NaN or inf")
    if L is None:
        L = W.shape[0]
    if W.shape[0] != L:
        raise ValueError(
            f"w: expected {L} rows (one per position, L={L}), got shape {W.shape}"
        )
    v0a = np.zeros(d) if v0 is None else check_v0(v0, d)
    return V, W, v0a, int(L)


def refuse_non_model(model, attrs=("init", "update", "mean", "link")) -> None:
    """Raise TypeError unless ``model`` has the posterior-model methods ``attrs``."""
    if not all(hasattr(model, attr) for attr in attrs):
        raise TypeError(
            "model: expected a bayesrank posterior model (GaussianLinear, "
            f"BayesGLM, NumPyroModel), got {type(model).__name__}"
        )


def as_rewards(rewards, shape, model) -> np.ndarray:
    """Rewards as float64 (NaN = not observed): real numbers of the given shape,
    no infinities, and the model's support on the observed entries."""
    r = check_array(rewards, "rewards", finite=None, clicks=True)
    if r.shape != shape:
        raise ValueError(
            f"rewards: expected shape {shape} (one reward per shown item), got "
            f"{r.shape}"
        )
    seen = np.isfinite(r)
    observed = r
    if not seen.all():
        if np.isinf(r).any():
            raise ValueError(
                "rewards: expected finite rewards (NaN marks an unobserved position), "
                "found inf"
            )
        observed = r[seen]
    check = getattr(model, "check_rewards", None)
    # real-valued likelihoods too: a bound on the magnitude (docs/units.md)
    if check is not None and observed.size:
        check(observed)
    return r


def refuse_repeats(items: np.ndarray, name: str = "items") -> None:
    """Raise a ValueError naming ``name`` if a list (L,) or a row of (n, L) shows an
    item twice (a ``distinct=True`` policy never shows one; it learns from none)."""
    s = np.sort(items, axis=-1)
    rep = (s[..., 1:] == s[..., :-1]).any(axis=-1)
    if rep.any():
        row = int(np.flatnonzero(np.atleast_1d(rep))[0])
        lst = np.atleast_2d(items)[row].tolist()
        raise ValueError(
            f"{name}: the policy is distinct=True, but list {row} repeats an item: {lst}"
        )


def as_fit_log(log, *, K: int, L: int, items, distinct: bool):
    """A log to warm start a policy from (see ``Policy.fit``), checked against the
    policy's catalogue: ``(lists (n, L), rewards (n, L) float, v0 (n, d) float)``.

    Raises:
        ValueError, TypeError: naming the log's variable (or ``log`` for a log of
            another catalogue).
    """
    from bayesrank.ope.log import (  # deferred: keeps xarray out of the policies
        check_log,
        same_items,
    )

    check_log(log)  # a Dataset in the log format (its own K)
    K_log = log.attrs.get("K", log["items"].shape[0] if "items" in log else None)
    if K_log is not None and int(K_log) != K:
        raise ValueError(
            f"log: from a catalogue of K={int(K_log)} items, the policy's has "
            f"K={K}"
        )
    if "items" in log and not same_items(log["items"].values, items):
        raise ValueError(
            "log: its item vectors (items) differ from the policy's, beyond the "
            "rounding of the precision the log stores them in: a log from "
            "another catalogue"
        )
    if K_log is None:  # indices checked against the policy's K instead
        check_log(log, K=K)
    lists = np.asarray(log["lists"].values)
    if lists.shape[1] != L:
        raise ValueError(
            f"lists: expected {L} positions (the policy's L), got {lists.shape[1]}"
        )
    if lists.shape[0] and distinct:
        refuse_repeats(lists, "lists")
    return (lists, np.asarray(log["rewards"].values, float),
            np.asarray(log["v0"].values, float))


def as_batch_v0(v0, n, default_v0, d: int) -> np.ndarray:
    """(B, d) the contexts of a batch of requests: ``v0`` (B, d), or the default v0
    repeated ``n`` times when ``v0`` is None (``n`` must then be a positive int)."""
    if v0 is None:
        if n is None:
            raise ValueError("n: expected a positive number of requests when v0 is None, "
                             "got None")
        n = check_int(n, "n", low=1)
        return np.broadcast_to(np.asarray(default_v0), (int(n), d))
    v0s = check_v0(v0, d, batch=True)
    if n is not None and n != v0s.shape[0]:
        raise ValueError(f"n: expected {v0s.shape[0]} (the rows of v0), got {n}")
    return v0s


def as_batch_mask(mask, K: int, L: int, distinct: bool, B: int) -> np.ndarray:
    """A batch's mask: (B, K) one row per request, or (K,) shared."""
    mm = check_mask(mask, K, L, distinct, batch=True)
    if mm.ndim == 2 and mm.shape[0] != B:
        raise ValueError(
            f"mask: expected {B} rows (one per request) or shape ({K},), "
            f"got {mm.shape}"
        )
    return mm


def as_lists_v0(v0, n: int, default_v0, d: int) -> np.ndarray:
    """(n, d) the contexts of n shown lists: None (the default v0), one (d,) for
    every list, or (n, d)."""
    if v0 is None:
        return np.broadcast_to(default_v0, (n, d))
    if np.ndim(v0) == 1:
        return np.broadcast_to(check_v0(v0, d), (n, d))
    v0s = check_v0(v0, d, batch=True)
    if v0s.shape[0] != n:
        raise ValueError(
            f"v0: expected {n} rows (one per list), got {v0s.shape[0]}"
        )
    return v0s


def as_new_items(vectors, d: int) -> np.ndarray:
    """(m, d) finite item vectors to add to a catalogue of dimension d."""
    V = check_array(vectors, "vectors", finite=None)
    if V.ndim != 2 or V.shape[1] != d or V.shape[0] < 1:
        raise ValueError(f"vectors: expected shape (m, d) = (m, {d}), got {V.shape}")
    if not np.all(np.isfinite(V)):
        raise ValueError("vectors: expected finite values, found NaN or inf")
    return V


def as_round(t, name: str = "t") -> int:
    """A round counter: an integer (Python or NumPy, not a bool) in
    ``[0, MAX_ROUND]`` (``2**63 - 1``, an int64), as a Python int.

    Raises:
        TypeError: ``t`` is not an integer.
        ValueError: ``t`` is negative or past ``MAX_ROUND``.
    """
    t = check_int(t, name, low=0)
    if t > MAX_ROUND:
        raise ValueError(f"{name}: expected a round counter <= 2**63 - 1 (an int64), "
                         f"got {t}")
    return t


def _leaf_dtype(x):
    dtype = getattr(x, "dtype", None)
    dtype = np.asarray(x).dtype if dtype is None else dtype
    if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
        return dtype
    try:
        return jax.dtypes.canonicalize_dtype(dtype)  # what the compiled call receives
    except (TypeError, ValueError):  # no JAX dtype (strings, objects): as it is
        return dtype


def refuse_foreign_state(state, ref, name: str = "state") -> None:
    """Raise unless ``state`` is a state of the same core as ``ref`` (the policy's
    own): the same pytree structure and, leaf by leaf, the same shape and dtype (a
    NumPy float64 leaf where JAX runs in float32 counts as float32, as the compiled
    call would receive it). Nothing is traced or changed.

    Args:
        state: the pytree (NamedTuple of arrays) a caller passes in.
        ref: the policy's own state, e.g. a ``PolicyState`` with ``model``
            (per-position arrays, leading axis L), ``est``, ``items`` (Kc, d) and
            ``active`` (Kc,).
        name: the argument's name in the message.

    Raises:
        TypeError: another structure (another core's state, None, ...), naming
            ``name`` and the first field that differs.
        ValueError: a leaf of another shape or dtype (a policy of another K, L, d
            or capacity), naming ``name`` and the field's path, e.g. "state:
            expected the policy's state, field model.prec has shape (4, 5, 5),
            expected (3, 5, 5)".
    """
    flat, tree = jax.tree_util.tree_flatten_with_path(state)
    ref_flat, ref_tree = jax.tree_util.tree_flatten_with_path(ref)

    def field(path) -> str:
        return jax.tree_util.keystr(path).lstrip(".")

    if tree != ref_tree:
        paths = [field(p) for p, _ in flat]
        ref_paths = [field(p) for p, _ in ref_flat]
        detail = next((f"; its field {a or '(root)'} stands where the policy's "
                       f"{b or '(root)'} does" for a, b in zip(paths, ref_paths)
                       if a != b), "")
        if not detail and len(paths) != len(ref_paths):
            detail = f"; it holds {len(paths)} arrays, the policy's {len(ref_paths)}"
        raise TypeError(f"{name}: expected a state of this policy's core "
                        f"({type(ref).__name__}), got {type(state).__name__}{detail}")
    for (path, x), (_, r) in zip(flat, ref_flat):
        what = f"{name}: expected the policy's state, field {field(path)}"
        shape, want = tuple(np.shape(x)), tuple(np.shape(r))
        if shape != want:
            raise ValueError(f"{what} has shape {shape}, expected {want}")
        dtype, want_dtype = _leaf_dtype(x), _leaf_dtype(r)
        if dtype != want_dtype:
            raise ValueError(f"{what} has dtype {dtype}, expected {want_dtype}")
