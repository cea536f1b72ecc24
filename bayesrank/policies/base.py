"""Shared machinery of the policies: the functional core and the friendly class.

A policy's functional core is three pure functions over a NamedTuple state:

    state = core.init()
    state, sel = core.select(key, state)          # sel: Selection (items (L,), ...)
    state = core.update(state, items, rewards)    # items (L,) int, rewards (L,)

``select`` returns the state because MCMC posteriors advance their chains there. A whole
run is a ``lax.scan`` of select/update and many runs a ``vmap`` (see
:func:`bayesrank.simulate`). The classes (``RankTS``, ``RankUCB``, ...) hold one state,
draw the key of round t as ``fold_in(key(seed), t)``, check inputs on the host and add
no math.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank import scores
from bayesrank.env import check_lists

__all__ = ["Policy", "PolicyCore", "Selection", "check_items_w_v0"]


def _is_key(x) -> bool:
    """Whether x is a typed JAX PRNG key array (stored as its key data)."""
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


class PolicyCore(NamedTuple):
    """Pure functions of a policy (see the module docstring)."""

    init: Callable[[], Any]
    select: Callable[[Any, Any], tuple[Any, Any]]
    update: Callable[[Any, Any, Any], Any]


class Selection(NamedTuple):
    """What ``select`` returns besides the state.

    Attributes:
        items: (L,) int32, the list to show.
        value: (), its total score under the sampled or optimistic scores.
        params: policy-specific arrays behind the scores (e.g. the Thompson draw).
    """

    items: Any
    value: Any
    params: Any


def check_items_w_v0(items, L, w, v0):
    """Validate and normalise the item matrix, the dependency weights and v0.

    Returns:
        items (K, d) float array, w as (L,) or (L, S-1), v0 (d,), L.
    """
    if items is None:
        raise ValueError("items: expected a (K, d) array of item vectors, got None")
    try:
        V = np.asarray(items, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(
            f"items: expected a (K, d) numeric array, got {type(items).__name__}"
        ) from None
    if V.ndim != 2 or V.shape[0] < 1 or V.shape[1] < 1:
        raise ValueError(f"items: expected a (K, d) array, got shape {V.shape}")
    if not np.all(np.isfinite(V)):
        raise ValueError("items: expected finite values, found NaN or inf")
    d = V.shape[1]
    if L is not None and (
        isinstance(L, bool) or not isinstance(L, (int, np.integer)) or L < 1
    ):
        raise ValueError(f"L: expected a positive integer, got {L!r}")
    if w is None:
        if L is None:
            raise ValueError("L: give the list length L or the weights w")
        W = np.zeros(int(L))
    else:
        W = np.asarray(w, dtype=float)
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
    if v0 is None:
        v0a = np.zeros(d)
    else:
        v0a = np.asarray(v0, dtype=float)
        if v0a.shape != (d,):
            raise ValueError(f"v0: expected shape (d,) = ({d},), got {v0a.shape}")
        if not np.all(np.isfinite(v0a)):
            raise ValueError("v0: expected finite values, found NaN or inf")
    return V, W, v0a, int(L)


def check_mask(mask, K: int, L: int, distinct: bool):
    """Validate the (K,) bool mask of showable items; None means all items."""
    if mask is None:
        return None
    m = np.asarray(mask)
    if m.shape != (K,) or m.dtype != bool:
        raise ValueError(
            f"mask: expected a (K,) = ({K},) bool array, got {m.dtype} {m.shape}"
        )
    need = L if distinct else 1
    if m.sum() < need:
        raise ValueError(
            f"mask: need at least {need} available items, got {int(m.sum())}"
        )
    return m


def check_model(model, attrs=("init", "update", "mean", "link")) -> None:
    """Raise TypeError unless ``model`` has the posterior-model methods ``attrs``."""
    if not all(hasattr(model, attr) for attr in attrs):
        raise TypeError(
            "model: expected a bayesrank posterior model (GaussianLinear, "
            f"BayesGLM, NumPyroModel), got {type(model).__name__}"
        )


def model_config(model) -> dict:
    """The JSON-able description of a posterior model: its class name and, where the
    model can describe itself, its ``config()``."""
    cfg = getattr(model, "config", None)
    return {"class": type(model).__name__, "config": cfg() if callable(cfg) else None}


def model_from_config(cfg: dict, override=None):
    """Rebuild a posterior model from :func:`model_config`'s output.

    No code execution: only bayesrank's own model classes are looked up, by name.
    """
    from bayesrank import posteriors

    if override is not None:
        return override
    name = cfg.get("class")
    known = {n: getattr(posteriors, n) for n in getattr(posteriors, "__all__", ())}
    cls = known.get(name)
    if cls is None or not hasattr(cls, "from_config") or cfg.get("config") is None:
        raise ValueError(
            f"model: the saved model {name!r} cannot be rebuilt from the file; "
            "pass model=... to load()"
        )
    return cls.from_config(cfg["config"])


class Policy:
    """Base class: holds a functional core and one state; subclasses add the math.

    Subclasses set ``self.K``, ``self.L``, ``self.model``, ``self.mask`` and the
    arrays named in ``_array_args``, call ``_setup`` and implement ``_config()``
    (JSON-able constructor arguments other than arrays) and ``_from_config``.
    """

    K: int
    L: int

    #: Constructor arrays that :meth:`save` stores (``mask`` too when set).
    _array_args: tuple[str, ...] = ("items", "w", "v0")

    def _setup(self, core: PolicyCore, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed: expected an int, got {type(seed).__name__}")
        self._core = core
        self.seed = int(seed)
        self.key = jax.random.key(self.seed)
        self.state = core.init()
        self.t = 0
        self._last = None
        self._select = jax.jit(core.select)
        self._update = jax.jit(core.update)

        def _update_many(state, items, rewards):
            def body(s, ir):
                return core.update(s, ir[0], ir[1]), None

            return jax.lax.scan(body, state, (items, rewards))[0]

        self._update_many = jax.jit(_update_many)

    # ----------------------------------------------------------------- functional view
    @property
    def core(self) -> PolicyCore:
        """The pure init/select/update functions (for jit, scan, vmap)."""
        return self._core

    #: Whether the core can be vmapped over runs (NUTS cores run run by run).
    vmappable = True

    # ------------------------------------------------------------------- the loop
    def select(self) -> np.ndarray:
        """The list to show this round: (L,) int array of item indices."""
        key = jax.random.fold_in(self.key, self.t)
        state, sel = self._select(key, self.state)
        self.state = state
        self._last = sel
        self.t += 1
        return np.asarray(sel.items)

    def update(self, items, rewards) -> None:
        """Learn from one impression (items (L,), rewards (L,)) or a batch ((n, L))."""
        items_a = np.asarray(items)
        check_lists(items_a, self.K, self.L, "items")
        if items_a.ndim > 2:
            raise ValueError(
                f"items: expected shape (L,) or (n, L), got {items_a.shape}"
            )
        try:
            r = np.asarray(rewards, dtype=float)
        except (TypeError, ValueError):
            raise TypeError("rewards: expected a numeric array") from None
        if r.shape != items_a.shape:
            raise ValueError(
                f"rewards: expected shape {items_a.shape} (one reward per shown item), "
                f"got {r.shape}"
            )
        self._check_rewards(r)
        it = jnp.asarray(items_a, jnp.int32)
        rj = jnp.asarray(r)
        if items_a.ndim == 1:
            self.state = self._update(self.state, it, rj)
        else:
            self.state = self._update_many(self.state, it, rj)
        self._record(items_a.reshape(-1, self.L), r.reshape(-1, self.L))

    def _record(self, items, rewards) -> None:
        """Keep the impressions on the host (for posterior diagnostics)."""
        hist = getattr(self, "_history", None)
        if hist is None:
            hist = self._history = ([], [])
        hist[0].append(items)
        hist[1].append(rewards)

    def history(self) -> tuple[np.ndarray, np.ndarray]:
        """All impressions learnt from: items (n, L) and rewards (n, L)."""
        hist = getattr(self, "_history", None)
        if not hist or not hist[0]:
            return np.zeros((0, self.L), int), np.zeros((0, self.L))
        return np.concatenate(hist[0]), np.concatenate(hist[1])

    def _check_rewards(self, rewards) -> None:
        """The model's reward check if it has one, else finiteness."""
        check = getattr(getattr(self, "model", None), "check_rewards", None)
        if check is not None:
            check(rewards)
        elif not np.all(np.isfinite(rewards)):
            raise ValueError("rewards: expected finite rewards, found NaN or inf")

    def _arrays(self) -> dict:
        out = {name: getattr(self, name) for name in self._array_args}
        if self.mask is not None:
            out["mask"] = self.mask
        return out

    # ---------------------------------------------------------------- the posterior
    def features(self, lists) -> np.ndarray:
        """(..., L, p) the features each position's model learns from, for shown
        lists (..., L): ``v_{a^l} + sum_i w_{l,i} v_{a^{l-i}}`` unless a policy says
        otherwise (GenRankUCB: ``(v_{a^l}, v_{a^{l-1}})``; the baseline: ``v_{a^l}``)."""
        W = np.asarray(self.w)
        W2 = W[:, None] if W.ndim == 1 else W
        return np.asarray(
            scores.list_features(
                jnp.asarray(self.items),
                jnp.asarray(W2),
                jnp.asarray(self.v0),
                jnp.asarray(lists, jnp.int32),
            )
        )

    def posterior_mean(self) -> np.ndarray:
        """(L, p) posterior mean of each position's parameter (for the UCB policies,
        the estimate ``theta_hat`` they are centred on)."""
        return np.asarray(self.model.mean(self.state.model))

    def posterior(self, position: int, **kwargs):
        """The posterior of a 0-based position's parameter as an ArviZ DataTree.

        Groups: posterior, sample_stats, log_likelihood, log_prior, observed_data; so
        ``arviz.summary``, ``arviz.rhat``, ``arviz.ess`` and ``arviz.psense_summary``
        work on it. Closed-form models are summarised as exact draws; NUTS models run
        several fresh chains on the current data. ``kwargs`` go to the model's
        ``to_datatree`` (e.g. ``chains``, ``draws``).
        """
        if (
            isinstance(position, bool)
            or not isinstance(position, (int, np.integer))
            or not 0 <= position < self.L
        ):
            raise ValueError(
                f"position: expected an int in [0, {self.L - 1}], got {position!r}"
            )
        key = jax.random.fold_in(self.key, 2**31 - 1 - self.t)
        # Models that keep only sufficient statistics take the history as ``data``;
        # NUTS models hold their own (possibly windowed) data buffers and take none.
        if "data" in inspect.signature(self.model.to_datatree).parameters:
            items, rewards = self.history()
            x = self.features(items)
            kwargs["data"] = (x[:, position, :], rewards[:, position])
        return self.model.to_datatree(
            self.state.model, int(position), key=key, **kwargs
        )

    # ------------------------------------------------------------------ persistence
    def save(self, path) -> None:
        """Save the policy: arrays in ``path`` (.npz), configuration as JSON inside.

        No pickle: loading never executes code from the file.
        """
        leaves, _ = jax.tree_util.tree_flatten(self.state)
        key_leaves = [i for i, x in enumerate(leaves) if _is_key(x)]
        arrays = {
            f"state_{i}": np.asarray(jax.random.key_data(x) if i in key_leaves else x)
            for i, x in enumerate(leaves)
        }
        for name, arr in self._arrays().items():
            arrays[f"arg_{name}"] = np.asarray(arr)
        items, rewards = self.history()
        arrays["history_items"], arrays["history_rewards"] = items, rewards
        cfg = {
            "class": type(self).__name__,
            "format": 1,
            "seed": self.seed,
            "t": self.t,
            "n_state": len(leaves),
            "key_leaves": key_leaves,
            "config": self._config(),
        }
        arrays["config_json"] = np.frombuffer(json.dumps(cfg).encode(), dtype=np.uint8)
        with open(Path(path), "wb") as fh:
            np.savez(fh, **arrays)

    @classmethod
    def load(cls, path, **overrides):
        """Load a policy saved with :meth:`save`; it continues exactly where it was.

        ``overrides`` supply constructor arguments that cannot be stored (e.g. a user
        NumPyro model).
        """
        with np.load(Path(path), allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
        cfg = json.loads(bytes(data.pop("config_json")).decode())
        if cfg.get("class") != cls.__name__:
            raise ValueError(
                f"path: the file holds a {cfg.get('class')!r}, not a {cls.__name__}"
            )
        args = {k[4:]: v for k, v in data.items() if k.startswith("arg_")}
        obj = cls._from_config(cfg["config"], args, cfg["seed"], overrides)
        keys = set(cfg.get("key_leaves", []))
        leaves = [data[f"state_{i}"] for i in range(cfg["n_state"])]
        leaves = [
            jax.random.wrap_key_data(jnp.asarray(x)) if i in keys else x
            for i, x in enumerate(leaves)
        ]
        ref_leaves, treedef = jax.tree_util.tree_flatten(obj.state)
        if len(ref_leaves) != len(leaves) or any(
            np.shape(a) != np.shape(b) or _is_key(a) != _is_key(b)
            for a, b in zip(ref_leaves, leaves)
        ):
            raise ValueError("path: the saved state does not match this configuration")
        obj.state = jax.tree_util.tree_unflatten(
            treedef,
            [
                x if _is_key(x) else jnp.asarray(x, dtype=jnp.asarray(r).dtype)
                for x, r in zip(leaves, ref_leaves)
            ],
        )
        obj.t = int(cfg["t"])
        if data["history_items"].size:
            obj._record(data["history_items"], data["history_rewards"])
        return obj

    def __repr__(self) -> str:
        return f"{type(self).__name__}(K={self.K}, L={self.L}, t={self.t})"
