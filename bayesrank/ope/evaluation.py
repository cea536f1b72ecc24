"""Off-policy evaluation of one target from one log: :func:`evaluate`.

It checks the log and the target (a policy, or its probabilities of the logged
lists' events, :mod:`.target`), resolves the estimators (:mod:`.registry`), fits the
reward model when one needs it (:mod:`.reward_model`), computes the target's
probabilities once (with their Monte Carlo batches), runs every estimator on the same
:class:`~bayesrank.ope.protocol.EstimatorInputs` and, for ``ci="bootstrap"``, on
shared resamples of the rounds (:mod:`.bootstrap`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr

from bayesrank._validate import (
    check_array,
    check_bool,
    check_int,
    check_real,
    check_seed,
)
from bayesrank.ope.bootstrap import percentile_interval, resample_counts
from bayesrank.ope.ips import _valid_probs
from bayesrank.ope.log import check_log
from bayesrank.ope.protocol import EVENTS, PSCORE_OF, EstimatorInputs
from bayesrank.ope.registry import (
    CI_METHODS,
    DEFAULT_ESTIMATORS,
    ESTIMATORS,
    _as_estimators,
)
from bayesrank.ope.log import examination_of
from bayesrank.ope.reward_model import _context_of, _items_for, fit_inputs_model
from bayesrank.ope.target import (
    TargetProbabilities,
    n_batches_of,
    refuse_foreign_items,
    refuse_log_outside_target,
    target_probabilities,
)

__all__ = ["evaluate"]


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
        a = check_array(v, f"target.{ev}", finite=None)
        shape = (n,) if ev == "list" else (n, L)
        if a.shape != shape:
            raise ValueError(f"target.{ev}: expected shape {shape} (the log's rounds), "
                             f"got {a.shape}")
        out[ev] = _valid_probs(a, f"target.{ev}", pscore=False)
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
            policy, evaluated as a pure function of a copy of its state and round
            counter, ``select_batch_at``: it is never changed; a log that names no
            catalogue, no ``K`` and no ``items``, must show only indices below the
            target's ``K`` when it has one, as ``target.fit(log)`` requires, else
            a ValueError names ``lists``); or the target's precomputed
            probabilities of the logged lists' events: a
            :class:`TargetProbabilities` or a mapping with keys from "list",
            "position", "prefix" (or "cascade", as :func:`target_probabilities`
            names it), "pair". With probabilities the
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
        refuse_log_outside_target(log, target)
    given = _given_probabilities(target, log) if kind == "probabilities" else None
    if given is not None and estimators is DEFAULT_ESTIMATORS:
        estimators = tuple(k for k in DEFAULT_ESTIMATORS
                           if not ESTIMATORS[k].needs_reward_model
                           and set(ESTIMATORS[k].needs) <= set(given))
        if not estimators:
            raise ValueError(f"target: the given probabilities ({sorted(given)}) allow none "
                             "of the default estimators; name them in estimators=")
    ests = _as_estimators(estimators, log)
    self_normalised = check_bool(self_normalised, "self_normalised")
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
            refuse_foreign_items(draws.lists, items.shape[0])
        B = n_batches_of(draws, n_batches)
        model = fit_inputs_model(log["lists"].values, rewards, log["v0"].values, draws,
                                 items, ridge, B, context,
                                 **examination_of(log)) if needs_model else None
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
