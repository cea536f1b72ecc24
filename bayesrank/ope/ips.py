"""The array estimators of a target ranking policy's value: the IPS family and
``pair_dr``, each a function of arrays (no log, no policy).

The generic estimators take arrays: rewards (n, L), the target's probabilities of
the logged list's events and the logger's (the pscore variables of the log). Each
event model gives one inverse-propensity (IPS) estimator:

==============  ===================================  ==================================
estimator       weight of r^l                        unbiased when
==============  ===================================  ==================================
list_ips        pi(list) / p(list), every l          always (given support)
position_ips    pi(a^l at l) / p(a^l at l)           r^l depends on a^l only (w = 0)
cascade_ips     pi(a^1..a^l) / p(a^1..a^l)           r^l depends on the prefix
pair_ips        pi(a^{l-1}, a^l) / p(a^{l-1}, a^l)   r^l depends on (a^{l-1}, a^l)
==============  ===================================  ==================================

(at l = 0, pair_ips uses the marginal of a^1.) The reward model of
:class:`bayesrank.RankingEnv` is pairwise, so pair_ips is unbiased there with far
smaller weights than list_ips; position_ips is biased when w != 0.

Three more use a reward model fitted on the log (:func:`fit_reward_model`):
``dm``, the direct method, ``pair_dr``, pair IPS with the model as control
variate, and ``cascade_dr``, cascade IPS with the model's expected rewards from
each position on as control variate (Kiyohara et al., WSDM 2022): doubly robust,
unbiased when the propensities are exact whatever the model's error; lower
variance when the model is good.

NaN rewards (positions not observed) contribute 0 to the IPS estimators: they then
estimate the value of the observed rewards only. ``dm`` and ``pair_dr`` skip them
(missing at random).
"""

from __future__ import annotations

import numpy as np

from bayesrank._validate import check_array, check_bool
from bayesrank.ope._common import Estimate, normal_estimate

__all__ = ["cascade_dr", "cascade_ips", "list_ips", "pair_dr", "pair_ips", "position_ips"]


def _valid_rewards(rewards) -> np.ndarray:
    """(n, L) float rewards: finite, or NaN (not observed)."""
    r = check_array(rewards, "rewards", finite=None, clicks=True)
    if r.ndim != 2:
        raise ValueError(f"rewards: expected shape (n, L), got {r.shape}")
    if np.isinf(r).any():
        raise ValueError("rewards: expected finite values or NaN (not observed), found inf")
    if r.size and np.isnan(r).all():
        raise ValueError(
            "rewards: every reward is NaN (no position observed): nothing to estimate from"
        )
    return r


def _valid_probs(a, label: str, *, pscore: bool) -> np.ndarray:
    """Probabilities: the logger's (pscore) in (0, 1], the target's in [0, 1]."""
    lo_ok = a > 0 if pscore else a >= 0
    if not (lo_ok & (a <= 1)).all():  # NaN fails both
        what = "propensities must lie in (0, 1]" if pscore else (
            "target probabilities must lie in [0, 1]")
        bad = "NaN" if np.isnan(a).any() else f"min {a.min()} and max {a.max()}"
        raise ValueError(f"{label}: {what}, got {bad}")
    return a


def _arrays(rewards, pi, pscore, name: str):
    r = _valid_rewards(rewards)
    pi = check_array(pi, f"pi_{name}", finite=None)
    ps = check_array(pscore, f"pscore_{name}", finite=None)
    for label, a in ((f"pi_{name}", pi), (f"pscore_{name}", ps)):
        if a.shape != r.shape:
            raise ValueError(f"{label}: expected shape {r.shape} (as rewards), got {a.shape}")
    _valid_probs(pi, f"pi_{name}", pscore=False)
    _valid_probs(ps, f"pscore_{name}", pscore=True)
    return r, pi / ps


