"""What the online-LTR click-model baselines share (CascadeKLUCB, CascadeLinTS,
CascadeLinUCB, PBMUCB).

Each baseline scores every item once per round (a KL-UCB index, a Thompson draw of
``x^T theta``, ...) and shows the L best-scored items. Its functional core is a
:class:`ClickCore` over the usual :class:`~bayesrank.policies.parts.core.PolicyState`
(``model`` holds the baseline's statistics, ``est`` is empty), so the policy classes
(:class:`ClickPolicy`, a :class:`~bayesrank.policies.base.Policy`), the compiled
programs, :func:`bayesrank.simulate` and save/load (:mod:`~bayesrank.policies.runtime.persist`, with its digest)
work on them as on every policy:

    score = core.index(key, model, items)        # (K,) one score per item
    list  = the L best available items (ties: lower index first), placed by ``slots``
    model = core.learn(model, items, list, rewards)   # rewards (L,), NaN = not observed

The baselines without item vectors (CascadeKLUCB, PBMUCB) carry dummy ones, a (K, 1)
array of zeros, because the protocol (``Context.v0``, the state's ``items``) expects
vectors; their ``v0`` is ignored.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._static import Part
from bayesrank._validate import check_cascade, check_int
from bayesrank.policies.base import Policy
from bayesrank.policies.parts.context import Context
from bayesrank.policies.parts.core import PolicyState, Selection

__all__ = ["ClickCore", "ClickPolicy", "cascade_observed", "top_items"]


def top_items(score, mask, L: int):
    """The L available items of largest score, largest first: (L,) int32.

    Ties go to the lower index (a stable sort); ``+inf`` scores (never observed
    items) come first, unavailable items (``mask`` False) never.

    Example:
        >>> import jax.numpy as jnp
        >>> top_items(jnp.array([0.2, jnp.inf, 0.7, 0.7]), jnp.array([1, 1, 1, 0], bool),
        ...           2).tolist()
        [1, 2]
    """
    # available items first, then by descending score, then by index (stable)
    order = jnp.lexsort((jnp.where(mask, -score, jnp.inf), ~mask))
    return order[:L].astype(jnp.int32)


def cascade_observed(rewards):
    """(L,) bool: the positions a cascade observes, up to and including the first
    click (all when there is none), NaN entries excepted.

    Example:
        >>> import jax.numpy as jnp
        >>> cascade_observed(jnp.array([0.0, 1.0, 0.0, jnp.nan])).tolist()
        [True, True, False, False]
    """
    seen = jnp.isfinite(rewards)
    click = seen & (rewards > 0.5)
    before = jnp.cumsum(click) - click  # clicks strictly before each position
    return seen & (before == 0)


class ClickCore(Part):
    """The functional core of a click-model baseline (see the module docstring).

    Subclasses define ``init_model()``, ``index(key, model, items) -> (K,)`` and
    ``learn(model, items, lists, rewards) -> model``; ``slots`` (L,) says at which
    position the j-th best item goes (None: position j).

    Example:
        >>> import jax, jax.numpy as jnp, bayesrank as br
        >>> core = br.CascadeKLUCB(5, L=2).core                   # a ClickCore
        >>> ctx = br.policies.Context(jnp.zeros(1), jnp.ones(5, bool))
        >>> state, sel = core.select(jax.random.key(0), core.init(), ctx)
        >>> sel.items.tolist()                                  # nothing seen yet
        [0, 1]
    """

    random = False

    def __init__(self, items, L, slots=None):
        self.items0 = jnp.asarray(items)
        self.L = int(L)
        self.slots = None if slots is None else jnp.asarray(slots, jnp.int32)

    def init(self) -> PolicyState:
        """The state before any impression."""
        K = self.items0.shape[0]
        return PolicyState(self.init_model(), (), self.items0, jnp.ones(K, bool))

    def select(self, key, state, ctx):
        """One request: ``(state, Selection)``; ``Selection.params`` is the (K,)
        score and ``value`` the sum of the shown items' scores."""
        score = self.index(key, state.model, state.items)
        best = top_items(score, ctx.mask & state.active, self.L)
        shown = best if self.slots is None else jnp.zeros_like(best).at[self.slots].set(best)
        return state, Selection(shown, jnp.sum(score[best]), score)

    def update(self, state, lists, rewards, ctx):
        """Learn from one shown list (L,) and its clicks (L,) (NaN: not observed)."""
        rewards = jnp.asarray(rewards, self.dtype)
        return state._replace(model=self.learn(state.model, state.items, lists, rewards))

    def select_batch(self, key, state, ctxs):
        """B requests: one independent draw each (deterministic scores: equal to B
        calls of :meth:`select`)."""
        keys = jax.random.split(key, ctxs.v0.shape[0])
        axes = Context(0, None if ctxs.mask.ndim == 1 else 0)
        sel = jax.vmap(self.select, in_axes=(0, None, axes))(keys, state, ctxs)[1]
        return state, sel

    @property
    def dtype(self):
        return jnp.result_type(float)


