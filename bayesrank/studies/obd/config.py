"""The real-items study's configuration: scale, policies and environments.

Policies are a registry: adding one is one entry in :data:`POLICIES`. The study itself
runs in :mod:`bayesrank.studies.obd.study`, its report in :mod:`bayesrank.studies.obd.report`.

Example:
    >>> from bayesrank.studies.obd import config as obd_config
    >>> sorted(obd_config.POLICIES)
    ['Baseline', 'GenRankUCB', 'RankTS-Laplace', 'RankTS-NUTS', 'RankUCB']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from bayesrank._validate import check_int
from bayesrank.datasets.obd import obd_items
from bayesrank.policies.baseline import RankedBaseline
from bayesrank.policies.gen_ucb import GenRankUCB
from bayesrank.policies.ts import RankTS
from bayesrank.policies.ucb import RankUCB
from bayesrank.posteriors.laplace import LaplaceGLM
from bayesrank.simulation.env import RankingEnv

__all__ = [
    "FULL",
    "POLICIES",
    "QUICK",
    "Entry",
    "StudyConfig",
    "build_env",
    "policy_factories",
    "prior_scales",
    "refuse_bad_cfg",
]


class StudyConfig(NamedTuple):
    """Scale and settings of the study (JSON-able; stored in the results).

    Example:
        >>> cfg = StudyConfig(w_max=(0.0, 2.0), T=100, runs=2)
        >>> refuse_bad_cfg(cfg)
        >>> cfg.T, cfg.runs, cfg.d, QUICK.T, FULL.T
        (100, 2, 10, 300, 1500)
        >>> cfg._replace(runs=0).runs  # invalid: refuse_bad_cfg would raise ValueError
        0
    """

    campaign: str = "all"  # OBD campaign of the items and of the target click rates
    d: int | None = 10  # PCA dimensions of the item features (None: all 41)
    w_max: tuple[float, ...] = (0.0, 1.0, 5.0)  # w_l ~ U(-w_max, w_max)
    T: int = 1500  # rounds per run
    runs: int = 4  # independent runs per policy and w_max
    spread: float = 1.0  # sd of the items' own logit scores
    alpha: float = 0.5  # constant UCB width (RankUCB, GenRankUCB, baseline)
    prior_scale: float = 1.0  # prior sd of the GLM's item coefficients
    intercept_prior_scale: float = 10.0  # prior sd of the GLM's intercept
    steps_per_round: int = 2  # NUTS transitions per round
    num_warmup: int = 100  # NUTS (re-)adaptation transitions
    env_seed: int = 0  # seed of the semi-synthetic environments


QUICK = StudyConfig(w_max=(0.0, 5.0), T=300, runs=2)
FULL = StudyConfig()


class Entry(NamedTuple):
    """A policy of the study.

    Attributes:
        build: ``build(env, cfg) -> factory``, ``factory(seed) -> policy``.
        description: one line for the report.
        neighbour_aware: True if the policy models the previous item.
        linestyle: matplotlib line style in the figure.

    Example:
        >>> from bayesrank.policies.ucb import RankUCB
        >>> entry = Entry(
        ...     lambda env, cfg: lambda s: RankUCB(
        ...         items=env.items, w=env.w, v0=env.v0, alpha=cfg.alpha, seed=s
        ...     ),
        ...     "RankUCB, known w, width alpha",
        ...     linestyle="--",
        ... )
        >>> cfg = StudyConfig()
        >>> policy = entry.build(build_env(cfg, 1.0), cfg)(0)  # the factory of seed 0
        >>> type(policy).__name__, entry.neighbour_aware
        ('RankUCB', True)
        >>> POLICIES["Baseline"].neighbour_aware
        False
    """

    build: Callable
    description: str
    neighbour_aware: bool = True
    linestyle: str = "-"


def prior_scales(env, cfg: StudyConfig):
    """(p,) prior sds: ``prior_scale`` on the item features, ``intercept_prior_scale``
    on the intercept column (the semi-synthetic intercepts reach ``|b| ~ 12``).

    Example:
        >>> cfg = StudyConfig(d=3, prior_scale=0.5)
        >>> prior_scales(build_env(cfg, 0.0), cfg).tolist()  # 3 features, intercept
        [0.5, 0.5, 0.5, 10.0]
    """
    return np.r_[np.full(env.d - 1, cfg.prior_scale), cfg.intercept_prior_scale]


def _laplace_model(env, cfg: StudyConfig):
    # LaplaceGLM takes one prior scale for every coefficient, the intercept included
    return LaplaceGLM(link="logistic", prior_scale=cfg.prior_scale, n_max=cfg.T)


def _nuts_model(env, cfg: StudyConfig):
    import numpyro.distributions as dist

    from bayesrank.posteriors.nuts import BayesGLM  # deferred: numpyro

    return BayesGLM(
        link="logistic",
        prior=dist.Normal(0.0, prior_scales(env, cfg)),
        dim=env.d,
        n_max=cfg.T,
        steps_per_round=cfg.steps_per_round,
        num_warmup=cfg.num_warmup,
    )


#: the study's policies, in plotting order
POLICIES: dict[str, Entry] = {
    "RankTS-Laplace": Entry(
        lambda env, cfg: lambda s: RankTS(
            model=_laplace_model(env, cfg), items=env.items, w=env.w, v0=env.v0, seed=s
        ),
        "RankTS, known w, logistic GLM per position, Laplace approximation "
        "(LaplaceGLM: Newton MAP, Normal prior sd prior_scale on every coefficient, "
        "the intercept included)",
        linestyle=(0, (6, 1.5, 1, 1.5, 1, 1.5)),
    ),
    "RankTS-NUTS": Entry(
        lambda env, cfg: lambda s: RankTS(
            model=_nuts_model(env, cfg), items=env.items, w=env.w, v0=env.v0, seed=s
        ),
        "RankTS, known w, logistic GLM per position (Normal prior: sd prior_scale "
        "per item coefficient, intercept_prior_scale on the intercept), warm NUTS",
    ),
    "RankUCB": Entry(
        lambda env, cfg: lambda s: RankUCB(
            items=env.items, w=env.w, v0=env.v0, alpha=cfg.alpha, seed=s
        ),
        "RankUCB, known w, ridge (identity-link) model of the clicks, width alpha",
        linestyle="--",
    ),
    "GenRankUCB": Entry(
        lambda env, cfg: lambda s: GenRankUCB(
            items=env.items, L=env.L, v0=env.v0, alpha=cfg.alpha, seed=s
        ),
        "GenRankUCB, learns w, ridge (identity-link) model, width alpha",
        linestyle=":",
    ),
    "Baseline": Entry(
        lambda env, cfg: lambda s: RankedBaseline(
            items=env.items, L=env.L, v0=env.v0, alpha=cfg.alpha, seed=s
        ),
        "ranked bandits: LinUCB per position ignoring the previous item, width alpha",
        neighbour_aware=False,
        linestyle="-.",
    ),
}


def policy_factories(env, cfg: StudyConfig, names=None) -> dict:
    """``{name: factory(seed)}`` for :func:`bayesrank.simulate`.

    Example:
        >>> cfg = StudyConfig()
        >>> env = build_env(cfg, 1.0)
        >>> factories = policy_factories(env, cfg, ["RankUCB", "Baseline"])
        >>> sorted(factories), type(factories["Baseline"](0)).__name__
        (['Baseline', 'RankUCB'], 'RankedBaseline')
    """
    names = list(POLICIES) if names is None else list(names)
    for n in names:
        if n not in POLICIES:
            raise ValueError(f"names: unknown policy {n!r}; known: {list(POLICIES)}")
    return {n: POLICIES[n].build(env, cfg) for n in names}


def build_env(cfg: StudyConfig, w_max: float):
    """The semi-synthetic environment of one ``w_max`` (items reduced by PCA).

    Example:
        >>> import numpy as np
        >>> env = build_env(StudyConfig(), 1.0)
        >>> env.K, env.L, env.d  # 80 OBD items, 10 PCA features and an intercept
        (80, 3, 11)
        >>> bool(np.max(np.abs(env.w[1:])) <= 1.0)
        True
    """
    items = obd_items(cfg.campaign, d=cfg.d)
    return RankingEnv.semi_synthetic(
        items,
        L=3,
        link="logistic",
        w_max=w_max,
        campaign=cfg.campaign,
        spread=cfg.spread,
        seed=cfg.env_seed,
    )


def refuse_bad_cfg(cfg: StudyConfig) -> None:
    if not isinstance(cfg, StudyConfig):
        raise TypeError(f"cfg: expected a StudyConfig, got {type(cfg).__name__}")
    for name in ("T", "runs", "steps_per_round"):
        check_int(getattr(cfg, name), f"cfg.{name}", low=1)
    if not cfg.w_max or any(not np.isfinite(w) or w < 0 for w in cfg.w_max):
        raise ValueError(f"cfg.w_max: expected finite numbers >= 0, got {cfg.w_max!r}")

