"""Off-policy estimators of a target ranking policy's value from a log.

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

Two more use a reward model fitted on the log (:func:`fit_reward_model`):
``dm``, the direct method, and ``pair_dr``, pair IPS with the model as control
variate (doubly robust: unbiased when the propensities are exact, whatever the
model's error; lower variance when the model is good).

NaN rewards (positions not observed) contribute 0 to the IPS estimators: they then
estimate the value of the observed rewards only. ``dm`` and ``pair_dr`` skip them
(missing at random).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

import numpy as np
import xarray as xr

from bayesrank._validate import check_int, check_real, check_seed
from bayesrank.ope._common import (
    Z95,
    Estimate,
    check_items,
    normal_estimate,
)
from bayesrank.ope.bootstrap import percentile_interval, resample_counts
from bayesrank.ope.direct import (
    design,
    dm_bootstrap,
    dm_estimate,
    q_logged,
    solve,
    target_features,
)
from bayesrank.ope.log import check_log
from bayesrank.ope.protocol import EVENTS, PSCORE_OF, Estimator, EstimatorInputs
from bayesrank.ope.target import (
    TargetDraws,
    TargetProbabilities,
    check_log_in_target_catalogue,
    check_target_items,
    n_batches_of,
    target_probabilities,
    true_value,
)

__all__ = [
    "DEFAULT_ESTIMATORS",
    "ESTIMATORS",
    "Estimate",
    "Estimator",
    "EstimatorInputs",
    "TargetProbabilities",
    "cascade_ips",
    "evaluate",
    "list_ips",
    "pair_dr",
    "pair_ips",
    "position_ips",
    "target_probabilities",
    "true_value",
]

def _real(x, label: str) -> np.ndarray:
    """x as a float array, or a TypeError naming ``label``."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{label}: expected a real numeric array, got dtype {arr.dtype}")
    return arr.astype(float)


def _check_rewards(rewards) -> np.ndarray:
    """(n, L) float rewards: finite, or NaN (not observed)."""
    r = _real(rewards, "rewards")
    if r.ndim != 2:
        raise ValueError(f"rewards: expected shape (n, L), got {r.shape}")
    if np.isinf(r).any():
        raise ValueError("rewards: expected finite values or NaN (not observed), found inf")
    if r.size and np.isnan(r).all():
        raise ValueError(
            "rewards: every reward is NaN (no position observed): nothing to estimate from"
        )
    return r


def _check_probs(a, label: str, *, pscore: bool) -> np.ndarray:
    """Probabilities: the logger's (pscore) in (0, 1], the target's in [0, 1]."""
    lo_ok = a > 0 if pscore else a >= 0
    if not (lo_ok & (a <= 1)).all():  # NaN fails both
        what = "propensities must lie in (0, 1]" if pscore else (
            "target probabilities must lie in [0, 1]")
        bad = "NaN" if np.isnan(a).any() else f"min {a.min()} and max {a.max()}"
        raise ValueError(f"{label}: {what}, got {bad}")
    return a


