"""Inverse-propensity estimators of a target ranking policy's value from a log.

The generic estimators take arrays: rewards (n, L), the target's probabilities of
the logged list's events and the logger's (the pscore variables of the log). Each
event model gives one estimator:

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

NaN rewards (positions not observed) contribute 0: the estimators then estimate the
value of the observed rewards only.
"""

from __future__ import annotations

import contextlib
import numbers
from typing import NamedTuple

import numpy as np
import xarray as xr

from bayesrank.ope.log import check_log

__all__ = [
    "ESTIMATORS",
    "Estimate",
    "cascade_ips",
    "evaluate",
    "list_ips",
    "pair_ips",
    "position_ips",
    "target_probabilities",
    "true_value",
]

Z95 = 1.959963984540054


class Estimate(NamedTuple):
    """A value estimate with its standard error and normal 95 % interval."""

    estimate: float
    stderr: float
    ci_low: float
    ci_high: float


def _arrays(rewards, pi, pscore, name: str):
    r = np.asarray(rewards, float)
    if r.ndim != 2:
        raise ValueError(f"rewards: expected shape (n, L), got {r.shape}")
    pi = np.asarray(pi, float)
    ps = np.asarray(pscore, float)
    for label, a in ((f"pi_{name}", pi), (f"pscore_{name}", ps)):
        if a.shape != r.shape:
            raise ValueError(f"{label}: expected shape {r.shape} (as rewards), got {a.shape}")
    if not (ps > 0).all():
        raise ValueError(f"pscore_{name}: propensities must be > 0")
    return r, pi / ps


