"""The latent-w posterior against references computed independently here: the
marginal likelihood of the data in data space (not the precision form the model
uses), on a fine uniform grid, and plain-NumPy conjugate formulas for theta | w."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest

from bayesrank.posteriors import GaussianLinear, GaussianLinearUnknownNoise
from bayesrank.posteriors.latent import LatentW


def _data(rng, n, d, w_true, theta, noise=1.0, zero_prev=False):
    a = rng.normal(size=(n, d))
    p = np.zeros((n, d)) if zero_prev else rng.normal(size=(n, d))
    y = (a + w_true * p) @ theta + noise * rng.normal(size=n)
    return a, p, y


def _fold(model, a, p, y):
    """One position's data folded into a 1-position state, row by row."""
    state = model.init(1, 2 * a.shape[1])
    upd = jax.jit(model.update)
    for t in range(a.shape[0]):
        state = upd(state, np.concatenate([a[t], p[t]])[None], y[t:t + 1])
    return state


def _log_evidence_known(a, p, y, w, m0, S0, s):
    """log N(y | X(w) m0, s^2 I + X(w) S0 X(w)^T): the data-space marginal."""
    X = a + w * p
    cov = s * s * np.eye(len(y)) + X @ S0 @ X.T
    r = y - X @ m0
    _, logdet = np.linalg.slogdet(cov)
    return -0.5 * logdet - 0.5 * r @ np.linalg.solve(cov, r)


def _log_evidence_nig(a, p, y, w, m0, Lam0, a0, b0):
    """Multivariate Student-t evidence of the NIG model in data space."""
    from scipy.stats import multivariate_t

    X = a + w * p
    shape = (b0 / a0) * (np.eye(len(y)) + X @ np.linalg.solve(Lam0, X.T))
    return multivariate_t(loc=X @ m0, shape=shape, df=2 * a0).logpdf(y)


def _grid_mean_sd(logp_fn, prior_logpdf, lo, hi, n=4001):
    g = np.linspace(lo, hi, n)
    lp = np.array([logp_fn(w) for w in g]) + prior_logpdf(g)
    wts = np.exp(lp - lp.max())
    wts /= wts.sum()
    mean = float(np.sum(wts * g))
    return mean, float(np.sqrt(np.sum(wts * (g - mean) ** 2)))


@pytest.mark.parametrize("w_true, n", [(2.0, 40), (-6.0, 15), (0.5, 5)])
def test_w_mean_equals_the_data_space_marginal_on_a_fine_grid(w_true, n):
    rng = np.random.default_rng(int(abs(w_true) * 10) + n)
    d, s = 3, 0.7
    theta = rng.normal(size=d)
    a, p, y = _data(rng, n, d, w_true, theta, noise=s)
    prior = dist.Normal(0.5, 4.0)
    model = LatentW(GaussianLinear(prior_scale=1.5, noise_scale=s), prior)
    state = _fold(model, a, p, y)
    m0, S0 = np.zeros(d), 1.5**2 * np.eye(d)
    ref_mean, ref_sd = _grid_mean_sd(
        lambda w: _log_evidence_known(a, p, y, w, m0, S0, s),
        lambda g: -0.5 * ((g - 0.5) / 4.0) ** 2, -20.0, 21.0)
    got, got_sd = float(model.w_mean(state)[0]), float(model.w_sd(state)[0])
    assert abs(got - ref_mean) < 0.01 * ref_sd
    assert got_sd == pytest.approx(ref_sd, rel=0.01)


def test_unknown_noise_w_mean_equals_the_student_t_evidence_on_a_grid():
    rng = np.random.default_rng(5)
    d, w_true = 3, -2.0
    theta = rng.normal(size=d)
    a, p, y = _data(rng, 25, d, w_true, theta, noise=0.8)
    base = GaussianLinearUnknownNoise(prior_scale=2.0, a0=3.0, b0=2.0)
    model = LatentW(base, dist.Normal(0.0, 5.0))
    state = _fold(model, a, p, y)
    Lam0 = np.eye(d) / 4.0
    ref_mean, ref_sd = _grid_mean_sd(
        lambda w: _log_evidence_nig(a, p, y, w, np.zeros(d), Lam0, 3.0, 2.0),
        lambda g: -0.5 * (g / 5.0) ** 2, -25.0, 25.0)
    assert abs(float(model.w_mean(state)[0]) - ref_mean) < 0.01 * ref_sd
    assert float(model.w_sd(state)[0]) == pytest.approx(ref_sd, rel=0.01)


