"""Logging policies with exact propensities, and :func:`collect` to make a log.

A logger has ``K``, ``L``, ``sample(rng, v0s) -> (n, L)`` lists and
``propensities(lists, v0s) -> dict`` of the four pscore arrays of
:mod:`bayesrank.ope` (``pscore_list`` (n,), the others (n, L)).

Every logger here draws each position's item independently given the context
(repeats allowed, as the paper's lists may repeat items): that is what makes all four
propensities exact in closed form. A Plackett-Luce logger (sampling without
replacement) is not provided: its list and prefix probabilities are closed-form, but
its per-position and pair marginals need a sum over all preceding prefixes.
"""

from __future__ import annotations

import jax
import numpy as np
import xarray as xr

from bayesrank._validate import (
    check_array,
    check_int,
    check_lists,
    check_real,
    check_seed,
)
from bayesrank.ope.log import as_log

__all__ = ["EpsilonGreedyLogger", "SoftmaxLogger", "UniformLogger", "collect",
           "env_feedback"]


def _valid_v0s(v0s, n: int | None = None) -> np.ndarray:
    """v0s as a finite (n, d) float array (n rows when ``n`` is given)."""
    arr = check_array(v0s, "v0s", ndim=2)
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"v0s: expected {n} rows (one per list), got shape {arr.shape}")
    return arr


def _valid_shown(lists, K: int, L: int) -> np.ndarray:
    """The shown lists as an int (n, L) array of item indices in [0, K)."""
    arr = np.asarray(lists)
    if arr.ndim != 2:
        raise ValueError(f"lists: expected shape (n, L) with L={L}, got {arr.shape}")
    check_lists(arr, K, L, "lists")
    return arr


def _uniform_pscores(n: int, K: int, L: int) -> dict:
    """Exact propensities of any list under the uniform logger."""
    pos = np.full((n, L), 1.0 / K)
    pair = np.full((n, L), 1.0 / K**2)
    pair[:, 0] = 1.0 / K
    cascade = np.broadcast_to(float(K) ** -np.arange(1, L + 1), (n, L)).copy()
    return {
        "pscore_list": cascade[:, -1].copy(),
        "pscore_position": pos,
        "pscore_pair": pair,
        "pscore_cascade": cascade,
    }


class UniformLogger:
    """Each position shows one of the K items uniformly, independently (repeats
    allowed): every list has probability 1/K^L.

    Args:
        K: the number of items.
        L: the list length.

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import UniformLogger
        >>> logger = UniformLogger(K=4, L=2)
        >>> logger.sample(np.random.default_rng(0), np.zeros((3, 5))).shape
        (3, 2)
        >>> logger.propensities(np.array([[0, 3]]))["pscore_pair"]
        array([[0.25  , 0.0625]])
    """

    def __init__(self, K: int, L: int):
        self.K = check_int(K, "K", low=1)
        self.L = check_int(L, "L", low=1)

    def sample(self, rng: np.random.Generator, v0s) -> np.ndarray:
        """(n, L) int lists for the n requests with contexts v0s (n, d)."""
        n = _valid_v0s(v0s).shape[0]
        return rng.integers(0, self.K, size=(n, self.L))

    def propensities(self, lists, v0s=None) -> dict:
        """The exact pscore arrays of the shown lists (n, L) (items in [0, K));
        v0s (n, d), when given, is checked and otherwise unused."""
        n = _valid_shown(lists, self.K, self.L).shape[0]
        if v0s is not None:
            _valid_v0s(v0s, n)
        return _uniform_pscores(n, self.K, self.L)

    def __repr__(self) -> str:
        return f"UniformLogger(K={self.K}, L={self.L})"


