"""LaplaceGLM(prior_scale=None | <distribution>): theta's prior scale tau learnt on a
grid by the Laplace evidence. References written independently of the code: a 2-D
trapezoid quadrature over theta of the exact (non-Laplace) logistic marginal
likelihood at every tau of the grid, a long NUTS run of the same hierarchical model
(heavy), and the units of theta (theta times c: the learnt tau follows c)."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest

import bayesrank as br
from bayesrank.posteriors import (
    GaussianLinear, LaplaceGLM, LearntScaleLaplace, LearntScaleLinear, update_many,
)
from bayesrank.posteriors.laplace.learnt_scale import tau_grid


def _data(seed=0, n=30, p=2, scale=1.5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    theta = scale * rng.normal(size=p)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-X @ theta))).astype(float)
    return X, y


def _fold(model, X, y):
    """One position, one row at a time through ``update`` (the warm starts)."""
    state = model.init(1, X.shape[1])
    for i in range(len(y)):
        state = model.update(state, X[i][None], y[i:i + 1])
    return state


def _quadrature(log_tau, X, y, m=161, width=9.0):
    """Per tau: log p(y | tau) (with every constant), E[theta | y, tau] and
    E[theta theta^T | y, tau] by the trapezoid rule on a 2-D box of m x m points,
    re-centred three times on the exact posterior's mean +- ``width`` sd."""
    out = []
    wt = np.outer(*(2 * [np.r_[0.5, np.ones(m - 2), 0.5]]))
    for lt in log_tau:
        tau = np.exp(lt)
        c, h = np.zeros(2), np.full(2, min(8 * tau, 20.0))
        for _ in range(3):
            g1, g2 = (np.linspace(c[i] - h[i], c[i] + h[i], m) for i in range(2))
            T1, T2 = np.meshgrid(g1, g2, indexing="ij")
            eta = X[:, :1, None] * T1 + X[:, 1:, None] * T2
            lp = (np.sum(y[:, None, None] * eta - np.logaddexp(0.0, eta), 0)
                  - 0.5 * (T1**2 + T2**2) / tau**2 - np.log(2 * np.pi * tau**2))
            top = lp.max()
            w = np.exp(lp - top) * wt
            Z = w.sum()
            mu = np.array([np.sum(w * T1), np.sum(w * T2)]) / Z
            second = np.array([[np.sum(w * T1 * T1), np.sum(w * T1 * T2)],
                               [np.sum(w * T1 * T2), np.sum(w * T2 * T2)]]) / Z
            c, h = mu, width * np.sqrt(np.diag(second) - mu**2)
        dA = (g1[1] - g1[0]) * (g2[1] - g2[0])
        out.append((top + np.log(Z * dA), mu, second))
    lz, mu, second = (np.array(a) for a in zip(*out))
    return lz, mu, second


# ------------------------------------------------------ against exact quadrature
@pytest.mark.x64
@pytest.mark.parametrize("seed, scale", [
    (0, 1.5),
    pytest.param(1, 0.3, marks=pytest.mark.heavy),
    pytest.param(2, 3.0, marks=pytest.mark.heavy),
])
def test_grid_posterior_of_tau_equals_quadrature(seed, scale):
    """p = 2, n = 30 logistic rows. The Laplace log evidence has the shape of the
    exact one within 0.06 nats where the grid posterior has mass (measured 0.030-0.034),
    the grid posteriors are within total variation 0.02 (measured 0.006-0.007), and
    E[log tau] within 0.05 posterior sd (measured 0.01-0.02). theta's mean is the MAPs'
    mixture: within 0.35 posterior sd of the exact mean (Laplace's skew)."""
    X, y = _data(seed, scale=scale)
    model = LaplaceGLM("logistic", prior_scale=None, n_max=30)
    state = _fold(model, X, y)
    lz, mu, second = _quadrature(model.log_tau, X, y)
    logits = model.log_w0 + lz
    w_ex = np.exp(logits - np.logaddexp.reduce(logits))
    w_la = np.exp(np.asarray(model.log_weights(state))[0])
    shape = np.asarray(model.log_evidence(state))[0] - lz
    shape = shape - np.sum(w_ex * shape)
    assert np.max(np.abs(shape[w_ex > 1e-3])) < 0.06
    assert 0.5 * np.abs(w_ex - w_la).sum() < 0.02
    e_lt = w_ex @ model.log_tau
    sd_lt = np.sqrt(w_ex @ (model.log_tau - e_lt) ** 2)
    assert abs(w_la @ model.log_tau - e_lt) < 0.05 * sd_lt
    mean = w_ex @ mu
    cov = np.einsum("g,gij->ij", w_ex, second) - np.outer(mean, mean)
    got = np.asarray(model.mean(state))[0]
    assert np.all(np.abs(got - mean) < 0.35 * np.sqrt(np.diag(cov)))
    np.testing.assert_allclose(np.asarray(model.covariance(state))[0], cov, rtol=0.35)