def test_without_a_previous_item_w_keeps_its_prior():
    """v0 = 0 at position 1: the data say nothing about w_1."""
    rng = np.random.default_rng(1)
    a, p, y = _data(rng, 30, 3, 4.0, rng.normal(size=3), zero_prev=True)
    model = LatentW(GaussianLinear(), dist.Normal(1.5, 2.0))
    state = _fold(model, a, p, y)
    assert float(model.w_mean(state)[0]) == pytest.approx(1.5, abs=1e-3)
    assert float(model.w_sd(state)[0]) == pytest.approx(2.0, rel=1e-3)


def test_theta_given_w_is_the_conjugate_posterior():
    """Draws of theta | w have the closed-form mean and covariance (plain NumPy)."""
    rng = np.random.default_rng(2)
    d, s, w = 3, 0.5, 1.7
    a, p, y = _data(rng, 20, d, w, rng.normal(size=d), noise=s)
    model = LatentW(GaussianLinear(prior_scale=2.0, noise_scale=s), dist.Normal(0, 3))
    state = _fold(model, a, p, y)
    X = a + w * p
    P = np.eye(d) / 4.0 + X.T @ X / s**2
    mean = np.linalg.solve(P, X.T @ y / s**2)
    keys = jax.random.split(jax.random.key(0), 20_000)
    th = np.asarray(jax.vmap(lambda k: model.theta_given_w(k, state, jnp.array([w])))(
        keys))[:, 0]
    cov = np.linalg.inv(P)
    se = np.sqrt(np.diag(cov) / len(th))
    assert np.all(np.abs(th.mean(0) - mean) < 4 * se)
    np.testing.assert_allclose(np.cov(th.T), cov, rtol=0.05, atol=0.02 * cov.max())


def test_the_draws_target_the_collapsed_posterior():
    """Many draws on fixed data (the state threaded as in a run): their mean and sd
    match the summaries' quadrature."""
    rng = np.random.default_rng(3)
    a, p, y = _data(rng, 30, 3, 2.5, rng.normal(size=3))
    model = LatentW(GaussianLinear(), dist.Normal(0.0, 5.0))
    state = _fold(model, a, p, y)

    def body(st, k):
        (_, w), st = model.draw(k, st)
        return st, w[0]

    _, ws = jax.jit(lambda st: jax.lax.scan(body, st, jax.random.split(
        jax.random.key(4), 6000)))(state)
    ws = np.asarray(ws)[500:]
    mean, sd = float(model.w_mean(state)[0]), float(model.w_sd(state)[0])
    # independent draws (5,500): a Monte Carlo band, and the draw grid's coarser cells
    assert abs(ws.mean() - mean) < 4 * sd / np.sqrt(len(ws))
    assert ws.std() == pytest.approx(sd, rel=0.05)


def test_positions_with_their_own_priors():
    model = LatentW(GaussianLinear(), dist.Normal(jnp.array([0.0, 3.0]), 1.0))
    state = model.init(2, 4)
    np.testing.assert_allclose(model.w_mean(state), [0.0, 3.0], atol=1e-4)


def test_mean_of_theta_is_the_w_average_of_conditional_means():
    rng = np.random.default_rng(6)
    d = 2
    a, p, y = _data(rng, 12, d, 1.0, rng.normal(size=d))
    model = LatentW(GaussianLinear(prior_scale=1.0, noise_scale=1.0), dist.Normal(0.0, 2.0))
    state = _fold(model, a, p, y)
    g = np.linspace(-12, 12, 6001)
    lp = np.array([_log_evidence_known(a, p, y, w, np.zeros(d), np.eye(d), 1.0)
                   for w in g]) - 0.5 * (g / 2.0) ** 2
    wts = np.exp(lp - lp.max())
    wts /= wts.sum()
    cond = [np.linalg.solve(np.eye(d) + (a + w * p).T @ (a + w * p),
                            (a + w * p).T @ y) for w in g]
    ref = np.sum(wts[:, None] * np.array(cond), axis=0)
    np.testing.assert_allclose(np.asarray(model.mean(state))[0], ref, atol=1e-4)


