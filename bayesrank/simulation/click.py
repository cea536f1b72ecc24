"""Click-model environments: the position-based model, the cascade, the dependent-click
model and the dynamic Bayesian network (Chuklin, Markov and de Rijke 2015, "Click
Models for Web Search"), the environments of the online learning-to-rank literature.

A list a = (a_1..a_L) of item indices is shown; ``sample(key, lists)`` draws clicks
(1.0/0.0, NaN at positions the user did not examine: "not observed" for the policies)
and ``expected_reward(lists)`` is the model's value:

    PBM      sum_l examination[l] attraction[a_l]                 (expected clicks)
    cascade  1 - prod_l (1 - attraction[a_l])                     (P(a click))
    DCM      1 - prod_l (1 - (1 - continuation[l]) attraction[a_l])  (P(satisfied))
    DBN      sum_l gamma^(l-1) prod_{j<l} (1 - u[a_j]) u[a_l]     (P(satisfied)),
             u = attraction * satisfaction

Each value is nondecreasing in one score per item at every position, so the exact best
list is a sort (:meth:`ClickEnv.best`); each class proves its order of positions.
The environments are JAX pytrees (their arrays are leaves): ``jax.jit``, ``jax.vmap``
and :func:`bayesrank.simulate` take them as they take :class:`~bayesrank.RankingEnv`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._validate import check_array, check_int, check_real, is_tracer
from bayesrank.simulation.click_base import (
    ClickEnv,
    as_probabilities,
    ranked_attraction,
    sigmoid_attraction,
    through_cascade,
)

__all__ = ["CascadeEnv", "DBNEnv", "DCMEnv", "PBMEnv"]


def _items(items, K: int):
    """Optional (K, d) item vectors (what a policy scores items with)."""
    if items is None or is_tracer(items):
        return items
    V = check_array(items, "items", ndim=2)
    if V.shape[0] != K:
        raise ValueError(
            f"items: expected {K} rows (K, from attraction), got {V.shape}"
        )
    return V


def _uniform(key, env, shape):
    return jax.random.uniform(key, shape, env.attraction.dtype)


def _per_position(x, name: str, L: int) -> np.ndarray:
    """A scalar or (L,) array of probabilities as (L,)."""
    if np.ndim(x) == 0:
        return np.full(L, check_real(x, name, low=0, high=1))
    return as_probabilities(x, name, shape=(L,))


@jax.tree_util.register_pytree_node_class
class PBMEnv(ClickEnv):
    """The position-based model: click_l ~ Bernoulli(examination[l] attraction[a_l]).

    Every position is observed (no NaN); the value is the expected number of clicks.
    Best list: the rearrangement inequality, ``sum_l e_l A[a_l]`` is largest when the
    largest attractions meet the largest examinations (distinct items), and the top
    item everywhere when repeats are allowed.

    Args:
        attraction: (K,) click probability of each item when examined, in [0, 1].
        examination: (L,) probability that each position is examined, in [0, 1].
        items: (K, d) item vectors the attraction came from (optional; what a
            policy such as :class:`~bayesrank.RankTS` scores items with).

    Example:
        >>> import numpy as np
        >>> env = PBMEnv(np.array([0.1, 0.9, 0.5]), np.array([0.5, 1.0]))
        >>> items, value = env.best()
        >>> items.tolist(), round(float(value), 6)
        ([2, 1], 1.15)
    """

    _leaves = ("attraction", "examination")

    def __init__(self, attraction, examination, *, items=None):
        A = as_probabilities(attraction, "attraction")
        e = as_probabilities(examination, "examination")
        self._set(attraction=A, examination=e, items=_items(items, A.shape[-1]))

    @classmethod
    def from_features(cls, items, theta, examination) -> PBMEnv:
        """attraction = sigmoid(items @ theta); items (K, d), theta (d,), examination (L,)."""
        V, A = sigmoid_attraction(items, theta)
        return cls(A, examination, items=V)

    @classmethod
    def synthetic(
        cls,
        K: int = 10,
        L: int = 5,
        seed: int = 0,
        *,
        p: float = 0.2,
        delta: float = 0.15,
        examination=None,
    ) -> PBMEnv:
        """L items (drawn by ``seed``) of attraction p, the others p - delta, as in the
        cascade set-up of Kveton et al. (2015); examination defaults to 1/l at
        position l (1-based), a reciprocal-rank position bias."""
        A = ranked_attraction(K, L, seed, p, delta)
        e = 1.0 / np.arange(1, L + 1) if examination is None else examination
        return cls(A, e)

    @property
    def L(self) -> int:
        """The list length (number of positions)."""
        return self.examination.shape[-1]

    def _value(self, lists):
        return jnp.sum(self.examination * self.attraction[lists], axis=-1)

    def _sample(self, key, lists):
        p = self.examination * self.attraction[lists]
        return (_uniform(key, self, lists.shape) < p).astype(p.dtype)

    def _item_score(self):
        return self.attraction

    def _slots(self):
        return jnp.argsort(-self.examination, stable=True)


@jax.tree_util.register_pytree_node_class
class CascadeEnv(ClickEnv):
    """The cascade model: examine top-down, click the first attractive item, stop.

    Positions after the click are NaN (not examined); the value is P(a click)
    ``= 1 - prod_l (1 - attraction[a_l])``. Best list: the value is symmetric in the
    positions and nondecreasing in each attraction, so the L most attractive items in
    any order are best (given in descending order).

    Args:
        attraction: (K,) probability that each item is attractive, in [0, 1].
        L: list length.
        items: (K, d) item vectors the attraction came from (optional).

    Example:
        >>> import numpy as np
        >>> env = CascadeEnv(np.array([0.1, 0.9, 0.5]), L=2)
        >>> items, value = env.best()
        >>> items.tolist(), round(float(value), 6)
        ([1, 2], 0.95)
    """

    _leaves = ("attraction",)
    _static = ("L",)

    def __init__(self, attraction, L: int, *, items=None):
        A = as_probabilities(attraction, "attraction")
        self._L = check_int(L, "L", low=1)
        self._set(attraction=A, items=_items(items, A.shape[-1]))

    @classmethod
    def from_features(cls, items, theta, L: int) -> CascadeEnv:
        """attraction = sigmoid(items @ theta); items (K, d), theta (d,)."""
        V, A = sigmoid_attraction(items, theta)
        return cls(A, L, items=V)

    @classmethod
    def synthetic(
        cls,
        K: int = 10,
        L: int = 4,
        seed: int = 0,
        *,
        p: float = 0.2,
        delta: float = 0.15,
    ) -> CascadeEnv:
        """The synthetic problems of Kveton et al. (2015), "Cascading bandits": L
        items of attraction p, the other K - L of p - delta (which L: drawn by
        ``seed``)."""
        return cls(ranked_attraction(K, L, seed, p, delta), L)

    @property
    def L(self) -> int:
        """The list length (number of positions)."""
        return self._L

    def _value(self, lists):
        return 1.0 - jnp.prod(1.0 - self.attraction[lists], axis=-1)

    def _sample(self, key, lists):
        return through_cascade(
            _uniform(key, self, lists.shape) < self.attraction[lists]
        )

    def _item_score(self):
        return self.attraction

    def _slots(self):
        return jnp.arange(self.L)


@jax.tree_util.register_pytree_node_class
class DCMEnv(ClickEnv):
    """The dependent-click model: a cascade that may go on after a click.

    The user examines top-down and clicks an attractive item; after a click at
    position l they go on with probability continuation[l], else stop satisfied (the
    positions after are NaN). The value is P(satisfied)
    ``= 1 - prod_l (1 - (1 - continuation[l]) attraction[a_l])``.

    Best list: the L most attractive items (the value is nondecreasing in each
    attraction), the most attractive at the position of smallest continuation, and
    so on (exchange argument in ``_slots``).

    Args:
        attraction: (K,) probability that each item is attractive, in [0, 1].
        continuation: (L,) probability of going on after a click at each position.
        items: (K, d) item vectors the attraction came from (optional).

    Example:
        >>> import numpy as np
        >>> env = DCMEnv(np.array([0.1, 0.9, 0.5]), np.array([0.8, 0.2]))
        >>> items, value = env.best()
        >>> items.tolist(), round(float(value), 6)
        ([2, 1], 0.748)
    """

    _leaves = ("attraction", "continuation")

    def __init__(self, attraction, continuation, *, items=None):
        A = as_probabilities(attraction, "attraction")
        c = as_probabilities(continuation, "continuation")
        self._set(attraction=A, continuation=c, items=_items(items, A.shape[-1]))

    @classmethod
    def from_features(cls, items, theta, continuation) -> DCMEnv:
        """attraction = sigmoid(items @ theta); items (K, d), theta (d,),
        continuation (L,)."""
        V, A = sigmoid_attraction(items, theta)
        return cls(A, continuation, items=V)

    @classmethod
    def synthetic(
        cls,
        K: int = 10,
        L: int = 4,
        seed: int = 0,
        *,
        p: float = 0.2,
        delta: float = 0.15,
        continuation=0.5,
    ) -> DCMEnv:
        """L items (drawn by ``seed``) of attraction p, the others p - delta, and a
        continuation probability (a number or (L,)) after each click, in the spirit
        of the synthetic set-up of Katariya et al. (2016), "DCM bandits"."""
        return cls(
            ranked_attraction(K, L, seed, p, delta),
            _per_position(continuation, "continuation", L),
        )

    @property
    def L(self) -> int:
        """The list length (number of positions)."""
        return self.continuation.shape[-1]

    def _value(self, lists):
        stop = (1.0 - self.continuation) * self.attraction[lists]
        return 1.0 - jnp.prod(1.0 - stop, axis=-1)

    def _sample(self, key, lists):
        k1, k2 = jax.random.split(key)
        click = _uniform(k1, self, lists.shape) < self.attraction[lists]
        stop = click & (_uniform(k2, self, lists.shape) >= self.continuation)
        return through_cascade(click, stop)

    def _item_score(self):
        return self.attraction

    def _slots(self):
        # Exchange argument. With b_l = 1 - continuation[l], P(not satisfied) =
        # prod_l (1 - b_l A[a_l]). Take two positions with b_l >= b_m and two items
        # with A_i >= A_j. The other factors do not change, and
        #   (1 - b_l A_i)(1 - b_m A_j) - (1 - b_l A_j)(1 - b_m A_i)
        #     = -(b_l - b_m)(A_i - A_j) <= 0,
        # so putting the more attractive item where b is larger never raises
        # P(not satisfied). Any list can be sorted by such swaps without losing value:
        # items in descending attraction over positions in descending b (ascending
        # continuation) are best, and the best set is the top L (monotone value).
        return jnp.argsort(self.continuation, stable=True)


@jax.tree_util.register_pytree_node_class
class DBNEnv(ClickEnv):
    """The dynamic Bayesian network click model (Chapelle and Zhang 2009), simplified.

    At each examined position the user clicks with probability attraction[a_l];
    after a click they are satisfied with probability satisfaction[a_l] and stop;
    otherwise (no click, or a click without satisfaction) they go on with
    probability gamma, else abandon (the positions after a stop are NaN). The value is
    P(satisfied) ``= sum_l gamma^(l-1) prod_{j<l} (1 - u[a_j]) u[a_l]`` with
    ``u = attraction * satisfaction``: position l is examined with probability
    ``gamma^(l-1) prod_{j<l} (1 - u[a_j])`` and satisfies with probability u[a_l].

    Best list: the L items of largest u in descending u (proof in ``_slots``); with
    gamma < 1 the order matters, and this order is exact for every gamma in [0, 1].

    Args:
        attraction: (K,) click probability of each examined item, in [0, 1].
        satisfaction: (K,) probability of satisfaction after a click, in [0, 1].
        gamma: probability of going on when not satisfied, in [0, 1].
        L: list length.
        items: (K, d) item vectors the attraction came from (optional).

    Example:
        >>> import numpy as np
        >>> env = DBNEnv(np.array([0.1, 0.9, 0.5]), np.array([1.0, 0.5, 0.8]),
        ...              gamma=0.5, L=2)
        >>> items, value = env.best()
        >>> items.tolist(), round(float(value), 6)
        ([1, 2], 0.56)
    """

    _leaves = ("attraction", "satisfaction", "gamma")
    _static = ("L",)

    def __init__(self, attraction, satisfaction, gamma, L: int, *, items=None):
        A = as_probabilities(attraction, "attraction")
        s = as_probabilities(satisfaction, "satisfaction", shape=(A.shape[-1],))
        g = gamma if is_tracer(gamma) else check_real(gamma, "gamma", low=0, high=1)
        self._L = check_int(L, "L", low=1)
        self._set(attraction=A, satisfaction=s, items=_items(items, A.shape[-1]))
        self.gamma = g if is_tracer(g) else jnp.asarray(g, self.attraction.dtype)

    @classmethod
    def from_features(cls, items, theta, satisfaction, gamma, L: int) -> DBNEnv:
        """attraction = sigmoid(items @ theta); items (K, d), theta (d,),
        satisfaction (K,)."""
        V, A = sigmoid_attraction(items, theta)
        return cls(A, satisfaction, gamma, L, items=V)

    @classmethod
    def synthetic(
        cls,
        K: int = 10,
        L: int = 4,
        seed: int = 0,
        *,
        p: float = 0.2,
        delta: float = 0.15,
        satisfaction: float = 0.5,
        gamma: float = 0.9,
    ) -> DBNEnv:
        """L items (drawn by ``seed``) of attraction p, the others p - delta, one
        satisfaction probability for every item and persistence gamma."""
        A = ranked_attraction(K, L, seed, p, delta)
        s = check_real(satisfaction, "satisfaction", low=0, high=1)
        return cls(A, np.full(K, s), gamma, L)

    @property
    def L(self) -> int:
        """The list length (number of positions)."""
        return self._L

    def _value(self, lists):
        u = (self.attraction * self.satisfaction)[lists]  # (..., L)
        miss = jnp.cumprod(1.0 - u, axis=-1)
        before = jnp.concatenate([jnp.ones_like(u[..., :1]), miss[..., :-1]], axis=-1)
        reach = self.gamma ** jnp.arange(self.L, dtype=u.dtype) * before
        return jnp.sum(reach * u, axis=-1)

    def _sample(self, key, lists):
        k1, k2, k3 = jax.random.split(key, 3)
        click = _uniform(k1, self, lists.shape) < self.attraction[lists]
        satisfied = click & (_uniform(k2, self, lists.shape) < self.satisfaction[lists])
        go_on = ~satisfied & (_uniform(k3, self, lists.shape) < self.gamma)
        return through_cascade(click, ~go_on)

    def _item_score(self):
        return self.attraction * self.satisfaction

    def _slots(self):
        # Order: for items x, y at positions l, l+1 (reached with probability R), the
        # two positions contribute R [u_x + g (1 - u_x) u_y] and every later position
        # the factor g^2 (1 - u_x)(1 - u_y), symmetric in x, y; swapping them changes
        # the value by R (1 - g)(u_y - u_x), so with g <= 1 the larger u goes first.
        # Set: the value is nondecreasing in each u_l: dV/du_l = R_l (1 - g T_l), with
        # R_l >= 0 the probability of reaching l and T_l <= 1 the value of the list
        # after l; so the L items of largest u, sorted by u, are best.
        return jnp.arange(self.L)
