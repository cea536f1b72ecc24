"""The friendly class over a policy's functional core (:mod:`~bayesrank.policies.parts.core`).

Its host-side checks live in :mod:`~bayesrank.policies.runtime.checks`, the (de)serialisation of its posterior
model in :mod:`~bayesrank.policies.runtime.model_config`, the file format in :mod:`~bayesrank.policies.runtime.persist`, the kept
impressions in :mod:`~bayesrank.policies.runtime.history`, and the compiled programs it calls in :mod:`~bayesrank.policies.runtime.program`
(each name importable from here too, as before).

A :class:`Policy` is ``(core, state, key, t)``: it checks inputs on the host and adds
no math: the lists it selects are exactly those of its ``core`` (round t's key is
``fold_in(key(seed), t)`` as in :func:`bayesrank.simulate`; past 2**32 :mod:`~bayesrank.policies.runtime.rounds`).

    policy.select(*, v0=None, mask=None) -> (L,)
    policy.select_batch(v0=None, mask=None, *, n=None) -> (B, L)
    policy.select_batch_at(state, t, v0=None, mask=None, *, n=None) -> (state, (B, L))
    policy.update(items, rewards, *, v0=None)         # NaN reward = not observed
    policy.flush() -> policy                          # apply a pending update now
    policy.scores(*, v0=None) -> (first (K,), pairs (L-1, K, K))
    policy.add_items(vectors (m, d)) -> (m,) indices
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._validate import check_lists, check_seed
from bayesrank.policies.runtime import program
from bayesrank.policies.runtime.checks import (
    as_batch_mask,
    as_batch_v0,
    as_fit_log,
    as_lists_v0,
    as_new_items,
    as_rewards,
    as_round,
    refuse_foreign_state,
    refuse_repeats,
)
from bayesrank.policies.parts.context import Context
from bayesrank._validate import check_mask, check_v0
from bayesrank.policies.parts.core import PolicyCore, with_items
from bayesrank.policies.runtime.history import DEFAULT_CAPACITY, History, as_capacity
from bayesrank.policies.runtime.inspection import Inspection
from bayesrank.policies.runtime.persist import load_policy, save_policy
from bayesrank.policies.runtime.rounds import BLOCK, refuse_last_round, round_args

__all__ = ["Policy"]


class Policy(Inspection):
    """Holds a functional core and one state; subclasses are short constructors.

    Subclasses set ``K``, ``L``, ``items`` (K, d), ``w``, ``v0``, ``model``, ``mask``,
    ``distinct``, call :meth:`_setup` with the composed core and implement
    ``_config()`` and ``_from_config``.

    Every policy (:class:`~bayesrank.RankTS`, :class:`~bayesrank.RankUCB`, ...) has
    the methods below: ``select``/``select_batch`` with the request's context,
    ``update`` (NaN = not observed), ``fit`` from a log, ``add_items``,
    ``posterior``, ``save``/``load``.

    Example:
        >>> import jax, bayesrank as br
        >>> from bayesrank.policies import Policy
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> policy = br.RankTS(items=env.items, w=env.w, seed=0)
        >>> isinstance(policy, Policy)
        True
        >>> items = policy.select()                                  # (L,) indices
        >>> policy.update(items, env.sample(jax.random.key(0), items))
        >>> policy.t, policy.posterior_mean().shape                  # (L, d)
        (1, (4, 10))
    """

    K: int
    L: int

    #: Constructor arrays that :meth:`save` stores (``mask`` too when set).
    _array_args: tuple[str, ...] = ("items", "w", "v0")
    #: Whether the core can be vmapped over runs (NUTS cores run run by run).
    vmappable = True

    def _setup(self, core: PolicyCore, seed: int) -> None:
        seed = check_seed(seed)
        self._core = core
        self.seed = seed
        self.key = jax.random.key(self.seed)
        self._pending = None
        # the compiled programs are module-level and shared by every policy of this
        # configuration (:mod:`bayesrank.policies.runtime.program`); only the core is bound
        prog = program.bind(core)
        self.state = prog.init()
        self.t = 0
        self._last = None
        self._history = History(self.L, self.items.shape[1], DEFAULT_CAPACITY)
        self._default_ctx()
        self._update_select = prog.update_select
        self._select_batch, self._update = prog.select_batch, prog.update
        self._update_many, self._scores = prog.update_many, prog.scores
        self._features_prog = prog.features
        self._announce = prog.new  # say so on the first select (it compiles)

    def _default_ctx(self) -> None:
        """The constructor's v0 and mask as device arrays, padded to the capacity."""
        Kc = self._state.items.shape[0]
        m = np.zeros(Kc, bool)
        m[: self.K] = True if self.mask is None else self.mask
        self._ctx = Context(jnp.asarray(self.v0), jnp.asarray(m))
        dtype = self._ctx.v0.dtype  # the "update" a select without one passes (skipped)
        self._v0_host = np.asarray(self.v0, dtype)
        self._no_update = (np.zeros(self.L, np.int32), np.zeros(self.L, dtype),
                           np.zeros(self.items.shape[1], dtype))

    @property
    def t(self) -> int:
        """The round counter, an int64 in ``[0, 2**63 - 1]`` (setting another value
        raises naming ``t``; ``load`` refuses a file holding one); round t selects with
        ``rounds.round_key`` ``(key, t)``, ``fold_in(key, t)`` for t < 2**32."""
        return self._t

    @t.setter
    def t(self, value) -> None:
        self._t = as_round(value)
        self._t_dev = None  # the device copies select passes; rebuilt on demand

    # ------------------------------------------------------------------ the state
    def flush(self) -> Policy:
        """Apply a pending update now (the core's compiled ``update``); returns the
        policy. :meth:`update` records a single list as pending and the next
        :meth:`select` applies it inside its own compiled call; reading :attr:`state`
        (so ``posterior``, ``save``, ``select_batch``, ...) flushes first. With
        nothing pending it does nothing.

        Example:
            >>> import jax, bayesrank as br
            >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
            >>> policy = br.RankTS(env.items, w=env.w, seed=0)
            >>> items = policy.select()
            >>> policy.update(items, env.sample(jax.random.key(0), items))
            >>> policy.pending, policy.flush().pending
            (1, 0)
        """
        if self._pending is not None:
            lists, rewards, v0u = self._pending
            self._pending = None
            self._state = self._update(
                self._state, lists, rewards, self._ctx._replace(v0=v0u)
            )
        return self

    @property
    def pending(self) -> int:
        """The number of recorded updates not yet applied to the state (0 or 1)."""
        return int(self._pending is not None)

    @property
    def state(self):
        """The core's state (a NamedTuple of arrays), current with every update.

        Reading it calls :meth:`flush` first (a pending single-list update is
        applied), so what it returns has learnt from every :meth:`update` so far.
        Setting it replaces the state and drops a pending update.
        """
        return self.flush()._state

    @state.setter
    def state(self, value) -> None:
        if hasattr(self, "_state"):  # the constructor sets the first, unchecked
            refuse_foreign_state(value, self._state)
        self._pending = None
        self._state = value

    # ----------------------------------------------------------------- functional view
    @property
    def core(self) -> PolicyCore:
        """The pure init/select/update/select_batch functions (for jit, scan, vmap)."""
        return self._core

    def context(self, v0=None, mask=None) -> Context:
        """The :class:`Context` a request with this v0 and mask runs in (checked)."""
        ctx = self._ctx
        if v0 is not None:
            v = check_v0(v0, self.items.shape[1]).astype(ctx.v0.dtype, copy=False)
            ctx = ctx._replace(v0=v)
        if mask is not None:
            ctx = ctx._replace(mask=self._pad_mask(check_mask(mask, self.K, self.L,
                                                              self.distinct)))
        return ctx

    def _pad_mask(self, m):
        Kc = self._state.items.shape[0]
        if Kc == self.K:
            return jnp.asarray(m)
        pad = np.zeros(m.shape[:-1] + (Kc - self.K,), bool)
        return jnp.asarray(np.concatenate([m, pad], axis=-1))

    # ------------------------------------------------------------------- the loop
    def select(self, *, v0=None, mask=None) -> np.ndarray:
        """The list to show to one request: (L,) int array of item indices.

        Args:
            v0: (d,) the request's last item vector; None: the constructor's.
            mask: (K,) bool, the items available for this request; None: the
                constructor's mask (or every item).
        """
        ctx = self.context(v0, mask)
        if self._t_dev is None:  # t was set: the key and 32-bit counter to fold
            refuse_last_round(self._t)
            self._key_dev, t32 = round_args(self.key, self._t)
            self._t_dev = jnp.asarray(t32)
        if self._announce:
            self._announce = False
            program.announce(type(self).__name__)
        old = self._state
        # the pending update (if any) runs inside this select's compiled call, one
        # program for both cases (a select without an update skips it): a new
        # process traces and loads one program for its first round, not two
        pending, apply = self._pending, np.True_
        if pending is None:
            pending, apply = self._no_update, np.False_
        out, sel, t_next = self._update_select(self._key_dev, self._t_dev, old, ctx,
                                                pending, apply)
        self._pending = None  # applied above
        self._state = program.merge(out, old)
        self._last, self._last_v0 = sel, ctx.v0
        items = np.asarray(sel.items)
        self._t += 1
        # the device counter wraps as fold_in reads it; a 2**32 block: a new key
        self._t_dev = t_next if self._t % BLOCK else None
        return items

    def select_batch(self, v0=None, mask=None, *, n=None) -> np.ndarray:
        """Lists for B requests at once: (B, L) int array.

        Args:
            v0: (B, d) each request's last item vector; None: the constructor's v0
                for ``n`` requests.
            mask: (B, K) per-request or (K,) shared bool masks; None: the
                constructor's mask.
            n: the number of requests when ``v0`` is None.

        RankTS makes one independent Thompson draw per request; the UCB policies are
        deterministic, so row b equals ``select(v0=v0[b], mask=mask[b])``. The
        round counter advances by one (at its bound, 2**63 - 1, it raises a
        ``ValueError`` naming ``t``).
        """
        refuse_last_round(self.t)
        state, lists = self.select_batch_at(self.state, self.t, v0, mask, n=n)
        self._state = state  # checked by select_batch_at (nothing pending: flushed)
        self.t += 1
        return lists

    def select_batch_at(self, state, t, v0=None, mask=None, *, n=None):
        """What :meth:`select_batch` would return at round ``t`` from ``state``:
        ``(new state, (B, L) lists)``, a pure function (the core's compiled
        ``select_batch``, key ``rounds.round_key`` ``(key, t)``); the policy's
        own state and round counter are neither read nor written (off-policy
        evaluation draws with it). Every check runs on the host, before traced code.

        Args:
            state: a state of this policy's core with its shapes and dtypes
                (``items`` (Kc, d), the model's arrays (L, ...)); another structure
                raises ``TypeError``, another shape or dtype (another K, L, d or
                capacity) ``ValueError``, naming ``state`` and the field.
            t: the round, an integer in ``[0, 2**63 - 1]``; else naming ``t``.
            v0, mask, n: as in :meth:`select_batch`.

        Returns:
            The state after the draws and the (B, L) int lists.

        Example:
            >>> import bayesrank as br
            >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
            >>> policy = br.RankTS(env.items, w=env.w, seed=0)
            >>> _, lists = policy.select_batch_at(policy.state, 0, n=3)
            >>> bool((lists == policy.select_batch(n=3)).all()), policy.t
            (True, 1)
        """
        t = as_round(t)
        refuse_foreign_state(state, self._state)
        v0s = as_batch_v0(v0, n, self.v0, self.items.shape[1])
        if mask is None:
            m = self._ctx.mask
        else:
            m = self._pad_mask(as_batch_mask(mask, self.K, self.L, self.distinct,
                                                v0s.shape[0]))
        ctxs = Context(jnp.asarray(v0s), m)
        key, t32 = round_args(self.key, t)
        state, sel = self._select_batch(key, t32, state, ctxs)
        return state, np.asarray(sel.items)

    def fit(self, log) -> None:
        """Warm start from a log (:func:`bayesrank.ope.as_log`): exactly replaying
        ``update`` row by row, in one compiled scan.

        Args:
            log: an ``xarray.Dataset`` with ``lists`` (round, position), ``rewards``
                (round, position; NaN = not observed) and ``v0`` (round, dim). It is
                validated first (items in [0, K), shapes, finite contexts); a bad log
                raises ``ValueError``/``TypeError`` naming the variable and leaves the
                policy as it was. A log from another catalogue is refused
                (``ValueError`` naming ``log``): its ``K`` attribute (or the rows of
                its ``items``) must be the policy's K and, when it carries ``items``,
                they must equal the policy's item vectors at the precision the log
                holds them in (both rounded to it: float32 when the log's items are
                float32 numbers, as those of :func:`bayesrank.ope.collect` in JAX's
                default float32, else exactly).
        """
        lists, rewards, v0s = as_fit_log(
            log, K=self.K, L=self.L, items=self.items,
            distinct=getattr(self, "distinct", False))
        if lists.shape[0] == 0:
            return
        self.update(lists, rewards, v0=v0s)

    def update(self, items, rewards, *, v0=None) -> None:
        """Learn from shown lists: items (L,) or (n, L), rewards of the same shape.

        A NaN reward means the position was not observed (e.g. below the last
        position a user looked at): that position's model skips it. Updates may
        arrive late and in any order; only the context (v0) the list was shown in
        must travel with it.

        A single list is checked and recorded at once as *pending*: the next
        :meth:`select` applies it inside its own compiled call, or :meth:`flush`
        (or reading :attr:`state`) applies it alone. Several lists (n, L) are
        applied at once, in one compiled scan, after a pending one.

        Args:
            items: (L,) or (n, L) int item indices in [0, K) (with ``distinct=True``
                no list may show an item twice).
            rewards: same shape, real numbers or NaN.
            v0: (d,) or (n, d) the context each list was shown in; None: the
                constructor's v0.
        """
        items_a = np.asarray(items)
        check_lists(items_a, self.K, self.L, "items")
        if items_a.ndim > 2:
            raise ValueError(f"items: expected shape (L,) or (n, L), got {items_a.shape}")
        if getattr(self, "distinct", False):
            refuse_repeats(items_a)
        r = as_rewards(rewards, items_a.shape, self.model)
        if items_a.ndim == 1:
            self._queue(items_a, r, v0)
            return
        v0s = as_lists_v0(v0, items_a.shape[0], self.v0, self.items.shape[1])
        # NumPy arrays of the state's dtypes go straight into the jitted core (no
        # conversion dispatched per call).
        it = items_a.astype(np.int32, copy=False)
        v0s = np.asarray(v0s, self._ctx.v0.dtype)
        self._state = self._update_many(self.state, it, r, v0s)  # state: flushed
        self._record(it, r, v0s)

    def _queue(self, items, r, v0) -> None:
        """One checked list: recorded now, its arithmetic applied by the next
        select's compiled call (or when the state is read). A second update first
        applies the one before it, so order is kept."""
        # host arrays, as the no-update a select passes, so both run one program
        # (a host array and a device array are two signatures to jit)
        dtype = self._ctx.v0.dtype
        if v0 is None:
            v0_host, v0_arg = self.v0, self._v0_host
        else:
            v0_host = check_v0(v0, self.items.shape[1])
            v0_arg = v0_host.astype(dtype)
        it = np.array(items, np.int32)  # a copy: the caller may reuse theirs
        self.flush()  # an update still pending first: order is kept
        self._pending = (it, r.astype(dtype), v0_arg)
        self._history.append_one(items, r, v0_host)

    def _record(self, items, rewards, v0s) -> None:
        """Keep the impressions on the host (for diagnostics), bounded."""
        self._history.append(items, rewards, v0s)

    @property
    def max_history(self) -> int:
        """The most impressions kept on the host (default 10,000; 0 keeps none).

        Selecting and updating never need them; ``posterior()`` uses the kept ones
        for its data groups (its attributes say how many), ``save`` stores them.
        Setting it keeps the most recent ones.
        """
        return self._history.capacity

    @max_history.setter
    def max_history(self, value) -> None:
        self._history.resize(as_capacity(value))

    def history(self) -> tuple[np.ndarray, np.ndarray]:
        """The kept impressions, oldest first: items (n, L) and rewards (n, L)."""
        items, rewards, _ = self._history.arrays()
        return items, rewards

    def _history_arrays(self):
        return self._history.arrays()

    # ----------------------------------------------------------------- the scores
    # ------------------------------------------------------------------- new items
    def add_items(self, vectors) -> np.ndarray:
        """Add items at run time: vectors (m, d). Returns their (m,) indices.

        Learnt parameters are untouched (theta lives per position, not per item).
        Capacity grows by doubling, so adding items recompiles only when it grows.
        """
        V = as_new_items(vectors, self.items.shape[1])
        m = V.shape[0]
        K_new = self.K + m
        self._state = with_items(self.state, self.K, V)  # a grown capacity: flushed
        idx = np.arange(self.K, K_new)
        self.items = np.concatenate([self.items, V])
        if self.mask is not None:
            self.mask = np.concatenate([self.mask, np.ones(m, bool)])
        self.K = K_new
        self._default_ctx()
        return idx

    # ------------------------------------------------------------------ persistence
    def _arrays(self) -> dict:
        out = {name: getattr(self, name) for name in self._array_args}
        if self.mask is not None:
            out["mask"] = self.mask
        return out

    def save(self, path) -> None:
        """Save the policy to ``path`` (.npz with JSON configuration; no pickle).

        Written atomically (a temporary file, then a rename), with the bayesrank
        and file-format versions. See :mod:`bayesrank.policies.runtime.persist`.
        """
        save_policy(self, path)

    @classmethod
    def load(cls, path, **overrides):
        """Load a policy saved with :meth:`save`; it continues exactly where it was.

        ``overrides`` supply constructor arguments that cannot be stored (e.g. a user
        NumPyro model that is not registered). Every array is validated first; any
        problem with the file raises ``ValueError`` naming the path.
        """
        return load_policy(cls, path, overrides)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(K={self.K}, L={self.L}, t={self.t})"