def _ips(rewards: np.ndarray, weights: np.ndarray, self_normalised: bool) -> Estimate:
    """IPS over positions: sum_l mean_i(w_il r_il) (or / mean_i w_il when
    self-normalised), stderr from the per-round contributions (delta method for
    the self-normalised one)."""
    self_normalised = check_bool(self_normalised, "self_normalised")
    r = np.nan_to_num(rewards, nan=0.0)
    wr = weights * r
    if self_normalised:
        mw = weights.mean(axis=0)  # (L,)
        safe = np.where(mw > 0, mw, 1.0)
        per_pos = np.where(mw > 0, wr.mean(axis=0) / safe, 0.0)
        contrib = (weights * (r - per_pos) / safe).sum(axis=1)
        est = float(per_pos.sum())
    else:
        contrib = wr.sum(axis=1)
        est = float(contrib.mean())
    return normal_estimate(est, contrib)


def _ratio_sum(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """sum over the last axis of num / den, 0 where den = 0."""
    safe = np.where(den > 0, den, 1.0)
    return np.where(den > 0, num / safe, 0.0).sum(axis=-1)


def _ips_parts(rewards, weights, self_normalised):
    """(M (n, k), f): the estimate is f(column means of M) -- for the bootstrap."""
    wr = weights * np.nan_to_num(rewards, nan=0.0)
    if self_normalised:
        L = wr.shape[1]
        return np.concatenate([wr, weights], axis=1), lambda m: _ratio_sum(m[:, :L], m[:, L:])
    return wr.sum(axis=1, keepdims=True), lambda m: m[:, 0]


def list_ips(rewards, pi_list, pscore_list, *, self_normalised=False) -> Estimate:
    """Whole-list IPS: mean_i (pi_list_i / pscore_list_i) sum_l r_il.

    Args:
        rewards: (n, L) rewards; NaN contributes 0.
        pi_list: (n,) the target's probability of each logged list.
        pscore_list: (n,) the logger's.
        self_normalised: divide by the mean weight (SNIPS).

    Returns:
        :class:`Estimate` (estimate, stderr, ci_low, ci_high).

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import list_ips
        >>> rewards = np.array([[1.0, 0.0], [0.0, 1.0]])
        >>> list_ips(rewards, np.array([1.0, 0.0]), np.array([0.5, 0.5])).estimate
        1.0
    """
    r = _valid_rewards(rewards)
    pi = check_array(pi_list, "pi_list", finite=None)
    ps = check_array(pscore_list, "pscore_list", finite=None)
    if pi.shape != r.shape[:1] or ps.shape != r.shape[:1]:
        raise ValueError(
            f"pi_list, pscore_list: expected shape ({r.shape[0]},) with rewards (n, L), "
            f"got {pi.shape}, {ps.shape} and {r.shape}"
        )
    L = r.shape[1]
    return _ips(*_arrays(r, np.repeat(pi[:, None], L, 1), np.repeat(ps[:, None], L, 1),
                         "list"), self_normalised)


def position_ips(rewards, pi_position, pscore_position, *, self_normalised=False) -> Estimate:
    """Per-position IPS: mean_i sum_l (pi_position_il / pscore_position_il) r_il.

    Unbiased only when r^l depends on the item at l alone (w = 0).

    Args:
        rewards: (n, L) rewards; NaN contributes 0.
        pi_position: (n, L) the target's P(logged a^l at position l).
        pscore_position: (n, L) the logger's.
        self_normalised: divide by the mean weight per position.

    Returns:
        :class:`Estimate`.

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import position_ips
        >>> r, pi = np.array([[1.0], [3.0]]), np.array([[1.0], [0.0]])
        >>> position_ips(r, pi, np.full((2, 1), 0.5)).estimate
        1.0
    """
    return _ips(*_arrays(rewards, pi_position, pscore_position, "position"), self_normalised)


def cascade_ips(rewards, pi_cascade, pscore_cascade, *, self_normalised=False) -> Estimate:
    """Prefix (cascade) IPS: mean_i sum_l (pi_cascade_il / pscore_cascade_il) r_il.

    Args:
        rewards: (n, L) rewards; NaN contributes 0.
        pi_cascade: (n, L) the target's P(logged prefix a^1..a^l).
        pscore_cascade: (n, L) the logger's.
        self_normalised: divide by the mean weight per position.

    Returns:
        :class:`Estimate`.

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import cascade_ips
        >>> r, pi = np.ones((2, 2)), np.array([[1.0, 1.0], [0.0, 0.0]])
        >>> cascade_ips(r, pi, np.array([[0.5, 0.25], [0.5, 0.25]])).estimate
        3.0
    """
    return _ips(*_arrays(rewards, pi_cascade, pscore_cascade, "cascade"), self_normalised)


def pair_ips(rewards, pi_pair, pscore_pair, *, self_normalised=False) -> Estimate:
    """Pairwise IPS: mean_i sum_l (pi_pair_il / pscore_pair_il) r_il.

    Unbiased under the pairwise reward model (r^l depends on a^{l-1} and a^l).

    Args:
        rewards: (n, L) rewards; NaN contributes 0.
        pi_pair: (n, L) the target's P(logged a^{l-1} at l-1 and a^l at l); at
            l = 0 the marginal of a^1.
        pscore_pair: (n, L) the logger's.
        self_normalised: divide by the mean weight per position.

    Returns:
        :class:`Estimate`.

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import pair_ips
        >>> r, pi = np.ones((2, 2)), np.array([[1.0, 1.0], [0.0, 0.0]])
        >>> pair_ips(r, pi, np.array([[0.5, 0.25], [0.5, 0.25]])).estimate
        3.0
    """
    return _ips(*_arrays(rewards, pi_pair, pscore_pair, "pair"), self_normalised)


def _valid_predictions(shape, **predictions) -> None:
    """Each reward-model prediction array: numeric, finite, of the rewards' shape."""
    for label, q in predictions.items():
        q = check_array(q, label, finite=None)
        if q.shape != shape:
            raise ValueError(f"{label}: expected shape {shape} (as rewards), got {q.shape}")
        if not np.isfinite(q).all():
            raise ValueError(f"{label}: expected finite predictions, found NaN or inf")


def _dr_terms(rewards, pi_pair, pscore_pair, q_logged, q_target):
    r, w = _arrays(rewards, pi_pair, pscore_pair, "pair")
    _valid_predictions(r.shape, q_logged=q_logged, q_target=q_target)
    qt = np.asarray(q_target, float)
    obs = ~np.isnan(r)
    e = np.where(obs, r - np.where(obs, np.asarray(q_logged, float), 0.0), 0.0)
    return qt, w, np.where(obs, e, 0.0)


def _dr_parts(qt, w, e, self_normalised):
    """(M, f) of pair_dr for the bootstrap (the reward model held fixed)."""
    if self_normalised:
        L = qt.shape[1]
        M = np.concatenate([qt, w * e, w], axis=1)
        return M, lambda m: m[:, :L].sum(axis=1) + _ratio_sum(m[:, L:2 * L], m[:, 2 * L:])
    return (qt + w * e).sum(axis=1, keepdims=True), lambda m: m[:, 0]


def pair_dr(rewards, pi_pair, pscore_pair, *, q_logged, q_target,
            self_normalised=False) -> Estimate:
    """Doubly robust pair IPS: pair IPS with a reward model as control variate.

    Per round, sum_l [q_target_l + w_l (r^l - q_logged_l)], w_l = pi_pair_l /
    pscore_pair_l, averaged over rounds. Unbiased when the propensities are exact,
    whatever the model's error (the model only moves the variance); with a good
    model the variance is far below pair IPS's. NaN rewards skip the correction
    (missing at random). The stderr is sd(per-round terms) / sqrt(n).

    Args:
        rewards: (n, L) rewards; NaN = not observed.
        pi_pair: (n, L) the target's pair probabilities (as :func:`pair_ips`).
        pscore_pair: (n, L) the logger's.
        q_logged: (n, L) the model's prediction of each logged position (its pair
            (a^{l-1}, a^l) in the round's context), e.g.
            :meth:`RewardModel.predict <bayesrank.ope.RewardModel.predict>`.
        q_target: (n, L) the model's prediction at position l averaged over the
            target's lists in the round's context.
        self_normalised: divide the correction of each position by its mean weight.

    Returns:
        :class:`Estimate`.

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import pair_dr
        >>> r, pi, ps = np.array([[2.0], [0.0]]), np.array([[1.0], [0.0]]), np.full((2, 1), 0.5)
        >>> q = np.ones((2, 1))  # a constant model: pair IPS plus mean(1 - w)
        >>> pair_dr(r, pi, ps, q_logged=q, q_target=q).estimate
        2.0
    """
    self_normalised = check_bool(self_normalised, "self_normalised")
    qt, w, e = _dr_terms(rewards, pi_pair, pscore_pair, q_logged, q_target)
    if self_normalised:
        mw = w.mean(axis=0)
        safe = np.where(mw > 0, mw, 1.0)
        corr = np.where(mw > 0, (w * e).mean(axis=0) / safe, 0.0)
        contrib = (qt + w * (e - corr) / safe).sum(axis=1)
        est = float(qt.mean(axis=0).sum() + corr.sum())
    else:
        contrib = (qt + w * e).sum(axis=1)
        est = float(contrib.mean())
    return normal_estimate(est, contrib)


def _cdr_terms(rewards, pi_cascade, pscore_cascade, q_logged, q_expected):
    """Per round and position w_l (r^l - q_logged_l) + w_{l-1} q_expected_l."""
    r, w = _arrays(rewards, pi_cascade, pscore_cascade, "cascade")
    _valid_predictions(r.shape, q_logged=q_logged, q_expected=q_expected)
    w_above = np.concatenate([np.ones((r.shape[0], 1)), w[:, :-1]], axis=1)
    return (w * (np.nan_to_num(r, nan=0.0) - np.asarray(q_logged, float))
            + w_above * np.asarray(q_expected, float))


def cascade_dr(rewards, pi_cascade, pscore_cascade, *, q_logged, q_expected) -> Estimate:
    """Cascade doubly robust (Cascade-DR, Kiyohara et al., WSDM 2022): cascade IPS
    with a model of the rewards to come as control variate.

    Per round, sum_l [w_l (r^l - Q_l(a^1..a^l)) + w_{l-1} E_target Q_l(a^1..a^{l-1}, a)],
    w_l = pi_cascade_l / pscore_cascade_l (w_0 = 1 above the first position), Q_l
    the model's expected reward from position l to the end, the expectation over the
    target's item at l given the logged items above; averaged over rounds. Unbiased
    when r^l depends on the prefix a^1..a^l (the cascade, DCM, DBN, the PBM and
    Eq. 1) and the propensities are exact, whatever Q; the better Q, the lower the
    variance. NaN rewards count 0 (a position not examined has no click), as in
    cascade IPS. This is Open Bandit Pipeline's ``SlateCascadeDoublyRobust``
    (``q_logged`` its ``q_hat`` at the logged action, ``q_expected`` the sum of
    ``q_hat`` times ``evaluation_policy_action_dist`` over the actions; equal to
    1e-10 on stored cases, ``tests/ope/test_cascade_dr.py``). The stderr is
    sd(per-round terms) / sqrt(n).

    Args:
        rewards: (n, L) rewards; NaN counts 0.
        pi_cascade: (n, L) the target's P(logged prefix a^1..a^l).
        pscore_cascade: (n, L) the logger's.
        q_logged: (n, L) Q_l at the logged prefix a^1..a^l.
        q_expected: (n, L) the mean of Q_l over the target's item at l given the
            logged a^1..a^{l-1}.

    Returns:
        :class:`Estimate`.

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import cascade_dr
        >>> r, ps = np.array([[1.0], [0.0]]), np.full((2, 1), 0.5)
        >>> pi = np.array([[1.0], [0.0]])  # the target always shows the first list
        >>> q = np.full((2, 1), 0.8)  # a model predicting 0.8 everywhere
        >>> round(cascade_dr(r, pi, ps, q_logged=q, q_expected=q).estimate, 12)
        1.0
    """
    contrib = _cdr_terms(rewards, pi_cascade, pscore_cascade, q_logged,
                         q_expected).sum(axis=1)
    return normal_estimate(float(contrib.mean()), contrib)
