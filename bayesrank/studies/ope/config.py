"""The OPE validation study's configuration: grid, loggers, estimators, checks.

The study itself runs in :mod:`bayesrank.studies.ope.study`. Loggers are a registry
(:data:`LOGGERS`); the estimators are every entry of :data:`bayesrank.ope.ESTIMATORS`
at run time, each with its self-normalised variant where the estimator has one
(:func:`estimator_variants`), called through the
:class:`bayesrank.ope.Estimator` protocol.

Example:
    >>> from bayesrank.studies.ope import config as ope_config
    >>> sorted(ope_config.LOGGERS)
    ['epsilon_greedy', 'uniform']
    >>> ope_config.refuse_bad_cfg(ope_config.QUICK)
    >>> [v.label for v in ope_config.estimator_variants() if v.name == "pair_ips"]
    ['pair_ips', 'pair_ips_sn']
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from bayesrank import ope
from bayesrank._validate import check_int, check_real, is_bool
from bayesrank.datasets.obd import CAMPAIGNS
from bayesrank.ope import EpsilonGreedyLogger, UniformLogger
from bayesrank.simulation.env import RankingEnv

__all__ = [
    "FULL",
    "LOGGERS",
    "QUICK",
    "FixedListEpsilonGreedy",
    "LoggerEntry",
    "OPEStudyConfig",
    "Variant",
    "build_env",
    "build_logger",
    "estimator_variants",
    "greedy_list",
    "refuse_bad_cfg",
]


class OPEStudyConfig(NamedTuple):
    """Scale and settings of the study (JSON-able; stored in the results).

    Example:
        >>> cfg = OPEStudyConfig(K=(5,), L=(2,), n=(100,), logs=2, ts_K=0,
        ...                      obd_campaigns=())
        >>> refuse_bad_cfg(cfg)
        >>> cfg.loggers, QUICK.n
        (('uniform', 'epsilon_greedy'), (1000, 3000, 10000))
    """

    K: tuple[int, ...] = (20, 100)  # catalogue sizes
    L: tuple[int, ...] = (3, 5)  # list lengths
    w_max: tuple[float, ...] = (0.0, 10.0)  # w_l ~ U(-w_max, w_max); 0: w = 0 exactly
    n: tuple[int, ...] = (1_000, 10_000, 100_000)  # rounds per log
    logs: int = 100  # independent logs per cell
    loggers: tuple[str, ...] = ("uniform", "epsilon_greedy")
    epsilon: float = 0.2  # exploration of the epsilon-greedy logger
    d: int = 10  # feature dimension of the paper's generator
    env_seed: int = 0  # seed of RankingEnv.paper (the same items/theta for every w_max)
    model_max_n: int = 100_000  # reward-model estimators (dm, pair_dr) up to this n
    ts_K: int = 20  # the Thompson-sampling target's cell (ts_K = 0: no such section)
    ts_L: int = 3
    ts_n: int = 10_000  # rounds per log
    ts_logs: int = 50  # logs per (w_max, logger)
    ts_fit_rounds: int = 200  # uniform rounds the RankTS target is fitted on
    ts_draws: int = 1_000  # Monte Carlo draws per log for the target's probabilities
    ts_truth_draws: int = 100_000  # draws for the target's (Monte Carlo) true value
    obd_campaigns: tuple[str, ...] = ("all", "men", "women")  # the OBD section


QUICK = OPEStudyConfig(
    n=(1_000, 3_000, 10_000),
    logs=30,
    model_max_n=3_000,
    ts_n=2_000,
    ts_logs=20,
    ts_truth_draws=50_000,
)
FULL = OPEStudyConfig()


class LoggerEntry(NamedTuple):
    """A logging policy of the study.

    Attributes:
        build: ``build(env, cfg) -> logger`` (a :mod:`bayesrank.ope` logger with
            ``sample`` and exact ``propensities``).
        description: one line for the report.
    """

    build: Callable
    description: str


def build_env(cfg: OPEStudyConfig, K: int, L: int, w_max: float):
    """The cell's environment: ``RankingEnv.paper(seed=cfg.env_seed, K, L, d, w_max)``
    (identity link, Gaussian(1) noise). The generator draws items and theta before
    w, so the w_max = 0 and w_max > 0 environments share items and theta and
    differ only in w (exactly 0 for w_max = 0).

    Example:
        >>> env = build_env(QUICK, 5, 3, 0.0)
        >>> env.K, env.L, float(abs(env.w).max())
        (5, 3, 0.0)
    """

    return RankingEnv.paper(seed=cfg.env_seed, K=K, L=L, d=cfg.d, w_max=float(w_max))


def greedy_list(env) -> np.ndarray:
    """(L,) the neighbour-blind greedy list: per position, the item maximising
    <theta_l, v_j> (the mean reward when w = 0; with w = 0 it is the best list).

    Example:
        >>> greedy_list(build_env(QUICK, 5, 3, 10.0)).shape
        (3,)
    """
    own = np.asarray(env.items, float) @ np.asarray(env.theta, float).T  # (K, L)
    return np.argmax(own, axis=0).astype(np.int64)


class FixedListEpsilonGreedy(EpsilonGreedyLogger):
    """:class:`bayesrank.ope.EpsilonGreedyLogger` around one fixed list ``base``.

    For logs whose rounds share one context the base list is broadcast instead of
    being looked up per distinct v0 row (``np.unique`` over 10^5 rows is otherwise
    the slowest step); sampling and propensities are the library logger's code.

    Args:
        base: (L,) int, the list shown with probability 1 - epsilon.
        K: the number of items.
        epsilon: the exploration probability.

    Example:
        >>> lg = FixedListEpsilonGreedy([0, 1], K=4, epsilon=0.5)
        >>> lg.propensities(np.array([[0, 1], [2, 1]]), np.zeros((2, 3)))["pscore_list"]
        array([0.53125, 0.03125])
    """

    def __init__(self, base, K: int, epsilon: float):
        self.base = np.asarray(base, np.int64).reshape(-1)
        super().__init__(lambda v0: self.base, K, self.base.shape[0], epsilon)

    def base_lists(self, v0s) -> np.ndarray:
        """(n, L) the base list for each of the n rows of v0s."""
        return np.broadcast_to(self.base, (np.shape(v0s)[0], self.L))


def _uniform(env, cfg):
    return UniformLogger(env.K, env.L)


def _epsilon_greedy(env, cfg):
    return FixedListEpsilonGreedy(greedy_list(env), env.K, cfg.epsilon)


#: the study's logging policies
LOGGERS: dict[str, LoggerEntry] = {
    "uniform": LoggerEntry(
        _uniform, "every position uniform over the K items, independently (1/K^L)"
    ),
    "epsilon_greedy": LoggerEntry(
        _epsilon_greedy,
        "the neighbour-blind greedy list (per position argmax <theta_l, v_j>) with "
        "probability 1 - epsilon, else a uniform list",
    ),
}


def build_logger(name: str, env, cfg: OPEStudyConfig):
    """The logger ``name`` of :data:`LOGGERS` for ``env``.

    Example:
        >>> build_logger("uniform", build_env(QUICK, 5, 3, 0.0), QUICK)
        UniformLogger(K=5, L=3)
    """
    if name not in LOGGERS:
        raise ValueError(f"logger: unknown {name!r}; expected one of {list(LOGGERS)}")
    return LOGGERS[name].build(env, cfg)


class Variant(NamedTuple):
    """One estimator of the study: a registry entry, plain or self-normalised.

    Attributes:
        label: the name in the results (``"pair_ips"``, ``"pair_ips_sn"``).
        name: its key in :data:`bayesrank.ope.ESTIMATORS`.
        self_normalised: the self-normalised variant.
        model: True when the estimator reads the reward model
            (``needs_reward_model``); the study runs those only up to
            ``cfg.model_max_n`` rounds.
        estimator: the :class:`bayesrank.ope.Estimator` itself; the study calls its
            ``estimate`` on each log's :class:`bayesrank.ope.EstimatorInputs`.
    """

    label: str
    name: str
    self_normalised: bool
    model: bool = False
    estimator: object = None


def estimator_variants(registry=None) -> list[Variant]:
    """Every estimator of the registry, in registry order, each followed by its
    self-normalised variant when it has one (``self_normalisable``).

    Args:
        registry: name -> :class:`bayesrank.ope.Estimator`; default
            :data:`bayesrank.ope.ESTIMATORS`.

    Example:
        >>> from bayesrank.ope import Estimator
        >>> class X(Estimator):
        ...     name, needs, self_normalisable = "x", ("list",), True
        >>> [(v.label, v.model) for v in estimator_variants({"x": X()})]
        [('x', False), ('x_sn', False)]
    """

    if registry is None:
        registry = ope.ESTIMATORS
    out = []
    for name, est in registry.items():
        model = bool(est.needs_reward_model)
        out.append(Variant(name, name, False, model, est))
        if getattr(est, "self_normalisable", False):
            out.append(Variant(f"{name}_sn", name, True, model, est))
    return out


def _int_tuple(cfg, name: str, low: int) -> None:
    v = getattr(cfg, name)
    if not isinstance(v, tuple) or not v:
        raise ValueError(f"cfg.{name}: expected a non-empty tuple, got {v!r}")
    for x in v:
        check_int(x, f"cfg.{name}", low=low)
    if len(set(v)) != len(v):
        raise ValueError(f"cfg.{name}: expected distinct values, got {v!r}")


def _int(cfg, name: str, low: int) -> None:
    check_int(getattr(cfg, name), f"cfg.{name}", low=low)


def refuse_bad_cfg(cfg: OPEStudyConfig) -> None:
    """Raise ValueError/TypeError naming the first bad field (``cfg.<field>: ...``).

    Example:
        >>> refuse_bad_cfg(QUICK._replace(logs=1))
        Traceback (most recent call last):
        ...
        ValueError: cfg.logs: expected an integer >= 2, got 1
    """
    if not isinstance(cfg, OPEStudyConfig):
        raise TypeError(f"cfg: expected an OPEStudyConfig, got {type(cfg).__name__}")
    _int_tuple(cfg, "K", 1)
    _int_tuple(cfg, "L", 1)
    _int_tuple(cfg, "n", 2)
    w = cfg.w_max
    if (
        not isinstance(w, tuple)
        or not w
        or any(is_bool(x) or not isinstance(x, numbers.Real) for x in w)
        or any(not np.isfinite(x) or x < 0 for x in w)
        or len(set(w)) != len(w)
    ):
        raise ValueError(f"cfg.w_max: expected distinct finite numbers >= 0, got {w!r}")
    _int(cfg, "logs", 2)
    if not isinstance(cfg.loggers, tuple) or not cfg.loggers:
        raise ValueError(
            f"cfg.loggers: expected a non-empty tuple, got {cfg.loggers!r}"
        )
    for name in cfg.loggers:
        if name not in LOGGERS:
            raise ValueError(
                f"cfg.loggers: unknown {name!r}; expected names from {list(LOGGERS)}"
            )
    if len(set(cfg.loggers)) != len(cfg.loggers):
        raise ValueError(f"cfg.loggers: expected distinct names, got {cfg.loggers!r}")
    check_real(cfg.epsilon, "cfg.epsilon", low=0, high=1, inclusive="right")
    _int(cfg, "d", 2)
    _int(cfg, "env_seed", 0)
    _int(cfg, "model_max_n", 0)
    _int(cfg, "ts_K", 0)
    if cfg.ts_K:
        for name, low in (
            ("ts_L", 1),
            ("ts_n", 2),
            ("ts_logs", 2),
            ("ts_fit_rounds", 1),
            ("ts_draws", 2),
            ("ts_truth_draws", 2),
        ):
            _int(cfg, name, low)
    camps = cfg.obd_campaigns
    if not isinstance(camps, tuple) or any(c not in CAMPAIGNS for c in camps):
        raise ValueError(
            f"cfg.obd_campaigns: expected a tuple of names from {CAMPAIGNS}, got "
            f"{camps!r}"
        )
