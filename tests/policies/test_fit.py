"""policy.fit(log) equals replaying update() row by row (float64, conjugate to 1e-8),
and gives the same posterior for the Laplace and NUTS GLM models, checked against
independent references (scipy / scikit-learn MAP, a closed-form Hessian, a grid
integral of the posterior mean)."""

from __future__ import annotations

import jax
import numpy as np
import numpyro.distributions as dist
import pytest
from scipy.optimize import minimize
from scipy.special import expit, log_expit

import bayesrank as br
from bayesrank import ope


@pytest.fixture(scope="module")
def env():
    return br.RankingEnv.paper(seed=4, K=10, L=3, d=4, w_max=3.0)


def _log(env, n=60, seed=0):
    rng = np.random.default_rng(seed)
    lists = rng.integers(0, env.K, size=(n, env.L))
    rewards = np.stack([np.asarray(env.sample(jax.random.key(seed * 1000 + t), lists[t]))
                        for t in range(n)])
    rewards[rng.random(rewards.shape) < 0.2] = np.nan  # partial feedback
    v0 = rng.normal(size=(n, env.d))
    return ope.as_log(lists=lists, rewards=rewards, v0=v0, K=env.K)


def _leaves(state):
    """The state's array leaves as NumPy (PRNG keys left out)."""
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(state)
            if not jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)]


MAKERS = {
    "RankTS": lambda e: br.RankTS(items=e.items, w=e.w, seed=0),
    "RankTS latent w": lambda e: br.RankTS(items=e.items, L=e.L, w=dist.Normal(0., 3.),
                                           seed=0),
    "RankUCB": lambda e: br.RankUCB(items=e.items, w=e.w),
    "GenRankUCB": lambda e: br.GenRankUCB(e.items, L=e.L),
    "GenRankTS": lambda e: br.GenRankTS(e.items, L=e.L, seed=0),
    "Baseline": lambda e: br.RankedBaseline(e.items, L=e.L),
}