class EpsilonGreedyLogger:
    """With probability 1 - epsilon the deterministic list ``policy_lists_fn(v0)``,
    else a uniform list (:class:`UniformLogger`).

    Propensities are exact mixtures: for the shown list a and base list b,
    P(position l) = (1-eps)[a^l = b^l] + eps/K, P(pair at l) =
    (1-eps)[a^{l-1} = b^{l-1}, a^l = b^l] + eps/K^2, P(prefix to l) =
    (1-eps)[a^{1..l} = b^{1..l}] + eps/K^l, P(list) = P(prefix to L).

    Args:
        policy_lists_fn: v0 (d,) -> (L,) int list; called once per distinct v0.
        K: the number of items.
        L: the list length.
        epsilon: the exploration probability in [0, 1].

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import EpsilonGreedyLogger
        >>> logger = EpsilonGreedyLogger(lambda v0: np.array([1, 0]), K=2, L=2, epsilon=0.5)
        >>> logger.propensities(np.array([[1, 0]]), np.zeros((1, 3)))["pscore_list"]
        array([0.625])
    """

    def __init__(self, policy_lists_fn, K: int, L: int, epsilon: float):
        if not callable(policy_lists_fn):
            raise TypeError("policy_lists_fn: expected a callable v0 -> (L,) list")
        self.policy_lists_fn = policy_lists_fn
        self.K = check_int(K, "K", low=1)
        self.L = check_int(L, "L", low=1)
        self.epsilon = check_real(epsilon, "epsilon", low=0, high=1)

    def base_lists(self, v0s) -> np.ndarray:
        """(n, L) the deterministic list of each request (one call per distinct v0)."""
        v0s = np.asarray(v0s, float)
        uniq, inv = np.unique(v0s, axis=0, return_inverse=True)
        base = np.stack([np.asarray(self.policy_lists_fn(u)).reshape(-1) for u in uniq])
        if base.shape[1] != self.L or base.dtype.kind not in "iu":
            raise ValueError(
                f"policy_lists_fn: expected an ({self.L},) int list, got shape "
                f"{base.shape[1:]} and dtype {base.dtype}"
            )
        if base.min() < 0 or base.max() >= self.K:
            raise ValueError(f"policy_lists_fn: item indices must lie in [0, {self.K})")
        return base[inv.reshape(-1)]

    def sample(self, rng: np.random.Generator, v0s) -> np.ndarray:
        """(n, L) int lists for the n requests with contexts v0s (n, d)."""
        base = self.base_lists(_valid_v0s(v0s))
        explore = rng.random(base.shape[0]) < self.epsilon
        uniform = rng.integers(0, self.K, size=base.shape)
        return np.where(explore[:, None], uniform, base)

    def propensities(self, lists, v0s) -> dict:
        """The exact pscore arrays of the shown lists (n, L) (items in [0, K)) in
        contexts v0s (n, d)."""
        lists = _valid_shown(lists, self.K, self.L)
        base = self.base_lists(_valid_v0s(v0s, lists.shape[0]))
        eps, K = self.epsilon, self.K
        u = _uniform_pscores(lists.shape[0], K, self.L)
        same = lists == base
        same_pair = same.copy()
        same_pair[:, 1:] &= same[:, :-1]
        same_prefix = np.logical_and.accumulate(same, axis=1)
        cascade = (1 - eps) * same_prefix + eps * u["pscore_cascade"]
        return {
            "pscore_list": cascade[:, -1].copy(),
            "pscore_position": (1 - eps) * same + eps * u["pscore_position"],
            "pscore_pair": (1 - eps) * same_pair + eps * u["pscore_pair"],
            "pscore_cascade": cascade,
        }

    def __repr__(self) -> str:
        return f"EpsilonGreedyLogger(K={self.K}, L={self.L}, epsilon={self.epsilon})"


def _valid_scores(s, K, L, name: str) -> np.ndarray:
    arr = check_array(s, name, finite=None)
    want = (L, K) if K is not None else arr.shape
    if arr.ndim != 2 or arr.shape != want or arr.size == 0:
        raise ValueError(f"{name}: expected shape {want if K is not None else '(L, K)'}, "
                         f"got {arr.shape}")
    if np.isnan(arr).any() or (arr == np.inf).any():
        raise ValueError(f"{name}: expected finite scores (or -inf: never shown), found "
                         "NaN or +inf")
    if not np.isfinite(arr).any(axis=1).all():
        raise ValueError(f"{name}: every position needs at least one finite score")
    return arr


