"""The models calibrated by ``bayesrank calibrate``: one registry entry per model.

An entry names the model, builds it for the run's settings, and says what the simulated
truth is (``None``: the model's own prior and likelihood) and what is expected:
``"exact"`` models must pass, ``"approximate"`` ones are reported (with a sweep over n),
``"mcmc"`` must pass within Monte Carlo error, the ``"negative"`` control must fail.
The in-loop entry expands into one label per checkpoint round.

Adding a model is one line:
``Case("Name", lambda s, n: MyModel(...), "approximate")`` (``n``: the impressions per
simulation, for models whose buffers must hold them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from bayesrank.posteriors import (
    BayesGLM,
    GaussianLinear,
    GaussianLinearUnknownNoise,
    LaplaceGLM,
    LatentLaplace,
    LatentW,
)
from bayesrank.studies.calibration.generative import (
    Design,
    Generative,
    gaussian_generative,
)
from bayesrank.studies.calibration.latent import JointMAPDraws, LatentWDraws
from bayesrank.studies.calibration.scales import ScaleDraws

__all__ = ["CASES", "INLOOP", "Case", "InLoopCase", "QUICK", "FULL", "Settings",
           "model_names"]


class Settings(NamedTuple):
    """Sizes of a calibration run (stated in the report and NetCDF attributes)."""

    n_sims: int = 1000  # SBC simulations N (independent-draw models)
    draws: int = 99  # posterior draws M per simulation (ranks in 0..M)
    n_obs: int = 50  # impressions per SBC simulation
    n_grid: tuple = (10, 30, 100, 300)  # n of the "how far, by n" sweep
    n_null: int = 10000  # null simulations of the band statistic
    nuts_sims: int = 200  # fresh-chain NUTS simulations
    nuts_draws: int = 99
    nuts_thin: int = 3  # NUTS transitions between kept draws
    nuts_warmup: int = 300  # NUTS warm-up transitions of a fresh chain
    inloop_runs: int = 100  # bandit runs N of the in-loop study
    rounds: tuple = (10, 100, 1000)
    ref_draws: int = 99  # reference draws per in-loop rank
    ref_thin: int = 5
    ref_warmup: int = 300
    design: Design = Design()
    seed: int = 0


FULL = Settings()
QUICK = Settings(
    n_sims=200,
    draws=49,
    n_grid=(),  # the by-n sweep is left to the full run
    n_null=3000,
    nuts_sims=12,
    nuts_draws=19,
    nuts_warmup=150,
    inloop_runs=8,
    rounds=(10, 100),
    ref_draws=19,
    ref_thin=3,
    ref_warmup=150,
)


class Case(NamedTuple):
    """One SBC study: a named model, its simulated truth and the expectation."""

    name: str
    build: Callable  # (Settings, n_obs) -> model
    kind: str  # "exact" | "approximate" | "mcmc" | "negative"
    generative: Callable | None = None  # () -> Generative; None: the model's own
    mcmc: bool = False  # draws from one fresh chain: warm-up and thinning apply


class InLoopCase(NamedTuple):
    """The in-loop study: RankTS's warm NUTS draws at checkpoint rounds."""

    prefix: str
    build: Callable  # (Settings, T) -> the in-loop model
    reference: Callable  # (Settings, n) -> the fresh-chain reference model


def _bayes_glm(**kw):
    return BayesGLM(**kw)


def _fresh_chain(link: str, n: int, s: Settings, warmup: int):
    return _bayes_glm(link=link, n_max=max(int(n), 1), num_warmup=warmup,
                      steps_per_round=1, readapt_growth=None)


def _negative_truth() -> Generative:
    return gaussian_generative(prior_mean=0.0, prior_scale=1.0, noise_scale=1.0)


def _gl(**kw):
    return GaussianLinear(**kw)


def _nig(**kw):
    return GaussianLinearUnknownNoise(**kw)


def _latent(base, sampler: str = "grid", w_scale: float = 1.0):
    """The latent-w model RankTS(w=Normal(0, w_scale)) runs, seen by SBC (theta and
    w; the truth draws w from the same prior)."""
    import numpyro.distributions as dist

    return LatentWDraws(LatentW(base, dist.Normal(0.0, w_scale)), sampler)


def _latent_glm(n: int, joint: bool = False, learnt: bool = False):
    """RankTS(model=LaplaceGLM("logistic", prior_scale=1), w=Normal(0, 1))'s
    posterior, the joint MAP Laplace approximation it was chosen over (``joint``),
    or with the prior scale learnt (``learnt``: ``LaplaceGLM("logistic")``)."""
    import numpyro.distributions as dist

    scale = None if learnt else 1.0
    model = LatentLaplace(_laplace("logistic", scale, n), dist.Normal(0.0, 1.0))
    return JointMAPDraws(model) if joint else LatentWDraws(model)


def _latent_truth() -> Generative:
    return _latent(_gl(prior_scale=1.0, noise_scale=1.0)).generative()