def test_grid_cells_hold_the_hyperprior_mass():
    """tau_grid's weights are the HalfCauchy(1) masses of the cells (its CDF
    2/pi atan(t) in closed form at the cell edges, the tails in the end cells)."""
    log_t, logw = tau_grid()
    edges = np.exp(0.5 * (log_t[1:] + log_t[:-1]))
    cdf = np.r_[0.0, 2 / np.pi * np.arctan(edges), 1.0]
    np.testing.assert_allclose(np.exp(logw), np.diff(cdf), rtol=1e-4, atol=1e-7)
    assert 2 / np.pi * np.arctan(np.exp(log_t[0])) == pytest.approx(0.01, rel=1e-3)


# ------------------------------------------------------------------ units
def test_learnt_tau_follows_theta_scale():
    """theta = c z (the same z, rows, uniforms) for c = 0.3 and 3: E[log tau] moves by
    log 10 = 2.30 within 0.6 on average over 4 positions (measured 2.24; 1.84-2.66 per
    position), and at c = 3 exp(E[log tau]) is within 25 % of theta's realised rms
    (geometric mean over positions measured 1.07; 0.92-1.22 per position). Under
    HalfCauchy(1) (the class's None: its grid reaches tau = 3 and beyond;
    ``LaplaceGLM()``'s HalfNormal(1) grid ends at its 99 % quantile, 2.58)."""
    rng = np.random.default_rng(0)
    L, p, n = 4, 4, 400
    Z = rng.normal(size=(L, p))
    X = rng.normal(size=(n, L, p))
    U = rng.uniform(size=(n, L))
    model = LearntScaleLaplace("logistic", None, n_max=n)
    e_lt = {}
    for c in (0.3, 3.0):
        eta = np.einsum("nlp,lp->nl", X, c * Z)
        Y = (U < 1 / (1 + np.exp(-eta))).astype(float)
        state = update_many(model, model.init(L, p), jnp.asarray(X), jnp.asarray(Y))
        e_lt[c] = np.exp(np.asarray(model.log_weights(state))) @ model.log_tau
    shift = np.mean(e_lt[3.0] - e_lt[0.3])
    assert abs(shift - np.log(10.0)) < 0.6
    rms = 3.0 * np.sqrt(np.mean(Z**2, 1))
    ratio = np.exp(np.mean(e_lt[3.0] - np.log(rms)))
    assert 0.8 < ratio < 1.25


# ------------------------------------------------------------- the fits
def test_every_node_is_the_fixed_scale_fit():
    """Node k's MAP and factor are those of LaplaceGLM(prior_scale=tau_k) (itself
    checked against scikit-learn in test_laplace_posterior.py)."""
    X, y = _data(4, n=12, p=3)
    model = LaplaceGLM("probit", prior_scale=dist.HalfNormal(2.0), n_max=12)
    state = _fold(model, X, y)
    for k in (0, len(model.log_tau) - 1):
        fixed = LaplaceGLM("probit", prior_scale=float(np.exp(model.log_tau[k])), n_max=12)
        ref = _fold(fixed, X, y)
        np.testing.assert_allclose(state.theta[0, k], ref.theta[0], rtol=2e-4, atol=2e-5)
        np.testing.assert_allclose(state.chol[0, k], ref.chol[0], rtol=2e-4, atol=2e-5)


def test_invalid_positions_keep_their_state_bit_for_bit():
    model = LaplaceGLM("exp", prior_scale=None, n_max=5)
    state = model.update(model.init(3, 2), jnp.ones((3, 2)), jnp.array([1.0, 2.0, 0.0]))
    new = model.update(state, jnp.full((3, 2), 0.5), jnp.array([3.0, 1.0, 1.0]),
                       jnp.array([True, False, True]))
    for a, b in zip(new, state):
        np.testing.assert_array_equal(np.asarray(a)[1], np.asarray(b)[1])
    assert not np.array_equal(np.asarray(new.theta)[0], np.asarray(state.theta)[0])