class SoftmaxLogger:
    """Independent per-position softmax: position l shows item k with probability
    softmax(scores[l] / temperature)[k], independently of the other positions
    (repeats allowed, the paper's default).

    The propensities are exact in closed form: with p_l the softmax of position l,
    P(a^l at l) = p_l(a^l), P(pair at l) = p_{l-1}(a^{l-1}) p_l(a^l) (p_1(a^1) at
    l = 1), P(prefix to l) = prod_{j <= l} p_j(a^j), P(list) = P(prefix to L). A
    score of -inf means the item is never shown at that position.

    Args:
        scores: (L, K) scores, or a callable v0 (d,) -> (L, K) (called once per
            distinct v0).
        temperature: > 0; large: near uniform, small: near the argmax per position.
        K: the number of items (needed with a callable; checked against an array).
        L: the list length (as K).

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import SoftmaxLogger
        >>> logger = SoftmaxLogger(np.log([[1.0, 3.0], [1.0, 1.0]]))
        >>> logger.propensities(np.array([[1, 0]]), np.zeros((1, 2)))["pscore_list"]
        array([0.375])
    """

    def __init__(self, scores, temperature=1.0, *, K=None, L=None):
        K = None if K is None else check_int(K, "K", low=1)
        L = None if L is None else check_int(L, "L", low=1)
        self.temperature = check_real(temperature, "temperature", low=0, inclusive="neither")
        if callable(scores):
            if K is None or L is None:
                raise ValueError("K, L: both are needed when scores is a callable")
            self.scores_fn, self.scores = scores, None
        else:
            arr = _valid_scores(scores, None, None, "scores")
            for name, given, got in (("L", L, arr.shape[0]), ("K", K, arr.shape[1])):
                if given is not None and given != got:
                    raise ValueError(f"{name}: {given} does not match scores' shape {arr.shape}")
            L, K = arr.shape
            self.scores_fn, self.scores = None, arr
        self.K, self.L = K, L

    def probabilities(self, v0s):
        """Per distinct context: ``(p (G, L, K), inverse (n,))``, p[g, l] the
        softmax of position l in context group g."""
        v0s = np.asarray(v0s, float).reshape(np.shape(v0s)[0], -1)
        if self.scores is not None:
            s = self.scores[None]
            inv = np.zeros(v0s.shape[0], np.int64)
        else:
            uniq, inv = np.unique(v0s, axis=0, return_inverse=True)
            s = np.stack([_valid_scores(self.scores_fn(u), self.K, self.L, "scores")
                          for u in uniq])  # one call per distinct context
        z = s / self.temperature
        z = np.exp(z - z.max(axis=-1, keepdims=True))
        return z / z.sum(axis=-1, keepdims=True), inv.reshape(-1)

    def sample(self, rng: np.random.Generator, v0s) -> np.ndarray:
        """(n, L) int lists for the n requests with contexts v0s (n, d)."""
        p, inv = self.probabilities(_valid_v0s(v0s))
        cdf = np.cumsum(p, axis=-1)
        cdf[..., -1] = 1.0
        rows = np.arange(cdf.shape[0] * self.L).reshape(-1, self.L)  # (G, L) row ids
        flat = (cdf + rows[..., None]).ravel()  # increasing: row r lives in [r, r + 1]
        r = rows[inv]  # (n, L)
        u = rng.random(r.shape)
        return np.searchsorted(flat, r + u, side="right") - r * self.K

    def propensities(self, lists, v0s) -> dict:
        """The exact pscore arrays of the shown lists (n, L) (items in [0, K)) in
        contexts v0s (n, d)."""
        lists = _valid_shown(lists, self.K, self.L)
        p, inv = self.probabilities(_valid_v0s(v0s, lists.shape[0]))
        pos = p[inv[:, None], np.arange(self.L)[None, :], lists]  # (n, L)
        pair = pos.copy()
        pair[:, 1:] *= pos[:, :-1]
        cascade = np.cumprod(pos, axis=1)
        return {
            "pscore_list": cascade[:, -1].copy(),
            "pscore_position": pos,
            "pscore_pair": pair,
            "pscore_cascade": cascade,
        }

    def __repr__(self) -> str:
        return f"SoftmaxLogger(K={self.K}, L={self.L}, temperature={self.temperature})"


