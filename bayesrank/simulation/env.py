"""The ranking environment: the reward model of Eq. 1 and the paper's generator.

    r^l = f^l(<theta^l, v_{a^l} + w_l v_{a^{l-1}}>) + noise,      v_{a^0} = v0

With ``w`` of shape (L, S-1) the reward at position l depends on a window of the S-1
previous items (Appendix E): ``v_{a^l} + sum_i w[l, i-1] v_{a^{l-i}}``; positions before
the user's last item contribute nothing.

``RankingEnv`` is a JAX pytree, so its methods can be jitted and vmapped over runs and
over batches of environments.

With ``feedback="cascade"`` the Bernoulli clicks of Eq. 1 are seen through a cascade:
the user examines the list top-down and leaves at the first click (the positions
after it are NaN, not observed), and a list's value is P(at least one click)
``= 1 - prod_l (1 - p_l)``, p_l the click probability of Eq. 1 at position l.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._validate import check_array, check_lists
from bayesrank.decoding.api import best_list
from bayesrank.decoding.backward import backward_dense
from bayesrank.decoding.window import window_decode
from bayesrank.model import scores
from bayesrank.model.links import apply_links, resolve_links
from bayesrank.model.noise import Noise, default_noise
from bayesrank.simulation.click_base import through_cascade
from bayesrank.simulation.generators import paper_env, semi_synthetic_env

__all__ = ["RankingEnv"]


@jax.tree_util.register_pytree_node_class
class RankingEnv:
    """An ordered-list bandit environment with neighbour-dependent GLM rewards.

    Args:
        items: (K, d) item vectors v_1..v_K.
        theta: (L, d) one parameter per position.
        w: (L,) dependency of each position on the previous item, or (L, S-1) for a
            window of S-1 previous items.
        v0: (d,) the user's last item (the item "before" position 1); zeros if None.
        link: a link name ("identity", "logistic", "probit", "exp"), a callable, or one
            per position.
        noise: a :mod:`bayesrank.model.noise` family; by default Gaussian(1) for the identity
            link, Bernoulli for logistic/probit and Poisson for exp.
        feedback: "full" (every position's reward is observed; the value is the
            expected total reward) or "cascade" (Bernoulli clicks seen top-down up to
            the first click, NaN after it; the value is P(at least one click)).

    Example:
        >>> import bayesrank as br
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4, d=10, w_max=10.0)
        >>> items, value = env.best()
        >>> float(env.regret(items))
        0.0
    """

    def __init__(
        self,
        items,
        theta,
        w,
        v0=None,
        link="identity",
        noise: Noise | None = None,
        feedback: str = "full",
    ):
        V = check_array(items, "items", ndim=2)
        Th = check_array(theta, "theta", ndim=2)
        W = np.asarray(w, dtype=float) if not isinstance(w, (int, float)) else None
        if W is None:
            raise ValueError("w: expected an (L,) or (L, S-1) array, got a scalar")
        W = check_array(W, "w", ndim=W.ndim if W.ndim in (1, 2) else 1)
        K, d = V.shape
        L = Th.shape[0]
        if K < 1 or L < 1 or d < 1:
            raise ValueError(
                f"items/theta: need K >= 1, L >= 1 and d >= 1; got K={K}, L={L}, d={d}"
            )
        if Th.shape[1] != d:
            raise ValueError(
                f"theta: expected shape (L, d) with d={d} (from items), got {Th.shape}"
            )
        if W.shape[0] != L:
            raise ValueError(
                f"w: expected shape (L,) or (L, S-1) with L={L}, got {W.shape}"
            )
        if W.ndim == 2 and W.shape[1] < 1:
            raise ValueError(f"w: a window needs S-1 >= 1 columns, got shape {W.shape}")
        v0 = np.zeros(d) if v0 is None else check_array(v0, "v0", ndim=1)
        if v0.shape != (d,):
            raise ValueError(f"v0: expected shape (d,) = ({d},), got {v0.shape}")
        links = resolve_links(link, L)
        if noise is None:
            noise = default_noise(links[0])
        if not isinstance(noise, Noise):
            raise TypeError(
                f"noise: expected a bayesrank.model.noise family, got {type(noise).__name__}"
            )
        for lk in links:
            noise.check_link(lk)
        if not isinstance(feedback, str) or feedback not in FEEDBACK:
            raise ValueError(f"feedback: expected one of {FEEDBACK}, got {feedback!r}")
        if feedback == "cascade" and noise.name != "bernoulli":
            raise ValueError(
                "feedback: 'cascade' needs Bernoulli clicks (a logistic or probit link), "
                f"got {noise.name} noise"
            )
        self.feedback = feedback
        self.items = jnp.asarray(V)
        self.theta = jnp.asarray(Th)
        self.w = jnp.asarray(W)
        self.v0 = jnp.asarray(v0)
        self.links = links
        self.noise = noise
        self._best_value = None

    # -------------------------------------------------------------- pytree protocol
    def tree_flatten(self):
        """JAX pytree protocol: the arrays (items, theta, w, v0) and the static links,
        noise and feedback."""
        children = (self.items, self.theta, self.w, self.v0)
        return children, (self.links, self.noise, self.feedback)

    @classmethod
    def tree_unflatten(cls, aux, children):
        """JAX pytree protocol: rebuild an environment from :meth:`tree_flatten`."""
        obj = object.__new__(cls)
        obj.items, obj.theta, obj.w, obj.v0 = children
        obj.links, obj.noise, obj.feedback = aux
        obj._best_value = None
        return obj

    # ------------------------------------------------------------------- generators
    @classmethod
    def paper(
        cls,
        seed: int = 0,
        K: int = 10,
        L: int = 4,
        d: int = 10,
        w_max: float = 10.0,
        link="identity",
        noise: Noise | None = None,
        v0=None,
    ) -> RankingEnv:
        """The paper's instance generator (Section "Experiments").

        theta^l = (theta'_l / 2, 1/2) and v_i = (v'_i, 1) with unit-norm theta', v'
        (uniform directions in [-1, 1]^{d-1}, normalised, as in the authors' code);
        w_l ~ Uniform(-w_max, w_max); v0 = 0 unless given.
        """
        return paper_env(cls, seed, K, L, d, w_max, link, noise, v0)

    # ---------------------------------------- semi-synthetic: real items, drawn clicks
    #: Positions l >= 2 redraw w_l while ``|1 + w_l|`` is below this (see
    #: :meth:`semi_synthetic`).
    SEMI_SYNTHETIC_MIN_OFFSET = 0.5

    @classmethod
    def semi_synthetic(
        cls,
        items,
        *,
        L: int = 3,
        link: str = "logistic",
        w_max: float = 1.0,
        base_rate=None,
        campaign: str = "all",
        spread: float = 1.0,
        seed: int = 0,
    ) -> RankingEnv:
        """Real item vectors with drawn click parameters matching observed click rates.

        The environment's items are ``items`` with a column of ones appended (the
        intercept), so ``env.items`` is (K, d + 1) and ``v0 = 0``. Per position l:

        * ``w_l ~ Uniform(-w_max, w_max)`` as in :meth:`paper` (``w_1`` multiplies
          ``v0 = 0`` and has no effect). For l >= 2 the intercept enters the list's
          features as ``(1 + w_l)``, so a draw with ``|1 + w_l| < 0.5``
          (:attr:`SEMI_SYNTHETIC_MIN_OFFSET`) is redrawn: there the intercept could
          not set the click rate without a huge coefficient.
        * ``theta^l = (g_l, b_l)``: ``g_l`` a Gaussian direction scaled so that the
          item scores ``s_l(j) = <g_l, v_j>`` have standard deviation ``spread`` over
          the items (the logit spread of the items on their own); ``b_l`` solved by
          bisection so that the click rate at position l of a uniformly random list
          (each position an independent uniform item, repeats allowed as in the
          environment) is exactly the target:
          ``mean_{i,j} f(b_l (1 + w_l) + s_l(j) + w_l s_l(i)) = target_l``
          (``f(b_1 + s_1(j))`` averaged over j at position 1). Cost O(L K^2) per
          bisection step.
        * Rewards are Bernoulli clicks with mean ``f(<theta^l, x^l>)``.

        Targets (``base_rate=None``): the per-position click rates of the OBD
        uniform-random log of ``campaign``
        (:func:`bayesrank.datasets.obd_position_clicks`); for "all": 13/3322 = 0.00391,
        14/3412 = 0.00410,
        11/3266 = 0.00337 (L must then be 3).

        Args:
            items: (K, d) item vectors, e.g. :func:`bayesrank.datasets.obd_items`.
            L: list length.
            link: "logistic" or "probit".
            w_max: w_l is drawn in [-w_max, w_max].
            base_rate: None (the log's rates), a number in (0, 1) for every position,
                or an (L,) array of per-position rates in (0, 1).
            campaign: the OBD campaign whose log gives the targets when
                ``base_rate`` is None.
            spread: standard deviation of the item scores on the logit (or probit)
                scale, > 0.
            seed: seed of the NumPy generator drawing w and theta.

        Returns:
            A :class:`RankingEnv` with Bernoulli noise.

        Example:
            >>> import bayesrank as br
            >>> V = br.datasets.obd_items("men", d=8)
            >>> env = br.RankingEnv.semi_synthetic(V, w_max=2.0, seed=1)
            >>> env.K, env.L, env.d
            (34, 3, 9)
        """
        return semi_synthetic_env(cls, items, L=L, link=link, w_max=w_max,
                                  base_rate=base_rate, campaign=campaign,
                                  spread=spread, seed=seed)

    # -------------------------------------------------------------------- shapes
    @property
    def K(self) -> int:
        """The number of items."""
        return self.items.shape[0]

    @property
    def L(self) -> int:
        """The list length (number of positions)."""
        return self.theta.shape[0]

    @property
    def d(self) -> int:
        """The item feature dimension."""
        return self.items.shape[1]

    @property
    def S(self) -> int:
        """The window size S; 2 for pairwise dependence (w of shape (L,))."""
        return 2 if self.w.ndim == 1 else self.w.shape[1] + 1

    @property
    def W(self):
        """The dependency weights as an (L, S-1) array."""
        return self.w[:, None] if self.w.ndim == 1 else self.w

    @property
    def link(self):
        """The link's name, or a tuple of names when positions differ."""
        names = tuple(lk.name for lk in self.links)
        return names[0] if len(set(names)) == 1 else names

    # ------------------------------------------------------------------- the model
    def features(self, lists):
        """(..., L, d) features x^l of the shown lists."""
        return scores.list_features(self.items, self.W, self.v0, lists)

    def position_means(self, lists):
        """Expected reward of each position: (L,) for a list, (..., L) for a batch."""
        check_lists(lists, self.K, self.L, "lists")
        return _position_means(self, jnp.asarray(lists))

    def _position_means(self, lists):
        x = self.features(lists)  # (..., L, d)
        z = jnp.einsum("...ld,ld->...l", x, self.theta)
        z = jnp.moveaxis(z, -1, 0)
        return jnp.moveaxis(apply_links(self.links, z), 0, -1)

    def expected_reward(self, lists):
        """Expected total reward of each list: () or (...); with
        ``feedback="cascade"``, P(at least one click) ``= 1 - prod_l (1 - p_l)``."""
        means = self.position_means(lists)
        if self.feedback == "cascade":
            return 1.0 - jnp.prod(1.0 - means, axis=-1)
        return jnp.sum(means, axis=-1)

    def sample(self, key, lists):
        """Rewards (..., L) of the shown lists, drawn with a JAX PRNG key; with
        ``feedback="cascade"``, NaN after the first click (not examined)."""
        rewards = self.noise.sample(key, self.position_means(lists))
        return through_cascade(rewards) if self.feedback == "cascade" else rewards

    def score_tables(self):
        """True scores in the decoder's layout: ``(first, pairs)`` for S = 2,
        else the window list of :func:`bayesrank.model.scores.window_scores`."""
        return _score_tables(self)

    def _score_tables(self):
        if self.S == 2:
            return scores.pair_scores(
                self.theta, self.items, self.w.reshape(-1), self.v0, self.links
            )
        return scores.window_scores(self.theta, self.items, self.W, self.v0, self.links)

    def best(self, distinct: bool = False, mask=None, top_k=None):
        """The best list and its expected total reward (exact).

        With ``feedback="cascade"`` the value is P(at least one click) and the same
        decoders are exact on the scores ``-log(1 - p_l)``: P(no click) is
        ``prod_l (1 - p_l(a_{l-1}, a_l))``, so the list of largest P(click) is the
        list of largest ``sum_l -log(1 - p_l)``, a max-sum over the same chain of
        pairs (or windows); its value is then recomputed by :meth:`expected_reward`.

        Args:
            distinct: forbid repeated items (S = 2 only).
            mask: (K,) bool, True where the item may be shown.
            top_k: the k best lists (S = 2 only).

        Returns:
            items (L,) int array and its expected total reward; with ``top_k=k``,
            items (k, L) and values (k,).
        """
        if self.feedback == "cascade":
            items, _ = self._decode(distinct, mask, top_k)
            return items, self.expected_reward(items)
        return self._decode(distinct, mask, top_k)

    def _decode(self, distinct, mask, top_k):
        tables = self.score_tables()
        if self.feedback == "cascade":
            tables = jax.tree_util.tree_map(_no_click_score, tables)
        if self.S == 2:
            return best_list(*tables, distinct=distinct, mask=mask, top_k=top_k)
        if distinct or top_k is not None:
            raise ValueError(
                "distinct/top_k: only supported for pairwise dependence (S = 2)"
            )
        if mask is not None:
            m = np.asarray(mask)
            if m.shape != (self.K,) or m.dtype != bool:
                raise ValueError(
                    f"mask: expected a ({self.K},) bool array, got shape {m.shape} "
                    f"and dtype {m.dtype}"
                )
            if not m.any():
                raise ValueError("mask: every item is masked out; no list can be shown")
        return window_decode(tables, mask=mask)

    # ---------------------------------------------------------- a request's context
    def with_v0(self, v0) -> RankingEnv:
        """The same environment for a user whose last item is v0 (d,); jittable."""
        obj = jax.tree_util.tree_unflatten(
            jax.tree_util.tree_structure(self),
            [self.items, self.theta, self.w, jnp.asarray(v0, self.items.dtype)],
        )
        return obj

    def first_scores(self, v0):
        """(K,) expected reward of each item at position 1 for a user with v0 (d,)
        (pairwise dependence); with ``feedback="cascade"`` the decoder's score
        ``-log(1 - p_1)``."""
        self._need_pairwise("first_scores")
        z = (self.items + self.w[0] * v0) @ self.theta[0]
        p = self.links[0].mean(z)
        return _no_click_score(p) if self.feedback == "cascade" else p

    def to_go(self, mask=None):
        """The backward DP over positions 2..L (they do not depend on v0):
        :class:`bayesrank.decoding.backward.Backward` with ``to_go`` (K,) and pointers.
        ``pick(env.first_scores(v0), env.to_go(mask), mask)`` is the best list of
        the user with v0, in O(K + L) per user."""
        self._need_pairwise("to_go")
        m = jnp.ones(self.K, bool) if mask is None else jnp.asarray(mask)
        _, pairs = scores.pair_scores(
            self.theta, self.items, self.w.reshape(-1), self.v0, self.links
        )
        if self.feedback == "cascade":
            pairs = _no_click_score(pairs)
        return backward_dense(pairs, m)

    def _need_pairwise(self, name: str) -> None:
        if self.S != 2:
            raise ValueError(
                f"{name}: needs pairwise dependence (w of shape (L,)); with a window "
                "of S > 2 items v0 reaches beyond position 1"
            )

    @property
    def best_value(self):
        """Expected total reward of the best list (unconstrained), cached.

        Evaluated through :meth:`expected_reward` (the route :meth:`regret` uses), so
        the best list has a regret of exactly 0 rather than a rounding residue.
        """
        if self._best_value is not None:
            return self._best_value
        value = self.expected_reward(self.best()[0])
        if not isinstance(value, jax.core.Tracer):  # never cache a traced value
            self._best_value = value
        return value

    def regret(self, lists, best_value=None):
        """Pseudo-regret: best expected total reward minus that of each list."""
        bv = self.best_value if best_value is None else best_value
        return bv - self.expected_reward(lists)

    def __repr__(self) -> str:
        fb = "" if self.feedback == "full" else f", feedback={self.feedback!r}"
        return (
            f"RankingEnv(K={self.K}, L={self.L}, d={self.d}, S={self.S}, "
            f"link={self.link!r}, noise={self.noise!r}{fb})"
        )


#: What a user observes of a list: every position ("full"), or top-down up to the first
#: click ("cascade").
FEEDBACK = ("full", "cascade")


def _no_click_score(p):
    """``-log(1 - p)``, the decoder's score of a click probability under a cascade
    (P(no click) is the product of ``1 - p``); finite where p = 1 (the dtype's
    smallest normal number stands in for 0)."""
    p = jnp.asarray(p)
    return -jnp.log(jnp.maximum(1.0 - p, jnp.finfo(p.dtype).tiny))


# Compiled once per environment structure and list shape (eager op-by-op dispatch of
# these small computations costs far more than the arithmetic).
_position_means = jax.jit(RankingEnv._position_means)
_score_tables = jax.jit(RankingEnv._score_tables)