def test_discount_scales_every_statistic():
    model = LatentW(GaussianLinear(discount=0.5), dist.Normal(0.0, 1.0))
    st = model.init(1, 2)
    x = np.array([[1.0, 2.0]])
    st = model.update(st, x, np.array([3.0]))
    st = model.update(st, x, np.array([3.0]))
    assert float(st.Scc[0, 0, 0]) == pytest.approx(1.5)  # c = a - p = -1
    assert float(st.bp[0, 0]) == pytest.approx(1.5 * 6.0)
    assert float(st.n[0]) == pytest.approx(1.5)


BAD_W = {
    "not a distribution": ("normal", TypeError, "w: expected an array"),
    "discrete support": (dist.Poisson(3.0), ValueError, "w: the prior must be a continuous"),
    "vector event": (dist.MultivariateNormal(jnp.zeros(2), jnp.eye(2)), ValueError,
                     "w: the prior must be a continuous scalar"),
    "simplex support": (dist.Dirichlet(jnp.ones(3)), ValueError, "w: the prior"),
    "wrong batch": (dist.Normal(jnp.zeros((2, 2)), 1.0), ValueError,
                    "w: the prior's batch shape"),
    # built with validate_args=False, NumPyro does not look at the parameters
    "NaN loc": (dist.Normal(jnp.nan, 1.0, validate_args=False), ValueError,
                "w: the prior's loc must be finite"),
    "an infinite loc in a batch": (dist.Normal(jnp.array([0.0, jnp.inf]), 1.0,
                                               validate_args=False), ValueError,
                                   "w: the prior's loc must be finite"),
    "negative scale": (dist.Normal(0.0, -1.0, validate_args=False), ValueError,
                       "w: the prior's scale must satisfy Positive"),
    "zero scale": (dist.Laplace(0.0, 0.0, validate_args=False), ValueError,
                   "w: the prior's scale must satisfy Positive"),
    "empty interval": (dist.Uniform(2.0, 1.0, validate_args=False), ValueError,
                       r"w: the prior's support is empty \(lower bound 2.0 >= upper"),
    "no range for the grid": (dist.StudentT(1.0, 0.0, 1.0), ValueError,
                              "w: cannot find a finite range holding the prior"),
}


@pytest.mark.parametrize("case", list(BAD_W))
def test_bad_priors_name_w(case):
    prior, exc, match = BAD_W[case]
    with pytest.raises(exc, match=match):
        LatentW(GaussianLinear(), prior)


def test_a_prior_for_other_positions_is_refused_at_init():
    model = LatentW(GaussianLinear(), dist.Normal(jnp.zeros(3), 1.0))
    with pytest.raises(ValueError, match=r"w: the prior's batch shape must be \(\) or "
                                         r"\(L,\) = \(4,\)"):
        model.init(4, 6)


def test_other_models_are_refused_naming_the_alternative():
    from bayesrank.posteriors import LaplaceGLM

    with pytest.raises(TypeError, match="GenRankTS"):
        LatentW(LaplaceGLM(), dist.Normal(0.0, 1.0))


def test_config_round_trip():
    model = LatentW(GaussianLinearUnknownNoise(prior_scale=2.0), dist.StudentT(3.0, 1.0, 2.0))
    back = LatentW.from_config(model.config())
    assert type(back.base) is GaussianLinearUnknownNoise
    assert float(back.w_prior.df) == 3.0 and float(back.w_prior.scale) == 2.0


def test_a_tampered_prior_config_is_refused():
    cfg = LatentW(GaussianLinear(), dist.Normal(0.0, 1.0)).config()
    cfg["w_prior"] = {"class": "os.system", "params": {"loc": 0}}
    with pytest.raises(ValueError, match="w_prior: the saved prior"):
        LatentW.from_config(cfg)


