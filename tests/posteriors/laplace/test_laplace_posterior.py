"""Laplace GLM posterior: references are scikit-learn's regularised GLM fits,
``jax.hessian`` of a hand-written negative log posterior, and the conjugate model."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy.special import gammaln, log_ndtr
from sklearn.linear_model import LogisticRegression, PoissonRegressor

import bayesrank as br
from bayesrank.posteriors import GaussianLinear, LaplaceGLM, PosteriorModel, update_many

L, P = 2, 4


def _data(link, n=60, seed=0, L=L, p=P):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, L, p)) / np.sqrt(p)
    theta = rng.normal(size=(L, p))
    eta = np.einsum("nlp,lp->nl", X, theta)
    if link == "exp":
        Y = rng.poisson(np.exp(eta)).astype(float)
    elif link == "identity":
        Y = eta + 0.7 * rng.normal(size=eta.shape)
    else:
        Y = (rng.uniform(size=eta.shape) < 1 / (1 + np.exp(-eta))).astype(float)
    return X, Y


def _fold(model, X, Y):
    """One row at a time through ``update`` (exercises the warm start)."""
    state = model.init(X.shape[1], X.shape[2])
    for x, y in zip(X, Y):
        state = model.update(state, x, y)
    return state


def _neg_log_post(theta, X, y, link, s0):
    eta = X @ theta
    if link == "logistic":
        ll = y * jax.nn.log_sigmoid(eta) + (1 - y) * jax.nn.log_sigmoid(-eta)
    elif link == "probit":
        ll = y * log_ndtr(eta) + (1 - y) * log_ndtr(-eta)
    else:
        ll = y * eta - jnp.exp(eta) - gammaln(y + 1)
    return 0.5 * jnp.sum(theta**2) / s0**2 - jnp.sum(ll)


def _rel(a, b):
    return np.linalg.norm(np.asarray(a) - b) / np.linalg.norm(b)


# ------------------------------------------------------------ MAP references
@pytest.mark.parametrize("s0, n_max", [(0.5, 100), (1.5, 100), (1.5, 700)])
def test_logistic_map_equals_sklearn(s0, n_max):
    """n_max = 700: the Newton passes run over blocks of the rows held (60 of 700)."""
    X, Y = _data("logistic")
    model = LaplaceGLM(link="logistic", prior_scale=s0, n_max=n_max)
    state = _fold(model, X, Y)
    for pos in range(L):
        # newton-cholesky: lbfgs stops at gradients ~1e-8, ours reach ~1e-15.
        ref = LogisticRegression(
            C=s0**2,
            fit_intercept=False,
            tol=1e-12,
            max_iter=10000,
            solver="newton-cholesky",
        ).fit(X[:, pos], Y[:, pos])
        assert _rel(model.mean(state)[pos], ref.coef_[0]) < 1e-6


@pytest.mark.parametrize("link", ["logistic", "exp"])
def test_newton_from_a_stale_hessian_reaches_the_sklearn_map(link):
    """``newton_map`` started at 0 with the prior's Hessian as its first factor (as
    stale as it gets) reaches scikit-learn's MAP, and started at that MAP it takes no
    step at all (the stopping rule reads the next step from the last factor)."""
    from bayesrank.posteriors.laplace import newton_map

    X, Y = _data(link, n=80, seed=3)
    x, y, s0 = X[:, 0], Y[:, 0], 0.8
    lam = 1 / s0**2
    mask = np.ones(len(y), bool)
    theta, chol, it = newton_map(link, lam, jnp.asarray(x), jnp.asarray(y), mask,
                                 jnp.zeros(P), 1e-12, 50, chol0=np.sqrt(lam) * np.eye(P))
    if link == "logistic":
        ref = LogisticRegression(C=s0**2, fit_intercept=False, tol=1e-12, max_iter=10000,
                                 solver="newton-cholesky").fit(x, y).coef_[0]
    else:
        ref = PoissonRegressor(alpha=lam / len(y), fit_intercept=False, tol=1e-12,
                               max_iter=10000).fit(x, y).coef_
    assert 1 < int(it) < 50 and _rel(theta, ref) < 1e-6
    hess = jax.hessian(_neg_log_post)(theta, jnp.asarray(x), jnp.asarray(y), link, s0)
    np.testing.assert_allclose(np.asarray(chol @ chol.T), np.asarray(hess), rtol=1e-8)
    again = newton_map(link, lam, jnp.asarray(x), jnp.asarray(y), mask, theta, 1e-12, 50)
    assert int(again[2]) == 0
    np.testing.assert_array_equal(np.asarray(again[0]), np.asarray(theta))


@pytest.mark.parametrize("link", ["logistic", "probit", "exp"])
@pytest.mark.parametrize("rows", [300, 250, 64, 1])
def test_blocked_passes_equal_the_whole_buffer(link, rows):
    """Newton over blocks of 64 rows up to ``rows`` (the last block starts early and
    masks what it overlaps) gives the fit over the whole masked buffer: same MAP,
    same factor, same step count."""
    from bayesrank.posteriors.laplace import newton_map

    X, Y = _data(link, n=300, seed=8)
    x, y = jnp.asarray(X[:, 1]), jnp.asarray(Y[:, 1])
    mask = np.arange(300) < rows
    whole = newton_map(link, 1.0, x, y, mask, jnp.zeros(P), 1e-12, 50)
    blocks = newton_map(link, 1.0, x, y, mask, jnp.zeros(P), 1e-12, 50, rows=rows,
                        block=64)
    np.testing.assert_allclose(blocks[0], whole[0], rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(blocks[1], whole[1], rtol=1e-11, atol=1e-13)
    assert int(blocks[2]) == int(whole[2])
    with pytest.raises(ValueError, match="rows"):
        newton_map(link, 1.0, x, y, mask, jnp.zeros(P), 1e-12, 50, block=64)


@pytest.mark.parametrize("link, seed", [("logistic", 4), ("logistic", 6), ("exp", 5)])
def test_hessian_tol_takes_the_last_small_step_without_a_new_hessian(link, seed):
    """With ``refresh_tol`` a warm update computes fewer Hessians than the exact rule.
    Its last step, below 1e-4, is taken without a new Hessian: the MAP equals a fit
    to tol 1e-13 to 1e-10 (Newton converges quadratically), while stopping before that
    step would leave it more than 1e-8 away; and its factor is the Hessian at a point
    within 1e-4 of the MAP (1e-3 relative at most). scikit-learn agrees to 1e-6."""
    from bayesrank.posteriors.laplace import newton_map

    X, Y = _data(link, n=300, seed=seed)
    x, y, s0 = jnp.asarray(X[:, 0]), jnp.asarray(Y[:, 0]), 1.0
    lam, n = 1 / s0**2, len(Y)
    mask = np.ones(n, bool)
    # warm start: the fit without the last row, as an update starts
    prev, c_prev, _ = newton_map(link, lam, x, y, np.arange(n) < n - 1, jnp.zeros(P),
                                 1e-12, 50)
    exact, _, it_exact = newton_map(link, lam, x, y, mask, prev, 1e-13, 50, chol0=c_prev)
    theta, chol, it = newton_map(link, lam, x, y, mask, prev, 1e-10, 50, chol0=c_prev,
                                 refresh_tol=1e-4)
    assert int(it) < int(it_exact)
    before, _, _ = newton_map(link, lam, x, y, mask, prev, 1e-10, int(it), chol0=c_prev)
    assert _rel(before, exact) > 1e-8 and _rel(theta, exact) < 1e-10
    if link == "logistic":
        ref = LogisticRegression(C=s0**2, fit_intercept=False, tol=1e-12, max_iter=10000,
                                 solver="newton-cholesky").fit(X[:, 0], Y[:, 0]).coef_[0]
    else:
        ref = PoissonRegressor(alpha=lam / n, fit_intercept=False, tol=1e-12,
                               max_iter=10000).fit(X[:, 0], Y[:, 0]).coef_
    assert _rel(theta, ref) < 1e-6
    hess = np.asarray(jax.hessian(_neg_log_post)(theta, x, y, link, s0))
    assert _rel(chol @ chol.T, hess) < 1e-3


def test_float32_states_default_to_hessian_tol_1e_4_and_float64_to_exact(monkeypatch):
    """The documented defaults reach the Newton fit (a spy on ``newton_map``), and a
    float32 fold follows the float64 one."""
    from bayesrank.posteriors.laplace import fixed_scale as laplace_fixed
    seen = []
    orig = laplace_fixed.newton_map

    def spy(*args, **kwargs):
        seen.append((str(args[2].dtype), kwargs.get("refresh_tol")))
        return orig(*args, **kwargs)

    monkeypatch.setattr(laplace_fixed, "newton_map", spy)
    model = LaplaceGLM(link="logistic", prior_scale=1.0, n_max=100)
    assert model.refresh_tol(jnp.float32) == 1e-4 and model.refresh_tol(jnp.float64) is None
    assert LaplaceGLM(prior_scale=1.0, hessian_tol=0).refresh_tol(jnp.float32) is None
    assert LaplaceGLM(prior_scale=1.0, hessian_tol=1e-3).refresh_tol(jnp.float64) == 1e-3
    X, Y = _data("logistic", n=80, seed=6)
    ref = _fold(model, X, Y)
    state = jax.tree.map(lambda a: a.astype(jnp.float32) if a.dtype == jnp.float64 else a,
                         model.init(L, P))
    for xr, yr in zip(X, Y):
        state = model.update(state, xr, yr)
    assert set(seen) == {("float64", None), ("float32", 1e-4)}
    assert state.theta.dtype == jnp.float32
    assert _rel(state.theta, np.asarray(ref.theta)) < 1e-4
    assert _rel(np.asarray(state.chol), np.asarray(ref.chol)) < 1e-3


@pytest.mark.parametrize("s0", [0.5, 1.5])
def test_poisson_map_equals_sklearn(s0):
    X, Y = _data("exp")
    n = X.shape[0]
    model = LaplaceGLM(link="exp", prior_scale=s0, n_max=100)
    state = _fold(model, X, Y)
    for pos in range(L):
        ref = PoissonRegressor(
            alpha=1 / (n * s0**2),
            fit_intercept=False,
            tol=1e-12,
            max_iter=10000,
            solver="newton-cholesky",
        ).fit(X[:, pos], Y[:, pos])
        assert _rel(model.mean(state)[pos], ref.coef_) < 1e-6


@pytest.mark.parametrize("link", ["logistic", "probit", "exp"])
def test_map_zeroes_the_gradient_and_covariance_is_inverse_hessian(link):
    X, Y = _data(link, n=40, seed=3)
    s0 = 1.3
    model = LaplaceGLM(link=link, prior_scale=s0, n_max=64)
    state = _fold(model, X, Y)
    cov = np.asarray(model.covariance(state))
    for pos in range(L):
        f = lambda t: _neg_log_post(t, X[:, pos], Y[:, pos], link, s0)  # noqa: E731
        theta = model.mean(state)[pos]
        assert np.max(np.abs(jax.grad(f)(theta))) < 1e-9
        H = np.asarray(jax.hessian(f)(theta))
        np.testing.assert_allclose(cov[pos], np.linalg.inv(H), rtol=1e-8, atol=1e-12)
        chol, logdet_ratio = model.gram(state)
        np.testing.assert_allclose(chol[pos] @ chol[pos].T, H, rtol=1e-10)
        expected = np.linalg.slogdet(H)[1] - P * np.log(1 / s0**2)
        np.testing.assert_allclose(logdet_ratio[pos], expected, rtol=1e-10)


def test_identity_link_equals_the_conjugate_model_and_closed_form():
    X, Y = _data("identity", n=30)
    model = LaplaceGLM(link="identity", prior_scale=0.8, noise_scale=0.7)
    ref = GaussianLinear(prior_scale=0.8, noise_scale=0.7)
    a = update_many(model, model.init(L, P), X, Y)
    b = update_many(ref, ref.init(L, P), X, Y)
    np.testing.assert_allclose(model.mean(a), ref.mean(b), rtol=1e-12)
    np.testing.assert_allclose(model.gram(a)[0], ref.gram(b)[0], rtol=1e-12)
    for pos in range(L):
        Pn = np.eye(P) / 0.8**2 + X[:, pos].T @ X[:, pos] / 0.7**2
        mean = np.linalg.solve(Pn, X[:, pos].T @ Y[:, pos] / 0.7**2)
        np.testing.assert_allclose(model.mean(a)[pos], mean, rtol=1e-10)
        np.testing.assert_allclose(model.covariance(a)[pos], np.linalg.inv(Pn), rtol=1e-9)


def test_draws_follow_the_laplace_gaussian():
    X, Y = _data("logistic", n=50, seed=5)
    model = LaplaceGLM(link="logistic", prior_scale=1.0, n_max=64)
    state = _fold(model, X, Y)
    draws = jax.vmap(lambda k: model.draw(k, state)[0])(
        jax.random.split(jax.random.key(1), 20000)
    )
    draws = np.asarray(draws)
    cov = np.asarray(model.covariance(state))
    for pos in range(L):
        sd = np.sqrt(np.diag(cov[pos]))
        err = np.abs(draws[:, pos].mean(0) - np.asarray(state.theta[pos])) / sd
        assert np.all(err < 5 / np.sqrt(20000))
        np.testing.assert_allclose(np.cov(draws[:, pos].T), cov[pos], atol=0.05 * sd.max() ** 2)


# ------------------------------------------------------------ masks, jit, vmap
@pytest.mark.parametrize("link", ["logistic", "exp"])
def test_unobserved_positions_keep_their_state_bit_for_bit(link):
    X, Y = _data(link, n=10)
    model = LaplaceGLM(link=link, prior_scale=1.0, n_max=16)
    state = _fold(model, X, Y)
    valid = jnp.array([True, False])
    new = model.update(state, X[0] * 3.0, Y[0], valid)
    for a, b in zip(new, state):
        np.testing.assert_array_equal(a[1], b[1])
    assert int(new.n[0]) == int(state.n[0]) + 1
    # and the observed position equals a fit that skipped the unobserved rows
    ref = model.update(state, X[0] * 3.0, Y[0])
    np.testing.assert_allclose(new.theta[0], ref.theta[0], rtol=1e-12)


def test_masked_updates_equal_the_observed_rows_only():
    X, Y = _data("logistic", n=30, seed=8)
    valid = np.random.default_rng(0).uniform(size=Y.shape) < 0.6
    model = LaplaceGLM(link="logistic", prior_scale=1.2, n_max=32)
    state = model.init(L, P)
    for x, y, v in zip(X, Y, valid):
        state = model.update(state, x, np.where(v, y, 0.0), v)
    for pos in range(L):
        ref = LogisticRegression(
            C=1.2**2, fit_intercept=False, tol=1e-12, max_iter=10000,
            solver="newton-cholesky",
        ).fit(X[valid[:, pos], pos], Y[valid[:, pos], pos])
        assert _rel(state.theta[pos], ref.coef_[0]) < 1e-6


def test_jit_scan_and_vmap_over_runs_equal_a_loop():
    model = LaplaceGLM(link="probit", prior_scale=1.0, n_max=10)
    runs = [_data("logistic", n=8, seed=s) for s in range(3)]
    Xs = jnp.stack([r[0] for r in runs])
    Ys = jnp.stack([r[1] for r in runs])

    @jax.jit
    def one(X, Y, key):
        state = update_many(model, model.init(L, P), X, Y)
        theta, _ = model.draw(key, state)
        return state, theta

    keys = jax.random.split(jax.random.key(0), 3)
    batched, thetas = jax.vmap(one)(Xs, Ys, keys)
    for r in range(3):
        if r == 0:  # the reference without jit: no trace-time Python state
            with jax.disable_jit():
                state = _fold(model, np.asarray(Xs[r]), np.asarray(Ys[r]))
        else:
            state = _fold(model, np.asarray(Xs[r]), np.asarray(Ys[r]))
        np.testing.assert_allclose(batched.theta[r], state.theta, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(batched.chol[r], state.chol, rtol=1e-10, atol=1e-12)
        theta, _ = model.draw(keys[r], state)
        np.testing.assert_allclose(thetas[r], theta, rtol=1e-9, atol=1e-12)


def test_full_buffer_keeps_a_sliding_window_of_the_latest_rows():
    X, Y = _data("logistic", n=13, seed=2)
    model = LaplaceGLM(link="logistic", prior_scale=1.0, n_max=5)
    state = _fold(model, X, Y)
    assert state.n.tolist() == [13, 13]
    for pos in range(L):
        xs, ys = model.data(state, pos)
        np.testing.assert_array_equal(xs, X[-5:, pos])
        np.testing.assert_array_equal(ys, Y[-5:, pos])
        fresh = _fold(model, X[-5:], Y[-5:])
        np.testing.assert_allclose(state.theta[pos], fresh.theta[pos], rtol=1e-9)
        # and not the full-data fit
        full = _fold(LaplaceGLM(link="logistic", prior_scale=1.0, n_max=13), X, Y)
        assert _rel(state.theta[pos], np.asarray(full.theta[pos])) > 1e-3


# ----------------------------------------------------------------- host side
def test_datatree_groups_and_log_likelihood():
    X, Y = _data("exp", n=12)
    model = LaplaceGLM(link="exp", prior_scale=1.0, n_max=20)
    state = _fold(model, X, Y)
    dt = model.to_datatree(state, 1, key=jax.random.key(0), draws=50, chains=2)
    assert {"posterior", "log_likelihood", "log_prior", "observed_data"} <= set(
        dt.children
    )
    theta = dt["posterior"]["theta"].values
    assert theta.shape == (2, 50, P)
    ll = dt["log_likelihood"]["y"].values
    eta = theta @ X[:, 1].T
    ref = Y[:, 1] * eta - np.exp(eta) - gammaln(Y[:, 1] + 1)
    np.testing.assert_allclose(ll, ref, rtol=1e-10)
    lp = dt["log_prior"]["theta"].values
    np.testing.assert_allclose(
        lp, -0.5 * P * np.log(2 * np.pi) - 0.5 * np.sum(theta**2, -1), rtol=1e-10
    )
    # the same key gives the same draws; ``data`` is ignored (buffers are used)
    again = model.to_datatree(state, 1, key=jax.random.key(0), draws=50, chains=2,
                              data=(X[:3, 1], Y[:3, 1]))
    np.testing.assert_array_equal(again["posterior"]["theta"].values, theta)


def test_config_round_trip_and_protocol():
    model = LaplaceGLM(link="probit", prior_scale=np.float32(2.0), n_max=7, tol=1e-9)
    cfg = json.loads(json.dumps(model.config()))
    again = LaplaceGLM.from_config(cfg)
    assert again.config() == model.config()
    for name in ("prior_scale", "noise_scale", "n_max", "tol", "max_iter", "hessian_tol"):
        assert getattr(again, name) == getattr(model, name)
    assert (again.link.name, again.prior_scale, again.tol) == ("probit", 2.0, 1e-9)
    assert isinstance(model, PosteriorModel)
    assert br.LaplaceGLM is LaplaceGLM
    with pytest.raises(ValueError, match="cfg"):
        LaplaceGLM.from_config({**cfg, "class": "BayesGLM"})
    with pytest.raises(ValueError, match="cfg"):
        LaplaceGLM.from_config({**cfg, "evil": 1})


@pytest.mark.parametrize(
    "link, bad",
    [("logistic", [0.5, 1.0]), ("probit", [2.0, 0.0]), ("exp", [-1.0, 0.0]),
     ("exp", [0.5, 1.0]), ("identity", [np.nan, 0.0])],
)
def test_rewards_outside_the_support_raise(link, bad):
    with pytest.raises(ValueError, match="rewards"):
        LaplaceGLM(link=link).check_rewards(np.array(bad))


BAD_ARGS = [
    ({"link": "cauchit"}, ValueError, "link"),
    ({"link": 3}, ValueError, "link"),
    ({"prior_scale": 0.0}, ValueError, "prior_scale"),
    ({"prior_scale": -1}, ValueError, "prior_scale"),
    ({"prior_scale": np.nan}, ValueError, "prior_scale"),
    ({"prior_scale": np.inf}, ValueError, "prior_scale"),
    ({"prior_scale": True}, TypeError, "prior_scale"),
    ({"prior_scale": np.bool_(True)}, TypeError, "prior_scale"),
    ({"prior_scale": "1.0"}, TypeError, "prior_scale"),
    ({"prior_scale": [1.0, 2.0]}, TypeError, "prior_scale"),
    ({"prior_scale": np.array([1.0, 2.0])}, ValueError, "prior_scale"),
    ({"prior_scale": 1 + 1j}, TypeError, "prior_scale"),
    ({"noise_scale": 0.0}, ValueError, "noise_scale"),
    ({"noise_scale": "x"}, TypeError, "noise_scale"),
    ({"n_max": 0}, ValueError, "n_max"),
    ({"n_max": 2.5}, TypeError, "n_max"),
    ({"n_max": True}, TypeError, "n_max"),
    ({"tol": 0.0}, ValueError, "tol"),
    ({"tol": np.nan}, ValueError, "tol"),
    ({"max_iter": 0}, ValueError, "max_iter"),
    ({"max_iter": np.float64(3.0)}, TypeError, "max_iter"),
    ({"hessian_tol": -1e-4}, ValueError, "hessian_tol"),
    ({"hessian_tol": 1.0}, ValueError, "hessian_tol"),
    ({"hessian_tol": np.nan}, ValueError, "hessian_tol"),
    ({"hessian_tol": "1e-4"}, TypeError, "hessian_tol"),
    ({"hessian_tol": True}, TypeError, "hessian_tol"),
]


@pytest.mark.parametrize("kwargs, err, name", BAD_ARGS)
def test_bad_hyperparameters_raise_naming_the_argument(kwargs, err, name):
    with pytest.raises(err, match=name):
        LaplaceGLM(**kwargs)


@pytest.mark.parametrize("value", [np.float32(2.0), np.float64(2.0), np.int64(2), 2])
def test_numpy_scalar_hyperparameters_are_accepted(value):
    model = LaplaceGLM(prior_scale=value, noise_scale=value)
    assert model.prior_scale == 2.0 and type(model.prior_scale) is float


def test_bad_update_shapes_raise_and_leave_state():
    model = LaplaceGLM(prior_scale=1.0, n_max=4)
    state = model.init(L, P)
    with pytest.raises(ValueError, match=r"x: expected shape \(L, p\)"):
        model.update(state, np.ones((L, P + 1)), np.ones(L))
    with pytest.raises(ValueError, match=r"y: expected shape \(L,\)"):
        model.update(state, np.ones((L, P)), np.ones(L + 1))
    with pytest.raises(ValueError, match=r"valid: expected a \(L,\)"):
        model.update(state, np.ones((L, P)), np.ones(L), np.ones(L + 1, bool))
    with pytest.raises(ValueError, match="position"):
        model.to_datatree(state, L, key=jax.random.key(0))
