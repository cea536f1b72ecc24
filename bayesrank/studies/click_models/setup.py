"""The click-model study's set-up: its scales, the item catalogue, the environments
built from it and the policies (a registry, with the reasons a policy cannot play an
environment).

Example:
    >>> from bayesrank.studies.click_models import setup
    >>> envs = setup.environments(setup.SCALES["quick"])
    >>> list(envs)
    ['Eq. 1', 'Eq. 1 cascade', 'PBM', 'cascade', 'DCM', 'DBN']
    >>> setup.skip_reason("PBMUCB", "cascade") is not None, setup.skip_reason("PBMUCB", "PBM")
    (True, None)
"""

from __future__ import annotations

import numpy as np
import numpyro.distributions as dist

from bayesrank._validate import check_int, check_seed
from bayesrank.policies.click.cascade_klucb import CascadeKLUCB
from bayesrank.policies.click.cascade_lin import CascadeLinTS, CascadeLinUCB
from bayesrank.policies.gen_ucb import GenRankUCB
from bayesrank.policies.click.pbm_ucb import PBMUCB
from bayesrank.policies.click.toprank import TopRank
from bayesrank.policies.ts import RankTS
from bayesrank.policies.ucb import RankUCB
from bayesrank.posteriors.laplace import LaplaceGLM
from bayesrank.posteriors.nuts import BayesGLM
from bayesrank.simulation.click import CascadeEnv, DBNEnv, DCMEnv, PBMEnv
from bayesrank.simulation.env import RankingEnv
from bayesrank.studies.obd.config import Entry  # the same registry entry as the OBD study

__all__ = ["POLICIES", "SCALES", "Entry", "catalogue", "environments",
           "policy_factories", "skip_reason"]

#: study scale -> settings. K items with d features (the last a constant 1), lists of
#: L, T rounds, ``runs`` runs, ``points`` checkpoint rounds of the regret curves;
#: RankTS-NUTS runs ``nuts_T`` rounds and ``nuts_runs`` runs (it is not vmapped).
SCALES = {
    "quick": {"K": 12, "d": 4, "L": 3, "T": 150, "runs": 2, "points": 15,
              "nuts_T": 30, "nuts_runs": 1},
    "full": {"K": 50, "d": 5, "L": 4, "T": 3000, "runs": 10, "points": 60,
             "nuts_T": 600, "nuts_runs": 3},
}
#: the catalogue's generator: logit sd ``SPREAD`` around ``INTERCEPT``; Eq. 1's
#: w_l ~ U(-W_MAX, W_MAX); the models' per-position parameters
SPREAD, INTERCEPT, W_MAX = 1.0, -1.5, 1.0
CONTINUATION, GAMMA, SATISFACTION = 0.5, 0.9, (0.3, 0.9)
#: RankUCB's and GenRankUCB's constant width (as in the OBD study); the GLM priors' sd
ALPHA, PRIOR_SCALE, W_PRIOR_SD = 0.5, 2.0, 5.0


def catalogue(K: int, d: int, seed: int = 0):
    """``(items (K, d), theta (d,))``: items ``(v', 1)`` with v' ~ N(0, I / (d - 1)),
    theta = ``(SPREAD sqrt(d - 1) u, INTERCEPT)`` with u a uniform unit vector, so an
    item's logit ``items @ theta`` is ``INTERCEPT`` plus N(0, SPREAD^2).

    Example:
        >>> V, theta = catalogue(5, 3)
        >>> V.shape, theta.shape, V[:, -1].tolist()
        ((5, 3), (3,), [1.0, 1.0, 1.0, 1.0, 1.0])
    """
    K, d = check_int(K, "K", low=1), check_int(d, "d", low=2)
    rng = np.random.default_rng(check_seed(seed))
    V = np.c_[rng.normal(size=(K, d - 1)) / np.sqrt(d - 1), np.ones(K)]
    u = rng.normal(size=d - 1)
    theta = np.r_[SPREAD * np.sqrt(d - 1) * u / np.linalg.norm(u), INTERCEPT]
    return V, theta


def environments(cfg: dict, seed: int = 0) -> dict:
    """The six environments of one catalogue, by name (see the package docstring).

    Args:
        cfg: a scale (:data:`SCALES`): K, d and L are read.
        seed: the catalogue's seed (and that of Eq. 1's w and the DBN's satisfaction).

    Returns:
        ``{name: environment}``: "Eq. 1" (``RankingEnv``, logistic clicks, theta at
        every position, w_l ~ U(-W_MAX, W_MAX)), "Eq. 1 cascade" (the same through a
        cascade), "PBM" (examination 1/l), "cascade", "DCM" (continuation
        ``CONTINUATION``) and "DBN" (satisfaction ~ U(SATISFACTION), gamma ``GAMMA``).
    """
    K, d, L = cfg["K"], cfg["d"], cfg["L"]
    V, theta = catalogue(K, d, seed)
    rng = np.random.default_rng([check_seed(seed), 1])
    w = rng.uniform(-W_MAX, W_MAX, size=L)
    sat = rng.uniform(*SATISFACTION, size=K)
    Th = np.tile(theta, (L, 1))
    return {
        "Eq. 1": RankingEnv(V, Th, w, link="logistic"),
        "Eq. 1 cascade": RankingEnv(V, Th, w, link="logistic", feedback="cascade"),
        "PBM": PBMEnv.from_features(V, theta, 1.0 / np.arange(1, L + 1)),
        "cascade": CascadeEnv.from_features(V, theta, L),
        "DCM": DCMEnv.from_features(V, theta, np.full(L, CONTINUATION)),
        "DBN": DBNEnv.from_features(V, theta, sat, GAMMA, L),
    }