def _ips(rewards: np.ndarray, weights: np.ndarray, self_normalised: bool) -> Estimate:
    """IPS over positions: sum_l mean_i(w_il r_il) (or / mean_i w_il when
    self-normalised), stderr from the per-round contributions (delta method for
    the self-normalised one)."""
    n = rewards.shape[0]
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
    se = float(contrib.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    return Estimate(est, se, est - Z95 * se, est + Z95 * se)


def list_ips(rewards, pi_list, pscore_list, *, self_normalised=False) -> Estimate:
    """Whole-list IPS: mean_i (pi_list_i / pscore_list_i) sum_l r_il.

    Args:
        rewards: (n, L) rewards; NaN contributes 0.
        pi_list: (n,) the target's probability of each logged list.
        pscore_list: (n,) the logger's.
        self_normalised: divide by the mean weight (SNIPS).

    Returns:
        :class:`Estimate` (estimate, stderr, ci_low, ci_high).
    """
    r = np.asarray(rewards, float)
    pi = np.asarray(pi_list, float)
    ps = np.asarray(pscore_list, float)
    if r.ndim != 2 or pi.shape != r.shape[:1] or ps.shape != r.shape[:1]:
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
    """
    return _ips(*_arrays(rewards, pi_position, pscore_position, "position"), self_normalised)


def cascade_ips(rewards, pi_cascade, pscore_cascade, *, self_normalised=False) -> Estimate:
    """Prefix (cascade) IPS: mean_i sum_l (pi_cascade_il / pscore_cascade_il) r_il.

    Args:
        rewards: (n, L) rewards; NaN contributes 0.
        pi_cascade: (n, L) the target's P(logged prefix a^1..a^l).
        pscore_cascade: (n, L) the logger's.
        self_normalised: divide by the mean weight per position.
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
    """
    return _ips(*_arrays(rewards, pi_pair, pscore_pair, "pair"), self_normalised)


#: name -> (event, function); the function takes (rewards, pi, pscore).
ESTIMATORS = {
    "list_ips": ("list", list_ips),
    "position_ips": ("position", position_ips),
    "cascade_ips": ("cascade", cascade_ips),
    "pair_ips": ("pair", pair_ips),
}


# ----------------------------------------------------------- the target's probabilities
@contextlib.contextmanager
def _frozen(target):
    """Restore the target's ``state`` and round counter ``t`` afterwards: drawing
    lists never changes what the target has learnt (nothing calls ``update``)."""
    saved = {a: getattr(target, a) for a in ("state", "t") if hasattr(target, a)}
    try:
        yield
    finally:
        for a, v in saved.items():
            with contextlib.suppress(AttributeError):
                setattr(target, a, v)


def _draw(target, v0, m: int) -> np.ndarray:
    out = np.asarray(target.select_batch(v0=np.repeat(v0[None], m, 0)))
    if out.ndim != 2 or out.shape[0] != m:
        raise ValueError(f"target: select_batch returned shape {out.shape}, expected ({m}, L)")
    return out


def _event_columns(L: int):
    """(event, l, columns) of every event the estimators use."""
    for l in range(L):
        yield "position", l, [l]
        yield "pair", l, [l - 1, l] if l else [0]
        yield "cascade", l, list(range(l + 1))


def _frequencies(draws, logged, cols, batch, B):
    """P(event) of each logged row: over all draws (n_g,) and per batch (B, n_g)."""
    m = draws.shape[0]
    keys = np.concatenate([draws[:, cols], logged[:, cols]])
    _, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    U = int(inv.max()) + 1
    counts = np.bincount(batch * U + inv[:m], minlength=B * U).reshape(B, U)
    sizes = np.bincount(batch, minlength=B)
    full = counts.sum(axis=0)[inv[m:]] / m
    per_batch = counts[:, inv[m:]] / sizes[:, None]
    return full, per_batch


def target_probabilities(log, target, *, n_draws=1000, n_batches=10, deterministic=None):
    """The target's probabilities of each logged list's events.

    Rounds are grouped by identical v0 rows; the target draws once per distinct v0:
    ``n_draws`` lists for a random target (RankTS), one list for a deterministic one
    (an exact 0/1 probability). The target is frozen: its state and round counter
    are restored afterwards and ``update`` is never called.

    Args:
        log: the log Dataset (lists, v0).
        target: an object with ``select_batch(v0=(B, d)) -> (B, L)`` lists.
        n_draws: Monte Carlo draws per distinct v0 for a random target.
        n_batches: the draws are split into this many batches (for the Monte Carlo
            error of the estimates).
        deterministic: whether the target's lists are deterministic given v0; None:
            judged from the first v0's ``n_draws`` draws (all equal: deterministic).

    Returns:
        ``(probs, batch_probs, deterministic)``: probs maps "list" to (n,) and
        "position", "pair", "cascade" to (n, L); batch_probs the same with a leading
        batch axis (B, ...).
    """
    if isinstance(n_draws, bool) or not isinstance(n_draws, numbers.Integral) or n_draws < 1:
        raise ValueError(f"n_draws: expected a positive integer, got {n_draws!r}")
    lists = np.asarray(log["lists"].values)
    v0s = np.asarray(log["v0"].values, float)
    n, L = lists.shape
    uniq, inv = np.unique(v0s, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    with _frozen(target):
        if deterministic is None:
            first = _draw(target, uniq[0], n_draws)
            deterministic = bool((first == first[0]).all())
        else:
            first = None
        if deterministic:
            one = np.asarray(target.select_batch(v0=uniq))
            if one.shape != (len(uniq), L):
                raise ValueError(
                    f"target: select_batch returned shape {one.shape}, expected "
                    f"({len(uniq)}, {L})"
                )
            draws = [one[g][None] for g in range(len(uniq))]
        else:
            draws = [first] + [_draw(target, uniq[g], n_draws) for g in range(1, len(uniq))]
    B = 1 if deterministic else max(1, min(int(n_batches), n_draws))
    probs = {"list": np.zeros(n), **{e: np.zeros((n, L)) for e in ("position", "pair", "cascade")}}
    batch = {"list": np.zeros((B, n)), **{e: np.zeros((B, n, L)) for e in ("position", "pair", "cascade")}}
    for g, D in enumerate(draws):
        if D.shape[1] != L:
            raise ValueError(f"target: lists of length {D.shape[1]}, the log's have {L}")
        rows = np.flatnonzero(inv == g)
        bid = np.arange(D.shape[0]) % B
        for event, l, cols in _event_columns(L):
            full, per = _frequencies(D, lists[rows], cols, bid, B)
            probs[event][rows, l] = full
            batch[event][:, rows, l] = per
    probs["list"] = probs["cascade"][:, -1].copy()
    batch["list"] = batch["cascade"][:, :, -1].copy()
    return probs, batch, deterministic


def evaluate(
    log,
    target,
    estimators=("list_ips", "position_ips", "cascade_ips", "pair_ips"),
    n_draws=1000,
    self_normalised=False,
    *,
    n_batches=10,
    deterministic=None,
) -> xr.Dataset:
    """Off-policy estimates of the target's expected total reward per round.

    Args:
        log: the log Dataset of :mod:`bayesrank.ope`, with the pscore variables the
            chosen estimators need.
        target: an object with ``select_batch(v0=(B, d)) -> (B, L)`` (a bayesrank
            policy, evaluated frozen: it is never updated and its state and round
            counter are restored).
        estimators: names from :data:`ESTIMATORS`.
        n_draws: Monte Carlo draws per distinct v0 for a random target.
        self_normalised: use the self-normalised (SNIPS) variants.
        n_batches: batches of draws for the Monte Carlo error.
        deterministic: see :func:`target_probabilities`.

    Returns:
        Dataset over the coordinate "estimator" with ``estimate``, ``stderr`` (the
        sampling error of the log), ``ci_low``, ``ci_high`` (normal 95 %) and
        ``mc_stderr`` (the Monte Carlo error of the target's probabilities: the sd of
        the estimates over the batches of draws / sqrt(batches); 0 when the target
        is deterministic).
    """
    check_log(log)
    if isinstance(estimators, str):
        estimators = (estimators,)
    estimators = tuple(estimators)
    if not estimators:
        raise ValueError("estimators: expected at least one estimator name")
    for name in estimators:
        if name not in ESTIMATORS:
            raise ValueError(f"estimators: unknown {name!r}; expected one of {list(ESTIMATORS)}")
        var = f"pscore_{ESTIMATORS[name][0]}"
        if var not in log:
            raise ValueError(f"{var}: missing from the log, needed by {name}")
    probs, batch, det = target_probabilities(
        log, target, n_draws=n_draws, n_batches=n_batches, deterministic=deterministic
    )
    rewards = log["rewards"].values
    rows = []
    for name in estimators:
        event, fn = ESTIMATORS[name]
        ps = log[f"pscore_{event}"].values
        est = fn(rewards, probs[event], ps, self_normalised=self_normalised)
        reps = [fn(rewards, pb, ps, self_normalised=self_normalised).estimate
                for pb in batch[event]]
        mc = float(np.std(reps, ddof=1) / np.sqrt(len(reps))) if len(reps) > 1 else 0.0
        rows.append((*est, mc))
    a = np.array(rows, float)
    out = xr.Dataset(
        {v: ("estimator", a[:, i]) for i, v in
         enumerate(("estimate", "stderr", "ci_low", "ci_high", "mc_stderr"))},
        coords={"estimator": list(estimators)},
    )
    out.attrs.update(n_rounds=int(log.sizes["round"]), n_draws=int(n_draws),
                     self_normalised=int(bool(self_normalised)), deterministic=int(det))
    return out


def true_value(env, target, v0=None, n_draws=1000) -> float:
    """The target's expected total reward in ``env`` for a request with context v0.

    Exact (``env.expected_reward`` of its list) when the target's ``n_draws`` lists
    are all equal (a deterministic target), else their Monte Carlo average. The
    target is frozen as in :func:`evaluate`.

    Args:
        env: a :class:`bayesrank.RankingEnv`.
        target: an object with ``select_batch(v0=(B, d)) -> (B, L)``.
        v0: (d,) the context; None: ``env.v0``.
        n_draws: lists drawn from the target.
    """
    if v0 is None:
        v0 = np.asarray(env.v0, float)
    else:
        v0 = np.asarray(v0, float)
        env = env.with_v0(v0)
    with _frozen(target):
        lists = _draw(target, v0, int(n_draws))
    if (lists == lists[0]).all():
        return float(env.expected_reward(lists[0]))
    return float(np.mean(np.asarray(env.expected_reward(lists))))