def _check_flag(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected a bool, got {type(value).__name__} ({value!r})")
    return bool(value)


def _arrays(rewards, pi, pscore, name: str):
    r = _check_rewards(rewards)
    pi = _real(pi, f"pi_{name}")
    ps = _real(pscore, f"pscore_{name}")
    for label, a in ((f"pi_{name}", pi), (f"pscore_{name}", ps)):
        if a.shape != r.shape:
            raise ValueError(f"{label}: expected shape {r.shape} (as rewards), got {a.shape}")
    _check_probs(pi, f"pi_{name}", pscore=False)
    _check_probs(ps, f"pscore_{name}", pscore=True)
    return r, pi / ps


def _ips(rewards: np.ndarray, weights: np.ndarray, self_normalised: bool) -> Estimate:
    """IPS over positions: sum_l mean_i(w_il r_il) (or / mean_i w_il when
    self-normalised), stderr from the per-round contributions (delta method for
    the self-normalised one)."""
    self_normalised = _check_flag(self_normalised, "self_normalised")
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
    r = _check_rewards(rewards)
    pi = _real(pi_list, "pi_list")
    ps = _real(pscore_list, "pscore_list")
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


def _dr_terms(rewards, pi_pair, pscore_pair, q_logged, q_target):
    r, w = _arrays(rewards, pi_pair, pscore_pair, "pair")
    for label, q in (("q_logged", q_logged), ("q_target", q_target)):
        q = _real(q, label)
        if q.shape != r.shape:
            raise ValueError(f"{label}: expected shape {r.shape} (as rewards), got {q.shape}")
        if not np.isfinite(q).all():
            raise ValueError(f"{label}: expected finite predictions, found NaN or inf")
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
    self_normalised = _check_flag(self_normalised, "self_normalised")
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


class _IPSEstimator(Estimator):
    """A built-in IPS estimator: ``fn(rewards, pi, pscore, *, self_normalised)`` of
    one event."""

    needs_reward_model = False
    self_normalisable = True

    def __init__(self, name: str, event: str, fn):
        self.name, self.needs, self.fn = name, (event,), fn

    def estimate(self, inputs: EstimatorInputs) -> Estimate:
        ev = self.needs[0]
        return self.fn(inputs.rewards, inputs.pi[ev], inputs.pscore[ev],
                       self_normalised=inputs.self_normalised)

    def bootstrap(self, inputs: EstimatorInputs, counts) -> np.ndarray:
        ev = self.needs[0]
        w = inputs.pi[ev] / inputs.pscore[ev]
        if w.ndim == 1:
            w = np.repeat(w[:, None], inputs.rewards.shape[1], axis=1)
        M, f = _ips_parts(inputs.rewards, w, inputs.self_normalised)
        return f(counts @ M / inputs.n)


class _DirectMethod(Estimator):
    """The direct method (:func:`dm`) on the reward model of the inputs."""

    name = "dm"
    needs = ()
    needs_reward_model = True
    self_normalisable = False

    def estimate(self, inputs: EstimatorInputs) -> Estimate:
        m = _model_of(inputs, self.name)
        est = dm_estimate(m.D, m.coef, m.prec, m.feats, m.inv)
        if m.batch_of is None:
            return est
        # a Monte Carlo batch of draws: the mean predicted total of its lists (summed
        # as earlier versions did, so that mc_stderr is unchanged to the last bit)
        v = float(m.batch_values[m.batch_of])
        return Estimate(v, est.stderr, v - Z95 * est.stderr, v + Z95 * est.stderr)

    def bootstrap(self, inputs: EstimatorInputs, counts) -> np.ndarray:
        m = _model_of(inputs, self.name)  # refitted on every resample
        return dm_bootstrap(m.D, m.ridge, m.feats, m.inv, counts)


class _PairDR(Estimator):
    """:func:`pair_dr` with the reward model's predictions of the inputs (held fixed
    in the bootstrap, as Open Bandit Pipeline does)."""

    name = "pair_dr"
    needs = ("pair",)
    needs_reward_model = True
    self_normalisable = True

    def estimate(self, inputs: EstimatorInputs) -> Estimate:
        return pair_dr(inputs.rewards, inputs.pi["pair"], inputs.pscore["pair"],
                       q_logged=inputs.q_logged, q_target=inputs.q_target,
                       self_normalised=inputs.self_normalised)

    def bootstrap(self, inputs: EstimatorInputs, counts) -> np.ndarray:
        M, f = _dr_parts(*_dr_terms(inputs.rewards, inputs.pi["pair"],
                                    inputs.pscore["pair"], inputs.q_logged,
                                    inputs.q_target), inputs.self_normalised)
        return f(counts @ M / inputs.n)


def _model_of(inputs, name):
    m = inputs.reward_model
    if m is None:
        raise ValueError(f"{name}: needs the fitted reward model (inputs.reward_model)")
    return m


#: name -> :class:`Estimator`: the built-in estimators :func:`evaluate` accepts by
#: name (each ``needs`` one event's probabilities; ``dm`` and ``pair_dr`` read the
#: reward model, :data:`MODEL_ESTIMATORS`).
ESTIMATORS = {
    "dm": _DirectMethod(),
    "list_ips": _IPSEstimator("list_ips", "list", list_ips),
    "position_ips": _IPSEstimator("position_ips", "position", position_ips),
    "cascade_ips": _IPSEstimator("cascade_ips", "prefix", cascade_ips),
    "pair_ips": _IPSEstimator("pair_ips", "pair", pair_ips),
    "pair_dr": _PairDR(),
}
#: the estimators that fit the reward model (they need the item vectors)
MODEL_ESTIMATORS = tuple(k for k, e in ESTIMATORS.items() if e.needs_reward_model)
#: the default of :func:`evaluate` (DESIGN.md)
DEFAULT_ESTIMATORS = ("dm", "list_ips", "position_ips", "cascade_ips", "pair_ips", "pair_dr")
CI_METHODS = ("normal", "bootstrap")
_ATTRS = ("name", "needs", "needs_reward_model", "estimate", "bootstrap")


def _check_estimator_object(e) -> None:
    """Refuse an object that does not follow the :class:`Estimator` protocol."""
    for attr in _ATTRS:
        if not hasattr(e, attr):
            raise TypeError(
                f"estimators: {e!r} has no {attr!r}; an estimator needs "
                f"{', '.join(_ATTRS)} (see bayesrank.ope.Estimator)"
            )
    if not isinstance(e.name, str) or not e.name:
        raise TypeError(f"estimators: {e!r} has name {e.name!r}, expected a non-empty str")
    needs = e.needs
    if isinstance(needs, str) or not isinstance(needs, (tuple, list)) or any(
            ev not in EVENTS for ev in needs):
        raise ValueError(
            f"estimators: {e.name!r} needs {needs!r}, expected a tuple of events from "
            f"{list(EVENTS)}"
        )
    if not isinstance(e.needs_reward_model, (bool, np.bool_)):
        raise TypeError(f"estimators: {e.name!r} has needs_reward_model "
                        f"{e.needs_reward_model!r}, expected a bool")
    for attr in ("estimate", "bootstrap"):
        if not callable(getattr(e, attr)):
            raise TypeError(f"estimators: {e.name!r}.{attr} is not callable")


def _check_estimators(estimators, log) -> list:
    """The estimators of a call as objects (names resolved through ESTIMATORS)."""
    if isinstance(estimators, (str, Estimator)):
        estimators = (estimators,)
    try:
        estimators = tuple(estimators)
    except TypeError:
        raise TypeError(
            f"estimators: expected names or Estimator objects, got "
            f"{type(estimators).__name__}"
        ) from None
    if not estimators:
        raise ValueError("estimators: expected at least one estimator name")
    out, seen = [], set()
    for e in estimators:
        if isinstance(e, str):
            if e not in ESTIMATORS:
                raise ValueError(
                    f"estimators: unknown {e!r}; expected one of {list(ESTIMATORS)} or "
                    "an Estimator object"
                )
            e = ESTIMATORS[e]
        else:
            _check_estimator_object(e)
        if e.name in seen:
            raise ValueError(f"estimators: {e.name!r} given twice (one row per estimator)")
        seen.add(e.name)
        for ev in e.needs:
            if PSCORE_OF[ev] not in log:
                raise ValueError(f"{PSCORE_OF[ev]}: missing from the log, needed by {e.name}")
        out.append(e)
    return out


def _items_for(log, target, items) -> np.ndarray:
    """The item vectors: ``items``, else the log's, else the target's."""
    if items is None:
        if "items" in log:
            items = log["items"].values
        elif getattr(target, "items", None) is not None:
            items = np.asarray(target.items)
        else:
            raise ValueError(
                "items: dm and pair_dr need the item vectors; pass items=, store them in "
                "the log (as_log(..., items=)) or use a target with an .items attribute"
            )
    K = log.attrs.get("K")
    return check_items(items, log.sizes["dim"], None if K is None else int(K),
                       int(log["lists"].values.max()) + 1)


class _Model:
    """The reward model of a log and the target's predictions (for dm, pair_dr).

    Attributes: D (the log's design), coef, prec, ridge, inv (each round's context
    group), feats (G, L, p) the target's mean features, q_logged, q_target (n, L)
    and per Monte Carlo batch feats_b, q_target_b (B, ...)."""

    def __init__(self, lists, rewards, v0s, draws, items, ridge, B, context=None):
        self.D = design(lists, rewards, v0s, items, groups=(draws.contexts, draws.inverse),
                        context=context)
        coef, prec = solve(self.D, ridge)
        self.coef, self.prec, self.ridge, self.inv = coef[0], prec[0], ridge, draws.inverse
        bid = np.arange(draws.lists.shape[1]) % B
        self.feats, self.feats_b = target_features(draws.lists, draws.contexts, items, bid, B)
        if context is not None:  # groups of (v0, context): the context appended
            keys = np.concatenate([draws.inverse[:, None].astype(float), context], axis=1)
            uniq, inv = np.unique(keys, axis=0, return_inverse=True)
            g, ctx = uniq[:, 0].astype(np.int64), uniq[:, 1:]
            L = self.feats.shape[1]
            c = np.broadcast_to(ctx[:, None, :], (len(g), L, ctx.shape[1]))
            self.feats = np.concatenate([self.feats[g], c], axis=-1)
            self.feats_b = np.concatenate(
                [self.feats_b[:, g], np.broadcast_to(c, (B, *c.shape))], axis=-1)
            self.inv = inv.reshape(-1)
        self.q_target = np.einsum("glp,lp->gl", self.feats, self.coef)[self.inv]
        self.q_target_b = np.einsum("bglp,lp->bgl", self.feats_b, self.coef)[:, self.inv]
        self.q_logged = q_logged(self.D, self.coef)
        self.batch_of = None  # the batch index of a batch's model
        self.batch_values = self.q_target_b.sum(axis=2).mean(axis=1)  # (B,) dm per batch

    def batch(self, b: int) -> _Model:
        """The model with the target's features of Monte Carlo batch b."""
        out = copy.copy(self)
        out.feats, out.q_target = self.feats_b[b], self.q_target_b[b]
        out.batch_of = b
        return out


def fit_inputs_model(lists, rewards, v0s, draws: TargetDraws, items, ridge=1.0,
                     n_batches: int = 1, context=None) -> _Model:
    """The reward model of :class:`EstimatorInputs` (``reward_model``, with its
    ``q_logged`` and ``q_target``) for a log's arrays and the target's draws;
    ``context`` (n, c): extra features of every position."""
    return _Model(np.asarray(lists), np.asarray(rewards, float), np.asarray(v0s, float),
                  draws, items, ridge, n_batches, context)


def _context_of(log):
    """The log's ``context`` (n, c) float array, checked, or None."""
    if "context" not in log:
        return None
    da = log["context"]
    if da.ndim != 2 or da.dims[0] != "round":
        raise ValueError(f"context: expected dims ('round', context_dim), got {da.dims}")
    a = _real(da.values, "context")
    if not np.isfinite(a).all():
        raise ValueError("context: expected finite values, found NaN or inf")
    return a


def _target_kind(target) -> str:
    if isinstance(target, (TargetProbabilities, Mapping)):
        return "probabilities"
    if callable(getattr(target, "select_batch", None)):
        return "policy"
    raise TypeError(
        f"target: expected a policy with select_batch(v0) or its probabilities "
        f"(TargetProbabilities or a mapping), got {type(target).__name__}"
    )


def _given_probabilities(target, log) -> dict:
    """The target's given probabilities, checked in shape against the log and in [0, 1]."""
    if isinstance(target, TargetProbabilities):
        given = {k: v for k, v in target._asdict().items() if v is not None}
    else:
        given = {}
        for k, v in target.items():
            ev = "prefix" if k == "cascade" else k
            if ev not in EVENTS:
                raise ValueError(
                    f"target: unknown probabilities {k!r}; expected keys from {list(EVENTS)}"
                )
            if v is not None:
                given[ev] = v
    if not given:
        raise ValueError(f"target: no probabilities given; expected some of {list(EVENTS)}")
    n, L = log["lists"].shape
    out = {}
    for ev, v in given.items():
        a = _real(v, f"target.{ev}")
        shape = (n,) if ev == "list" else (n, L)
        if a.shape != shape:
            raise ValueError(f"target.{ev}: expected shape {shape} (the log's rounds), "
                             f"got {a.shape}")
        out[ev] = _check_probs(a, f"target.{ev}", pscore=False)
    return out


def evaluate(
    log,
    target,
    estimators=DEFAULT_ESTIMATORS,
    n_draws=1000,
    self_normalised=False,
    *,
    n_batches=10,
    deterministic=None,
    items=None,
    ridge=1.0,
    ci="normal",
    n_boot=1000,
    seed=0,
) -> xr.Dataset:
    """Off-policy estimates of the target's expected total reward per round.

    Args:
        log: the log Dataset of :mod:`bayesrank.ope`, with the pscore variables the
            chosen estimators need.
        target: an object with ``select_batch(v0=(B, d)) -> (B, L)`` (a bayesrank
            policy, evaluated frozen: it is never updated and its state and round
            counter are restored; a log that names no catalogue, no ``K`` and no
            ``items``, must show only indices below the target's ``K`` when it has
            one, as ``target.fit(log)`` requires, else a ValueError names
            ``lists``); or the target's precomputed probabilities of the logged
            lists' events: a :class:`TargetProbabilities` or a mapping with keys
            from "list", "position", "prefix" (or "cascade", as
            :func:`target_probabilities` names it), "pair". With probabilities the
            estimators needing the reward model (dm, pair_dr) are refused, and the
            default estimators are those the given probabilities allow.
        estimators: names from :data:`ESTIMATORS` and/or :class:`Estimator` objects
            (each one row, named by its ``name``); default ("dm", "list_ips",
            "position_ips", "cascade_ips", "pair_ips", "pair_dr").
        n_draws: Monte Carlo draws per distinct v0 for a random target (drawn once
            and shared by every estimator).
        self_normalised: use the self-normalised (SNIPS) variants (dm has none;
            passed to every estimator as ``inputs.self_normalised``).
        n_batches: batches of draws for the Monte Carlo error.
        deterministic: see :func:`target_probabilities`.
        items: (K, d) item vectors for dm and pair_dr; None: the log's ``items``
            variable, else ``target.items``.
        ridge: the reward model's ridge penalty (:func:`fit_reward_model`). When
            the log has a ``context`` variable (round, context_dim) (e.g. obp's
            context, stored by :func:`from_obp`), the model's features of every
            position are (v_{a^l}, v_{a^{l-1}}, context): a ridge regression on one
            row per round.
        ci: "normal" (estimate +- 1.96 stderr) or "bootstrap" (percentile bootstrap
            over rounds, each estimator's ``bootstrap``: dm refits the model on
            every resample; pair_dr holds it fixed, as Open Bandit Pipeline does).
        n_boot: bootstrap replicates.
        seed: seed of the bootstrap resamples.

    Returns:
        Dataset over the coordinate "estimator" with ``estimate``, ``stderr`` (the
        sampling error of the log, analytic whatever ``ci``), ``ci_low``,
        ``ci_high`` (95 %) and ``mc_stderr`` (the Monte Carlo error of the target's
        probabilities: the sd of the estimates over the batches of draws /
        sqrt(batches); 0 when the target is deterministic or given as
        probabilities). The attribute ``deterministic`` is -1 when the target was
        given as probabilities (``n_draws`` then 0).

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import UniformLogger, as_log, evaluate
        >>> rng = np.random.default_rng(0)
        >>> items = rng.normal(size=(4, 3))
        >>> logger = UniformLogger(K=4, L=2)
        >>> lists = logger.sample(rng, np.zeros((4000, 3)))
        >>> rewards = items[lists] @ [1.0, 0.5, 0.0] + rng.normal(size=(4000, 2))
        >>> log = as_log(lists, rewards, np.zeros(3), **logger.propensities(lists),
        ...              items=items)
        >>> class Fixed:
        ...     def select_batch(self, v0):
        ...         return np.tile([1, 2], (len(v0), 1))
        >>> res = evaluate(log, Fixed(), ["dm", "pair_ips", "pair_dr"], ci="bootstrap",
        ...                n_boot=200)
        >>> truth = float(items[[1, 2]] @ [1.0, 0.5, 0.0] @ [1, 1])
        >>> bool(np.all((res.ci_low < truth) & (truth < res.ci_high)))
        True
    """
    check_log(log)
    if not np.isfinite(log["rewards"].values).any():
        raise ValueError(
            "rewards: every reward of the log is NaN (no position observed): nothing to "
            "estimate from"
        )
    kind = _target_kind(target)
    if kind == "policy":  # before the item vectors of dm, which may be the target's
        check_log_in_target_catalogue(log, target)
    given = _given_probabilities(target, log) if kind == "probabilities" else None
    if given is not None and estimators is DEFAULT_ESTIMATORS:
        estimators = tuple(k for k in DEFAULT_ESTIMATORS
                           if not ESTIMATORS[k].needs_reward_model
                           and set(ESTIMATORS[k].needs) <= set(given))
        if not estimators:
            raise ValueError(f"target: the given probabilities ({sorted(given)}) allow none "
                             "of the default estimators; name them in estimators=")
    ests = _check_estimators(estimators, log)
    self_normalised = _check_flag(self_normalised, "self_normalised")
    if not isinstance(ci, str) or ci not in CI_METHODS:
        raise ValueError(f"ci: expected one of {list(CI_METHODS)}, got {ci!r}")
    n_boot = check_int(n_boot, "n_boot", low=1)
    seed = check_seed(seed)
    n_batches = check_int(n_batches, "n_batches", low=1)
    if given is not None:
        for e in ests:
            if e.needs_reward_model:
                raise ValueError(
                    f"target: {e.name} needs the target's lists (its reward model predicts "
                    "their rewards), but the target was given as probabilities: pass the "
                    "policy itself"
                )
            for ev in e.needs:
                if ev not in given:
                    raise ValueError(
                        f"target: no {ev!r} probabilities given, needed by {e.name}")
    needs_model = any(e.needs_reward_model for e in ests)
    if needs_model:
        ridge = check_real(ridge, "ridge", low=0, inclusive="neither")
        items = _items_for(log, target, items)
        context = _context_of(log)
    rewards = log["rewards"].values
    n = rewards.shape[0]
    pscore = {ev: log[var].values for ev, var in PSCORE_OF.items() if var in log}
    if given is None:
        probs, batch, det, draws = target_probabilities(
            log, target, n_draws=n_draws, n_batches=n_batches, deterministic=deterministic,
            return_draws=True,
        )
        if needs_model:  # the item vectors' rows are the catalogue when the log has no K
            check_target_items(draws.lists, items.shape[0])
        B = n_batches_of(draws, n_batches)
        model = fit_inputs_model(log["lists"].values, rewards, log["v0"].values, draws,
                                 items, ridge, B, context) if needs_model else None
        key = {ev: "cascade" if ev == "prefix" else ev for ev in EVENTS}
        pi = {ev: probs[key[ev]] for ev in EVENTS}
        inputs = EstimatorInputs(rewards, pscore, pi, self_normalised,
                                 *((model.q_logged, model.q_target, model) if model
                                   else (None, None, None)))
        batches = [inputs._replace(
            pi={ev: batch[key[ev]][b] for ev in EVENTS},
            **({"q_target": model.q_target_b[b], "reward_model": model.batch(b)}
               if model else {})) for b in range(B)]
    else:
        det, inputs, batches = -1, EstimatorInputs(rewards, pscore, given, self_normalised), []
        n_draws = 0
    rows = []
    for e in ests:
        est = _as_estimate(e.estimate(inputs), e.name)
        reps = np.array([_as_estimate(e.estimate(b), e.name)[0] for b in batches])
        mc = float(np.std(reps, ddof=1) / np.sqrt(len(reps))) if len(reps) > 1 else 0.0
        rows.append([*est, mc])
    a = np.array(rows, float)
    if ci == "bootstrap":
        boot = [[] for _ in ests]
        for counts in resample_counts(n, n_boot, seed):  # a few chunks of replicates
            for i, e in enumerate(ests):
                reps = np.asarray(e.bootstrap(inputs, counts), float).reshape(-1)
                if reps.shape[0] != counts.shape[0]:
                    raise ValueError(
                        f"estimators: {e.name}.bootstrap returned {reps.shape[0]} "
                        f"replicates for {counts.shape[0]} resamples"
                    )
                boot[i].append(reps)
        for i in range(len(ests)):
            a[i, 2:4] = percentile_interval(np.concatenate(boot[i]))
    out = xr.Dataset(
        {v: ("estimator", a[:, i]) for i, v in
         enumerate(("estimate", "stderr", "ci_low", "ci_high", "mc_stderr"))},
        coords={"estimator": [e.name for e in ests]},
    )
    out.attrs.update(n_rounds=int(n), n_draws=int(n_draws),
                     self_normalised=int(bool(self_normalised)), deterministic=int(det),
                     ci=ci, n_boot=int(n_boot) if ci == "bootstrap" else 0)
    return out


def _as_estimate(est, name: str) -> tuple:
    """An estimator's result as a 4-tuple of floats, or a TypeError naming it."""
    try:
        t = tuple(float(x) for x in est)
    except (TypeError, ValueError):
        t = ()
    if len(t) != 4:
        raise TypeError(
            f"estimators: {name}.estimate returned {est!r}, expected an Estimate "
            "(estimate, stderr, ci_low, ci_high)"
        )
    return t
