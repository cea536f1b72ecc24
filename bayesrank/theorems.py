"""The paper's regret bounds, as functions of the horizon T and the instance constants.

Every bound is vectorised over ``T`` (any array of horizons), so a tightness plot is
``bound(np.arange(1, T + 1), **constants)`` next to the measured cumulative regret.

* :func:`rank_ucb_bound` - Theorem 1 (RankUCB, known w);
* :func:`gen_rank_ucb_bound` - Theorem 2 (genRankUCB, w learned, Appendix B);
* :func:`rank_ts_bound` - the RankTS theorem (Appendix C, Bayesian regret);
* :func:`win_rank_ucb_bound` - winRankUCB (Appendix E, a window of S-1 items).

The UCB bounds contain ``beta_T``, which depends on the data through
``log(det V_T / lam^d)``. Pass the measured value as ``logdet_ratio`` (the maximum over
positions, one value per horizon) for a data-dependent bound; leave it out to use the
deterministic bound of the elliptical potential lemma (Lemma 2, AM-GM on the
eigenvalues): ``log(det V_T / lam^d) <= d log(1 + T M^2 / (d lam))`` with ``M`` the
bound on the feature norms. Then ``beta_T`` grows like ``d log T`` and every bound here
is ``O~(L d sqrt(T))``, linear in ``d`` at fixed ``T`` up to logs, not the
``O~(L sqrt(dT))`` the paper's text states (docs/background/model.md, "Theorem 1's
rate: what the code computes").

:func:`lemma1_width` is Lemma 1's confidence radius, which the UCB policies add to
their estimate at run time (this module sits below the policies, beside the model);
:func:`~bayesrank.model.links.link_constants` lives with the links and is re-exported
here, since the bounds are stated through it.

Example:
    >>> import numpy as np, bayesrank as br
    >>> from bayesrank import theorems
    >>> env = br.RankingEnv.paper(seed=0, K=10, L=4, d=10, w_max=10.0)
    >>> c = theorems.instance_constants(env)
    >>> b = theorems.rank_ucb_bound(np.arange(1, 1001), L=c["L"], d=c["d"], lam=1.0,
    ...                           delta=0.1, m1=c["m1"], m2=c["m2"], w_max=c["w_max"])
    >>> b.shape
    (1000,)
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from bayesrank._validate import check_int, check_real
from bayesrank.model.links import link_constants

__all__ = [
    "active_w",
    "gen_rank_ucb_bound",
    "instance_constants",
    "lemma1_width",
    "link_constants",
    "logdet_ratio_bound",
    "rank_ts_bound",
    "rank_ucb_bound",
    "w_max_realised",
    "win_rank_ucb_bound",
]


def _horizon(T, *, min_T: float = 0.0) -> np.ndarray:
    try:
        t = np.asarray(T, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(
            f"T: expected a number or an array of horizons, got {T!r}"
        ) from None
    if not np.all(np.isfinite(t)) or np.any(t < min_T):
        raise ValueError(f"T: expected finite horizons >= {min_T:g}")
    return t


def _ratio(logdet_ratio, t: np.ndarray, default: np.ndarray) -> np.ndarray:
    if logdet_ratio is None:
        return default
    r = np.asarray(logdet_ratio, dtype=float)
    if not np.all(np.isfinite(r)) or np.any(r < 0):
        raise ValueError(
            "logdet_ratio: expected finite values >= 0 (log det V_T/lam^d)"
        )
    try:
        np.broadcast_shapes(r.shape, t.shape)
    except ValueError:
        raise ValueError(
            f"logdet_ratio: shape {r.shape} does not broadcast with T's shape {t.shape}"
        ) from None
    return r


# ------------------------------------------------------------------ Lemma 1
def lemma1_width(logdet_ratio, *, lam, delta, m2):
    """Lemma 1's confidence radius, jittable.

    ``sqrt(beta_t) = sqrt(lam) m2 + sqrt(2 log(1/delta) + log(det V_t / lam^d))``.

    Args:
        logdet_ratio: (...) ``log det V_t - d log lam`` (>= 0).
        lam: the ridge parameter (a number, or an array broadcasting with
            ``logdet_ratio``: one per position); delta: the confidence level in (0, 1);
        m2: a bound on the parameter norm ``||theta||_2``.

    Returns:
        (...) the radius of the confidence ellipsoid in the ``V_t`` norm.

    Example:
        >>> import math
        >>> r = lemma1_width(0.0, lam=1.0, delta=0.1, m2=1.0)  # 1 + sqrt(2 log 10)
        >>> round(float(r), 4), round(1 + math.sqrt(2 * math.log(10)), 4)
        (3.146, 3.146)
    """
    r = jnp.maximum(jnp.asarray(logdet_ratio), 0.0)
    root = math.sqrt(lam) if isinstance(lam, (int, float)) else jnp.sqrt(lam)
    return root * m2 + jnp.sqrt(2.0 * math.log(1.0 / delta) + r)


def logdet_ratio_bound(T, *, d: int, lam: float, M: float) -> np.ndarray:
    """Deterministic bound ``log(det V_T / lam^d) <= d log(1 + T M^2 / (d lam))``.

    Args:
        T: horizons (any shape); d: dimension of V; lam: ridge parameter;
        M: bound on the norm of every feature vector added to V.

    Example:
        >>> import numpy as np
        >>> from bayesrank.theorems import logdet_ratio_bound
        >>> np.round(logdet_ratio_bound(np.array([0, 10]), d=2, lam=1.0, M=1.0), 4)
        array([0.    , 3.5835])
    """
    t = _horizon(T)
    d = check_int(d, "d", low=1)
    lam = check_real(lam, "lam", low=0, inclusive="neither")
    M = check_real(M, "M", low=0)
    return d * np.log1p(t * M**2 / (d * lam))


def _ucb_args(T, L, d, lam, delta, c1, c2):
    """The checks shared by the UCB bounds: (t, L, d, lam, delta, c1, c2)."""
    t = _horizon(T)
    L, d = check_int(L, "L", low=1), check_int(d, "d", low=1)
    lam, delta = check_real(lam, "lam", low=0, inclusive="neither"), check_real(delta, "delta", low=0, high=1, inclusive="neither")
    c1, c2 = check_real(c1, "c1", low=0, inclusive="neither"), check_real(c2, "c2", low=0, inclusive="neither")
    return t, L, d, lam, delta, c1, c2


def _ucb_bound(t, L, d, c1, c2, beta_sqrt, log_term, coef):
    """coef * (c2/c1) * L * sqrt(d T beta_T log_term)."""
    return coef * (c2 / c1) * L * np.sqrt(d * t * beta_sqrt**2 * log_term)


# ------------------------------------------------------------------------ Theorem 1
def rank_ucb_bound(
    T,
    *,
    L: int,
    d: int,
    lam: float,
    delta: float,
    m1: float,
    m2: float,
    w_max: float,
    c1: float = 1.0,
    c2: float = 1.0,
    logdet_ratio=None,
) -> np.ndarray:
    """Theorem 1: the regret of RankUCB (probability >= 1 - delta).

    ``R_T <= 2 sqrt(2) (c2/c1) L sqrt(d T beta_T log(1 + T ((1 + w_max) m1)^2
    / (d lam)))``
    with ``sqrt(beta_T) = sqrt(lam) m2 + sqrt(2 log(1/delta) + log(det V_T/lam^d))``.

    With the default log-det bound ``d log(1 + T M^2/(d lam))``, ``beta_T = O(d log T)``
    and the computed bound is ``O~(L d sqrt(T))``: linear in ``d`` at fixed ``T`` (up to
    logs), not the paper's stated ``O~(L sqrt(dT))`` (docs/background/model.md,
    "Theorem 1's rate: what the code computes").

    Args:
        T: horizons (any shape, >= 0).
        L, d: list length and dimension.
        lam, delta: the ridge parameter and the confidence level.
        m1: bound on ``||v_i||`` (items and v0); m2: bound on ``||theta^l||``;
        w_max: ``max_l |w_l|``.
        c1, c2: the link's derivative bounds (1 for the identity link); see
            :func:`link_constants`.
        logdet_ratio: measured ``max_l log(det V_T^l / lam^d)`` broadcastable with
            T; by default its deterministic bound (Lemma 2).

    Returns:
        The bound, with T's shape.

    Example:
        >>> import numpy as np
        >>> from bayesrank.theorems import rank_ucb_bound
        >>> b = rank_ucb_bound(np.array([100, 400]), L=4, d=10, lam=1.0, delta=0.1,
        ...                    m1=1.0, m2=1.0, w_max=1.0)
        >>> b.shape, bool(b[1] / b[0] < 4)          # sublinear: about sqrt(T) log T
        ((2,), True)
    """
    t, L, d, lam, delta, c1, c2 = _ucb_args(T, L, d, lam, delta, c1, c2)
    m1, m2 = check_real(m1, "m1", low=0), check_real(m2, "m2", low=0)
    w_max = check_real(w_max, "w_max", low=0)
    M = (1.0 + w_max) * m1
    log_term = np.log1p(t * M**2 / (d * lam))
    r = _ratio(logdet_ratio, t, d * log_term)
    beta_sqrt = np.asarray(lemma1_width(r, lam=lam, delta=delta, m2=m2))
    return _ucb_bound(t, L, d, c1, c2, beta_sqrt, log_term, 2.0 * math.sqrt(2.0))


# ------------------------------------------------------------------------ Theorem 2
def gen_rank_ucb_bound(
    T,
    *,
    L: int,
    d: int,
    lam: float,
    delta: float,
    m2: float,
    m3: float,
    c1: float = 1.0,
    c2: float = 1.0,
    m1: float | None = None,
    logdet_ratio=None,
) -> np.ndarray:
    """Theorem 2: the regret of genRankUCB (w learned; probability >= 1 - delta).

    As printed in the paper:
    ``R_T <= 4 (c2/c1) L sqrt(d T beta_T log(1 + 2 T m2^2 / (d lam)))`` with
    ``sqrt(beta_T) = sqrt(lam) m2 sqrt(1 + m3^2)
    + sqrt(2 log(1/delta) + log(det V~_T / lam^(2d)))``, V~ being 2d x 2d.

    The proof takes ``M = 2 m2`` as the bound on the features ``(v_j, v_i)``, whose
    norm is in fact at most ``sqrt(2) m1``. Pass ``m1`` to use that corrected feature
    bound, which turns the log term into ``log(1 + T m1^2 / (d lam))``; leave it out
    for the bound as printed.

    Args:
        T: horizons; L, d: list length and item dimension (the model has 2d).
        lam, delta: ridge parameter and confidence level.
        m2: bound on ``||theta^l||``; m3: bound on ``|w_l|``.
        c1, c2: the link's derivative bounds.
        m1: bound on ``||v_i||`` (optional, see above).
        logdet_ratio: measured ``max_l log(det V~_T^l / lam^(2d))``; by default
            its deterministic bound.

    Example:
        >>> import numpy as np
        >>> from bayesrank.theorems import gen_rank_ucb_bound
        >>> printed = gen_rank_ucb_bound(np.array([1000]), L=4, d=10, lam=1.0,
        ...                              delta=0.1, m2=1.0, m3=10.0)
        >>> corrected = gen_rank_ucb_bound(np.array([1000]), L=4, d=10, lam=1.0,
        ...                                delta=0.1, m2=1.0, m3=10.0, m1=1.0)
        >>> bool(corrected[0] < printed[0])         # sqrt(2) m1 < 2 m2 here
        True
    """
    t, L, d, lam, delta, c1, c2 = _ucb_args(T, L, d, lam, delta, c1, c2)
    m2, m3 = check_real(m2, "m2", low=0), check_real(m3, "m3", low=0)
    if m1 is None:
        M = 2.0 * m2
    else:
        M = math.sqrt(2.0) * check_real(m1, "m1", low=0)
    log_term = np.log1p(t * M**2 / (2 * d * lam))
    r = _ratio(logdet_ratio, t, 2 * d * log_term)
    beta_sqrt = np.asarray(
        lemma1_width(r, lam=lam, delta=delta, m2=m2 * math.sqrt(1.0 + m3**2))
    )
    # 4 sqrt(d ...) log(1 + T M^2/(2 d lam)) = the printed form for M = 2 m2.
    return _ucb_bound(t, L, d, c1, c2, beta_sqrt, log_term, 4.0)


# ------------------------------------------------------------------- RankTS theorem
def rank_ts_bound(
    T, *, L: int, d: int, m1: float, m2: float, w_max: float
) -> np.ndarray:
    """The RankTS theorem (Appendix C): a bound on the Bayesian regret.

    ``R_T <= 2 L (1 + sqrt(2 T d beta^2 log(1 + T ((1 + w_max) m1)^2 / (d lam))))``
    with ``beta = 1 + sqrt(4 log T + d log(1 + T ((1 + w_max) m1)^2 / (d lam)))`` and
    ``lam = 1/m2^2`` (the proof's choice; the prior bounds ``||theta^l|| <= m2``).

    Args:
        T: horizons (>= 1); L, d: list length and dimension;
        m1: bound on ``||v_i||``; m2: bound on ``||theta^l||`` (> 0);
        w_max: ``max_l |w_l|``.

    Example:
        >>> import numpy as np
        >>> from bayesrank.theorems import rank_ts_bound
        >>> b = rank_ts_bound(np.arange(1, 1001), L=4, d=10, m1=1.0, m2=1.0, w_max=1.0)
        >>> b.shape, bool(np.all(np.diff(b) > 0))
        ((1000,), True)
    """
    t = _horizon(T, min_T=1.0)
    L, d = check_int(L, "L", low=1), check_int(d, "d", low=1)
    m1, m2 = check_real(m1, "m1", low=0), check_real(m2, "m2", low=0, inclusive="neither")
    w_max = check_real(w_max, "w_max", low=0)
    lam = 1.0 / m2**2
    log_term = np.log1p(t * ((1.0 + w_max) * m1) ** 2 / (d * lam))
    beta = 1.0 + np.sqrt(4.0 * np.log(t) + d * log_term)
    return 2.0 * L * (1.0 + np.sqrt(2.0 * t * d * beta**2 * log_term))


# -------------------------------------------------------------------- winRankUCB
def win_rank_ucb_bound(
    T,
    *,
    L: int,
    d: int,
    lam: float,
    delta: float,
    m1: float,
    m2: float,
    w_sum_max: float,
    c1: float = 1.0,
    c2: float = 1.0,
    logdet_ratio=None,
) -> np.ndarray:
    """winRankUCB (Appendix E): Theorem 1 with ``max_l sum_i |w_{l,i}|`` for w_max.

    ``R_T <= 2 sqrt(2) (c2/c1) L sqrt(d T beta_T log(1 + T ((1 + w_sum_max) m1)^2
    / (d lam)))``.

    Args:
        w_sum_max: ``max_l sum_{i=1}^{S-1} |w_{l,i}|``; the rest as in
            :func:`rank_ucb_bound`.

    Example:
        With one previous item (S = 2) it is Theorem 1:

        >>> import numpy as np
        >>> from bayesrank.theorems import rank_ucb_bound, win_rank_ucb_bound
        >>> kw = dict(L=4, d=10, lam=1.0, delta=0.1, m1=1.0, m2=1.0)
        >>> bool(np.allclose(win_rank_ucb_bound(100, w_sum_max=2.0, **kw),
        ...                  rank_ucb_bound(100, w_max=2.0, **kw)))
        True
    """
    return rank_ucb_bound(
        T,
        L=L,
        d=d,
        lam=lam,
        delta=delta,
        m1=m1,
        m2=m2,
        w_max=w_sum_max,
        c1=c1,
        c2=c2,
        logdet_ratio=logdet_ratio,
    )


def active_w(env) -> np.ndarray:
    """The dependency weights that act on the rewards, as an (L', S-1) array.

    ``w_1`` multiplies ``v0``: when ``v0 = 0`` (the paper's setting) it has no effect on
    any reward and is left out, so the result holds the rows of positions 2..L; with a
    non-zero ``v0`` every row counts.

    Example:
        >>> import numpy as np, bayesrank as br
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4, d=10, w_max=10.0)
        >>> np.array_equal(active_w(env), np.asarray(env.W)[1:])
        True
    """
    W = np.asarray(env.W, dtype=float)
    if np.any(np.asarray(env.v0) != 0):
        return W
    return W[1:]


def w_max_realised(env) -> float:
    """``max |w_l|`` over the weights that act (positions 2..L when ``v0 = 0``).

    The paper's generator draws ``w_l ~ Uniform(-w_max, w_max)``; this is the largest
    magnitude actually drawn, which can be far below the sampling range ``w_max``.

    Example:
        >>> import numpy as np, bayesrank as br
        >>> from bayesrank.theorems import w_max_realised
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4, d=10, w_max=10.0)
        >>> w_max_realised(env) == float(np.abs(np.asarray(env.w)[1:]).max()) <= 10.0
        True
    """
    W = active_w(env)
    return float(np.abs(W).max()) if W.size else 0.0


def instance_constants(env) -> dict:
    """The constants the bounds need, read off a :class:`bayesrank.RankingEnv`.

    ``w_1`` is not counted when ``v0 = 0``: it multiplies ``v0`` and has no effect
    (see :func:`active_w`), so ``w_max``, ``m3`` and ``w_sum_max`` are over positions
    2..L in the paper's setting.

    Returns:
        dict with ``L``, ``d``, ``m1`` (max norm of the items and v0), ``m2`` (max
        ``||theta^l||``), ``w_max`` and ``m3`` (max ``|w|`` over the acting weights),
        ``w_sum_max`` (``max_l sum_i |w_{l,i}|`` over them), and ``c1``, ``c2`` from
        :func:`link_constants` at ``z_max = m2 (1 + w_sum_max) m1`` (the first
        position's link).

    Example:
        >>> import bayesrank as br
        >>> from bayesrank.theorems import instance_constants
        >>> c = instance_constants(br.RankingEnv.paper(seed=0, K=10, L=4, d=10))
        >>> c["L"], c["d"], c["c1"], c["c2"]                  # identity link
        (4, 10, 1.0, 1.0)
    """
    items = np.asarray(env.items)
    W = active_w(env)
    m1 = float(max(np.linalg.norm(items, axis=1).max(), np.linalg.norm(env.v0)))
    m2 = float(np.linalg.norm(np.asarray(env.theta), axis=1).max())
    w_max = w_max_realised(env)
    w_sum_max = float(np.abs(W).sum(axis=1).max()) if W.size else 0.0
    c1, c2 = link_constants(env.links[0], m2 * (1.0 + w_sum_max) * m1)
    return {
        "L": int(env.L),
        "d": int(env.d),
        "m1": m1,
        "m2": m2,
        "w_max": w_max,
        "m3": w_max,
        "w_sum_max": w_sum_max,
        "c1": c1,
        "c2": c2,
    }