def collect(env, logger, n: int, *, seed: int = 0) -> xr.Dataset:
    """A log of n rounds of ``logger`` in ``env``, with exact propensities.

    Every round's context is ``env.v0``; rewards are drawn with ``env.sample``.

    Args:
        env: a :class:`bayesrank.RankingEnv` (K, L, d, v0, sample).
        logger: e.g. :class:`UniformLogger` or :class:`EpsilonGreedyLogger`.
        n: the number of rounds.
        seed: seeds both the logger's choices (NumPy) and the rewards (JAX).

    Returns:
        The log Dataset of :mod:`bayesrank.ope`, with every pscore variable and the
        env's item vectors (``items``).

    Examples:
        >>> import bayesrank as br
        >>> env = br.RankingEnv.paper(seed=0, K=5, L=2, d=3)
        >>> log = br.ope.collect(env, br.ope.UniformLogger(5, 2), 100, seed=0)
        >>> dict(log.sizes), float(log.pscore_list[0])
        ({'round': 100, 'position': 2, 'dim': 3, 'item': 5}, 0.04)
    """
    n = check_int(n, "n", low=1)
    seed = check_seed(seed)
    if logger.K != env.K or logger.L != env.L:
        raise ValueError(
            f"logger: K={logger.K}, L={logger.L} do not match the env's "
            f"K={env.K}, L={env.L}"
        )
    v0s = np.broadcast_to(np.asarray(env.v0, float), (n, env.d))
    rng = np.random.default_rng(seed)
    lists = np.asarray(logger.sample(rng, v0s), np.int64)
    rewards = np.asarray(env.sample(jax.random.key(seed), lists), float)
    return as_log(lists, rewards, v0s, **logger.propensities(lists, v0s), K=env.K,
                  items=np.asarray(env.items, float), **env_feedback(env, rewards))


def env_feedback(env, rewards) -> dict:
    """``{"examined", "feedback"}`` of rewards drawn from ``env`` (read from its
    attributes; :mod:`bayesrank.ope` does not import the environments): an env with a
    ``feedback`` attribute (:class:`~bayesrank.RankingEnv`) declares it; a click
    model with an ``examination`` (the PBM) is ``"pbm"`` (examination latent);
    another click model (one with an ``attraction``: the cascade, DCM, DBN) is
    ``"cascade"``, with the mask of the positions its draws observed; full feedback
    stores nothing (the log as before: every reward observed).

    Example:
        >>> import numpy as np
        >>> from bayesrank.simulation import CascadeEnv
        >>> fb = env_feedback(CascadeEnv(np.array([0.5, 0.5]), L=2),
        ...                   np.array([[1.0, np.nan]]))
        >>> fb["examined"].tolist(), fb["feedback"]
        ([[True, False]], 'cascade')
    """
    rewards = np.asarray(rewards, float)
    declared = getattr(env, "feedback", None)
    if isinstance(declared, str):
        kind = declared
    elif hasattr(env, "examination"):
        kind = "pbm"
    elif hasattr(env, "attraction"):
        kind = "cascade"
    else:
        kind = "full"
    if kind == "pbm":
        return {"feedback": "pbm"}
    if kind == "cascade":
        return {"examined": ~np.isnan(rewards), "feedback": "cascade"}
    return {}  # full feedback: the log as before (no mask, every reward observed)