def _coverage(model_noise, n_inst=300, n=15, d=3, s=0.5, seed=11):
    """Fraction of prior-drawn instances whose 50 % and 90 % intervals of w hold the
    true w (the generator draws w and theta from the model's own prior)."""
    rng = np.random.default_rng(seed)
    w = rng.normal(0.0, 2.0, n_inst)
    theta = rng.normal(size=(n_inst, d))
    a = rng.normal(size=(n_inst, n, d))
    p = rng.normal(size=(n_inst, n, d))
    y = np.einsum("ind,id->in", a + w[:, None, None] * p, theta) + s * rng.normal(
        size=(n_inst, n))
    model = LatentW(GaussianLinear(noise_scale=model_noise), dist.Normal(0.0, 2.0))

    def one(a_i, p_i, y_i):
        def body(st, xy):
            x, yy = xy
            return model.update(st, x[None], yy[None]), None

        st, _ = jax.lax.scan(body, model.init(1, 2 * d),
                             (jnp.concatenate([a_i, p_i], axis=1), y_i))
        return model.w_quantiles(st, (0.05, 0.25, 0.75, 0.95))[:, 0]

    q = np.asarray(jax.jit(jax.vmap(one))(jnp.asarray(a), jnp.asarray(p), jnp.asarray(y)))
    in90 = np.mean((q[:, 0] <= w) & (w <= q[:, 3]))
    in50 = np.mean((q[:, 1] <= w) & (w <= q[:, 2]))
    return in50, in90


def test_intervals_of_w_are_calibrated_on_prior_drawn_instances():
    """Exact posterior: over 300 instances drawn from the prior, the 50 % and 90 %
    intervals hold the truth at their rates (binomial sd 0.029 and 0.017)."""
    in50, in90 = _coverage(model_noise=0.5)
    assert 0.41 < in50 < 0.59 and 0.85 < in90 < 0.95


def test_an_overconfident_noise_model_fails_the_same_check():
    """Negative control: the same check with the noise sd taken 4x too small."""
    _, in90 = _coverage(model_noise=0.125)
    assert in90 < 0.8


# ------------------------------------------------- vague, heavy-tailed, half-line priors
WIDE_PRIORS = {
    # name: (prior, scipy log-density of the same prior, w_true)
    "Normal(0, 1e6)": (dist.Normal(0.0, 1e6), lambda g: -0.5 * (g / 1e6) ** 2, -2.0),
    "Cauchy(0, 1e4)": (dist.Cauchy(0.0, 1e4), lambda g: -np.log1p((g / 1e4) ** 2), 3.0),
    "Laplace(5, 1e5)": (dist.Laplace(5.0, 1e5), lambda g: -np.abs(g - 5.0) / 1e5, -7.0),
    "HalfNormal(50)": (dist.HalfNormal(50.0),
                       lambda g: np.where(g >= 0, -0.5 * (g / 50.0) ** 2, -np.inf), 1.5),
    "TruncatedNormal(0, 3, low=1)": (
        dist.TruncatedNormal(0.0, 3.0, low=1.0),
        lambda g: np.where(g >= 1.0, -0.5 * (g / 3.0) ** 2, -np.inf), 2.5),
    # its quantiles need tensorflow_probability: the range falls back on mean +- 10 sd
    "StudentT(3, 0, 1e3)": (dist.StudentT(3.0, 0.0, 1e3),
                            lambda g: -2.0 * np.log1p((g / 1e3) ** 2 / 3.0), -4.0),
    "Uniform(-1e5, 1e5)": (dist.Uniform(-1e5, 1e5),
                           lambda g: np.where(np.abs(g) < 1e5, 0.0, -np.inf), 4.0),
}


@pytest.mark.parametrize("name", list(WIDE_PRIORS))
def test_wide_and_one_sided_priors_give_the_quadrature_mean_and_sd(name):
    """The posterior of w under a prior much wider than the data's information: w's
    mean within 0.1 posterior sd of float64 quadrature of the data-space marginal
    (a fine grid around the truth, where all of the posterior lies), and its sd and
    90 % interval within 5 %."""
    prior, prior_logpdf, w_true = WIDE_PRIORS[name]
    rng = np.random.default_rng(11)
    d, s = 3, 1.0
    theta = rng.normal(size=d)
    a, p, y = _data(rng, 60, d, w_true, theta, noise=s)
    model = LatentW(GaussianLinear(prior_scale=1.0, noise_scale=s), prior)
    state = _fold(model, a, p, y)
    g = np.linspace(w_true - 15.0, w_true + 15.0, 30001)
    lp = np.array([_log_evidence_known(a, p, y, w, np.zeros(d), np.eye(d), s) for w in g])
    lp = lp + prior_logpdf(g)
    wts = np.exp(lp - lp.max())
    wts /= wts.sum()
    ref_mean = float(np.sum(wts * g))
    ref_sd = float(np.sqrt(np.sum(wts * (g - ref_mean) ** 2)))
    cdf = np.cumsum(wts)
    ref_q = np.interp([0.05, 0.95], cdf, g)
    assert wts[:50].sum() + wts[-50:].sum() < 1e-9  # the reference grid holds it all
    got, got_sd = float(model.w_mean(state)[0]), float(model.w_sd(state)[0])
    assert abs(got - ref_mean) < 0.1 * ref_sd, (got, ref_mean, ref_sd)
    assert got_sd == pytest.approx(ref_sd, rel=0.05)
    got_q = np.asarray(model.w_quantiles(state))[:, 0]
    np.testing.assert_allclose(got_q, ref_q, atol=0.05 * ref_sd)


