"""Saving and loading policies: one .npz file, JSON configuration inside, no pickle.

The file holds the state's arrays (``state_<i>``, typed PRNG keys as their key data),
the constructor arrays (``arg_<name>``), the kept history and ``config_json`` (the
class, the format version, the bayesrank version, seed, round counter (a JSON
integer in ``[0, 2**63 - 1]``, the policy's int64 counter; load refuses one outside
it), the policy's configuration). ``save`` writes a temporary file beside the target
and renames it, so a crash never leaves half a file under the target's name.

``load`` trusts nothing in the file:

* it never imports or calls anything the file names: policy and model classes are
  looked up among bayesrank's own by name, user NumPyro model functions only in the
  explicit registry (:mod:`bayesrank.posteriors.nuts.registry`) or passed as ``model=``;
* every array is checked (present, dtype kind, shape against a freshly built state,
  finite, counts >= 0, Cholesky factors lower triangular with a positive diagonal
  and matching their precision) before the policy is handed back;
* the state must also be consistent: ``K`` in the configuration matches the item
  rows, the state's item vectors match ``arg_items`` (zeros past K), counts and
  ``yy`` are >= 0, slice widths and NIG rates > 0, precisions symmetric positive
  definite (their Cholesky factors match them), the Gram blocks ``Saa``/``Spp``
  and the joint ``[[Saa, Sap], [Sap^T, Spp]]`` symmetric positive semi-definite,
  a learnt-scale model's sums ``S`` and ``[[S, u], [u^T, q]]`` likewise (``q`` >= 0),
  and a latent w's chain inside its prior's support;
* a SHA-256 digest (``digest``: over every array's name, dtype, shape and bytes,
  ``config_json`` included) is written at save and checked last at load, so an edit
  the checks above cannot see (a negated ``b``, a changed reward) is refused too:
  "the file's content does not match its digest (edited or corrupted)". The digest
  detects corruption and edits, it is no signature: whoever recomputes it still meets
  the consistency checks;
  (these checks: :mod:`bayesrank.policies.runtime.persist_checks`);
* every failure (not a zip, truncated, missing keys, bad JSON, wrong class, a newer
  format, tampered arrays) is a ``ValueError`` naming the path and what is wrong.

A latent w's prior is stored as its class and parameters (see
:func:`bayesrank.posteriors.w_prior.prior_config`): ``save`` refuses a prior that
cannot be rebuilt from the file, naming ``w`` and why. ``load(path, w=prior)``
replaces the saved prior (its class and batch shape may differ: the constructor
checks it against L, and the chain's w must lie in its support).

Format history: 1 (no version, no ``history_v0``, no ``max_history``), 2 (conjugate
states without the compensation terms ``prec_lo``/``b_lo``), 3 (no digest), 4
(a latent w's sums of a and p: ``Saa, Sap, Spp, ba, bp``), 5 (current: of the
difference c = a - p and p). Older files are migrated on load: format 1's history
v0 is taken as the policy's v0; formats 1-2 get zero compensation terms (the plain
sums they stored); formats 1-4 of a latent w get ``Scc = Saa - Sap - Sap^T + Spp``,
``Scp = Sap - Spp``, ``bc = ba - bp`` (in float64, then the state's dtype).
Files of formats 1-3, written before the digest existed, load without one, through
all the other checks (a format-4 file without its digest is refused).
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._validate import check_int, is_integer
from bayesrank._version import __version__
from bayesrank.policies.runtime.checks import as_round
from bayesrank.policies.runtime.history import as_capacity, DEFAULT_CAPACITY
from bayesrank.policies.runtime.persist_checks import (
    _Bad,
    _is_key,
    _refuse_bad_factor,
    _refuse_bad_leaf,
    _refuse_bad_state,
    _valid_history,
)
from bayesrank.posteriors.w_prior import (
    is_distribution,
    prior_config,
    prior_from_config,
)

__all__ = ["FORMAT", "load_policy", "save_policy"]

#: The file format this version writes (and the newest it reads).
FORMAT = 5
#: The first format with a content digest.
_DIGEST_SINCE = 4

#: State fields added in format 3 (conjugate models' compensated sums).
_ADDED_IN_3 = ("prec_lo", "b_lo")
#: State fields added without a format change, told by the count of leaves and filled
#: with ones where a file has none: the learnt-scale conjugate model's reward scale (a
#: file without it holds sums in the rewards' own units, which a scale of 1 means).
_ADDED_BY_COUNT = ("scale",)


def _migrate_to_5(ref_state, leaves: list) -> list:
    """A latent w's sums of a and p (formats 1-4) as sums of c = a - p and p."""
    if type(ref_state.model).__name__ != "LatentWState":
        return leaves
    Saa, Sap, Spp, ba, bp = (np.asarray(x, np.float64) for x in leaves[:5])
    if Saa.ndim != 3 or not (Saa.shape == Sap.shape == Spp.shape):
        return leaves  # the shape checks name what is wrong
    SapT = np.swapaxes(Sap, -1, -2)
    new = (Saa - Sap - SapT + Spp, Sap - Spp, Spp, ba - bp, bp)
    return [n.astype(np.asarray(o).dtype) for n, o in zip(new, leaves[:5])] + leaves[5:]


