"""The estimators :func:`bayesrank.ope.evaluate` knows by name: :data:`ESTIMATORS`,
each an :class:`~bayesrank.ope.protocol.Estimator` over one
:class:`~bayesrank.ope.protocol.EstimatorInputs`, and the checks that resolve a call's
``estimators`` (names or protocol objects).

A new built-in estimator is one class following the protocol (its ``estimate`` and
``bootstrap``) plus one line in :data:`ESTIMATORS`; an object following the protocol
runs without registration.

Example:
    >>> from bayesrank.ope.registry import ESTIMATORS, MODEL_ESTIMATORS
    >>> ESTIMATORS["pair_ips"].needs, MODEL_ESTIMATORS
    (('pair',), ('dm', 'pair_dr', 'cascade_dr'))
"""

from __future__ import annotations

import numpy as np

from bayesrank._validate import is_bool
from bayesrank.ope._common import Z95, Estimate
from bayesrank.ope.direct import dm_bootstrap, dm_estimate
from bayesrank.ope.ips import (
    _dr_parts,
    _dr_terms,
    _cdr_terms,
    _ips_parts,
    cascade_dr,
    cascade_ips,
    list_ips,
    pair_dr,
    pair_ips,
    position_ips,
)
from bayesrank.ope.protocol import EVENTS, PSCORE_OF, Estimator, EstimatorInputs

__all__ = ["CI_METHODS", "DEFAULT_ESTIMATORS", "ESTIMATORS", "MODEL_ESTIMATORS"]


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
        if getattr(m, "exam", None) is not None:  # feedback "cascade"
            est = m.exam.estimate()
        else:
            est = dm_estimate(m.D, m.coef, m.prec, m.feats, m.inv)
        if m.batch_of is None:
            return est
        # a Monte Carlo batch of draws: the mean predicted total of its lists (summed
        # as earlier versions did, so that mc_stderr is unchanged to the last bit)
        v = float(m.batch_values[m.batch_of])
        return Estimate(v, est.stderr, v - Z95 * est.stderr, v + Z95 * est.stderr)

    def bootstrap(self, inputs: EstimatorInputs, counts) -> np.ndarray:
        m = _model_of(inputs, self.name)  # refitted on every resample
        if getattr(m, "exam", None) is not None:
            return m.exam.bootstrap(m.ridge, counts)
        return dm_bootstrap(m.D, m.ridge, m.feats, m.inv, counts)


class _PairDR(Estimator):
    """:func:`pair_dr` with the reward model's predictions of the inputs (held fixed
    in the bootstrap, as Open Bandit Pipeline does)."""

    name = "pair_dr"
    needs = ("pair",)
    needs_reward_model = True
    self_normalisable = True

    def estimate(self, inputs: EstimatorInputs) -> Estimate:
        r, q = _examined_scale(inputs)
        return pair_dr(r, inputs.pi["pair"], inputs.pscore["pair"],
                       q_logged=q, q_target=inputs.q_target,
                       self_normalised=inputs.self_normalised)

    def bootstrap(self, inputs: EstimatorInputs, counts) -> np.ndarray:
        r, q = _examined_scale(inputs)
        M, f = _dr_parts(*_dr_terms(r, inputs.pi["pair"],
                                    inputs.pscore["pair"], q,
                                    inputs.q_target), inputs.self_normalised)
        return f(counts @ M / inputs.n)


class _CascadeDR(Estimator):
    """:func:`cascade_dr` with the reward model's Q terms from the target's draws
    (held fixed in the bootstrap, as pair_dr's)."""

    name = "cascade_dr"
    needs = ("prefix",)
    needs_reward_model = True
    self_normalisable = False

    def _terms(self, inputs):
        q_at, q_above = _model_of(inputs, self.name).cascade_terms()
        return _cdr_terms(inputs.rewards, inputs.pi["prefix"], inputs.pscore["prefix"],
                          q_at, q_above)

    def estimate(self, inputs: EstimatorInputs) -> Estimate:
        q_at, q_above = _model_of(inputs, self.name).cascade_terms()
        return cascade_dr(inputs.rewards, inputs.pi["prefix"], inputs.pscore["prefix"],
                          q_logged=q_at, q_expected=q_above)

    def bootstrap(self, inputs: EstimatorInputs, counts) -> np.ndarray:
        return counts @ self._terms(inputs).sum(axis=1) / inputs.n


def _examined_scale(inputs):
    """The rewards and logged predictions pair_dr corrects with: as given, or under
    feedback "cascade" each examined position's scaled by E_target / E_logged (the
    target's probability of examining the position over the logged list's, from the
    model), so that the correction estimates E_target (click - q) at the pair."""
    m = inputs.reward_model
    exam = getattr(m, "exam", None)
    if exam is None:
        return inputs.rewards, inputs.q_logged
    return inputs.rewards * exam.dr_scale, inputs.q_logged * exam.dr_scale


def _model_of(inputs, name):
    m = inputs.reward_model
    if m is None:
        raise ValueError(f"{name}: needs the fitted reward model (inputs.reward_model)")
    return m


#: name -> :class:`Estimator`: the built-in estimators :func:`evaluate` accepts by
#: name (each ``needs`` one event's probabilities; ``dm``, ``pair_dr`` and
#: ``cascade_dr`` read the reward model, :data:`MODEL_ESTIMATORS`).
ESTIMATORS = {
    "dm": _DirectMethod(),
    "list_ips": _IPSEstimator("list_ips", "list", list_ips),
    "position_ips": _IPSEstimator("position_ips", "position", position_ips),
    "cascade_ips": _IPSEstimator("cascade_ips", "prefix", cascade_ips),
    "pair_ips": _IPSEstimator("pair_ips", "pair", pair_ips),
    "pair_dr": _PairDR(),
    "cascade_dr": _CascadeDR(),
}
#: the estimators that fit the reward model (they need the item vectors)
MODEL_ESTIMATORS = tuple(k for k, e in ESTIMATORS.items() if e.needs_reward_model)
#: the default of :func:`evaluate`: every built-in estimator but ``cascade_dr`` (by name)
DEFAULT_ESTIMATORS = ("dm", "list_ips", "position_ips", "cascade_ips", "pair_ips", "pair_dr")
CI_METHODS = ("normal", "bootstrap")
_ATTRS = ("name", "needs", "needs_reward_model", "estimate", "bootstrap")


def _refuse_non_estimator(e) -> None:
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
    if not is_bool(e.needs_reward_model):
        raise TypeError(f"estimators: {e.name!r} has needs_reward_model "
                        f"{e.needs_reward_model!r}, expected a bool")
    for attr in ("estimate", "bootstrap"):
        if not callable(getattr(e, attr)):
            raise TypeError(f"estimators: {e.name!r}.{attr} is not callable")


def _as_estimators(estimators, log) -> list:
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
            _refuse_non_estimator(e)
        if e.name in seen:
            raise ValueError(f"estimators: {e.name!r} given twice (one row per estimator)")
        seen.add(e.name)
        for ev in e.needs:
            if PSCORE_OF[ev] not in log:
                raise ValueError(f"{PSCORE_OF[ev]}: missing from the log, needed by {e.name}")
        out.append(e)
    return out
