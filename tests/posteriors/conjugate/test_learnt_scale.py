"""The learnt-scale conjugate posterior (GaussianLinear's default) against references
written independently of it: a 2-D quadrature over (g, s) of the n x n marginal
likelihood N(y; X m0, s^2 (I + g^2 X X^T)), the Normal-Inverse-Gamma closed form, and
the units of the rewards (rescaled rewards give rescaled draws and the same lists)."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest

import bayesrank as br
from bayesrank.posteriors import GaussianLinear, GaussianLinearUnknownNoise
from bayesrank.posteriors.conjugate import LearntScaleLinear


def _data(n=25, p=3, L=2, scale=3.0, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, L, p))
    theta = rng.normal(size=(L, p)) * 0.8 * scale
    y = np.einsum("nlp,lp->nl", X, theta) + scale * rng.normal(size=(n, L))
    return X, y


def _fit(model, X, y):
    state = model.init(L=X.shape[1], p=X.shape[2])
    for i in range(X.shape[0]):
        state = model.update(state, X[i], y[i])
    return state


def _reference(X, y, m0, *, noise=None, log_pdf_g=None, n_g=1500, n_s=400):
    """Posterior moments by brute-force quadrature of the n x n marginal likelihood.

    g on a fine log grid; s on a log grid around its estimate (Jeffreys p(s) ∝ 1/s)
    or known. Returns E[theta], Cov[theta], E[s^2], E[g]."""
    n, p = X.shape
    if log_pdf_g is None:
        log_pdf_g = lambda g: np.log(2 / np.pi) - np.log1p(g * g)  # HalfCauchy(1)
    log_g = np.linspace(np.log(1e-6), np.log(1e6), n_g)
    r = y - X @ m0
    s_hat = np.std(r)
    log_s = (np.array([np.log(noise)]) if noise is not None else
             np.linspace(np.log(s_hat) - 3.0, np.log(s_hat) + 3.0, n_s))
    s2 = np.exp(2 * log_s)  # (S,)
    logp = np.empty((n_g, len(log_s)))
    means = np.empty((n_g, p))
    covs = np.empty((n_g, p, p))  # (X^T X + I/g^2)^-1, times s^2 below
    K = X @ X.T
    for i, lg in enumerate(log_g):
        g2 = np.exp(2 * lg)
        A = np.eye(n) + g2 * K
        _, logdet = np.linalg.slogdet(A)
        quad = r @ np.linalg.solve(A, r)
        P = X.T @ X + np.eye(p) / g2
        means[i] = m0 + np.linalg.solve(P, X.T @ r)
        covs[i] = np.linalg.inv(P)
        logp[i] = -0.5 * n * np.log(s2) - 0.5 * logdet - 0.5 * quad / s2
    # grid in (log g, log s): density x g (Jacobian); Jeffreys p(s) ∝ 1/s x s = 1
    logp = logp + (log_pdf_g(np.exp(log_g)) + log_g)[:, None]
    w = np.exp(logp - logp.max())
    w /= w.sum()
    wg, es2_g = w.sum(1), (w * s2).sum(1)  # (G,): P(g) and E[s^2 1{g}]
    mean = wg @ means
    dev = means - mean
    cov = np.einsum("i,ipq->pq", es2_g, covs) + np.einsum("i,ip,iq->pq", wg, dev, dev)
    return mean, cov, float(es2_g.sum()), float(wg @ np.exp(log_g))


@pytest.mark.parametrize("m0", [0.0, 0.7])
def test_learnt_scales_posterior_equals_quadrature(m0):
    X, y = _data()
    model = GaussianLinear(prior_mean=m0)
    assert type(model) is GaussianLinear and type(model.scale_model) is LearntScaleLinear
    state = _fit(model, X, y)
    mean, cov = model.mean(state), model.covariance(state)
    noise = model.noise_mean(state)
    g, wg = model.scale_posterior(state)
    for l in range(2):
        ref_m, ref_c, ref_s2, ref_g = _reference(X[:, l], y[:, l], np.full(3, m0))
        np.testing.assert_allclose(mean[l], ref_m, rtol=2e-4, atol=2e-4)
        np.testing.assert_allclose(cov[l], ref_c, rtol=2e-3, atol=2e-4)
        assert float(noise[l]) == pytest.approx(ref_s2, rel=2e-3)
        assert float(jnp.sum(wg[l] * g)) == pytest.approx(ref_g, rel=5e-3)


def test_known_noise_learnt_prior_scale_equals_quadrature():
    X, y = _data(scale=0.5)
    model = GaussianLinear(prior_scale=dist.HalfNormal(2.0), noise_scale=0.5)
    state = _fit(model, X, y)
    # known noise: g is theta's prior sd over s (0.5), HalfNormal(2) on g
    log_pdf = lambda g: np.asarray(dist.HalfNormal(2.0).log_prob(g))
    for l in range(2):
        ref_m, ref_c, _, _ = _reference(X[:, l], y[:, l], np.zeros(3), noise=0.5,
                                            log_pdf_g=log_pdf, n_s=1)
        np.testing.assert_allclose(model.mean(state)[l], ref_m, rtol=2e-4, atol=2e-4)
        np.testing.assert_allclose(model.covariance(state)[l], ref_c, rtol=2e-3,
                                   atol=2e-5)


@pytest.mark.parametrize("scale", [0.8, [0.5, 1.0, 2.0], "cov"])
def test_fixed_prior_scale_learnt_noise_equals_nig_with_vanishing_prior(scale):
    """g fixed, s^2 under Jeffreys: the NIG model with a0, b0 -> 0 (scalar, per
    coordinate, full covariance)."""
    if scale == "cov":
        B = np.random.default_rng(1).normal(size=(3, 3))
        scale = B @ B.T + 0.5 * np.eye(3)
    X, y = _data()
    model = GaussianLinear(prior_mean=0.2, prior_scale=scale)
    nig = GaussianLinearUnknownNoise(prior_mean=0.2, prior_scale=scale, a0=1e-12,
                                     b0=1e-12)
    s1, s2 = _fit(model, X, y), _fit(nig, X, y)
    np.testing.assert_allclose(model.mean(s1), nig.mean(s2), rtol=1e-9)
    np.testing.assert_allclose(model.covariance(s1), nig.covariance(s2), rtol=1e-8)


def test_draws_have_the_quadrature_moments():
    X, y = _data(n=15)
    model = GaussianLinear()
    state = _fit(model, X, y)
    draws = np.asarray(model.draw_batch(jax.random.key(3), state, 40_000))[:, 0]
    ref_m, ref_c, _, _ = _reference(X[:, 0], y[:, 0], np.zeros(3))
    sd = np.sqrt(np.diag(ref_c))
    assert np.all(np.abs(draws.mean(0) - ref_m) < 4 * sd / np.sqrt(40_000))
    np.testing.assert_allclose(np.cov(draws.T), ref_c, rtol=0.06, atol=0.02 * sd.max()**2)
    # one-at-a-time draws have the same law as the batch
    keys = jax.random.split(jax.random.key(4), 4000)
    one = np.asarray(jax.jit(jax.vmap(lambda k: model.draw(k, state)[0][0]))(keys))
    assert np.all(np.abs(one.mean(0) - ref_m) < 4 * sd / np.sqrt(4000))


@pytest.mark.parametrize("c", [0.01, 100.0])
def test_rescaled_rewards_give_rescaled_draws(c):
    X, y = _data()
    model = GaussianLinear()
    a, b = _fit(model, X, y), _fit(model, X, c * y)
    key = jax.random.key(7)
    np.testing.assert_allclose(model.draw(key, b)[0], c * model.draw(key, a)[0],
                               rtol=1e-7, atol=1e-9 * c)
    np.testing.assert_allclose(model.mean(b), c * model.mean(a), rtol=1e-8)
    # the old default (prior N(0, I), noise 1): the mean is linear in the rewards,
    # the spread around it is not
    old = GaussianLinear(prior_scale=1.0, noise_scale=1.0)
    sa, sb = _fit(old, X, y), _fit(old, X, c * y)
    d = (old.draw(key, sb)[0] - old.mean(sb)) - c * (old.draw(key, sa)[0] - old.mean(sa))
    assert float(jnp.max(jnp.abs(d))) > 1e-3 * min(c, 1.0)


@pytest.mark.parametrize("c", [0.01, 100.0])
def test_rank_ts_default_lists_do_not_depend_on_units(c):
    env = br.RankingEnv.paper(seed=1, K=12, L=3, d=4)
    a = br.RankTS(items=env.items, w=env.w, v0=env.v0, seed=0)
    b = br.RankTS(items=env.items, w=env.w, v0=env.v0, seed=0)
    for t in range(30):
        la, lb = a.select(), b.select()
        np.testing.assert_array_equal(la, lb)
        r = np.array(env.sample(jax.random.key(t), la))
        if t % 7 == 3:
            r[-1] = np.nan  # partial feedback
        a.update(la, r)
        b.update(lb, c * r)


def test_no_data_position_draws_with_the_pooled_scale():
    model = GaussianLinear()
    state = model.init(L=2, p=2)
    x = jnp.ones((2, 2))
    state = model.update(state, x, jnp.array([100.0, 0.0]), valid=jnp.array([True, False]))
    assert state.n.tolist() == [1.0, 0.0]
    theta = model.draw_batch(jax.random.key(0), state, 4000)
    # position 1 has no data: its draws scale with the rewards seen at position 0
    assert float(jnp.std(theta[:, 1])) > 10.0
    assert bool(jnp.all(jnp.isfinite(theta)))


def test_discount_weighs_the_sums_geometrically():
    X, y = _data(n=12)
    model = GaussianLinear(discount=0.9)
    state = _fit(model, X, y)
    w = 0.9 ** np.arange(11, -1, -1)
    np.testing.assert_allclose(state.S[0], np.einsum("n,np,nq->pq", w, X[:, 0], X[:, 0]))
    np.testing.assert_allclose(state.u[0] * state.scale[0],  # u is in units of scale
                               np.einsum("n,np,n->p", w, X[:, 0], y[:, 0]))
    np.testing.assert_allclose(state.n[0], w.sum())


def test_invalid_positions_are_left_exactly():
    model = GaussianLinear(discount=0.5)
    X, y = _data(n=3)
    state = _fit(model, X, y)
    new = model.update(state, X[0], y[0], valid=jnp.array([False, True]))
    for a, b in zip(state, new):
        np.testing.assert_array_equal(a[0], b[0])


def test_config_round_trip_and_datatree():
    model = GaussianLinear(prior_mean=0.5, prior_scale=dist.LogNormal(0.0, 1.0),
                           discount=0.99)
    again = type(model).from_config(model.config())
    assert again.config() == model.config()
    back = GaussianLinear.from_config(GaussianLinear(prior_scale=0.5).config())
    assert type(back) is GaussianLinear and type(back.scale_model) is LearntScaleLinear
    X, y = _data(n=40)
    state = _fit(GaussianLinear(), X, y)
    dt = GaussianLinear().to_datatree(state, 1, key=jax.random.key(0),
                                      data=(X[:, 1], y[:, 1]), draws=4000, chains=2)
    post = dt["posterior"]
    assert set(post.data_vars) == {"theta", "prior_scale", "noise_scale"}
    ref_m, ref_c, ref_s2, _ = _reference(X[:, 1], y[:, 1], np.zeros(3))
    sd = np.sqrt(np.diag(ref_c))
    assert np.all(np.abs(post["theta"].mean(("chain", "draw")).values - ref_m)
                  < 4 * sd / np.sqrt(8000))
    assert float((post["noise_scale"] ** 2).mean()) == pytest.approx(ref_s2, rel=0.05)
    assert set(dt["log_prior"].data_vars) == {"theta", "prior_scale", "noise_scale"}


def test_rank_ts_default_saves_and_loads(tmp_path):
    env = br.RankingEnv.paper(seed=0, K=10, L=3, d=4)
    ts = br.RankTS(items=env.items, w=env.w, seed=0)
    for t in range(5):
        items = ts.select()
        ts.update(items, env.sample(jax.random.key(t), items))
    ts.save(tmp_path / "p.npz")
    back = br.RankTS.load(tmp_path / "p.npz")
    assert type(back.model) is GaussianLinear and back.model.learnt_scale
    np.testing.assert_array_equal(ts.select(), back.select())


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"prior_scale": dist.Normal(0.0, 1.0)}, ValueError, "prior_scale: the hyperprior"),
        ({"prior_scale": dist.HalfNormal(1.0).expand([3])}, ValueError, "prior_scale"),
        ({"prior_scale": dist.Gamma(-1.0, 1.0, validate_args=False)}, ValueError,
         "prior_scale"),
        ({"noise_scale": dist.HalfCauchy(1.0)}, TypeError, "noise_scale"),
        ({"prior_scale": np.array([1.0, -2.0])}, ValueError, "prior_scale"),
        ({"prior_scale": np.ones(2), "prior_mean": np.zeros(3)}, ValueError,
         "prior_scale"),
        ({"prior_scale": -1.0}, ValueError, "prior_scale"),
        ({"prior_scale": dist.HalfCauchy(1.0), "noise_scale": 0.0}, ValueError,
         "noise_scale"),
        ({"prior_scale": "wide"}, TypeError, "prior_scale"),
        ({"discount": 0.0}, ValueError, "discount"),
    ],
)
def test_bad_hyperparameters_are_refused(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        GaussianLinear(**kwargs)


# ------------------------------------------------ hyperpriors: the grid's range
def _exp_normal():
    from numpyro.distributions.transforms import ExpTransform

    return dist.TransformedDistribution(dist.Normal(0.3, 1.2), ExpTransform())


#: (hyperprior, the same distribution in scipy.stats, how its quantiles are found)
HYPERPRIORS = {
    "InverseGamma(0.5, 1)": (lambda: dist.InverseGamma(0.5, 1.0),
                             lambda st: st.invgamma(0.5), "cdf"),
    "InverseGamma(1, 1)": (lambda: dist.InverseGamma(1.0, 1.0),
                           lambda st: st.invgamma(1.0), "cdf"),
    "InverseGamma(3, 2)": (lambda: dist.InverseGamma(3.0, 2.0),
                           lambda st: st.invgamma(3.0, scale=2.0), "cdf"),
    "Gamma(0.3, 1)": (lambda: dist.Gamma(0.3, 1.0), lambda st: st.gamma(0.3), "cdf"),
    "Chi2(3)": (lambda: dist.Chi2(3.0), lambda st: st.chi2(3.0), "cdf"),
    "Weibull(1, 0.7)": (lambda: dist.Weibull(1.0, 0.7),
                        lambda st: st.weibull_min(0.7), "cdf"),
    "LogNormal(0, 1.5)": (lambda: dist.LogNormal(0.0, 1.5),
                          lambda st: st.lognorm(1.5), "icdf"),
    "HalfCauchy(2)": (lambda: dist.HalfCauchy(2.0),
                      lambda st: st.halfcauchy(scale=2.0), "icdf"),
    "Pareto(1, 2)": (lambda: dist.Pareto(1.0, 2.0), lambda st: st.pareto(2.0), "icdf"),
    "TruncatedNormal(low=0)": (lambda: dist.TruncatedNormal(0.0, 1.5, low=0.0),
                               lambda st: st.halfnorm(scale=1.5), "icdf"),
    "exp(Normal(0.3, 1.2))": (_exp_normal,
                              lambda st: st.lognorm(1.2, scale=np.exp(0.3)), "icdf"),
    "Exponential(2)": (lambda: dist.Exponential(2.0),
                       lambda st: st.expon(scale=0.5), "icdf"),
    "|Normal(0, 2)|": (lambda: dist.FoldedDistribution(dist.Normal(0.0, 2.0)),
                       lambda st: st.halfnorm(scale=2.0), "draws"),
}


@pytest.mark.parametrize("name", list(HYPERPRIORS))
def test_hyperprior_grid_spans_its_scipy_quantiles(name):
    """The grid of g runs from the hyperprior's TAIL to its 1 - TAIL quantile
    (scipy's ppf of the same law): to 1e-8 where an icdf or the cdf's numerical
    inverse finds them; by 2^20 draws (no icdf, no cdf) the mass left out on each
    side is within a factor 20 of TAIL. The weights are scipy's density x g."""
    import scipy.stats as st

    from bayesrank.posteriors.hyperprior import GRID, TAIL, hyper_grid

    make, ref, route = HYPERPRIORS[name]
    law = ref(st)
    model = GaussianLinear(prior_scale=make())
    log_g = model.log_g
    assert log_g.shape == (GRID,)
    lo, hi = np.exp(log_g[0]), np.exp(log_g[-1])
    q_lo, q_hi = law.ppf([TAIL, 1 - TAIL])
    if route == "draws":
        assert TAIL / 20 < law.cdf(lo) < 20 * TAIL
        assert TAIL / 20 < law.sf(hi) < 20 * TAIL
    else:  # the grid spans at most 24 decades (none of these reaches it)
        np.testing.assert_allclose([lo, hi], [q_lo, q_hi], rtol=1e-8)
    w = law.logpdf(np.exp(log_g)) + log_g
    np.testing.assert_allclose(model.log_w0, w - np.logaddexp.reduce(w), atol=1e-8)
    np.testing.assert_array_equal(hyper_grid(make())[0], log_g)


@pytest.mark.parametrize("name", ["InverseGamma(0.5, 1)", "InverseGamma(1, 1)",
                                  "Gamma(0.3, 1)", "Weibull(1, 0.7)", "|Normal(0, 2)|"])
def test_a_hyperprior_without_icdf_gives_finite_draws(name):
    """GaussianLinear and LaplaceGLM learn their scale under such a hyperprior: the
    conjugate posterior's draws are finite and its mean is the quadrature's over
    scipy's density of g."""
    import scipy.stats as st

    make, ref, _ = HYPERPRIORS[name]
    X, y = _data(n=12, scale=0.5)
    model = GaussianLinear(prior_scale=make(), noise_scale=0.5)
    state = _fit(model, X, y)
    draws = np.asarray(model.draw_batch(jax.random.key(0), state, 200))
    assert draws.shape == (200, 2, 3) and np.all(np.isfinite(draws))
    law = ref(st)
    ref_m, _, _, _ = _reference(X[:, 0], y[:, 0], np.zeros(3), noise=0.5,
                                log_pdf_g=law.logpdf, n_s=1)
    np.testing.assert_allclose(model.mean(state)[0], ref_m, rtol=2e-3, atol=2e-3)
    glm = br.LaplaceGLM("logistic", prior_scale=make(), n_max=12)
    assert np.all(np.isfinite(glm.log_tau)) and np.all(np.isfinite(glm.log_w0))


@pytest.mark.parametrize(
    ("prior", "match"),
    [
        (lambda: dist.ImproperUniform(dist.constraints.positive, (), ()),
         r"prior_scale: cannot find the 1e-06 and 1 - 1e-06 quantiles of the "
         r"hyperprior ImproperUniform .*: it needs an icdf, a cdf or a sample method"),
        (lambda: dist.Uniform(-1.0, 1.0), r"prior_scale: the hyperprior must live on "
                                          r"\(0, inf\), got Uniform"),
        (lambda: dist.StudentT(3.0), "prior_scale: the hyperprior must live on"),
    ],
)
def test_a_hyperprior_it_cannot_use_is_refused(prior, match):
    with pytest.raises(ValueError, match=match):
        GaussianLinear(prior_scale=prior())
    with pytest.raises(ValueError, match=match):
        br.LaplaceGLM("logistic", prior_scale=prior())


def test_latent_w_with_learnt_scales_equals_quadrature():
    """w latent, g and s learnt: w's posterior mean, sd and theta's mean against a
    brute-force quadrature over (w, g, s) of the n x n marginal likelihood."""
    from bayesrank.posteriors import LatentW

    rng = np.random.default_rng(2)
    n, d, c = 14, 2, 40.0  # rewards in large units
    a, prev = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    theta = np.array([0.8, -0.5]) * c
    y = (a + 1.5 * prev) @ theta + c * rng.normal(size=n)
    model = LatentW(GaussianLinear(), dist.Normal(0.0, 2.0))
    state = model.init(1, 2 * d)
    upd = jax.jit(model.update)
    for t in range(n):
        state = upd(state, np.concatenate([a[t], prev[t]])[None], y[t:t + 1])
    ws = np.linspace(-8, 8, 321)
    log_g = np.linspace(np.log(1e-4), np.log(1e4), 160)
    s_hat = np.std(y)
    log_s = np.linspace(np.log(s_hat) - 4, np.log(s_hat) + 4, 200)
    s2 = np.exp(2 * log_s)
    lw = np.empty(len(ws))
    mean_w = np.empty((len(ws), d))
    for i, w in enumerate(ws):
        X = a + w * prev
        K = X @ X.T
        rows, ms = [], []
        for lg in log_g:
            g2 = np.exp(2 * lg)
            A = np.eye(n) + g2 * K
            _, logdet = np.linalg.slogdet(A)
            quad = y @ np.linalg.solve(A, y)
            rows.append(-0.5 * n * np.log(s2) - 0.5 * logdet - 0.5 * quad / s2)
            ms.append(np.linalg.solve(X.T @ X + np.eye(d) / g2, X.T @ y))
        lp = np.array(rows) + (np.log(2 / np.pi) - np.log1p(np.exp(2 * log_g))
                               + log_g)[:, None]
        top = lp.max()
        wg = np.exp(lp - top).sum(1)
        lw[i] = top + np.log(wg.sum()) - 0.5 * (w / 2.0) ** 2
        mean_w[i] = (wg / wg.sum()) @ np.array(ms)
    p = np.exp(lw - lw.max())
    p /= p.sum()
    ref_w = p @ ws
    ref_sd = np.sqrt(p @ (ws - ref_w) ** 2)
    ref_theta = p @ mean_w
    assert float(model.w_mean(state)[0]) == pytest.approx(ref_w, abs=0.01 * ref_sd)
    assert float(model.w_sd(state)[0]) == pytest.approx(ref_sd, rel=0.01)
    np.testing.assert_allclose(np.asarray(model.mean(state))[0], ref_theta,
                               rtol=2e-3, atol=2e-3 * c)


def test_latent_w_with_a_per_coordinate_scale_equals_the_marginal():
    """A fixed per-coordinate prior scale with the noise learnt and w latent: w's
    collapsed density (the summaries') and the chain's density given g (one node, g =
    1) both equal the n x n marginal likelihood with theta ~ N(0, s^2 diag(scale^2))."""
    from bayesrank.posteriors import LatentW

    rng = np.random.default_rng(5)
    n, d = 12, 2
    scale = np.array([0.5, 3.0])
    a, prev = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    y = (a + 0.7 * prev) @ np.array([0.4, 2.0]) + 0.5 * rng.normal(size=n)
    model = LatentW(GaussianLinear(prior_scale=scale), dist.Normal(0.0, 2.0))
    state = model.init(1, 2 * d)
    for t in range(n):
        state = model.update(state, np.concatenate([a[t], prev[t]])[None], y[t:t + 1])
    ws = np.linspace(-3.0, 3.0, 7)
    ref = []
    for w in ws:
        X = a + w * prev
        M = np.eye(n) + X @ np.diag(scale**2) @ X.T
        ref.append(-0.5 * np.linalg.slogdet(M)[1] - 0.5 * n * np.log(y @ np.linalg.solve(M, y))
                   + float(dist.Normal(0.0, 2.0).log_prob(w)))
    ref = np.array(ref)
    got = np.asarray(model.log_density(state, jnp.asarray(ws)[:, None]))[:, 0]
    np.testing.assert_allclose(got - got[3], ref - ref[3], atol=1e-8)
    stats = tuple(x[0] for x in model._stats(state))
    given_g = np.array([float(model._log_marginal_given_g(stats, state.yy[0], state.n[0],
                                                          w, 1.0)) for w in ws])
    given_g += np.asarray(dist.Normal(0.0, 2.0).log_prob(jnp.asarray(ws)))
    np.testing.assert_allclose(given_g - given_g[3], ref - ref[3], atol=1e-8)


# ------------------------------------------------ constructors are what they say
@pytest.mark.parametrize("kwargs, learnt", [
    ({}, True),
    ({"prior_scale": None, "noise_scale": 2.0}, True),
    ({"prior_scale": dist.HalfNormal(1.0)}, True),
    ({"prior_scale": dist.LogNormal(0.0, 1.0), "noise_scale": 2.0}, True),
    ({"prior_scale": 0.5}, True),                        # a fixed prior, noise learnt
    ({"prior_scale": [1.0, 2.0]}, True),
    ({"prior_scale": np.eye(2) * 2.0}, True),
    ({"prior_scale": 1.0, "noise_scale": 1.0}, False),
    ({"prior_scale": [1.0, 2.0], "noise_scale": 0.5}, False),
    ({"prior_scale": np.array([[2.0, 0.5], [0.5, 1.0]]), "noise_scale": 1.0}, False),
    ({"prior_mean": [0.5, -0.5], "prior_scale": 3.0, "noise_scale": 1.0,
      "discount": 0.99}, False),
])
def test_every_gaussian_linear_form_is_a_gaussian_linear(kwargs, learnt):
    """``GaussianLinear(...)`` is a GaussianLinear for every scale form; the learnt
    or fixed scale is the part it holds, and its config rebuilds the same class."""
    from bayesrank.posteriors.conjugate import FixedScaleLinear
    from bayesrank.posteriors.base import PosteriorModel

    model = GaussianLinear(**kwargs)
    assert type(model) is GaussianLinear and isinstance(model, br.GaussianLinear)
    assert isinstance(model, PosteriorModel)
    assert model.learnt_scale is learnt
    assert type(model.scale_model) is (LearntScaleLinear if learnt else FixedScaleLinear)
    assert not isinstance(model, LearntScaleLinear)
    assert repr(model).startswith("GaussianLinear(")
    back = GaussianLinear.from_config(model.config())
    assert type(back) is GaussianLinear and back.config() == model.config()
    assert back.learnt_scale is learnt
    # the jitted programs stay keyed by configuration: equal models, one tree structure
    assert (jax.tree_util.tree_structure(model)
            == jax.tree_util.tree_structure(GaussianLinear(**kwargs)))


def test_an_earlier_versions_learnt_config_rebuilds_a_gaussian_linear():
    """Files of earlier versions name the learnt part ``LearntScaleLinear`` (the
    policy's model and its config): they rebuild a GaussianLinear, by a fixed table."""
    from bayesrank.policies.runtime.model_config import model_from_config

    cfg = {"class": "LearntScaleLinear", "prior_mean": 0.0,
           "prior_scale": {"class": "HalfCauchy", "params": {"scale": 1.0}},
           "noise_scale": None, "discount": 1.0}
    for model in (GaussianLinear.from_config(cfg),
                  model_from_config({"class": "LearntScaleLinear", "config": cfg})):
        assert type(model) is GaussianLinear and model.learnt_scale
    with pytest.raises(ValueError, match="describes a 'os.system'"):
        GaussianLinear.from_config({"class": "os.system"})


def test_evidence_is_exact_where_rewards_are_far_above_the_noise():
    """Rewards 1e4 noise sds: the residual sum of squares is 1e-8 of sum r^2. The
    grid's log p(y | g) equals the data-space evidence at every node (float64), up
    to one constant; a floor on the residual at a fixed 1e-6 of sum r^2 flattened it
    near the mode."""
    from bayesrank.posteriors.conjugate import grid_loglik

    rng = np.random.default_rng(3)
    n, p = 40, 3
    X = rng.normal(size=(n, p))
    y = X @ (1e4 * rng.normal(size=p)) + rng.normal(size=n)
    log_g = np.linspace(0.0, 12.0, 25)
    _, got = grid_loglik(jnp.asarray(X.T @ X), jnp.asarray(X.T @ y), float(y @ y), float(n),
                         jnp.zeros(p), jnp.asarray(log_g), True)
    D = np.linalg.svd(X, compute_uv=False) ** 2
    want = []
    for lg in log_g:  # the ridge residual form: y^T (I + g^2 X X^T)^-1 y = |y - X t|^2 + |t|^2 / g^2
        t = np.linalg.solve(X.T @ X + np.exp(-2 * lg) * np.eye(p), X.T @ y)
        beta = np.sum((y - X @ t) ** 2) + np.exp(-2 * lg) * t @ t
        want.append(-0.5 * np.sum(np.log1p(np.exp(2 * lg) * D)) - 0.5 * n * np.log(beta))
    diff = np.asarray(got) - np.array(want)
    np.testing.assert_allclose(diff - diff.mean(), 0.0, atol=1e-4)
