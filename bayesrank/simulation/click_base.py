"""What the click-model environments share: the pytree plumbing, argument checks,
the cascade's "not examined" mask and the exact best list of a monotone click model.

Every click model of :mod:`bayesrank.simulation.click` has a value (its expected
reward) that is nondecreasing in one score per item (``attraction``, or ``u =
attraction * satisfaction`` for the DBN) at every position, and whose best order of a
fixed set of items is a fixed order of the positions. The exact best list is then a
sort (see :meth:`ClickEnv.best`); each model proves its order where it is defined.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._validate import (
    check_array,
    check_bool,
    check_int,
    check_lists,
    check_real,
    check_seed,
    is_tracer,
)

__all__ = ["ClickEnv", "through_cascade"]


def through_cascade(clicks, stop=None):
    """Clicks seen by a user who scans top-down and leaves at the first stop.

    Args:
        clicks: (..., L) 1/0 (or bool) clicks drawn at every position.
        stop: (..., L) bool, where the user leaves after that position; default:
            at the first click (the cascade model).

    Returns:
        (..., L) float clicks, NaN at the positions after the first stop (not
        examined), the convention of :func:`bayesrank.cascade_rewards`.

    Example:
        >>> import numpy as np
        >>> through_cascade(np.array([0, 1, 1])).tolist()
        [0.0, 1.0, nan]
    """
    c = jnp.asarray(clicks)
    s = (c > 0) if stop is None else jnp.asarray(stop, bool)
    before = jnp.cumsum(s, axis=-1) - s  # stops strictly before each position
    dtype = c.dtype if jnp.issubdtype(c.dtype, jnp.floating) else jnp.result_type(float)
    return jnp.where(before == 0, (c > 0).astype(dtype), jnp.nan)


def as_probabilities(x, name: str, *, shape: tuple | None = None) -> np.ndarray:
    """A finite array of probabilities in [0, 1] (of ``shape`` if given); tracers pass."""
    if is_tracer(x):
        return x
    arr = check_array(x, name, ndim=len(shape) if shape is not None else (1,))
    if shape is not None and any(
        want is not None and got != want for got, want in zip(arr.shape, shape)
    ):
        want = tuple("n" if w is None else w for w in shape)
        raise ValueError(f"{name}: expected shape {want}, got {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name}: expected at least one value, got shape {arr.shape}")
    if arr.min() < 0 or arr.max() > 1:
        raise ValueError(
            f"{name}: expected values in [0, 1], got min {arr.min():g} and "
            f"max {arr.max():g}"
        )
    return arr


def sigmoid_attraction(items, theta) -> tuple[np.ndarray, np.ndarray]:
    """``(items, sigmoid(items @ theta))`` checked: items (K, d), theta (d,)."""
    from scipy.special import expit

    V = check_array(items, "items", ndim=2)
    th = check_array(theta, "theta", ndim=1)
    if V.shape[0] < 1 or V.shape[1] < 1:
        raise ValueError(
            f"items: expected a (K, d) array with K, d >= 1, got {V.shape}"
        )
    if th.shape != (V.shape[1],):
        raise ValueError(
            f"theta: expected shape (d,) = ({V.shape[1]},) (from items), got {th.shape}"
        )
    return V, expit(V @ th)


def ranked_attraction(K, L, seed, p, delta) -> np.ndarray:
    """(K,) attraction p for L items drawn by ``seed``, p - delta for the others."""
    K, L = check_int(K, "K", low=1), check_int(L, "L", low=1)
    if L > K:
        raise ValueError(f"L: expected L <= K = {K}, got {L}")
    p = check_real(p, "p", low=0, high=1)
    delta = check_real(delta, "delta", low=0, high=p)
    rng = np.random.default_rng(check_seed(seed))
    a = np.full(K, p - delta)
    a[rng.permutation(K)[:L]] = p
    return a


class ClickEnv:
    """Base of the click-model environments (not built directly).

    A subclass names its array parameters in ``_leaves`` and its static ones in
    ``_static``, is registered with :func:`jax.tree_util.register_pytree_node_class`,
    and defines ``_value(lists)``, ``_sample(key, lists)``, ``_item_score()`` (K,)
    and ``_slots()`` (L,): the positions in the order the best items fill them.

    Attributes read by :func:`bayesrank.simulate` (which was written for
    :class:`~bayesrank.RankingEnv`): ``S = 2`` (simulate then asks
    ``best(distinct=policy.distinct, mask=policy.mask)``, the best list the policy can
    show), ``d`` (the item vectors' dimension, None without them), ``link`` and
    ``noise`` (None: the clicks are the model's own Bernoulli draws).

    Example:
        >>> import numpy as np
        >>> from bayesrank.simulation import CascadeEnv, ClickEnv
        >>> env = CascadeEnv(np.array([0.2, 0.6, 0.4]), L=2)
        >>> isinstance(env, ClickEnv), env.K, env.L, float(env.regret(np.array([1, 2])))
        (True, 3, 2, 0.0)
    """

    _leaves: tuple[str, ...] = ()
    _static: tuple[str, ...] = ()
    S = 2
    link = None
    noise = None

    # -------------------------------------------------------------- pytree protocol
    def tree_flatten(self):
        """JAX pytree protocol: the array parameters (and item vectors) are leaves."""
        children = tuple(getattr(self, n) for n in self._leaves) + (self.items,)
        return children, tuple(getattr(self, "_" + n) for n in self._static)

    @classmethod
    def tree_unflatten(cls, aux, children):
        """JAX pytree protocol: rebuild an environment from :meth:`tree_flatten`."""
        obj = object.__new__(cls)
        for n, v in zip(cls._leaves, children[:-1]):
            setattr(obj, n, v)
        obj.items = children[-1]
        for n, v in zip(cls._static, aux):
            setattr(obj, "_" + n, v)
        obj._best_value = None
        return obj

    def _set(self, items=None, **arrays) -> None:
        for n, v in arrays.items():
            setattr(self, n, v if is_tracer(v) else jnp.asarray(v))
        self.items = None if items is None else jnp.asarray(items)
        self._best_value = None

    # ------------------------------------------------------------------- shapes
    @property
    def K(self) -> int:
        """The number of items."""
        return self.attraction.shape[-1]

    @property
    def d(self) -> int | None:
        """The item vectors' dimension (given by ``from_features``), else None."""
        return None if self.items is None else self.items.shape[-1]

    @property
    def v0(self):
        """The user's last item, all zeros (shape (d,)), since a click model has no
        user context: as a :class:`~bayesrank.RankingEnv` built without ``v0``.

        Raises:
            ValueError: the environment has no item vectors (build it with
                ``from_features`` or ``items=``).
        """
        if self.items is None:
            raise ValueError(
                f"items: {type(self).__name__} was built without item vectors, so it "
                "has no v0; build it with from_features(...) or items=")
        return jnp.zeros(self.items.shape[-1], self.items.dtype)

    # ------------------------------------------------------------------ the model
    def expected_reward(self, lists):
        """The model's value of each list: () for an (L,) list, (...) for (..., L)."""
        check_lists(lists, self.K, self.L, "lists")
        return _value(self, jnp.asarray(lists))

    def sample(self, key, lists):
        """Clicks (..., L) of the shown lists: 1.0/0.0, NaN where not examined.

        Args:
            key: a JAX PRNG key.
            lists: (L,) or (..., L) int item indices.
        """
        check_lists(lists, self.K, self.L, "lists")
        return _sample(self, key, jnp.asarray(lists))

    def best(self, distinct: bool = True, mask=None):
        """The exact best list and its value.

        The value is nondecreasing in each position's item score (see the class), so
        with ``distinct=True`` the best list holds the L available items of largest
        score, the largest in the first of ``_slots()``; with ``distinct=False`` (a
        list may repeat an item, each position drawn independently, as the sampler
        does) every position shows the single best item. Ties go to the lower index.

        Args:
            distinct: forbid repeated items (the default for click models).
            mask: (K,) bool, True where the item may be shown.

        Returns:
            items (L,) int32 array and its value (a scalar array).
        """
        check_bool(distinct, "distinct")
        K, L = self.K, self.L
        if distinct and L > K:
            raise ValueError(
                f"distinct: a list of L={L} distinct items needs K >= L, got K={K}; "
                "pass distinct=False for lists with repeats"
            )
        if mask is not None and not is_tracer(mask):
            m = np.asarray(mask)
            if m.shape != (K,) or m.dtype != bool:
                raise ValueError(
                    f"mask: expected a ({K},) bool array (True = may be shown), got "
                    f"{m.dtype} {m.shape}"
                )
            need = L if distinct else 1
            if m.sum() < need:
                raise ValueError(
                    f"mask: needs at least {need} available item(s), got {int(m.sum())}"
                )
        items = _best_items(self, None if mask is None else jnp.asarray(mask), distinct)
        return items, self.expected_reward(items)

    def _best_items(self, mask, distinct: bool):
        score = self._item_score()
        if mask is not None:
            score = jnp.where(mask, score, -jnp.inf)
        order = jnp.argsort(-score, stable=True)  # largest score first, ties by index
        if not distinct:
            return jnp.full(self.L, order[0], jnp.int32)
        return (
            jnp.zeros(self.L, jnp.int32)
            .at[self._slots()]
            .set(order[: self.L].astype(jnp.int32))
        )

    @property
    def best_value(self):
        """Value of the best list of distinct items (no mask), cached; computed by
        :meth:`expected_reward`, so the best list has a regret of exactly 0."""
        if self._best_value is not None:
            return self._best_value
        value = self.best()[1]
        if not isinstance(value, jax.core.Tracer):  # never cache a traced value
            self._best_value = value
        return value

    def regret(self, lists, best_value=None):
        """Pseudo-regret: ``best_value`` (default :attr:`best_value`) minus the value
        of each list."""
        bv = self.best_value if best_value is None else best_value
        return bv - self.expected_reward(lists)

    def to_go(self, mask=None):
        """Refused: a click model has no user context (``simulate(users="items")``)."""
        raise ValueError(
            f"users: {type(self).__name__} has no user context (v0); simulate it with "
            "users='fixed'"
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(K={self.K}, L={self.L})"


# Compiled once per environment class, its shapes and the lists' shape.
_value = jax.jit(lambda env, lists: env._value(lists))
_sample = jax.jit(lambda env, key, lists: env._sample(key, lists))
_best_items = jax.jit(ClickEnv._best_items, static_argnums=2)