def test_fixed_numbers_keep_the_old_model():
    """A number builds LaplaceGLM itself, with today's configuration; the identity
    link's learnt scale is the conjugate model's (exact)."""
    fixed = LaplaceGLM("logistic", prior_scale=1.0, n_max=10)
    assert type(fixed) is LaplaceGLM
    assert fixed.config() == {"class": "LaplaceGLM", "link": "logistic",
                              "prior_scale": 1.0, "noise_scale": 1.0, "n_max": 10,
                              "tol": 1e-10, "max_iter": 50, "hessian_tol": None}
    assert type(LaplaceGLM()) is LaplaceGLM  # the default learns tau
    assert type(LaplaceGLM().scale_model) is LearntScaleLaplace
    # a file saved under the old default names prior_scale 1.0, or (by hand) none
    old = dict(fixed.config())
    assert type(LaplaceGLM.from_config(old)) is LaplaceGLM
    del old["prior_scale"]
    assert LaplaceGLM.from_config(old).prior_scale == 1.0
    exact = LaplaceGLM("identity", prior_scale=None)
    assert type(exact) is LaplaceGLM and type(exact.scale_model) is GaussianLinear
    assert type(exact.scale_model.scale_model) is LearntScaleLinear
    learnt = LaplaceGLM("logistic", prior_scale=dist.LogNormal(0.0, 1.0), n_max=10)
    back = LaplaceGLM.from_config(json.loads(json.dumps(learnt.config())))
    assert type(back) is LaplaceGLM and type(back.scale_model) is LearntScaleLaplace
    np.testing.assert_allclose(back.log_w0, learnt.log_w0)


# ------------------------------------------------------------- policies
def _cell_check(log_tau_draws, nodes, weights):
    """Draws of log tau from the piecewise-constant density on the grid's cells
    (closed form): each cell's share of the draws is its weight, and within the
    cell the place is Uniform(-1/2, 1/2) of the spacing (Kolmogorov-Smirnov)."""
    from scipy import stats
    h = nodes[1] - nodes[0]
    x = np.asarray(log_tau_draws, float).ravel()
    k = np.clip(np.round((x - nodes[0]) / h).astype(int), 0, len(nodes) - 1)
    frac = (x - nodes[k]) / h
    assert np.all(np.abs(frac) <= 0.5 + 1e-4)  # float32 draws
    share = np.bincount(k, minlength=len(nodes)) / len(x)
    np.testing.assert_allclose(share, weights, atol=4 * np.sqrt(0.25 / len(x)))
    assert stats.kstest(frac, stats.uniform(-0.5, 1.0).cdf).pvalue > 1e-3


@pytest.mark.parametrize("nodes", ["grid", "adaptive"])
@pytest.mark.parametrize("route", ["draw_scales", "posterior"])
def test_tau_draws_spread_over_their_cells(route, nodes):
    """A draw of tau is its node spread over the node's cell in log tau (the grid's
    piecewise-constant density), not the node itself: on the nodes, SBC ranks log tau
    against a continuous truth as a step function (4 of 20 seeds flagged at 1 %)."""
    X, y = _data(seed=3, n=30, p=2, scale=1.0)
    model = LaplaceGLM._holding(LearntScaleLaplace(
        "logistic", LaplaceGLM().hyperprior, n_max=40, nodes=nodes))
    state = _fold(model, X, y)
    tau, w = model.scale_posterior(state)  # (L, J) each
    nodes, weights = np.log(np.asarray(tau[0], float)), np.asarray(w[0], float)
    if route == "draw_scales":
        key = jax.random.key(1)
        theta, draws = model.draw_scales(key, state, 20000)
        np.testing.assert_array_equal(theta, model.draw_batch(key, state, 20000))
    else:
        dt = model.to_datatree(state, 0, key=jax.random.key(2), draws=10000, chains=2)
        draws = dt["posterior"]["prior_scale"].values
    _cell_check(np.log(draws), nodes, weights)


