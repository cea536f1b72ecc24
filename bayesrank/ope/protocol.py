"""The estimator protocol of :func:`bayesrank.ope.evaluate`.

An estimator is an object with

* ``name``: its row in the result (distinct within one call);
* ``needs``: the events whose probabilities it reads, a tuple of :data:`EVENTS`
  (``"list"``, ``"position"``, ``"prefix"``, ``"pair"``): the log must hold the
  logger's propensity of each (``pscore_list``, ``pscore_position``,
  ``pscore_cascade``, ``pscore_pair``) and the target must give its probability;
* ``needs_reward_model``: whether it reads the reward model's predictions
  (``q_logged``, ``q_target``; :func:`evaluate` then fits the model on the log);
* ``estimate(inputs) -> Estimate`` and ``bootstrap(inputs, counts) -> (b,)``
  replicates, both of one :class:`EstimatorInputs`.

:class:`Estimator` is a base class with these defaults (no needs, no reward model, a
generic bootstrap that re-runs ``estimate`` on every resample); any object with the
five attributes works. ``self_normalisable = True`` says that the estimator reads
``inputs.self_normalised`` (the study then runs its ``_sn`` variant too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from bayesrank.ope._common import Estimate

__all__ = ["EVENTS", "PSCORE_OF", "Estimator", "EstimatorInputs"]

#: the events an estimator may need, in the order of :class:`TargetProbabilities`
EVENTS = ("list", "position", "prefix", "pair")
#: the log variable holding the logger's propensity of each event
PSCORE_OF = {
    "list": "pscore_list",
    "position": "pscore_position",
    "prefix": "pscore_cascade",
    "pair": "pscore_pair",
}


class EstimatorInputs(NamedTuple):
    """Everything an :class:`Estimator` reads, for the n rounds of one log.

    Attributes:
        rewards: (n, L) float rewards; NaN = position not observed.
        pscore: event -> the logger's propensities of the logged list's event, for
            every pscore variable of the log: "list" (n,), "position", "prefix",
            "pair" (n, L), in (0, 1].
        pi: event -> the target's probabilities of the same events, same shapes,
            in [0, 1] (from its Monte Carlo draws, or given as
            :class:`~bayesrank.ope.TargetProbabilities`).
        self_normalised: whether the self-normalised variant is asked for
            (``evaluate(..., self_normalised=True)``); estimators without one
            ignore it.
        q_logged: (n, L) the reward model's prediction of each logged position, or
            None when no estimator of the call needs the model.
        q_target: (n, L) its prediction at each position averaged over the
            target's lists in the round's context, or None.
        reward_model: the fitted reward model itself (internal; the direct method
            reads it for its stderr and refits it in its bootstrap), or None.

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import EstimatorInputs
        >>> x = EstimatorInputs(np.ones((3, 2)), {"list": np.full(3, 0.5)},
        ...                     {"list": np.array([1.0, 0.0, 1.0])})
        >>> x.n, x.take(np.array([0, 0])).pi["list"]
        (3, array([1., 1.]))
    """

    rewards: np.ndarray
    pscore: Mapping
    pi: Mapping
    self_normalised: bool = False
    q_logged: np.ndarray | None = None
    q_target: np.ndarray | None = None
    reward_model: object | None = None

    @property
    def n(self) -> int:
        """The number of rounds."""
        return int(np.shape(self.rewards)[0])

    def take(self, rows) -> EstimatorInputs:
        """The inputs of the rounds ``rows`` (an index array; repeats allowed), the
        reward model's predictions held fixed (``reward_model`` is dropped: it
        describes the whole log)."""
        rows = np.asarray(rows)

        def sub(a):
            return None if a is None else np.asarray(a)[rows]

        return EstimatorInputs(
            sub(self.rewards),
            {k: sub(v) for k, v in self.pscore.items()},
            {k: sub(v) for k, v in self.pi.items()},
            self.self_normalised,
            sub(self.q_logged),
            sub(self.q_target),
            None,
        )


class Estimator:
    """Base class of an off-policy estimator for :func:`bayesrank.ope.evaluate`.

    Subclasses set ``name`` and ``needs`` (and ``needs_reward_model``) and define
    ``estimate``; ``bootstrap`` defaults to re-running ``estimate`` on each
    resample of rounds (override it with a vectorised version when that is slow).

    Attributes:
        name: the estimator's row in :func:`evaluate`'s result.
        needs: the events it reads, from :data:`EVENTS`.
        needs_reward_model: whether it reads ``q_logged`` / ``q_target``.
        self_normalisable: whether it has a self-normalised variant (it reads
            ``inputs.self_normalised``).

    Examples:
        >>> import numpy as np
        >>> from bayesrank.ope import Estimate, Estimator, EstimatorInputs
        >>> class MeanReward(Estimator):  # the logger's own value: needs nothing
        ...     name = "on_policy"
        ...     def estimate(self, inputs):
        ...         v = np.nansum(inputs.rewards, axis=1)
        ...         se = v.std(ddof=1) / np.sqrt(len(v))
        ...         return Estimate(v.mean(), se, v.mean() - 2 * se, v.mean() + 2 * se)
        >>> x = EstimatorInputs(np.array([[1.0], [3.0]]), {}, {})
        >>> float(MeanReward().estimate(x).estimate)
        2.0
        >>> counts = np.array([[2.0, 0.0], [1.0, 1.0]])  # two resamples of 2 rounds
        >>> MeanReward().bootstrap(x, counts)
        array([1., 2.])
    """

    name: str = ""
    needs: tuple = ()
    needs_reward_model: bool = False
    self_normalisable: bool = False

    def estimate(self, inputs: EstimatorInputs) -> Estimate:
        """The :class:`~bayesrank.ope.Estimate` (estimate, stderr, ci_low, ci_high)."""
        raise NotImplementedError(f"{type(self).__name__}: define estimate(inputs)")

    def bootstrap(self, inputs: EstimatorInputs, counts) -> np.ndarray:
        """(b,) estimates on b resamples of the rounds: ``counts`` (b, n) holds how
        often each round appears in each resample (the reward model held fixed)."""
        counts = np.asarray(counts)
        idx = np.arange(inputs.n)
        return np.array([
            float(self.estimate(inputs.take(np.repeat(idx, c.astype(np.int64)))).estimate)
            for c in counts
        ])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