def _w(env) -> np.ndarray:
    """The known w a policy is given: Eq. 1's own, 0 for a click model (no
    neighbour effect)."""
    return np.asarray(env.w, float) if isinstance(env, RankingEnv) else np.zeros(env.L)


def _nuts(env, cfg):
    return BayesGLM(link="logistic", prior_scale=PRIOR_SCALE, n_max=cfg["nuts_T"],
                    steps_per_round=2, num_warmup=100)


def _latent_w():
    return dist.Normal(0.0, W_PRIOR_SD)


#: the study's policies, in plotting order
POLICIES: dict[str, Entry] = {
    "RankTS": Entry(
        lambda env, cfg: lambda s: RankTS(items=env.items, w=_w(env), distinct=True,
                                          seed=s),
        "RankTS, known w, Gaussian linear model (learnt prior and noise scales)"),
    "RankTS-Laplace": Entry(
        lambda env, cfg: lambda s: RankTS(
            model=LaplaceGLM(link="logistic", prior_scale=PRIOR_SCALE, n_max=cfg["T"]),
            items=env.items, w=_w(env), distinct=True, seed=s),
        "RankTS, known w, logistic GLM per position, Laplace approximation",
        linestyle="-."),
    "RankTS-NUTS": Entry(
        lambda env, cfg: lambda s: RankTS(model=_nuts(env, cfg), items=env.items,
                                          w=_w(env), distinct=True, seed=s),
        "RankTS, known w, logistic GLM per position, warm NUTS (fewer rounds and runs)",
        linestyle=(0, (1, 1))),
    "RankTS-latent-w": Entry(
        lambda env, cfg: lambda s: RankTS(items=env.items, L=env.L, w=_latent_w(),
                                          distinct=True, seed=s),
        f"RankTS, w ~ Normal(0, {W_PRIOR_SD:g}) learnt (LatentW), Gaussian model",
        linestyle="--"),
    "RankUCB": Entry(
        lambda env, cfg: lambda s: RankUCB(items=env.items, w=_w(env), alpha=ALPHA,
                                           distinct=True, seed=s),
        f"RankUCB, known w, ridge model, width alpha = {ALPHA:g}", linestyle="--"),
    "GenRankUCB": Entry(
        lambda env, cfg: lambda s: GenRankUCB(items=env.items, L=env.L, alpha=ALPHA,
                                              distinct=True, seed=s),
        f"GenRankUCB, learns w (2d relaxation), ridge model, width {ALPHA:g}",
        linestyle=":"),
    "CascadeKLUCB": Entry(
        lambda env, cfg: lambda s: CascadeKLUCB(env.K, L=env.L),
        "CascadeKL-UCB (Kveton et al. 2015), one KL-UCB index per item",
        neighbour_aware=False),
    "CascadeLinTS": Entry(
        lambda env, cfg: lambda s: CascadeLinTS(env.items, L=env.L, seed=s),
        "CascadeLinTS (Zong et al. 2016), linear attraction over the item vectors",
        neighbour_aware=False, linestyle="-."),
    "CascadeLinUCB": Entry(
        lambda env, cfg: lambda s: CascadeLinUCB(env.items, L=env.L),
        "CascadeLinUCB (Zong et al. 2016), width c = 1", neighbour_aware=False,
        linestyle="--"),
    "PBMUCB": Entry(
        lambda env, cfg: lambda s: PBMUCB(env.K, L=env.L, examination=env.examination),
        "PBM-UCB (Lagrée et al. 2016), given the true examination probabilities",
        neighbour_aware=False, linestyle=":"),
    "TopRank": Entry(
        lambda env, cfg: lambda s: TopRank(env.K, L=env.L, horizon=cfg["T"], seed=s),
        "TopRank (Lattimore et al. 2018), horizon T", neighbour_aware=False,
        linestyle=(0, (3, 1, 1, 1))),
}


def skip_reason(policy: str, env_name: str) -> str | None:
    """Why ``policy`` cannot play environment ``env_name`` (None: it can)."""
    if policy not in POLICIES:
        raise ValueError(f"policy: unknown {policy!r}; known: {list(POLICIES)}")
    if policy == "PBMUCB" and env_name != "PBM":
        return ("PBM-UCB needs the examination probability of each position, which "
                "only the PBM has (the other models' examination depends on the list)")
    return None


def policy_factories(env, env_name: str, cfg: dict, names) -> tuple[dict, dict]:
    """``({name: factory(seed)}, {name: reason skipped})`` for one environment."""
    run, skipped = {}, {}
    for n in names:
        why = skip_reason(n, env_name)
        if why is None:
            run[n] = POLICIES[n].build(env, cfg)
        else:
            skipped[n] = why
    return run, skipped
