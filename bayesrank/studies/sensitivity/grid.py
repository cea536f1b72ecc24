"""The grid of a prior-sensitivity sweep: prior families, environments and cells.

A sweep crosses every environment of an :class:`EnvSpec` grid with every prior of one
or more named prior blocks. Each (prior, environment) pair is a :class:`Cell`; RankTS
plays it over several seeds.

Prior families (``family``) and their hyper-parameters:

    gaussian                 GaussianLinear: theta ~ N(location 1, Sigma), known noise
                             ``noise_scale`` (set it unlike the environment's noise sd
                             for a misspecified noise scale). Exact, vmapped.
    gaussian_unknown_noise   GaussianLinearUnknownNoise: Normal-Inverse-Gamma with
                             ``a0``, ``b0``; Sigma is relative to the noise variance.
    gaussian_learnt          GaussianLinear with learnt scales (the default):
                             theta ~ N(location 1, g^2 s^2 I), g under the
                             ``hyperprior`` ("half_cauchy", "half_normal",
                             "log_normal") of scale ``hyper_scale``, s under
                             Jeffreys' prior. Exact; one cell at a time, runs vmapped.
    normal, student_t,       BayesGLM (identity link) with the NumPyro prior
    laplace, cauchy          ``dist.<Family>(location, scale)`` i.i.d. per coordinate
                             (``df`` for student_t): heavy tails, sampled by NUTS.

``Sigma = scale^2 ((1 - correlation) I + correlation 1 1^T)`` (equicorrelated; the
Gaussian families only).

The conjugate families also take a prior on the dependency weights: ``w_prior`` is
``"known"`` (the default: RankTS is given the environment's w) or ``"normal"``,
``"laplace"``, ``"cauchy"`` with ``w_location`` and ``w_scale``: RankTS then learns w
jointly with theta (``RankTS(w=dist.<Family>(w_location, w_scale))``, exact collapsed
posterior of :class:`bayesrank.posteriors.LatentW`), one cell at a time, runs vmapped. Environments are the paper's generator
(:meth:`bayesrank.RankingEnv.paper`) with the identity link and Gaussian noise.

Example:
    >>> prior = PriorSpec(name="wrong", family="gaussian", location=-1.0, scale=0.05)
    >>> prior.is_conjugate
    True
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from bayesrank.model.noise import Gaussian
from bayesrank.posteriors.conjugate import GaussianLinear, GaussianLinearUnknownNoise
from bayesrank.simulation.env import RankingEnv

__all__ = [
    "CONJUGATE_FAMILIES",
    "HYPERPRIORS",
    "LEARNT_FAMILIES",
    "NUTS_FAMILIES",
    "PRIOR_FAMILIES",
    "PRIOR_KEYS",
    "W_PRIOR_FAMILIES",
    "Cell",
    "EnvSpec",
    "PriorSpec",
    "build_model",
    "conjugate_hyper",
]

CONJUGATE_FAMILIES = ("gaussian", "gaussian_unknown_noise")
#: Closed-form families whose scales are learnt (one cell at a time, runs vmapped).
LEARNT_FAMILIES = ("gaussian_learnt",)
#: Hyperpriors of g (theta's prior sd over the noise sd) for ``gaussian_learnt``.
HYPERPRIORS = ("half_cauchy", "half_normal", "log_normal")
NUTS_FAMILIES = ("normal", "student_t", "laplace", "cauchy")
#: The prior families (the conjugate "gaussian" and "gaussian_unknown_noise", and the
#: NUTS families "normal", "student_t", "laplace" and "cauchy").
PRIOR_FAMILIES = CONJUGATE_FAMILIES + LEARNT_FAMILIES + NUTS_FAMILIES
#: Priors on w: "known" (the environment's w is given) or a NumPyro family.
W_PRIOR_FAMILIES = ("known", "normal", "laplace", "cauchy")
W_KEYS = ("w_prior", "w_location", "w_scale")

#: Hyper-parameters each family accepts (besides ``family`` itself).
PRIOR_KEYS = {
    "gaussian": ("location", "scale", "correlation", "noise_scale", *W_KEYS),
    "gaussian_unknown_noise": ("location", "scale", "correlation", "a0", "b0",
                               *W_KEYS),
    "gaussian_learnt": ("location", "hyperprior", "hyper_scale", *W_KEYS),
    "normal": ("location", "scale", "noise_scale", "nuts"),
    "student_t": ("location", "scale", "df", "noise_scale", "nuts"),
    "laplace": ("location", "scale", "noise_scale", "nuts"),
    "cauchy": ("location", "scale", "noise_scale", "nuts"),
}

#: Warm-NUTS options used in sweeps unless a prior block's ``nuts`` table sets them.
NUTS_DEFAULTS = {
    "num_warmup": 50,
    "steps_per_round": 2,
    "max_tree_depth": 5,
    "readapt_start": 10,
    "readapt_growth": 4.0,
}
NUTS_OPTION_KEYS = (
    "num_warmup",
    "steps_per_round",
    "max_tree_depth",
    "readapt_start",
    "readapt_growth",
    "target_accept_prob",
    "dense_mass",
    "refit_every",
)


@dataclass(frozen=True)
class EnvSpec:
    """One environment of the grid: the paper's generator with Gaussian noise.

    Attributes:
        K: items; L: positions; d: feature dimension; w_max: ``|w_l|`` bound;
        noise_sd: the environment's reward-noise sd; seed: the generator's seed.

    Example:
        >>> from bayesrank.studies.sensitivity import EnvSpec
        >>> env = EnvSpec(K=5, L=2, d=3).build()
        >>> env.K, env.L, env.d
        (5, 2, 3)
    """

    K: int = 10
    L: int = 4
    d: int = 5
    w_max: float = 10.0
    noise_sd: float = 1.0
    seed: int = 0

    def build(self):
        """The :class:`bayesrank.RankingEnv` of this spec."""
        return RankingEnv.paper(
            seed=self.seed,
            K=self.K,
            L=self.L,
            d=self.d,
            w_max=self.w_max,
            link="identity",
            noise=Gaussian(self.noise_sd),
        )


@dataclass(frozen=True)
class PriorSpec:
    """One prior of the grid (see the module docstring for the families).

    Attributes:
        name: the prior block it came from (``[priors.<name>]`` in the TOML file).
        family: one of :data:`PRIOR_FAMILIES`.
        location: prior mean (or location) of every coordinate of theta.
        scale: prior sd (or scale) of every coordinate.
        correlation: equicorrelation of the Gaussian families, in [0, 1).
        noise_scale: the noise sd the model assumes (all but gaussian_unknown_noise).
        df: Student-t degrees of freedom.
        a0, b0: inverse-gamma shape and rate (gaussian_unknown_noise).
        nuts: warm-NUTS options as sorted (key, value) pairs (NUTS families).
        w_prior: "known" or the family of the prior on w (conjugate families).
        w_location, w_scale: that prior's location and scale.
        hyperprior, hyper_scale: the hyperprior of g and its scale (gaussian_learnt).

    Example:
        >>> from bayesrank.studies.sensitivity import PriorSpec
        >>> PriorSpec(name="narrow", location=-1.0, scale=0.05).describe()
        'narrow: gaussian(location=-1, scale=0.05, correlation=0, noise_scale=1)'
    """

    name: str
    family: str = "gaussian"
    location: float = 0.0
    scale: float = 1.0
    correlation: float = 0.0
    noise_scale: float = 1.0
    df: float = 3.0
    a0: float = 2.0
    b0: float = 1.0
    nuts: tuple = field(default_factory=tuple)
    w_prior: str = "known"
    w_location: float = 0.0
    w_scale: float = 5.0
    hyperprior: str = "half_cauchy"
    hyper_scale: float = 1.0

    def hyperprior_distribution(self):
        """The NumPyro hyperprior of g (``gaussian_learnt``)."""
        import numpyro.distributions as dist

        s = float(self.hyper_scale)
        if self.hyperprior == "half_cauchy":
            return dist.HalfCauchy(s)
        if self.hyperprior == "half_normal":
            return dist.HalfNormal(s)
        if self.hyperprior == "log_normal":
            return dist.LogNormal(0.0, s)
        raise ValueError(
            f"hyperprior: expected one of {list(HYPERPRIORS)}, got {self.hyperprior!r}")

    @property
    def is_conjugate(self) -> bool:
        """True for the closed-form families with w given (vmapped over the grid)."""
        return self.family in CONJUGATE_FAMILIES and not self.latent_w

    @property
    def latent_w(self) -> bool:
        """True when w is learned (a prior on w instead of the environment's w)."""
        return self.w_prior != "known"

    def w_distribution(self):
        """The NumPyro prior on w (batch shape ()), or None when w is known."""
        import numpyro.distributions as dist

        if not self.latent_w:
            return None
        cls = {"normal": dist.Normal, "laplace": dist.Laplace,
               "cauchy": dist.Cauchy}.get(self.w_prior)
        if cls is None:
            raise ValueError(
                f"w_prior: expected one of {list(W_PRIOR_FAMILIES)}, got {self.w_prior!r}"
            )
        return cls(float(self.w_location), float(self.w_scale))

    def nuts_options(self, T: int) -> dict:
        """Options for :class:`bayesrank.posteriors.nuts.BayesGLM` (buffer = T)."""
        return {**NUTS_DEFAULTS, **dict(self.nuts), "n_max": int(T)}

    def covariance(self, d: int) -> np.ndarray:
        """(d, d) prior covariance of the Gaussian families."""
        rho = float(self.correlation)
        corr = (1.0 - rho) * np.eye(d) + rho * np.ones((d, d))
        return float(self.scale) ** 2 * corr

    def numpyro_prior(self):
        """The scalar NumPyro distribution of one coordinate (NUTS families)."""
        import numpyro.distributions as dist

        loc, scale = float(self.location), float(self.scale)
        if self.family == "normal":
            return dist.Normal(loc, scale)
        if self.family == "student_t":
            return dist.StudentT(float(self.df), loc, scale)
        if self.family == "laplace":
            return dist.Laplace(loc, scale)
        if self.family == "cauchy":
            return dist.Cauchy(loc, scale)
        raise ValueError(f"family: {self.family!r} is not a NumPyro (NUTS) family")

    def describe(self) -> str:
        """A short label naming the hyper-parameters the family uses."""
        keys = [k for k in PRIOR_KEYS[self.family] if k not in ("nuts", *W_KEYS)]
        parts = ", ".join(f"{k}={v}" if isinstance(v := getattr(self, k), str)
                          else f"{k}={v:g}" for k in keys)
        w = ""
        if self.latent_w:
            w = f"; w ~ {self.w_prior}({self.w_location:g}, {self.w_scale:g})"
        return f"{self.name}: {self.family}({parts}{w})"


@dataclass(frozen=True)
class Cell:
    """One cell of the sweep: a prior crossed with an environment.

    Example:
        >>> from bayesrank.studies.sensitivity import Cell, EnvSpec, PriorSpec
        >>> cell = Cell(0, PriorSpec(name="weak", scale=10.0), EnvSpec(K=5))
        >>> cell.label
        'weak: gaussian(location=0, scale=10, correlation=0, noise_scale=1) | env 0'
        >>> Cell.from_dict(cell.to_dict()) == cell
        True
    """

    index: int
    prior: PriorSpec
    env: EnvSpec
    env_index: int = 0

    def to_dict(self) -> dict:
        """JSON-able description (used for the cell's key and the stored attrs)."""
        p = asdict(self.prior)
        p["nuts"] = [list(kv) for kv in self.prior.nuts]
        return {"prior": p, "env": asdict(self.env)}

    @classmethod
    def from_dict(cls, data: dict, index: int = 0, env_index: int = 0) -> Cell:
        """Inverse of :meth:`to_dict`."""
        p = dict(data["prior"])
        p["nuts"] = tuple(tuple(kv) for kv in p.get("nuts", ()))
        return cls(index, PriorSpec(**p), EnvSpec(**data["env"]), env_index)

    def key(self, run_settings: dict) -> str:
        """A stable hash of the cell and the settings that change its numbers."""
        blob = json.dumps({"cell": self.to_dict(), "run": run_settings}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        """The cell's prior and environment in words."""
        return f"{self.prior.describe()} | env {self.env_index}"


def conjugate_hyper(prior: PriorSpec, d: int) -> dict[str, np.ndarray]:
    """The hyper-parameters of a conjugate cell as arrays (stacked to vmap a grid).

    Returns:
        dict with mean (d,), cov (d, d), noise_scale (), a0 (), b0 ().
    """
    return {
        "mean": np.full(d, float(prior.location)),
        "cov": prior.covariance(d),
        "noise_scale": np.asarray(float(prior.noise_scale)),
        "a0": np.asarray(float(prior.a0)),
        "b0": np.asarray(float(prior.b0)),
    }


def build_model(prior: PriorSpec, T: int, hyper=None):
    """The posterior model of a prior.

    Args:
        prior: the prior spec.
        T: rounds (the NUTS buffer length).
        hyper: for conjugate families, arrays from :func:`conjugate_hyper` (possibly
            traced, to vmap over a grid); None builds them from ``prior``.

    Returns:
        GaussianLinear, GaussianLinearUnknownNoise or BayesGLM.

    Example:
        >>> from bayesrank.studies.sensitivity import PriorSpec, build_model
        >>> from bayesrank.studies.sensitivity.grid import conjugate_hyper
        >>> weak = PriorSpec(name="weak", scale=10.0)
        >>> type(build_model(weak, T=100, hyper=conjugate_hyper(weak, d=3))).__name__
        'GaussianLinear'
        >>> heavy = PriorSpec(name="heavy", family="student_t", df=3.0)
        >>> type(build_model(heavy, T=100)).__name__                  # sampled by NUTS
        'BayesGLM'
    """
    if prior.family in LEARNT_FAMILIES:
        return GaussianLinear(prior_mean=float(prior.location),
                              prior_scale=prior.hyperprior_distribution())
    if prior.family in CONJUGATE_FAMILIES:
        if hyper is None:
            raise ValueError("hyper: conjugate families need their hyper-parameters")
        if prior.family == "gaussian":
            return GaussianLinear(hyper["mean"], hyper["cov"], hyper["noise_scale"])
        return GaussianLinearUnknownNoise(
            hyper["mean"], hyper["cov"], hyper["a0"], hyper["b0"]
        )
    from bayesrank.posteriors.nuts import BayesGLM  # deferred: numpyro imports tqdm

    if not math.isfinite(prior.noise_scale):
        raise ValueError(
            f"noise_scale: expected a finite number, got {prior.noise_scale}"
        )
    return BayesGLM(
        link="identity",
        prior=prior.numpyro_prior(),
        noise_scale=float(prior.noise_scale),
        **prior.nuts_options(T),
    )
