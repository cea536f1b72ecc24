"""CascadeLinTS and CascadeLinUCB (Zong, Ni, Sung, Ke, Wen and Kveton 2016,
"Cascading bandits for large-scale recommendation problems", Algorithms 1 and 2).

One linear model of the attraction probability shared by all items, over their
vectors x_e (d,):

    M = I + sum x x^T,   B = sum x y        (over every observed position)
    theta_hat = M^{-1} B
    CascadeLinTS:  theta ~ N(theta_hat, sigma^2 M^{-1}),  score(e) = x_e^T theta
    CascadeLinUCB: score(e) = min(x_e^T theta_hat + alpha sqrt(x_e^T M^{-1} x_e), 1)

and the L items of largest score are shown, largest first. With the paper's variance
``sigma = 1`` (fixed here: the constructors take no sigma) the two parametrisations
coincide: the paper's ``M = I + sigma^-2 sum x x^T``, ``theta_bar = sigma^-2 M^-1 B``,
``theta ~ N(theta_bar, M^-1)``. ``alpha=None`` is ``c = 1`` (the constant used in
practice; the paper's theoretical c grows with the horizon, which a policy does not
know). The cap at 1 is the paper's (an attraction probability).

M is kept with its Cholesky factor (:mod:`bayesrank.posteriors.linalg`: rank-one
updates, triangular solves, draws from the precision), never inverted. The cascade
feedback is that of :mod:`~bayesrank.policies.click.cascade_klucb`: the positions up to and including the
first click, NaN positions excepted.

Example:
    >>> import jax, bayesrank as br
    >>> env = br.simulation.CascadeEnv.from_features(
    ...     jax.random.normal(jax.random.key(0), (10, 3)), jax.numpy.ones(3), L=3)
    >>> policy = br.CascadeLinUCB(env.items, L=3)
    >>> items = policy.select()
    >>> policy.update(items, env.sample(jax.random.key(1), items))
    >>> policy.theta_hat().shape
    (3,)
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from bayesrank._validate import check_real
from bayesrank.policies.click.base import (
    as_k_l,
    cascade_observed,
    ClickCore,
    ClickPolicy,
)
from bayesrank.policies.parts.keywords import keyword_only
from bayesrank.policies.runtime.checks import as_items_w_v0
from bayesrank.posteriors.linalg import (
    chol_solve,
    chol_update_many,
    mahalanobis_norms,
    sample_from_precision,
)

__all__ = ["CascadeLinTS", "CascadeLinUCB", "LinStats"]

#: The paper's variance sigma (Algorithm 1's input), fixed at 1.
SIGMA = 1.0
#: CascadeLinUCB's default constant c (``alpha=None``).
DEFAULT_ALPHA = 1.0


class LinStats(NamedTuple):
    """The shared linear model's statistics (the ``model`` of the state).

    Example:
        >>> import numpy as np, bayesrank as br
        >>> br.CascadeLinUCB(np.eye(3), L=2).state.model.b.tolist()
        [0.0, 0.0, 0.0]
    """

    prec: Any  # (d, d) M = I + sum x x^T
    chol: Any  # (d, d) its lower Cholesky factor
    b: Any  # (d,) B = sum x y
    n: Any  # () observed positions learnt from


class LinCore(ClickCore):
    """The functional core of CascadeLinTS (``alpha=None``) and CascadeLinUCB.

    Example:
        >>> import numpy as np, bayesrank as br
        >>> br.CascadeLinTS(np.eye(3), L=2).core.random
        True
    """

    def __init__(self, items, L, alpha=None):
        super().__init__(items, L)
        self.alpha = alpha
        self.random = alpha is None

    def init_model(self) -> LinStats:
        d = self.items0.shape[1]
        eye = jnp.eye(d, dtype=self.dtype)
        return LinStats(eye, eye, jnp.zeros(d, self.dtype), jnp.zeros((), self.dtype))

    def index(self, key, model, items):
        mean = chol_solve(model.chol, model.b)
        if self.random:
            theta = sample_from_precision(key, mean, model.chol, SIGMA)
            return items @ theta
        width = mahalanobis_norms(model.chol, items)
        return jnp.minimum(items @ mean + self.alpha * width, 1.0)

    def learn(self, model, items, lists, rewards):
        obs = cascade_observed(rewards)
        X = jnp.where(obs[:, None], items[lists], 0.0)  # unobserved rows: no update
        y = jnp.where(obs, rewards, 0.0)
        return LinStats(
            model.prec + X.T @ X,
            chol_update_many(model.chol, X),
            model.b + X.T @ y,
            model.n + jnp.sum(obs),
        )


class _LinPolicy(ClickPolicy):
    _array_args = ("items",)

    def _init_lin(self, items, L, alpha, seed) -> None:
        V, _, _, L = as_items_w_v0(items, L, None, None)
        K, L = as_k_l(V.shape[0], L)
        self._init_click(K, L, V, cascade=True)
        self._setup(LinCore(V, L, alpha), seed)

    def theta_hat(self) -> np.ndarray:
        """(d,) ``M^{-1} B``, the regularised least-squares estimate (the mean the
        Thompson draws are centred on)."""
        m = self.state.model
        return np.asarray(chol_solve(m.chol, m.b))

    def _inconsistent(self, model):
        return None  # M against its factor, symmetry: checked by the persistence


class CascadeLinTS(_LinPolicy):
    """CascadeLinTS (Zong et al. 2016): linear Thompson sampling over item vectors.

    Args:
        items: (K, d) item vectors.
        L: list length (L <= K; distinct items).
        seed: the seed of the draws (round t draws with ``fold_in(key(seed), t)``).

    Example:
        >>> import jax, bayesrank as br
        >>> V = jax.random.normal(jax.random.key(0), (10, 3))
        >>> env = br.simulation.CascadeEnv.from_features(V, jax.numpy.ones(3), L=3)
        >>> policy = br.CascadeLinTS(env.items, L=3, seed=0)
        >>> items = policy.select()
        >>> policy.update(items, env.sample(jax.random.key(1), items))
        >>> items.shape
        (3,)
    """

    @keyword_only("items", "L")
    def __init__(self, items, *, L, seed: int = 0):
        self._init_lin(items, L, None, seed)

    @classmethod
    def _rebuild(cls, cfg, args, seed):
        return cls(args["items"], L=cfg["L"], seed=seed)


class CascadeLinUCB(_LinPolicy):
    """CascadeLinUCB (Zong et al. 2016): an optimistic linear index over item vectors.

    Args:
        items: (K, d) item vectors.
        L: list length (L <= K; distinct items).
        alpha: the width's constant c > 0; None: 1.0 (see the module docstring).

    Example:
        >>> import numpy as np, bayesrank as br
        >>> policy = br.CascadeLinUCB(np.eye(4), L=2, alpha=0.5)
        >>> policy.select().tolist()                 # equal scores: lower index first
        [0, 1]
    """

    @keyword_only("items", "L")
    def __init__(self, items, *, L, alpha: float | None = None):
        a = DEFAULT_ALPHA if alpha is None else check_real(alpha, "alpha", low=0)
        if a <= 0:
            raise ValueError(f"alpha: expected a positive number, got {alpha!r}")
        self.alpha = float(a)
        self._init_lin(items, L, self.alpha, 0)

    def _config(self) -> dict:
        return {**super()._config(), "alpha": self.alpha}

    @classmethod
    def _rebuild(cls, cfg, args, seed):
        return cls(args["items"], L=cfg["L"], alpha=cfg["alpha"])