@pytest.mark.parametrize("name", list(MAKERS))
def test_fit_equals_sequential_updates(env, name):
    log = _log(env)
    a, b = MAKERS[name](env), MAKERS[name](env)
    a.fit(log)
    for t in range(log.sizes["round"]):
        b.update(log["lists"].values[t], log["rewards"].values[t], v0=log["v0"].values[t])
    la, lb = _leaves(a.state), _leaves(b.state)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(x, y, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(a.posterior_mean(), b.posterior_mean(), rtol=1e-8,
                               atol=1e-10)


def test_a_bad_log_is_refused_and_nothing_changes(env):
    pol = MAKERS["RankTS"](env)
    before = [np.asarray(x).copy() for x in jax.tree_util.tree_leaves(pol.state.model)]
    log = _log(env)
    bad = log.copy()
    bad["lists"] = bad["lists"] + env.K  # items out of range
    with pytest.raises(ValueError, match="lists"):
        pol.fit(bad)
    short = ope.as_log(lists=np.zeros((3, env.L + 1), int), rewards=np.zeros((3, env.L + 1)),
                       v0=np.zeros(env.d), K=env.K)
    with pytest.raises(ValueError, match="lists"):
        pol.fit(short)
    for x, y in zip(before, jax.tree_util.tree_leaves(pol.state.model)):
        np.testing.assert_array_equal(x, np.asarray(y))


# ------------------------------------------------ Laplace and NUTS (non-conjugate GLMs)
# Small logistic problem: K = 6 items in d = 2, L = 2, known w, 40 rounds, Bernoulli
# rewards with 20 % of positions unobserved (NaN). The features each position's model
# sees are written out here: x^l = v_{a^l} + w_l v_{a^{l-1}}, with v0 before position 1.
GLM_W = np.array([1.0, 0.5])
PRIOR_SCALE = 1.5  # theta ~ N(0, 1.5^2 I): ridge weight lambda = 1 / 1.5^2


@pytest.fixture(scope="module")
def glm_data():
    rng = np.random.default_rng(11)
    K, L, d, n = 6, 2, 2, 40
    items = rng.normal(size=(K, d))
    lists = rng.integers(0, K, size=(n, L))
    v0 = rng.normal(size=(n, d))
    prev = np.concatenate([v0[:, None, :], items[lists[:, :-1]]], axis=1)
    x = items[lists] + GLM_W[None, :, None] * prev  # (n, L, d)
    theta_true = np.array([[1.0, -0.5], [0.5, 1.0]])
    y = (rng.random((n, L)) < expit(np.einsum("nlp,lp->nl", x, theta_true))).astype(float)
    y[rng.random((n, L)) < 0.2] = np.nan
    log = ope.as_log(lists=lists, rewards=y, v0=v0, K=K)
    return {"items": items, "log": log, "x": x, "y": y}


def _observed(data, pos, n_max):
    """The reference data of one position: the last n_max observed rows, oldest first."""
    seen = np.isfinite(data["y"][:, pos])
    return data["x"][seen, pos][-n_max:], data["y"][seen, pos][-n_max:]


def _neg_log_post(theta, X, y):
    lam = 1.0 / PRIOR_SCALE**2
    return 0.5 * lam * theta @ theta - np.sum(y * log_expit(X @ theta)
                                              + (1 - y) * log_expit(-(X @ theta)))


def _hessian(theta, X):
    s = expit(X @ theta)
    return np.eye(X.shape[1]) / PRIOR_SCALE**2 + (X * (s * (1 - s))[:, None]).T @ X


def _grad(theta, X, y):
    return theta / PRIOR_SCALE**2 + X.T @ (expit(X @ theta) - y)


def _map(X, y):
    """Reference MAP: scipy's trust-region Newton on the log posterior written above
    (to a gradient of 1e-7), polished by two plain Newton steps (quadratic: the
    gradient is then at rounding level)."""
    res = minimize(_neg_log_post, np.zeros(X.shape[1]), args=(X, y), method="trust-exact",
                   jac=_grad, hess=lambda t, X, y: _hessian(t, X), options={"gtol": 1e-7})
    assert res.success
    theta = res.x
    for _ in range(2):
        theta = theta - np.linalg.solve(_hessian(theta, X), _grad(theta, X, y))
    assert np.abs(_grad(theta, X, y)).max() < 1e-12
    return theta


def _fit_and_replay(make, data, warm=3):
    """Two policies sharing one model: a.fit(log), b.update row by row. Both first
    select ``warm`` lists (NUTS: the chains have started and adapted a little)."""
    model = make()
    a, b = (br.RankTS(model=model, items=data["items"], w=GLM_W, seed=0) for _ in "ab")
    for pol in (a, b):
        for _ in range(warm):
            pol.select()
    log = data["log"]
    a.fit(log)
    for t in range(log.sizes["round"]):
        b.update(log["lists"].values[t], log["rewards"].values[t], v0=log["v0"].values[t])
    return a, b


@pytest.mark.parametrize("n_max", [64, 12], ids=["full data", "window of 12"])
def test_laplace_fit_gives_the_sequential_and_the_reference_posterior(glm_data, n_max):
    a, b = _fit_and_replay(
        lambda: br.LaplaceGLM("logistic", prior_scale=PRIOR_SCALE, n_max=n_max), glm_data
    )
    # fit is the same compiled update in a scan, so equal to Newton's stopping rule:
    # the MAP is within tol = 1e-10 (relative) of the optimum on either path
    # (measured: bit-identical states).
    for x, y in zip(_leaves(a.state), _leaves(b.state)):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-10)
    for pol in (a, b):
        st = pol.state.model
        for pos in range(2):
            X, y = _observed(glm_data, pos, n_max)
            assert 0 < y.sum() < y.size  # both outcomes: a finite MLE part
            # the buffer holds exactly the observations the posterior conditions on
            bx, by = pol.model.data(st, pos)
            np.testing.assert_allclose(bx, X, rtol=1e-13, atol=1e-15)
            np.testing.assert_array_equal(by, y)
            # the MAP is the (window's) full-data MAP: scipy on the log posterior
            ref = _map(X, y)
            np.testing.assert_allclose(pol.posterior_mean()[pos], ref, rtol=0, atol=1e-8)
            # Hessian factor: L L^T = lambda I + sum s(1 - s) x x^T at the MAP
            chol = np.asarray(st.chol[pos])
            np.testing.assert_allclose(chol @ chol.T, _hessian(ref, X), rtol=1e-8)