# ------------------------------- the learnt-scale default under any prior on w
def _paper_like(rng, n, d, w_true, noise=1.0):
    """Rows of the paper's kind: items (v', 1) with unit-norm v', theta = (t'/2, 1/2),
    previous items drawn from the same catalogue of 30 (so a and p share their
    constant coordinate, and now and then the whole item)."""
    V = rng.normal(size=(30, d - 1))
    V = np.concatenate([V / np.linalg.norm(V, axis=1, keepdims=True), np.ones((30, 1))],
                       axis=1)
    t = rng.normal(size=d - 1)
    theta = np.concatenate([t / np.linalg.norm(t) / 2, [0.5]])
    ia, ip = rng.integers(0, 30, n), rng.integers(0, 30, n)
    a, p = V[ia], V[ip]
    return a, p, (a + w_true * p) @ theta + noise * rng.normal(size=n)


def _learnt_log_evidence(a, p, y, w, log_g, log_w0):
    """log p(y | w) of the default model in data space (float64 SVD, no statistics):
    theta | g, s ~ N(0, g^2 s^2 I), s^2 Jeffreys, g on the model's own grid."""
    X = a + w * p
    _, sv, Vt = np.linalg.svd(X, full_matrices=False)
    D, z = sv ** 2, Vt @ (X.T @ y)
    g2 = np.exp(2.0 * log_g)[:, None]
    beta = y @ y - np.sum(z ** 2 / (D + 1.0 / g2), axis=1)
    loglik = -0.5 * np.sum(np.log1p(g2 * D), axis=1) - 0.5 * len(y) * np.log(beta)
    return float(np.logaddexp.reduce(log_w0 + loglik))


def _reference(a, p, y, model, prior_logpdf, lo, hi, n=6001):
    """Mean, sd and a quantile function of w's posterior: float64 quadrature on a sinh
    grid over [lo, hi] (fine near 0, geometric away: heavy tails included)."""
    t = np.linspace(np.arcsinh(lo / 1e-2), np.arcsinh(hi / 1e-2), n)
    grid = 1e-2 * np.sinh(t)
    lg, lw = np.asarray(model.base.log_g, float), np.asarray(model.base.log_w0, float)
    lp = np.array([_learnt_log_evidence(a, p, y, w, lg, lw) for w in grid])
    lp = lp + prior_logpdf(grid)
    edges = np.concatenate([[grid[0]], 0.5 * (grid[1:] + grid[:-1]), [grid[-1]]])
    wts = np.exp(lp - lp.max()) * np.diff(edges)
    wts /= wts.sum()
    mean = float(np.sum(wts * grid))
    cdf = np.concatenate([[0.0], np.cumsum(wts)])
    return mean, float(np.sqrt(np.sum(wts * (grid - mean) ** 2))), \
        lambda q: np.interp(q, cdf, edges)


LEARNT_PRIORS = {
    # name: (prior, log-density up to a constant, reference range)
    "Normal(0, 5)": (dist.Normal(0.0, 5.0), lambda g: -0.5 * (g / 5.0) ** 2, 40.0),
    "Normal(0, 1e6)": (dist.Normal(0.0, 1e6), lambda g: -0.5 * (g / 1e6) ** 2, 8e6),
    "Cauchy(0, 1e4)": (dist.Cauchy(0.0, 1e4), lambda g: -np.log1p((g / 1e4) ** 2), 3e9),
    "StudentT(3, 0, 1e3)": (dist.StudentT(3.0, 0.0, 1e3),
                            lambda g: -2.0 * np.log1p((g / 1e3) ** 2 / 3.0), 1e6),
    "TruncatedNormal(0, 3, low=-2.5)": (
        dist.TruncatedNormal(0.0, 3.0, low=-2.5),
        lambda g: np.where(g >= -2.5, -0.5 * (g / 3.0) ** 2, -np.inf), 30.0),
}