def _laplace(link: str, prior_scale: float, n: int):
    # n_max = n: the buffer holds every impression, so the fit is the full-data MAP
    return LaplaceGLM(link=link, prior_scale=prior_scale, n_max=max(int(n), 1))


CASES: tuple[Case, ...] = (
    Case("GaussianLinear", lambda s, n: _gl(prior_scale=1.0, noise_scale=1.0),
         "exact"),
    Case("GaussianLinearUnknownNoise", lambda s, n: _nig(a0=3.0, b0=2.0), "exact"),
    # the default: theta's prior scale (HalfCauchy(1) over the noise sd) and the noise
    # sd (Jeffreys) learnt; ranks of theta, log g and log s
    Case("GaussianLinear-learnt", lambda s, n: ScaleDraws(_gl()), "exact"),
    Case("GaussianLinear-learnt-prior-scale",
         lambda s, n: ScaleDraws(_gl(noise_scale=1.0)), "exact"),
    Case("LaplaceGLM-logistic", lambda s, n: _laplace("logistic", 1.0, n),
         "approximate"),
    # prior sd 0.5 keeps the Poisson rates of the design mostly within [0.2, 5]
    Case("LaplaceGLM-exp", lambda s, n: _laplace("exp", 0.5, n), "approximate"),
    # LaplaceGLM(prior_scale=None): tau ~ HalfNormal(1) learnt by the Laplace evidence
    # on its grid; ranks of theta and log tau
    Case("LaplaceGLM-logistic-learnt",
         lambda s, n: ScaleDraws(LaplaceGLM("logistic", prior_scale=None,
                                            n_max=max(int(n), 1))), "approximate"),
    Case("BayesGLM-logistic",
         lambda s, n: _fresh_chain("logistic", n, s, s.nuts_warmup), "mcmc",
         mcmc=True),
    # w latent (RankTS(w=<prior>)): ranks of theta and w; w exactly on its grid...
    Case("LatentW-GaussianLinear",
         lambda s, n: _latent(_gl(prior_scale=1.0, noise_scale=1.0)), "exact"),
    Case("LatentW-learnt", lambda s, n: _latent(_gl()), "exact"),
    Case("LatentW-UnknownNoise", lambda s, n: _latent(_nig(a0=3.0, b0=2.0)), "exact"),
    # a GLM link: the Laplace likelihood in the 2d relaxation, w collapsed (what
    # RankTS runs), and the joint-MAP Laplace approximation it was chosen over
    Case("LatentLaplace-logistic", lambda s, n: _latent_glm(n), "approximate"),
    Case("LatentJointMAP-logistic", lambda s, n: _latent_glm(n, joint=True),
         "approximate"),
    # ... and RankTS(model=LaplaceGLM("logistic"), w=...)'s default: tau ~
    # HalfNormal(1) learnt on a grid with theta, w collapsed
    Case("LatentLaplace-logistic-learnt", lambda s, n: _latent_glm(n, learnt=True),
         "approximate"),
    # ... and by the draw RankTS makes each round (LatentW.draw: w on a small grid)
    Case("LatentW-rankts-draw",
         lambda s, n: _latent(_gl(prior_scale=1.0, noise_scale=1.0), "chain"), "mcmc",
         mcmc=True),
    # ... with the scales learnt (the default): w, then g | w exactly, theta | w, g
    Case("LatentW-learnt-rankts-draw", lambda s, n: _latent(_gl(), "chain"), "mcmc",
         mcmc=True),
    # the truth has noise sd 1; the model is told 0.5: over-confident, must fail
    Case("negative_control", lambda s, n: _gl(prior_scale=1.0, noise_scale=0.5),
         "negative", _negative_truth),
    Case("negative_control-LatentW",
         lambda s, n: _latent(_gl(prior_scale=1.0, noise_scale=0.5)), "negative",
         _latent_truth),
    # last, so that every case above keeps its seed (fold_in of its index): RankTS's
    # draw with the scales learnt under a vague prior w ~ Normal(0, 1e3), where the
    # learnt scale gives w's posterior polynomial tails (the former slice chain
    # crawled along them)
    Case("LatentW-learnt-vague-rankts-draw",
         lambda s, n: _latent(_gl(), "chain", w_scale=1e3), "mcmc", mcmc=True),
)

INLOOP = InLoopCase(
    "RankTS-NUTS-round-",
    # exactly what RankTS(model=BayesGLM(link="logistic")) runs, buffer sized to T
    lambda s, T: _bayes_glm(link="logistic", n_max=T),
    lambda s, n: _fresh_chain("logistic", n, s, s.ref_warmup),
)


def model_names(settings: Settings = FULL) -> list[str]:
    """Every label ``bayesrank calibrate`` can run, in report order."""
    names = [c.name for c in CASES if c.kind != "negative"]
    names += [f"{INLOOP.prefix}{t}" for t in settings.rounds]
    names += [c.name for c in CASES if c.kind == "negative"]
    return names