def test_laplace_map_matches_scikit_learn(glm_data):
    sklearn = pytest.importorskip("sklearn.linear_model")
    a, _ = _fit_and_replay(
        lambda: br.LaplaceGLM("logistic", prior_scale=PRIOR_SCALE, n_max=64), glm_data,
        warm=0,
    )
    for pos in range(2):
        X, y = _observed(glm_data, pos, 64)
        # sklearn minimises ||w||^2 / 2 + C sum logloss: C = prior_scale^2
        lr = sklearn.LogisticRegression(C=PRIOR_SCALE**2, fit_intercept=False, tol=1e-12,
                                        max_iter=10_000).fit(X, y.astype(int))
        np.testing.assert_allclose(a.posterior_mean()[pos], lr.coef_[0], atol=1e-6)


def _grid_posterior(X, y):
    """Posterior mean and sd of theta (d = 2) by brute-force summation on a grid of
    401^2 points spanning +-9 Laplace sds around the MAP."""
    ref = _map(X, y)
    sd = np.sqrt(np.diag(np.linalg.inv(_hessian(ref, X))))
    g0 = ref[0] + np.linspace(-9, 9, 401) * sd[0]
    g1 = ref[1] + np.linspace(-9, 9, 401) * sd[1]
    T = np.stack(np.meshgrid(g0, g1, indexing="ij"), -1).reshape(-1, 2)
    eta = T @ X.T
    lp = -0.5 * np.sum(T**2, 1) / PRIOR_SCALE**2 + np.sum(
        y * log_expit(eta) + (1 - y) * log_expit(-eta), 1)
    wgt = np.exp(lp - lp.max())
    wgt /= wgt.sum()
    mean = wgt @ T
    return mean, np.sqrt(wgt @ (T - mean) ** 2)


def test_nuts_fit_gives_the_sequential_state_and_the_reference_posterior(glm_data):
    import arviz as az

    a, b = _fit_and_replay(
        lambda: br.BayesGLM("logistic", prior_scale=PRIOR_SCALE, n_max=64,
                            num_warmup=100, steps_per_round=2), glm_data
    )
    sa, sb = a.state.model, b.state.model
    for name in ("x", "y", "n"):  # the data buffers: identical
        np.testing.assert_array_equal(np.asarray(getattr(sa, name)),
                                      np.asarray(getattr(sb, name)))
    # the warm chains too: same z, and potential energy and gradient refreshed on the
    # same data (measured: bit-identical); so the next draws are the same
    for x, y in zip(_leaves(sa), _leaves(sb)):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(a.select(), b.select())
    np.testing.assert_array_equal(np.asarray(a.state.model.theta),
                                  np.asarray(b.state.model.theta))
    for pos in range(2):
        X, y = _observed(glm_data, pos, 64)
        bx, by = a.model.data(sa, pos)
        np.testing.assert_allclose(bx, X, rtol=1e-13, atol=1e-15)
        np.testing.assert_array_equal(by, y)
        mean, sd = _grid_posterior(X, y)
        # fresh chains on each policy's buffers (different keys: independent runs)
        for pol, key in ((a, 1), (b, 2)):
            dt = pol.model.to_datatree(pol.state.model, pos, key=jax.random.key(key),
                                       chains=2, draws=1000, warmup=300)
            draws = dt.posterior["theta"].values.reshape(-1, 2)
            ess = az.ess(dt.posterior.to_dataset())["theta"].values
            assert (ess > 300).all()
            mc_se = sd / np.sqrt(ess)
            assert (np.abs(draws.mean(0) - mean) < 4 * mc_se).all(), (
                draws.mean(0), mean, mc_se)
            np.testing.assert_allclose(draws.std(0), sd, rtol=0.15)
