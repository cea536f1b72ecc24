"""Saving and loading policies: one .npz file, JSON configuration inside, no pickle.

The file holds the state's arrays (``state_<i>``, typed PRNG keys as their key data),
the constructor arrays (``arg_<name>``), the kept history and ``config_json`` (the
class, the format version, the bayesrank version, seed, round counter, the policy's
configuration). ``save`` writes a temporary file beside the target and renames it, so
a crash never leaves half a file under the target's name.

``load`` trusts nothing in the file:

* it never imports or calls anything the file names: policy and model classes are
  looked up among bayesrank's own by name, user NumPyro model functions only in the
  explicit registry (:mod:`bayesrank.posteriors.registry`) or passed as ``model=``;
* every array is checked (present, dtype kind, shape against a freshly built state,
  finite, counts >= 0, Cholesky factors lower triangular with a positive diagonal
  and matching their precision) before the policy is handed back;
* every failure (not a zip, truncated, missing keys, bad JSON, wrong class, a newer
  format, tampered arrays) is a ``ValueError`` naming the path and what is wrong.

Format history: 1 (no version, no ``history_v0``, no ``max_history``), 2 (conjugate
states without the compensation terms ``prec_lo``/``b_lo``), 3 (current). Older files
are migrated on load: format 1's history v0 is taken as the policy's v0; formats 1-2
get zero compensation terms (the plain sums they stored).
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._validate import check_int
from bayesrank.policies.history import DEFAULT_CAPACITY, check_capacity

__all__ = ["FORMAT", "load_policy", "save_policy"]

#: The file format this version writes (and the newest it reads).
FORMAT = 3

#: State fields added in format 3 (conjugate models' compensated sums).
_ADDED_IN_3 = ("prec_lo", "b_lo")


def _is_key(x) -> bool:
    """Whether x is a typed JAX PRNG key array (stored as its key data)."""
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _as_path(path) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path: expected a str or os.PathLike, got {type(path).__name__}")
    return Path(path)


# ----------------------------------------------------------------------- save
def save_policy(policy, path) -> None:
    """Write ``policy`` to ``path`` atomically (see the module docstring)."""
    from bayesrank._version import __version__

    path = _as_path(path)
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
class _Bad(ValueError):
    pass


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
    if isinstance(fmt, bool) or not isinstance(fmt, int) or fmt < 1:
        raise _Bad(f"config_json: format must be an int >= 1, got {fmt!r}")
    if fmt > FORMAT:
        raise _Bad(
            f"written in file format {fmt} by bayesrank {cfg.get('bayesrank', '?')}; "
            f"this version reads formats up to {FORMAT}: upgrade bayesrank"
        )
    if cfg.get("class") != cls.__name__:
        raise _Bad(f"the file holds a {cfg.get('class')!r}, not a {cls.__name__}")
    for name, low in (("seed", 0), ("t", 0), ("K", 1), ("n_state", 1)):
        _int(cfg, name, low)
    keys = cfg.get("key_leaves", [])
    if not isinstance(keys, list) or not all(
        isinstance(k, int) and not isinstance(k, bool) and 0 <= k < cfg["n_state"]
        for k in keys
    ):
        raise _Bad(f"config_json: key_leaves must be state indices, got {keys!r}")
    if not isinstance(cfg.get("config"), dict):
        raise _Bad("config_json: config must be a JSON object")
    if fmt == 1:  # migrate: format 1 had no history context and no history bound
        cfg.setdefault("max_history", DEFAULT_CAPACITY)
    try:
        check_capacity(cfg.get("max_history", DEFAULT_CAPACITY))
    except (TypeError, ValueError) as e:
        raise _Bad(f"config_json: {e}") from None
    return cfg


def _check_leaf(i: int, x: np.ndarray, ref, is_key: bool) -> None:
    name = f"state_{i}"
    if is_key:
        want = np.asarray(jax.random.key_data(ref))
        if x.dtype != want.dtype or x.shape != want.shape:
            raise _Bad(f"{name}: expected PRNG key data {want.dtype}{want.shape}, "
                       f"got {x.dtype}{x.shape}")
        return
    r = np.asarray(ref)
    if x.shape != r.shape:
        raise _Bad(f"{name}: expected shape {r.shape}, got {x.shape}")
    if x.dtype.kind != r.dtype.kind:
        raise _Bad(f"{name}: expected dtype kind {r.dtype} , got {x.dtype}")
    if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
        raise _Bad(f"{name}: expected finite values, found NaN or inf")
    if x.dtype.kind == "i" and x.size and x.min() < 0:
        raise _Bad(f"{name}: expected counts >= 0, found {x.min()}")


def _check_factor(chol, prec, what: str) -> None:
    c = np.asarray(chol, float)
    if c.ndim < 2:
        return
    diag = np.diagonal(c, axis1=-2, axis2=-1)
    if not np.all(diag > 0):
        raise _Bad(f"{what}: a Cholesky factor has a non-positive diagonal")
    if np.any(np.triu(c, 1) != 0):
        raise _Bad(f"{what}: a Cholesky factor is not lower triangular")
    if prec is not None:
        p = np.asarray(prec, float)
        rebuilt = c @ np.swapaxes(c, -1, -2)
        scale = np.max(np.abs(p), axis=(-2, -1), keepdims=True)
        tol = 1e-8 if np.asarray(prec).dtype == np.float64 else 1e-4
        if not np.allclose(rebuilt / scale, p / scale, rtol=0, atol=tol):
            raise _Bad(f"{what}: the Cholesky factor does not match the precision")


def _check_history(data: dict, cfg: dict, obj) -> tuple:
    K, L, d = obj.K, obj.L, obj.items.shape[1]
    items = data.get("history_items")
    rewards = data.get("history_rewards")
    if items is None or rewards is None:
        raise _Bad("missing history_items / history_rewards")
    n = items.shape[0] if items.ndim == 2 else -1
    v0s = data.get("history_v0")
    if v0s is None and cfg["format"] == 1 and n >= 0:
        v0s = np.broadcast_to(np.asarray(obj.v0, float), (n, d))
    if v0s is None:
        raise _Bad("missing history_v0")
    if items.ndim != 2 or items.shape[1] != L or items.dtype.kind not in "iu":
        raise _Bad(f"history_items: expected ints of shape (n, {L}), got "
                   f"{items.dtype}{items.shape}")
    if items.size and (items.min() < 0 or items.max() >= K):
        raise _Bad(f"history_items: expected indices in [0, {K - 1}]")
    if rewards.shape != (n, L) or rewards.dtype.kind != "f":
        raise _Bad(f"history_rewards: expected floats of shape ({n}, {L}), got "
                   f"{rewards.dtype}{rewards.shape}")
    if np.any(np.isinf(rewards)):
        raise _Bad("history_rewards: expected finite rewards or NaN, found inf")
    if v0s.shape != (n, d) or v0s.dtype.kind != "f" or not np.all(np.isfinite(v0s)):
        raise _Bad(f"history_v0: expected finite floats of shape ({n}, {d})")
    return items, rewards, np.asarray(v0s)


def _migrate_to_3(ref_state, leaves: list, keys: set):
    """Insert zero compensation terms where a format-1/2 file has none."""
    paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(ref_state)[0]]
    added = [i for i, p in enumerate(paths)
             if getattr(p[-1], "name", None) in _ADDED_IN_3]
    if not added or len(leaves) != len(paths) - len(added):
        return leaves, len(leaves), keys
    ref = jax.tree_util.tree_leaves(ref_state)
    out = list(leaves)
    for i in added:  # ascending: each insertion lands at its final index
        out.insert(i, np.zeros(np.shape(ref[i]), np.asarray(ref[i]).dtype))
    old_to_new = [i for i in range(len(out)) if i not in added]
    return out, len(out), {old_to_new[k] for k in keys if k < len(old_to_new)}


def _build(cls, path: Path, data: dict, cfg: dict, overrides: dict):
    args = {k[4:]: v for k, v in data.items() if k.startswith("arg_")}
    for name, arr in args.items():
        if arr.dtype.kind not in "biuf":
            raise _Bad(f"arg_{name}: expected a numeric array, got dtype {arr.dtype}")
    try:
        obj = cls._from_config(cfg["config"], args, cfg["seed"], overrides)
    except (TypeError, ValueError, KeyError) as e:
        raise _Bad(f"the saved configuration is not valid ({type(e).__name__}: {e})") \
            from None
    n_state = cfg["n_state"]
    missing = [f"state_{i}" for i in range(n_state) if f"state_{i}" not in data]
    if missing:
        raise _Bad(f"missing state arrays: {', '.join(missing[:4])}")
    keys = set(cfg.get("key_leaves", []))
    leaves = [data[f"state_{i}"] for i in range(n_state)]
    if cfg["format"] < 3:
        leaves, n_state, keys = _migrate_to_3(obj.state, leaves, keys)
    n_model = len(jax.tree_util.tree_leaves(obj.state.model))
    n_est = len(jax.tree_util.tree_leaves(obj.state.est))
    if n_model + n_est >= n_state:
        raise _Bad("the saved state does not match this configuration")
    items_cap = leaves[n_model + n_est]
    if items_cap.ndim == 2 and items_cap.shape[0] != obj.state.items.shape[0]:
        if items_cap.shape[0] < obj.K:
            raise _Bad(f"state_{n_model + n_est}: fewer item rows than K={obj.K}")
        obj.state = obj.state._replace(  # the capacity grew by add_items
            items=jnp.zeros(items_cap.shape, obj.state.items.dtype),
            active=jnp.zeros(items_cap.shape[0], bool),
        )
    ref_leaves, treedef = jax.tree_util.tree_flatten(obj.state)
    if len(ref_leaves) != n_state or {i for i, r in enumerate(ref_leaves)
                                      if _is_key(r)} != keys:
        raise _Bad("the saved state does not match this configuration")
    for i, (x, r) in enumerate(zip(leaves, ref_leaves)):
        _check_leaf(i, x, r, i in keys)
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
        _check_factor(mstate.chol, getattr(mstate, "prec", None), "model state")
    if isinstance(state.est, tuple) and len(state.est) == 2:
        _check_factor(state.est[0], None, "estimate state")
    active = np.asarray(state.active)
    if active.sum() != obj.K or not active[: obj.K].all():
        raise _Bad(f"state: the active items do not match K={obj.K}")
    obj.state = state
    obj.t = cfg["t"]
    obj._default_ctx()
    items, rewards, v0s = _check_history(data, cfg, obj)
    obj.max_history = cfg.get("max_history", DEFAULT_CAPACITY)
    if items.size:
        obj._record(items, rewards, v0s)
    seen = cfg.get("history_seen", items.shape[0])
    if isinstance(seen, int) and not isinstance(seen, bool) and seen >= items.shape[0]:
        obj._history.seen = seen
    return obj


def load_policy(cls, path, overrides: dict):
    """Load a ``cls`` policy from ``path`` (see the module docstring)."""
    path = _as_path(path)
    try:
        data = _read(path)
        cfg = _config(data, cls)
        return _build(cls, path, data, cfg, dict(overrides))
    except _Bad as e:
        raise ValueError(f"path: {path}: {e}") from None