@pytest.fixture(scope="module")
def learnt_fits():
    """One data set of the paper's kind (w = -1.6, 150 rows: w weakly identified, so
    a vague prior leaves polynomial tails), folded into the default model under each
    prior, with its float64 reference."""
    rng = np.random.default_rng(5)
    a, p, y = _paper_like(rng, 150, 5, -1.6)
    out = {}
    for name, (prior, logpdf, span) in LEARNT_PRIORS.items():
        model = LatentW(GaussianLinear(), prior)
        out[name] = (model, _fold(model, a, p, y),
                     _reference(a, p, y, model, logpdf, -span, span))
    return out


@pytest.mark.parametrize("name", list(LEARNT_PRIORS))
def test_learnt_default_matches_the_quadrature_under_every_prior(learnt_fits, name):
    """The default (learnt scales, float32) under a prior of each family: w's mean
    within 0.1 posterior sd of float64 quadrature in data space, its 5/50/95 %
    quantiles within 1 % of the reference's 90 % interval."""
    model, state, (ref_mean, ref_sd, ref_q) = learnt_fits[name]
    got = float(model.w_mean(state)[0])
    assert abs(got - ref_mean) < 0.1 * ref_sd, (got, ref_mean, ref_sd)
    q = np.asarray(model.w_quantiles(state, (0.05, 0.5, 0.95)))[:, 0]
    want = ref_q([0.05, 0.5, 0.95])
    np.testing.assert_allclose(q, want, atol=0.01 * (want[2] - want[0]))


@pytest.mark.parametrize("name", ["Normal(0, 1e6)", "Cauchy(0, 1e4)"])
def test_draws_follow_the_posterior_from_the_first_round(learnt_fits, name):
    """RankTS's draws of w right after the data (no warm-up; a vague prior): inside
    the posterior's 99.9 % range at its rate (at most 3 of 400 outside: a binomial
    tail of 8e-4), and distributed as the reference (a Kolmogorov-Smirnov test
    against its CDF)."""
    from scipy import stats

    model, state, (_, _, ref_q) = learnt_fits[name]
    ws = np.asarray(jax.jit(jax.vmap(lambda k: model.draw(k, state)[0][1][0]))(
        jax.random.split(jax.random.key(0), 400)))
    lo, hi = ref_q([0.0005, 0.9995])
    assert np.sum((ws < lo) | (ws > hi)) <= 3, (ws.min(), ws.max(), lo, hi)
    probs = np.linspace(0.0, 1.0, 20001)
    cdf = lambda x: np.interp(x, ref_q(probs), probs)  # noqa: E731
    assert stats.kstest(ws, cdf).pvalue > 0.01


@pytest.mark.parametrize("seed, position", [(102, 1), (107, 2)])
def test_no_spike_where_the_design_cancels_at_w_minus_one(seed, position):
    """The paper's items share a constant coordinate, which cancels from a + w p at
    w = -1. After 599 rounds of a run (float32) the posterior of w matches float64
    quadrature of the lists and rewards it saw. Kept as sums of a and of p, these
    two runs' posteriors sat at -1.00 +- 0.001 (truths -2.63 and -0.67): a spike of
    float32 rounding where the sums cancel (its place depends on every rounding, so
    the rounds are replayed exactly)."""
    import bayesrank as br

    env = br.RankingEnv.paper(seed=seed, K=30, L=3, d=6, w_max=3.0)
    V = np.asarray(env.items)
    pol = br.RankTS(items=V, L=env.L, w=dist.Normal(0.0, 5.0), seed=seed - 100)
    key = jax.random.key(seed - 100)
    for _ in range(599):
        lst = pol.select()
        key, k = jax.random.split(key)
        pol.update(lst, np.asarray(env.sample(k, lst)))
    pol.select()  # applies the last update, as the next round would
    items, rewards = pol.history()
    a, p = V[items[:, position]].astype(float), V[items[:, position - 1]].astype(float)
    model = pol.model
    _, ref_sd, ref_q = _reference(a, p, rewards[:, position].astype(float), model,
                                  lambda g: -0.5 * (g / 5.0) ** 2, -40.0, 40.0)
    q = np.asarray(model.w_quantiles(pol.state.model, (0.05, 0.5, 0.95)))[:, position]
    np.testing.assert_allclose(q, ref_q([0.05, 0.5, 0.95]), atol=0.05 * ref_sd)