def test_rank_ts_masks_nan_feedback_save_load_posterior_and_tampering(tmp_path):
    env = br.RankingEnv.paper(seed=0, K=12, L=3, d=4, link="logistic")
    ts = br.RankTS(model=LaplaceGLM("logistic", prior_scale=None, n_max=40),
                   items=env.items, w=env.w, seed=0)
    for t in range(12):
        items = ts.select(mask=np.arange(12) >= 2)
        assert np.all(items >= 2)
        r = np.asarray(env.sample(jax.random.key(t), items), float)
        r[t % 3] = np.nan  # one position unobserved each round
        ts.update(items, r)
    assert ts.state.model.n.tolist() == [8, 8, 8]
    assert ts.select_batch(n=4).shape == (4, 3)
    ts.save(tmp_path / "p.npz")
    back = br.RankTS.load(tmp_path / "p.npz")
    assert type(back.model) is LaplaceGLM and back.model.learnt_scale
    np.testing.assert_array_equal(ts.select_batch(n=5), back.select_batch(n=5))
    dt = ts.posterior(1, draws=3000, chains=2)
    post = dt["posterior"]
    assert set(post.data_vars) == {"theta", "prior_scale"}
    assert set(dt["log_prior"].data_vars) == {"theta", "prior_scale"}
    tau, w = ts.model.scale_posterior(ts.state.model)
    e_lt = float(np.asarray(w[1]) @ np.log(np.asarray(tau[1])))  # nodes per position
    assert float(np.log(post["prior_scale"]).mean()) == pytest.approx(e_lt, abs=0.1)
    mean = np.asarray(ts.model.mean(ts.state.model))[1]
    sd = np.sqrt(np.diag(np.asarray(ts.model.covariance(ts.state.model))[1]))
    assert np.all(np.abs(post["theta"].mean(("chain", "draw")).values - mean)
                  < 4 * sd / np.sqrt(6000))
    # a tampered Hessian factor (a node's negative diagonal) is refused on load
    with np.load(tmp_path / "p.npz") as z:
        arrays = {k: z[k] for k in z.files}
    chol = next(k for k, v in arrays.items() if k.startswith("state_") and v.ndim == 4)
    arrays[chol] = arrays[chol].copy()
    arrays[chol][0, 3, 1, 1] = -1.0
    with open(tmp_path / "bad.npz", "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(ValueError, match="non-positive diagonal"):
        br.RankTS.load(tmp_path / "bad.npz")


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"prior_scale": dist.Normal(0.0, 1.0)}, ValueError, "prior_scale: the hyperprior"),
        ({"prior_scale": dist.HalfNormal(1.0).expand([3])}, ValueError, "prior_scale"),
        ({"prior_scale": "wide"}, TypeError, "prior_scale"),
        ({"prior_scale": None, "n_max": 0}, ValueError, "n_max"),
        ({"prior_scale": None, "link": "cubic"}, ValueError, "link"),
        ({"prior_scale": None, "hessian_tol": 2.0}, ValueError, "hessian_tol"),
    ],
)
def test_bad_arguments_are_refused(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        LaplaceGLM(**kwargs)


@pytest.mark.parametrize(
    "cfg, match",
    [
        ({"class": "LearntScaleLaplace", "link": "logistic", "prior_scale": 2.0}, "prior_scale"),
        ({"class": "LearntScaleLaplace", "link": "logistic", "grid": 3}, "unknown"),
        ({"class": "LearntScaleLaplace", "link": "identity"}, "link"),
    ],
)
def test_bad_configurations_are_refused(cfg, match):
    with pytest.raises(ValueError, match=match):
        LaplaceGLM.from_config(cfg)


def test_bad_update_leaves_no_trace():
    model = LaplaceGLM("logistic", prior_scale=None, n_max=4)
    state = model.init(2, 3)
    with pytest.raises(ValueError, match="x: expected shape"):
        model.update(state, jnp.ones((2, 4)), jnp.ones(2))
    with pytest.raises(ValueError, match="valid"):
        model.update(state, jnp.ones((2, 3)), jnp.ones(2), jnp.ones(3, bool))
    assert int(state.n.sum()) == 0


# ------------------------------------------------------------------ NUTS
@pytest.mark.heavy
@pytest.mark.x64
def test_means_match_a_long_nuts_run():
    """The hierarchical model itself by NUTS (tau ~ HalfNormal(1), LaplaceGLM()'s
    default hyperprior, non-centred theta,
    4 x 5,000 draws): E[log tau] within 0.05 posterior sd and theta's mean within
    0.35 sd (the Laplace skew, as against the quadrature). A reference run with a
    20x narrower hyperprior is far outside (the check can fail)."""
    import numpyro
    from numpyro.infer import MCMC, NUTS

    X, y = _data(0, scale=1.5)

    def nuts(scale):
        def m():
            tau = numpyro.sample("tau", dist.HalfNormal(scale))
            z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([2]).to_event(1))
            numpyro.sample("y", dist.Bernoulli(logits=jnp.asarray(X) @ (tau * z)),
                           obs=jnp.asarray(y))
        mc = MCMC(NUTS(m, target_accept_prob=0.95), num_warmup=2000, num_samples=5000,
                  num_chains=4, chain_method="sequential", progress_bar=False)
        mc.run(jax.random.key(1))
        s = mc.get_samples()
        theta = np.asarray(s["tau"])[:, None] * np.asarray(s["z"])
        return np.log(np.asarray(s["tau"])), theta

    model = LaplaceGLM("logistic", prior_scale=None, n_max=30)
    state = _fold(model, X, y)
    w = np.exp(np.asarray(model.log_weights(state))[0])
    got_lt, got = w @ model.log_tau, np.asarray(model.mean(state))[0]
    for scale, ok in ((1.0, True), (0.05, False)):
        lt, theta = nuts(scale)
        close = bool(abs(got_lt - lt.mean()) < 0.05 * lt.std() + 3 * lt.std() / 100
                 and np.all(np.abs(got - theta.mean(0)) < 0.35 * theta.std(0)))
        assert close is ok, (scale, got_lt, lt.mean(), got, theta.mean(0))