def _as_path(path) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path: expected a str or os.PathLike, got {type(path).__name__}")
    return Path(path)


def _digest(arrays: dict) -> str:
    """SHA-256 over every array but ``digest``: name, dtype, shape and C-order bytes."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        if name == "digest":
            continue
        a = np.asarray(arrays[name])
        h.update(f"{name}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _refuse_unsavable_prior(policy) -> None:
    """Refuse (at save time) a prior on w that a file cannot rebuild."""
    prior = getattr(getattr(policy, "model", None), "w_prior", None)
    if prior is None:
        return
    cfg = prior_config(prior)
    why = cfg.get("why")
    if cfg["params"] is not None:
        try:
            prior_from_config(json.loads(json.dumps(cfg)))
        except ValueError as e:
            why = str(e)
    if why is not None:
        raise ValueError(
            f"w: cannot save a policy whose prior on w is {cfg['class']}: a file could "
            f"not rebuild it ({why})"
        )


# ----------------------------------------------------------------------- save
def save_policy(policy, path) -> None:
    """Write ``policy`` to ``path`` atomically (see the module docstring).

    Raises:
        TypeError: ``path`` is not a str or os.PathLike.
        ValueError: the policy's prior on a latent w cannot be rebuilt from a file
            (naming ``w``; nothing is written).
    """

    path = _as_path(path)
    _refuse_unsavable_prior(policy)
    leaves, _ = jax.tree_util.tree_flatten(policy.state)
    key_leaves = [i for i, x in enumerate(leaves) if _is_key(x)]
    arrays = {
        f"state_{i}": np.asarray(jax.random.key_data(x) if i in key_leaves else x)
        for i, x in enumerate(leaves)
    }
    for name, arr in policy._arrays().items():
        arrays[f"arg_{name}"] = np.asarray(arr)
    items, rewards, v0s = policy._history_arrays()
    arrays["history_items"], arrays["history_rewards"] = items, rewards
    arrays["history_v0"] = v0s
    cfg = {
        "class": type(policy).__name__,
        "format": FORMAT,
        "bayesrank": __version__,
        "seed": policy.seed,
        "t": policy.t,
        "K": policy.K,
        "n_state": len(leaves),
        "key_leaves": key_leaves,
        "max_history": policy.max_history,
        "history_seen": policy._history.seen,
        "config": policy._config(),
    }
    arrays["config_json"] = np.frombuffer(json.dumps(cfg).encode(), dtype=np.uint8)
    arrays["digest"] = np.frombuffer(_digest(arrays).encode(), dtype=np.uint8)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


# ----------------------------------------------------------------------- load


def _read(path: Path) -> dict:
    try:
        z = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise _Bad(f"not a bayesrank policy file (not a readable .npz: {e})") from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise _Bad("not a bayesrank policy file (a single array, not an .npz)")
    try:
        with z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as e:
        raise _Bad(f"truncated or corrupt file ({type(e).__name__}: {e})") from None


def _int(cfg: dict, name: str, low: int) -> int:
    v = cfg.get(name)
    if not isinstance(v, int):  # JSON integers only
        raise _Bad(f"config_json: {name} must be an int >= {low}, got {v!r}")
    try:
        return check_int(v, f"config_json: {name}", low=low)
    except (TypeError, ValueError) as e:
        raise _Bad(str(e)) from None


def _config(data: dict, cls) -> dict:
    raw = data.pop("config_json", None)
    if raw is None:
        raise _Bad("missing config_json (not a bayesrank policy file)")
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise _Bad("config_json: expected UTF-8 bytes")
    try:
        cfg = json.loads(bytes(raw).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _Bad(f"config_json: not valid JSON ({e})") from None
    if not isinstance(cfg, dict):
        raise _Bad("config_json: expected a JSON object")
    fmt = cfg.get("format")
    if not is_integer(fmt) or fmt < 1:
        raise _Bad(f"config_json: format must be an int >= 1, got {fmt!r}")
    if fmt > FORMAT:
        raise _Bad(
            f"written in file format {fmt} by bayesrank {cfg.get('bayesrank', '?')}; "
            f"this version reads formats up to {FORMAT}: upgrade bayesrank"
        )
    if cfg.get("class") != cls.__name__:
        raise _Bad(f"the file holds a {cfg.get('class')!r}, not a {cls.__name__}")
    for name, low in (("seed", 0), ("t", 0), ("K", 1), ("n_state", 1)):
        v = _int(cfg, name, low)
        if name == "t":  # the round counter: an int64, as the policy holds it
            try:
                as_round(v, "config_json: t")
            except ValueError as e:
                raise _Bad(str(e)) from None
    keys = cfg.get("key_leaves", [])
    if not isinstance(keys, list) or not all(
        is_integer(k) and 0 <= k < cfg["n_state"]
        for k in keys
    ):
        raise _Bad(f"config_json: key_leaves must be state indices, got {keys!r}")
    if not isinstance(cfg.get("config"), dict):
        raise _Bad("config_json: config must be a JSON object")
    if fmt == 1:  # migrate: format 1 had no history context and no history bound
        cfg.setdefault("max_history", DEFAULT_CAPACITY)
    try:
        as_capacity(cfg.get("max_history", DEFAULT_CAPACITY))
    except (TypeError, ValueError) as e:
        raise _Bad(f"config_json: {e}") from None
    return cfg


def _migrate_to_3(ref_state, leaves: list, keys: set, names=_ADDED_IN_3, fill=0):
    """Insert zero compensation terms where a format-1/2 file has none (or, with
    ``names`` and ``fill``, other fields added since a file was written)."""
    paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(ref_state)[0]]
    added = [i for i, p in enumerate(paths)
             if getattr(p[-1], "name", None) in names]
    if not added or len(leaves) != len(paths) - len(added):
        return leaves, len(leaves), keys
    ref = jax.tree_util.tree_leaves(ref_state)
    out = list(leaves)
    for i in added:  # ascending: each insertion lands at its final index
        out.insert(i, np.full(np.shape(ref[i]), fill, np.asarray(ref[i]).dtype))
    old_to_new = [i for i in range(len(out)) if i not in added]
    return out, len(out), {old_to_new[k] for k in keys if k < len(old_to_new)}


def _build(cls, path: Path, data: dict, cfg: dict, overrides: dict, w_prior=None):
    args = {k[4:]: v for k, v in data.items() if k.startswith("arg_")}
    for name, arr in args.items():
        if arr.dtype.kind not in "biuf":
            raise _Bad(f"arg_{name}: expected a numeric array, got dtype {arr.dtype}")
    if w_prior is not None:  # load(w=prior, model=base): the constructor combines them
        args["w"] = w_prior
    try:
        obj = cls._from_config(cfg["config"], args, cfg["seed"], overrides)
    except (TypeError, ValueError, KeyError) as e:
        raise _Bad(f"the saved configuration is not valid ({type(e).__name__}: {e})") \
            from None
    if cfg["K"] != obj.K:
        raise _Bad(f"config_json: K={cfg['K']}, but arg_items holds {obj.K} items")
    ref_items = np.asarray(obj.state.items)[: obj.K]
    n_state = cfg["n_state"]
    missing = [f"state_{i}" for i in range(n_state) if f"state_{i}" not in data]
    if missing:
        raise _Bad(f"missing state arrays: {', '.join(missing[:4])}")
    keys = set(cfg.get("key_leaves", []))
    leaves = [data[f"state_{i}"] for i in range(n_state)]
    if cfg["format"] < 3:
        leaves, n_state, keys = _migrate_to_3(obj.state, leaves, keys)
    leaves, n_state, keys = _migrate_to_3(obj.state, leaves, keys, _ADDED_BY_COUNT, 1)
    if cfg["format"] < 5:
        leaves = _migrate_to_5(obj.state, leaves)
    n_model = len(jax.tree_util.tree_leaves(obj.state.model))
    n_est = len(jax.tree_util.tree_leaves(obj.state.est))
    if n_model + n_est >= n_state:
        raise _Bad("the saved state does not match this configuration")
    items_cap = leaves[n_model + n_est]
    if items_cap.ndim == 2 and items_cap.shape[0] != obj.state.items.shape[0]:
        if items_cap.shape[0] < obj.K:
            raise _Bad(f"state_{n_model + n_est}: fewer item rows than K={obj.K}")
        obj._state = obj.state._replace(  # the capacity grew by add_items
            items=jnp.zeros(items_cap.shape, obj.state.items.dtype),
            active=jnp.zeros(items_cap.shape[0], bool),
        )
    ref_leaves, treedef = jax.tree_util.tree_flatten(obj.state)
    if len(ref_leaves) != n_state or {i for i, r in enumerate(ref_leaves)
                                      if _is_key(r)} != keys:
        raise _Bad("the saved state does not match this configuration")
    for i, (x, r) in enumerate(zip(leaves, ref_leaves)):
        _refuse_bad_leaf(i, x, r, i in keys)
    state = jax.tree_util.tree_unflatten(
        treedef,
        [
            jax.random.wrap_key_data(jnp.asarray(x)) if i in keys
            else jnp.asarray(x, dtype=jnp.asarray(r).dtype)
            for i, (x, r) in enumerate(zip(leaves, ref_leaves))
        ],
    )
    mstate = state.model
    if hasattr(mstate, "chol"):
        _refuse_bad_factor(mstate.chol, getattr(mstate, "prec", None), "model state")
    if isinstance(state.est, tuple) and len(state.est) == 2:
        _refuse_bad_factor(state.est[0], None, "estimate state")
    active = np.asarray(state.active)
    if active.sum() != obj.K or not active[: obj.K].all():
        raise _Bad(f"state: the active items do not match K={obj.K}")
    _refuse_bad_state(obj, state, ref_items)
    obj._state = state  # checked above, leaf by leaf, against a fresh one
    obj.t = cfg["t"]
    obj._default_ctx()
    items, rewards, v0s = _valid_history(data, cfg, obj)
    obj.max_history = cfg.get("max_history", DEFAULT_CAPACITY)
    if items.size:
        obj._record(items, rewards, v0s)
    seen = cfg.get("history_seen", items.shape[0])
    if is_integer(seen) and seen >= items.shape[0]:
        obj._history.seen = seen
    return obj


def _w_override(cfg: dict, overrides: dict, path: Path):
    """``load(path, w=prior)``: the prior replaces the saved one. Returns the prior
    when it goes to the constructor beside ``model=`` (else it is put in the saved
    model configuration, where :func:`prior_from_config` passes it through)."""
    if "w" not in overrides:
        return None
    w = overrides.pop("w")
    if w is None:  # as if not given
        return None
    if not is_distribution(w):
        raise TypeError(
            "w: load() takes w= only as the prior of a latent w (a NumPyro "
            f"distribution), got {type(w).__name__}; a known w is read from the file"
        )
    model = cfg["config"].get("model")
    inner = model.get("config") if isinstance(model, dict) else None
    if not (isinstance(inner, dict) and "w_prior" in inner):
        raise ValueError(
            f"w: {path} holds a policy without a latent w (its w is known and stored in "
            "the file, or learnt without a prior): load(w=prior) has no prior to replace"
        )
    if "model" in overrides:
        return w
    inner["w_prior"] = w
    return None


def _refuse_bad_digest(cfg: dict, stored, actual: str) -> None:
    if cfg["format"] < _DIGEST_SINCE:
        return  # written before the digest existed: the other checks only
    if stored is None:
        raise _Bad(f"missing digest (every format-{_DIGEST_SINCE}+ file has one): "
                   "edited or corrupted")
    ok = stored.dtype == np.uint8 and stored.ndim == 1 and bytes(stored) == actual.encode()
    if not ok:
        raise _Bad("the file's content does not match its digest (edited or corrupted)")


def load_policy(cls, path, overrides: dict):
    """Load a ``cls`` policy from ``path`` (see the module docstring).

    Raises:
        TypeError: ``path`` is not a str or os.PathLike, or ``w=`` is not a NumPyro
            distribution.
        ValueError: anything wrong with the file (``path: <path>: ...``), or ``w=``
            given for a policy without a latent w.
    """
    path = _as_path(path)
    overrides = dict(overrides)
    try:
        data = _read(path)
        actual = _digest(data)
        stored = data.pop("digest", None)
        cfg = _config(data, cls)
        w_prior = _w_override(cfg, overrides, path)
        obj = _build(cls, path, data, cfg, overrides, w_prior)
        _refuse_bad_digest(cfg, stored, actual)
        return obj
    except _Bad as e:
        raise ValueError(f"path: {path}: {e}") from None
