"""Conjugate Gaussian posteriors: references are the batch closed-form solutions."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from bayesrank.posteriors import (
    GaussianLinear,
    GaussianLinearUnknownNoise,
    PosteriorModel,
    linalg,
    update_many,
)
from bayesrank.posteriors.datatree import make_datatree, require_groups

L, P, N = 3, 4, 30


def _full_cov(p=P, seed=7):
    A = np.random.default_rng(seed).normal(size=(p, p))
    return A @ A.T / p + 0.5 * np.eye(p)


PRIORS = {
    "scalar": {"prior_mean": 0.3, "prior_scale": 1.5},
    "diagonal": {
        "prior_mean": np.linspace(-1, 1, P),
        "prior_scale": [0.5, 1.0, 2.0, 3.0],
    },
    "full": {"prior_mean": np.arange(P) / 4.0, "prior_scale": _full_cov()},
}


def _prior_cov(kw, p=P):
    s = np.asarray(kw["prior_scale"], float)
    if s.ndim == 2:
        return s
    return np.diag(np.broadcast_to(s, (p,)) ** 2)


def _data(seed=0, n=N, L=L, p=P):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, L, p))
    theta = rng.normal(size=(L, p))
    Y = np.einsum("nlp,lp->nl", X, theta) + 0.5 * rng.normal(size=(n, L))
    return X, Y


def _batch_known(kw, s, X, y):
    """Closed form for one position: X (n, p), y (n,) -> mean (p,), cov (p, p)."""
    S0 = _prior_cov(kw)
    m0 = np.broadcast_to(np.asarray(kw["prior_mean"], float), (P,))
    P0 = np.linalg.inv(S0)
    Pn = P0 + X.T @ X / s**2
    mean = np.linalg.solve(Pn, P0 @ m0 + X.T @ y / s**2)
    return mean, np.linalg.inv(Pn), Pn


def _batch_nig(kw, a0, b0, X, y):
    S0 = _prior_cov(kw)
    m0 = np.broadcast_to(np.asarray(kw["prior_mean"], float), (P,))
    Lam0 = np.linalg.inv(S0)
    Lam = Lam0 + X.T @ X
    m = np.linalg.solve(Lam, Lam0 @ m0 + X.T @ y)
    a = a0 + len(y) / 2
    b = b0 + 0.5 * (y @ y + m0 @ Lam0 @ m0 - m @ Lam @ m)
    return m, Lam, a, b


# ------------------------------------------------------------------- linalg
def test_chol_update_matches_refactorisation_and_logdet_lemma():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(6, 6))
    Pm = A @ A.T + np.eye(6)
    C = np.linalg.cholesky(Pm)
    X = rng.normal(size=(5, 6))
    C2 = jax.jit(linalg.chol_update_many)(C, X)
    np.testing.assert_allclose(C2, np.linalg.cholesky(Pm + X.T @ X), atol=1e-12)
    inc = linalg.logdet_increment(C, X[0])
    ref = np.linalg.slogdet(Pm + np.outer(X[0], X[0]))[1] - np.linalg.slogdet(Pm)[1]
    np.testing.assert_allclose(inc, ref, rtol=1e-12)
    np.testing.assert_allclose(
        linalg.chol_logdet(C), np.linalg.slogdet(Pm)[1], rtol=1e-12
    )
    # a zero vector is an exact no-op (how masked updates are made)
    np.testing.assert_array_equal(linalg.chol_update(C, np.zeros(6)), C)


def test_mahalanobis_norms_and_chol_solve_match_explicit_inverse():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(5, 5))
    Pm = A @ A.T + np.eye(5)
    C = np.linalg.cholesky(Pm)
    X = rng.normal(size=(7, 5))
    Pinv = np.linalg.inv(Pm)
    ref = np.sqrt(np.einsum("kd,de,ke->k", X, Pinv, X))
    np.testing.assert_allclose(linalg.mahalanobis_norms(C, X), ref, rtol=1e-10)
    np.testing.assert_allclose(linalg.mahalanobis_norms(C, X[0]), ref[0], rtol=1e-10)
    np.testing.assert_allclose(
        linalg.chol_solve(C, X.T), Pinv @ X.T, rtol=1e-9, atol=1e-12
    )


def test_sample_from_precision_has_covariance_scale2_p_inverse():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(3, 3))
    Pm = A @ A.T + np.eye(3)
    C = np.linalg.cholesky(Pm)
    mu = np.array([1.0, -2.0, 0.5])
    n = 20000
    keys = jax.random.split(jax.random.key(0), n)
    draws = np.asarray(
        jax.vmap(lambda k: linalg.sample_from_precision(k, mu, C, 2.0))(keys)
    )
    cov = 4.0 * np.linalg.inv(Pm)
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(draws.mean(0) - mu) < 5 * sd / np.sqrt(n))
    emp = np.cov(draws.T)
    se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / n)
    assert np.all(np.abs(emp - cov) < 5 * se)


# ------------------------------------------------------------- known noise
@pytest.mark.parametrize("prior", sorted(PRIORS))
def test_sequential_updates_equal_batch_closed_form(prior):
    kw = PRIORS[prior]
    s = 0.7
    model = GaussianLinear(noise_scale=s, **kw)
    X, Y = _data()
    state = jax.jit(lambda st, x, y: update_many(model, st, x, y))(
        model.init(L, P), X, Y
    )
    mean = np.asarray(model.mean(state))
    cov = np.asarray(model.covariance(state))
    for l in range(L):
        m_ref, c_ref, p_ref = _batch_known(kw, s, X[:, l], Y[:, l])
        np.testing.assert_allclose(mean[l], m_ref, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(cov[l], c_ref, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(state.prec[l], p_ref, rtol=1e-10)
        np.testing.assert_allclose(
            state.chol[l], np.linalg.cholesky(np.asarray(state.prec[l])), atol=1e-10
        )
        np.testing.assert_allclose(
            state.logdet[l], np.linalg.slogdet(p_ref)[1], rtol=1e-10
        )
    np.testing.assert_array_equal(state.n, np.full(L, N))


def test_draws_have_posterior_mean_and_covariance():
    kw = PRIORS["full"]
    model = GaussianLinear(noise_scale=0.7, **kw)
    X, Y = _data(n=5)
    state = update_many(model, model.init(L, P), X, Y)
    n = 20000
    keys = jax.random.split(jax.random.key(4), n)
    draws = np.asarray(jax.vmap(lambda k: model.draw(k, state)[0])(keys))  # (n, L, P)
    for l in range(L):
        m_ref, c_ref, _ = _batch_known(kw, 0.7, X[:, l], Y[:, l])
        sd = np.sqrt(np.diag(c_ref))
        assert np.all(np.abs(draws[:, l].mean(0) - m_ref) < 5 * sd / np.sqrt(n))
        se = np.sqrt((np.outer(np.diag(c_ref), np.diag(c_ref)) + c_ref**2) / n)
        assert np.all(np.abs(np.cov(draws[:, l].T) - c_ref) < 5 * se)


def test_draw_returns_state_unchanged_and_distinct_positions():
    model = GaussianLinear()
    state = model.init(L, P)
    theta, state2 = model.draw(jax.random.key(0), state)
    assert theta.shape == (L, P)
    assert state2 is state
    assert not np.allclose(theta[0], theta[1])


@pytest.mark.parametrize("cls", [GaussianLinear, GaussianLinearUnknownNoise])
def test_invalid_positions_are_left_unchanged(cls):
    model = cls(prior_scale=1.0, noise_scale=1.0) if cls is GaussianLinear else cls()
    X, Y = _data(n=4)
    state = update_many(model, model.init(L, P), X[:3], Y[:3])
    valid = np.array([True, False, True])
    new = jax.jit(model.update)(state, X[3], Y[3], valid)
    for field_new, field_old in zip(new, state, strict=True):
        np.testing.assert_array_equal(field_new[1], field_old[1])
        assert not np.array_equal(field_new[0], field_old[0])
    np.testing.assert_array_equal(new.n, [4, 3, 4])


@pytest.mark.parametrize("cls", [GaussianLinear, GaussianLinearUnknownNoise])
def test_update_under_jit_and_vmap_over_runs_equals_python_loop(cls):
    model = cls(prior_scale=[1.0, 2.0, 0.5, 1.0])
    runs = 3
    data = [_data(seed=10 + r, n=6) for r in range(runs)]
    Xs = np.stack([d[0] for d in data])
    Ys = np.stack([d[1] for d in data])
    valid = np.random.default_rng(5).random((runs, 6, L)) > 0.3
    init = jax.vmap(lambda _: model.init(L, P))(jnp.arange(runs))
    batched = jax.jit(jax.vmap(lambda s, x, y, v: update_many(model, s, x, y, v)))(
        init, Xs, Ys, valid
    )
    for r in range(runs):
        st = model.init(L, P)
        for t in range(6):
            st = model.update(st, Xs[r, t], Ys[r, t], valid[r, t])
        for got, want in zip(batched, st, strict=True):
            np.testing.assert_allclose(got[r], want, rtol=1e-12, atol=1e-13)


def test_prior_grid_can_be_vmapped_over_traced_hyperparameters():
    X, Y = _data(n=8)

    def posterior_mean(scale):
        model = GaussianLinear(prior_scale=scale, noise_scale=0.5)
        return model.mean(update_many(model, model.init(L, P), X, Y))

    scales = jnp.array([0.3, 1.0, 4.0])
    got = jax.vmap(posterior_mean)(scales)
    for i, sc in enumerate([0.3, 1.0, 4.0]):
        np.testing.assert_allclose(got[i], posterior_mean(sc), rtol=1e-10)


# ------------------------------------------------------------- unknown noise
@pytest.mark.parametrize("prior", sorted(PRIORS))
def test_nig_posterior_matches_closed_form(prior):
    kw = PRIORS[prior]
    a0, b0 = 3.0, 2.0
    model = GaussianLinearUnknownNoise(a0=a0, b0=b0, **kw)
    X, Y = _data(seed=3)
    state = update_many(model, model.init(L, P), X, Y)
    mean = np.asarray(model.mean(state))
    shape, rate = (np.asarray(a) for a in model.noise_posterior(state))
    for l in range(L):
        m, Lam, a, b = _batch_nig(kw, a0, b0, X[:, l], Y[:, l])
        np.testing.assert_allclose(mean[l], m, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(state.prec[l], Lam, rtol=1e-10)
        np.testing.assert_allclose(shape[l], a, rtol=1e-12)
        np.testing.assert_allclose(rate[l], b, rtol=1e-8)
        np.testing.assert_allclose(
            state.logdet[l], np.linalg.slogdet(Lam)[1], rtol=1e-10
        )
        np.testing.assert_allclose(
            model.covariance(state)[l], b / (a - 1) * np.linalg.inv(Lam), rtol=1e-8
        )


def test_nig_draws_have_student_t_marginal_variance():
    kw = PRIORS["diagonal"]
    a0, b0 = 2.0, 1.0
    model = GaussianLinearUnknownNoise(a0=a0, b0=b0, **kw)
    X, Y = _data(seed=6, n=20)
    state = update_many(model, model.init(L, P), X, Y)
    n = 20000
    keys = jax.random.split(jax.random.key(8), n)
    draws = np.asarray(jax.vmap(lambda k: model.draw(k, state)[0])(keys))
    for l in range(L):
        m, Lam, a, b = _batch_nig(kw, a0, b0, X[:, l], Y[:, l])
        var = b / (a - 1) * np.diag(np.linalg.inv(Lam))
        assert np.all(np.abs(draws[:, l].mean(0) - m) < 5 * np.sqrt(var / n))
        nu = 2 * a  # Student-t degrees of freedom; excess kurtosis 6 / (nu - 4)
        rel_se = np.sqrt((2 + 6 / (nu - 4)) / n)
        np.testing.assert_array_less(np.abs(draws[:, l].var(0) / var - 1), 5 * rel_se)


# ---------------------------------------------------------------- DataTree
@pytest.fixture(scope="module")
def az():
    return pytest.importorskip("arviz")


@pytest.mark.parametrize("cls", [GaussianLinear, GaussianLinearUnknownNoise])
def test_datatree_passes_arviz_diagnostics(az, cls):
    model = cls(prior_scale=2.0)
    X, Y = _data(n=25)
    state = update_many(model, model.init(L, P), X, Y)
    pos = 1
    dt = model.to_datatree(state, pos, key=jax.random.key(3), data=(X[:, pos], Y[:, pos]))
    for group in (
        "posterior",
        "sample_stats",
        "log_likelihood",
        "log_prior",
        "observed_data",
    ):
        assert group in dt.children
    assert dt["posterior"]["theta"].dims == ("chain", "draw", "theta_dim")
    assert dt["log_likelihood"]["y"].shape == (4, 1000, 25)
    assert not dt["sample_stats"]["diverging"].values.any()

    summary = az.summary(dt, var_names=["theta"])
    assert len(summary) == P
    np.testing.assert_array_less(summary["r_hat"].astype(float), 1.01)
    assert (summary["ess_bulk"].astype(float) > 3000).all()  # exact i.i.d. draws
    mean = np.asarray(model.mean(state))[pos]
    sd = np.sqrt(np.diag(np.asarray(model.covariance(state))[pos]))
    np.testing.assert_array_less(
        np.abs(summary["mean"].astype(float).to_numpy() - mean),
        4 * sd / np.sqrt(4000) + 1e-3,
    )
    assert np.all(np.abs(az.rhat(dt)["theta"].values - 1) < 0.01)
    assert np.all(az.ess(dt)["theta"].values > 3000)
    ps = az.psense_summary(dt, var_names=["theta"])
    assert list(ps.columns[:2]) == ["prior", "likelihood"]
    assert len(ps) == P and np.all(
        np.isfinite(ps[["prior", "likelihood"]].to_numpy(float))
    )


def test_psense_flags_a_strong_wrong_prior_but_not_a_weak_one(az):
    rng = np.random.default_rng(11)
    X = rng.normal(size=(25, 1, P))
    Y = X @ np.ones(P) + 0.5 * rng.normal(size=(25, 1))
    prior_sens = {}
    for name, scale in (("weak", 2.0), ("strong", 0.05)):
        model = GaussianLinear(prior_scale=scale, noise_scale=0.5)
        state = update_many(model, model.init(1, P), X, Y)
        dt = model.to_datatree(state, 0, key=jax.random.key(2), data=(X[:, 0], Y[:, 0]))
        prior_sens[name] = az.psense_summary(dt)["prior"].astype(float).to_numpy()
    assert np.all(prior_sens["weak"] < 0.05)
    assert np.all(prior_sens["strong"] > 0.05)


def test_datatree_log_densities_match_scipy():
    kw = PRIORS["full"]
    s = 0.7
    model = GaussianLinear(noise_scale=s, **kw)
    X, Y = _data(n=6)
    state = update_many(model, model.init(L, P), X, Y)
    dt = model.to_datatree(
        state, 0, key=jax.random.key(1), draws=50, chains=2, data=(X[:, 0], Y[:, 0])
    )
    theta = dt["posterior"]["theta"].values
    ref_lp = stats.multivariate_normal(
        np.asarray(kw["prior_mean"]), kw["prior_scale"]
    ).logpdf(theta)
    np.testing.assert_allclose(dt["log_prior"]["theta"].values, ref_lp, rtol=1e-10)
    ref_ll = stats.norm(theta @ X[:, 0].T, s).logpdf(Y[:, 0])
    np.testing.assert_allclose(dt["log_likelihood"]["y"].values, ref_ll, rtol=1e-10)


def test_nig_datatree_log_prior_is_the_joint_prior_density():
    a0, b0 = 3.0, 2.0
    model = GaussianLinearUnknownNoise(
        prior_mean=0.5, prior_scale=[1.0, 2.0, 0.5, 1.5], a0=a0, b0=b0
    )
    X, Y = _data(n=5)
    state = update_many(model, model.init(L, P), X, Y)
    dt = model.to_datatree(state, 2, key=jax.random.key(0), draws=20, chains=2, data=(X[:, 2], Y[:, 2]))
    theta = dt["posterior"]["theta"].values
    sigma2 = dt["posterior"]["sigma"].values ** 2
    cov0 = np.diag(np.array([1.0, 2.0, 0.5, 1.5]) ** 2)
    ref = np.array(
        [
            [
                stats.multivariate_normal(np.full(P, 0.5), s2 * cov0).logpdf(th)
                + stats.invgamma(a0, scale=b0).logpdf(s2)
                for th, s2 in zip(theta[c], sigma2[c], strict=True)
            ]
            for c in range(2)
        ]
    )
    got = dt["log_prior"]["theta"].values + dt["log_prior"]["sigma"].values
    np.testing.assert_allclose(got, ref, rtol=1e-10)


def test_datatree_without_data_omits_likelihood_and_require_groups_says_why():
    model = GaussianLinear()
    state = model.init(L, P)
    dt = model.to_datatree(state, 0, key=jax.random.key(0), draws=10, chains=2)
    assert "log_likelihood" not in dt.children and "log_prior" in dt.children
    empty = (np.zeros((0, P)), np.zeros(0))
    dt0 = model.to_datatree(state, 0, key=jax.random.key(0), draws=10, chains=2, data=empty)
    assert "log_likelihood" not in dt0.children
    with pytest.raises(ValueError, match="log_likelihood.*data=\\(X, y\\)"):
        require_groups(dt, purpose="psense_summary")


def test_datatree_rejects_data_that_is_not_the_states_history():
    model = GaussianLinear()
    X, Y = _data(n=5)
    state = update_many(model, model.init(L, P), X, Y)
    X6, Y6 = np.concatenate([X[:, 0], X[:1, 0]]), np.concatenate([Y[:, 0], Y[:1, 0]])
    with pytest.raises(ValueError, match="data: the state of position 0 holds 5 obs"):
        model.to_datatree(state, 0, key=jax.random.key(0), data=(X6, Y6))
    # Fewer rows than the state holds (a bounded history): allowed, and the tree says so.
    dt = model.to_datatree(state, 0, key=jax.random.key(0), data=(X[:4, 0], Y[:4, 0]))
    assert dt["posterior"].attrs["observations"] == 5
    assert dt["posterior"].attrs["observations_in_data_groups"] == 4
    with pytest.raises(ValueError, match="position"):
        model.to_datatree(state, L, key=jax.random.key(0), data=(X[:, 0], Y[:, 0]))


def test_make_datatree_checks_shapes():
    theta = np.zeros((2, 10, 3))
    with pytest.raises(ValueError, match="log_prior"):
        make_datatree(theta, log_prior=np.zeros((2, 9)))
    with pytest.raises(ValueError, match="log_likelihood"):
        make_datatree(theta, log_likelihood=np.zeros((2, 10, 4)), observed=np.zeros(5))


# --------------------------------------------------------- validation, config
@pytest.mark.parametrize(
    "kwargs, arg",
    [
        ({"prior_scale": -1.0}, "prior_scale"),
        ({"prior_scale": np.nan}, "prior_scale"),
        ({"prior_scale": [1.0, 0.0]}, "prior_scale"),
        ({"prior_scale": [[1.0, 0.5], [0.4, 1.0]]}, "prior_scale"),
        ({"prior_scale": [[1.0, 2.0], [2.0, 1.0]]}, "prior_scale"),
        ({"prior_scale": np.ones((2, 2, 2))}, "prior_scale"),
        ({"prior_mean": np.ones((2, 2))}, "prior_mean"),
        ({"prior_mean": [np.inf, 0.0]}, "prior_mean"),
        ({"prior_mean": np.zeros(3), "prior_scale": np.ones(2)}, "prior_scale"),
        ({"noise_scale": 0.0}, "noise_scale"),
        ({"noise_scale": [1.0, 1.0]}, "noise_scale"),
    ],
)
def test_bad_hyperparameters_raise_naming_the_argument(kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        GaussianLinear(**kwargs)


@pytest.mark.parametrize(
    "kwargs, arg",
    [
        ({"prior_scale": True}, "prior_scale"),
        ({"prior_scale": "1.0"}, "prior_scale"),
        ({"prior_scale": 1 + 0j}, "prior_scale"),
        ({"prior_scale": {"sd": 1.0}}, "prior_scale"),
        ({"prior_mean": "0"}, "prior_mean"),
        ({"prior_mean": [True, False]}, "prior_mean"),
        ({"noise_scale": np.bool_(True)}, "noise_scale"),
        ({"noise_scale": "2"}, "noise_scale"),
    ],
)
def test_non_real_hyperparameters_raise_type_error(kwargs, arg):
    with pytest.raises(TypeError, match=arg):
        GaussianLinear(**kwargs)


@pytest.mark.parametrize("value", [np.float32(2.0), np.int64(2), np.array(2.0)])
def test_numpy_scalar_hyperparameters_are_accepted(value):
    a = GaussianLinear(prior_scale=value, noise_scale=value)
    b = GaussianLinear(prior_scale=2.0, noise_scale=2.0)
    x, y = jnp.ones((1, 2)), jnp.ones(1)
    sa = a.update(a.init(1, 2), x, y)
    sb = b.update(b.init(1, 2), x, y)
    np.testing.assert_allclose(a.mean(sa), b.mean(sb), rtol=1e-6)
    GaussianLinearUnknownNoise(a0=np.float32(3.0), b0=np.int32(1))


@pytest.mark.parametrize("kwargs, arg", [({"a0": 0.0}, "a0"), ({"b0": np.nan}, "b0")])
def test_bad_nig_hyperparameters_raise(kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        GaussianLinearUnknownNoise(**kwargs)


def test_shape_guards_and_reward_check():
    model = GaussianLinear(prior_mean=np.zeros(P))
    with pytest.raises(ValueError, match="p:"):
        model.init(L, P + 1)
    with pytest.raises(ValueError, match="L:"):
        model.init(0, P)
    state = model.init(L, P)
    with pytest.raises(ValueError, match="x:"):
        model.update(state, np.zeros((L, P + 1)), np.zeros(L))
    with pytest.raises(ValueError, match="y:"):
        model.update(state, np.zeros((L, P)), np.zeros(L + 1))
    with pytest.raises(ValueError, match="valid:"):
        model.update(state, np.zeros((L, P)), np.zeros(L), np.ones(2, bool))
    model.check_rewards(np.array([0.1, -3.0, 2.0]))
    with pytest.raises(ValueError, match="rewards"):
        model.check_rewards(np.array([0.1, np.nan, 2.0]))


@pytest.mark.parametrize("cls", [GaussianLinear, GaussianLinearUnknownNoise])
@pytest.mark.parametrize("prior", sorted(PRIORS))
def test_config_round_trips_through_json(cls, prior):
    fixed = {"noise_scale": 1.0} if cls is GaussianLinear else {}  # the fixed class
    model = cls(**PRIORS[prior], **fixed)
    cfg = json.loads(json.dumps(model.config()))
    assert cfg["class"] == cls.__name__
    again = cls.from_config(cfg)
    assert again.config() == model.config()
    for a, b in zip(model.prior(P), again.prior(P), strict=True):
        np.testing.assert_array_equal(a, b)
    other = GaussianLinearUnknownNoise if cls is GaussianLinear else GaussianLinear
    with pytest.raises(ValueError, match="cfg"):
        other.from_config(cfg)


def test_models_follow_the_contract_with_identity_link():
    for model in (GaussianLinear(), GaussianLinearUnknownNoise()):
        assert isinstance(model, PosteriorModel)
        assert model.link.name == "identity"