class _Clicks:
    """The reward checks of the click baselines: clicks 1/0, NaN = not observed.

    ``check_rewards`` sees the observed values (any click model: 1/0 only); with
    ``cascade=True`` :meth:`ClickPolicy.update` also refuses whole lists a cascade
    cannot produce (:func:`~bayesrank._validate.check_cascade`).
    """

    reward_support = "binary"

    def __init__(self, cascade: bool = False):
        self.cascade = cascade

    @staticmethod
    def check_rewards(y) -> None:
        bad = (y != 0) & (y != 1)
        if np.any(bad):
            raise ValueError(
                "rewards: expected clicks 1.0/0.0 (NaN = not observed), got "
                f"{float(np.asarray(y)[bad][0])!r}"
            )


def _numeric(rewards) -> np.ndarray | None:
    """Rewards as a float array, or None where they are not numbers (the shared
    checks of ``Policy.update`` word that refusal)."""
    try:
        arr = np.asarray(rewards)
    except (TypeError, ValueError):
        return None
    return arr.astype(float) if arr.dtype.kind in "biuf" else None


def as_k_l(K, L) -> tuple[int, int]:
    """K >= 1 items and 1 <= L <= K positions (the lists show distinct items)."""
    K = check_int(K, "K", low=1)
    L = check_int(L, "L", low=1)
    if L > K:
        raise ValueError(f"L: expected L <= K = {K} (distinct items), got {L}")
    return K, L


class ClickPolicy(Policy):
    """The class over a :class:`ClickCore`: ``select``, ``select_batch``, ``update``
    (NaN = not observed), ``fit``, ``history``, ``save``/``load`` as every
    :class:`~bayesrank.policies.base.Policy`. Lists show distinct items.

    No posterior over per-position parameters: ``posterior``, ``posterior_mean``,
    ``features`` and ``add_items`` raise ``TypeError``; ``scores()`` is
    the (K,) score the last ``select`` ranked by.

    Example:
        >>> import bayesrank as br
        >>> from bayesrank.policies.click.base import ClickPolicy
        >>> isinstance(br.CascadeKLUCB(5, L=2), ClickPolicy)
        True
    """

    _array_args: tuple[str, ...] = ()
    distinct = True

    def _init_click(self, K: int, L: int, items=None, *, cascade: bool = False) -> None:
        self.K, self.L = K, L
        self.items = np.zeros((K, 1)) if items is None else items
        self.w = np.zeros(L)
        self.v0 = np.zeros(self.items.shape[1])
        self.mask = None
        self.model = _Clicks(cascade)

    def update(self, items, rewards, *, v0=None) -> None:
        """Learn from shown lists, as :meth:`Policy.update
        <bayesrank.policies.base.Policy.update>`: items (L,) or (n, L), rewards of the
        same shape, clicks 1.0/0.0 with NaN where not observed.

        A cascade baseline (CascadeKLUCB, CascadeLinTS, CascadeLinUCB) also refuses
        lists its model cannot produce: an observed position below a NaN one, or a
        click below the first click (zeros there are accepted and ignored).

        Raises:
            ValueError, TypeError: bad items or rewards (naming them); the policy's
                state is left exactly as it was.
        """
        r = _numeric(rewards)
        if r is not None and r.shape == np.shape(items) and r.ndim in (1, 2) \
                and r.shape[-1] == self.L:
            observed = r[np.isfinite(r)]
            if observed.size:
                self.model.check_rewards(observed)
            if self.model.cascade:
                check_cascade(r)
        super().update(items, rewards, v0=v0)

    def _config(self) -> dict:
        return {"K": self.K, "L": self.L}

    @classmethod
    def _from_config(cls, cfg, args, seed, overrides):
        if overrides:
            raise TypeError(f"load: unexpected arguments {sorted(overrides)}")
        return cls._rebuild(cfg, args, seed)

    @classmethod
    def load(cls, path, **overrides):
        """Load a policy saved with :meth:`save` (see
        :mod:`bayesrank.policies.runtime.persist`): every array checked, the digest too, and
        the statistics must be consistent (``ValueError`` naming the path)."""
        obj = super().load(path, **overrides)
        why = obj._inconsistent(obj.state.model)
        if why:
            raise ValueError(f"path: {path}: {why}")
        return obj

    def _inconsistent(self, model) -> str | None:
        return None

    def scores(self, *, v0=None) -> np.ndarray:
        """(K,) the scores the last :meth:`select` ranked the items by."""
        if self._last is None:
            raise RuntimeError("scores: call select() first")
        return np.asarray(self._last.params)[: self.K]

    def _no(self, what: str):
        raise TypeError(
            f"{what}: {type(self).__name__} is a click-model baseline without "
            "per-position posteriors"
        )

    def posterior(self, position: int, **kwargs):
        """Not available (no per-position posterior): raises TypeError."""
        self._no("posterior")

    def posterior_mean(self):
        """Not available (no per-position posterior): raises TypeError."""
        self._no("posterior_mean")

    def features(self, lists, v0=None):
        """Not available (no per-position features): raises TypeError."""
        self._no("features")

    def add_items(self, vectors):
        """Not available (per-item statistics of a fixed catalogue): raises
        TypeError."""
        self._no("add_items")
