"""Warm-started NUTS posteriors: references are closed forms, hand-written densities
and standard NumPyro MCMC runs on the same data."""

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from jax.scipy.special import log_ndtr
from numpyro.diagnostics import effective_sample_size
from numpyro.infer import MCMC, NUTS

from bayesrank.posteriors.nuts import numpyro_models as models
from bayesrank.posteriors.base import update_many
from bayesrank.posteriors.nuts import BayesGLM, NumPyroModel


def _data(key, n, L, p, theta, link):
    kx, ky = jax.random.split(key)
    X = jax.random.normal(kx, (n, L, p)) / np.sqrt(p)
    eta = jnp.einsum("nlp,lp->nl", X, theta)
    if link == "identity":
        Y = eta + jax.random.normal(ky, eta.shape)
    elif link == "logistic":
        Y = (jax.random.uniform(ky, eta.shape) < jax.nn.sigmoid(eta)).astype(float)
    else:
        raise AssertionError(link)
    return X, Y


def _chain(model, state, key, rounds):
    """``rounds`` draws on fixed data: (state, (rounds, L, p))."""
    out = []
    for k in jax.random.split(key, rounds):
        th, state = model.draw(k, state)
        out.append(th)
    return state, np.stack(out)


def _run_bandit_like(model, X, Y, key):
    """Add the data one impression at a time, drawing after each (as a policy does)."""
    state = model.init(X.shape[1], X.shape[2])
    for x, y, k in zip(X, Y, jax.random.split(key, X.shape[0])):
        _, state = model.draw(k, model.update(state, x, y))
    return state


# One instance per configuration, shared by the tests: draw/update compile once each.
IDENTITY = BayesGLM(link="identity", prior_scale=1.0, n_max=64, num_warmup=100)
LOGISTIC = BayesGLM(link="logistic", prior_scale=1.5, n_max=128, num_warmup=100)


# --------------------------------------------------------------- potentials


def _glm_potential_by_hand(theta, x, y, link, s0):
    prior = -0.5 * jnp.sum(theta**2) / s0**2 - theta.size * jnp.log(
        s0 * jnp.sqrt(2 * jnp.pi)
    )
    eta = x @ theta
    if link == "logistic":
        ll = y * jax.nn.log_sigmoid(eta) + (1 - y) * jax.nn.log_sigmoid(-eta)
    elif link == "probit":
        ll = y * log_ndtr(eta) + (1 - y) * log_ndtr(-eta)
    elif link == "identity":
        ll = -0.5 * (y - eta) ** 2 - 0.5 * jnp.log(2 * jnp.pi)
    else:
        ll = y * eta - jnp.exp(eta) - jax.scipy.special.gammaln(y + 1)
    return -(prior + jnp.sum(ll))


@pytest.mark.parametrize("link", ["logistic", "probit", "identity", "exp"])
def test_padded_masked_potential_equals_unpadded_and_hand_written(link):
    n, n_max, p = 7, 20, 3
    model = BayesGLM(link=link, prior_scale=1.5, n_max=n_max)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, p))
    y = (
        rng.integers(0, 2, n).astype(float)
        if link != "identity"
        else rng.normal(size=n)
    )
    theta = jnp.asarray(rng.normal(size=p))
    xp = np.zeros((n_max, p))
    xp[:n] = x
    yp = np.zeros(n_max)
    yp[:n] = y
    # junk in the padded rows must not matter
    xp[n:] = rng.normal(size=(n_max - n, p))
    yp[n:] = 1.0
    mask = np.arange(n_max) < n
    z = {"theta": theta}
    unpadded = model.potential_energy(z, x, y)
    padded = model.potential_energy(z, xp, yp, mask)
    np.testing.assert_allclose(padded, unpadded, rtol=1e-13)
    by_hand = _glm_potential_by_hand(theta, x, y, link, 1.5)
    np.testing.assert_allclose(unpadded, by_hand, rtol=1e-12)


def test_mask_leaves_the_prior_alone():
    model = BayesGLM(link="logistic", prior_scale=2.0, n_max=5)
    theta = jnp.array([0.3, -1.2])
    x = jnp.ones((5, 2))
    y = jnp.ones(5)
    pe = model.potential_energy({"theta": theta}, x, y, jnp.zeros(5, bool))
    prior = dist.Normal(0.0, 2.0).log_prob(theta).sum()
    np.testing.assert_allclose(pe, -prior, rtol=1e-13)


def test_update_refreshes_potential_and_gradient_at_z():
    model = LOGISTIC
    X, Y = _data(jax.random.key(1), 12, 2, 3, jnp.ones((2, 3)), "logistic")
    state = model.init(2, 3)
    for t in range(12):
        before = state.hmc.potential_energy
        state = model.update(state, X[t], Y[t])
        _, state = model.draw(jax.random.key(t), state)
        assert not np.allclose(before, state.hmc.potential_energy)
    state = model.update(state, X[0] * 2.0, Y[0])
    for pos in range(2):
        x, y = model.data(state, pos)
        z = {"theta": state.hmc.z["theta"][pos]}
        pe, grad = jax.value_and_grad(model.potential_energy)(z, x, y)
        np.testing.assert_allclose(state.hmc.potential_energy[pos], pe, rtol=1e-12)
        np.testing.assert_allclose(
            state.hmc.z_grad["theta"][pos], grad["theta"], rtol=1e-11
        )
        assert x.shape == (13, 3)


def test_valid_mask_skips_positions():
    model = IDENTITY
    state = model.init(2, 3)
    state = model.update(state, jnp.ones((2, 3)), jnp.array([1.0, 2.0]), [True, False])
    assert np.array_equal(state.n, [1, 0])
    np.testing.assert_array_equal(state.y[1], 0.0)
    np.testing.assert_array_equal(state.x[0, 0], [1.0, 1.0, 1.0])


# ---------------------------------------------------------------- errors


def test_model_without_theta_site_raises():
    def no_theta(x, y=None):
        beta = numpyro.sample(
            "beta", dist.Normal(0, 1).expand([x.shape[1]]).to_event(1)
        )
        with numpyro.plate("obs", x.shape[0]):
            numpyro.sample("y", dist.Normal(x @ beta, 1.0), obs=y)

    with pytest.raises(ValueError, match="theta"):
        NumPyroModel(no_theta)
    NumPyroModel(no_theta, theta_site="beta")  # the same model with its own site name


def test_theta_of_wrong_shape_raises():
    def scalar_theta(x, y=None):
        theta = numpyro.sample("theta", dist.Normal(0, 1))
        with numpyro.plate("obs", x.shape[0]):
            numpyro.sample("y", dist.Normal(theta * x.sum(-1), 1.0), obs=y)

    with pytest.raises(ValueError, match="shape"):
        NumPyroModel(scalar_theta)


@pytest.mark.parametrize(
    "link, bad", [("logistic", [0.0, 0.5]), ("probit", [2.0, 1.0]), ("exp", [-1, 2])]
)
def test_rewards_outside_support_raise(link, bad):
    model = BayesGLM(link=link)
    with pytest.raises(ValueError, match="rewards"):
        model.check_rewards(np.array(bad))
    model.check_rewards(np.array([0.0, 1.0]))


def test_identity_accepts_real_rewards_but_not_nan():
    model = BayesGLM(link="identity")
    model.check_rewards(np.array([-0.3, 2.5]))
    with pytest.raises(ValueError, match="finite"):
        model.check_rewards(np.array([np.nan, 1.0]))


def test_bad_options_raise():
    with pytest.raises(ValueError, match="link"):
        BayesGLM(link="cauchit")
    with pytest.raises(ValueError, match="prior_scale"):
        BayesGLM(prior_scale=0.0)
    with pytest.raises(ValueError, match="readapt_growth"):
        BayesGLM(readapt_growth=1.0)
    with pytest.raises(ValueError, match="overflow"):
        BayesGLM(overflow="drop")
    with pytest.raises(TypeError, match="n_max"):
        BayesGLM(n_max=10.5)


@pytest.mark.parametrize("value", [np.float32(2.0), np.float64(2.0), np.int64(2)])
def test_numpy_scalar_hyperparameters_are_accepted(value):
    model = BayesGLM(prior_scale=value, noise_scale=value, target_accept_prob=np.float32(0.9))
    assert model.prior_scale == 2.0 and type(model.prior_scale) is float
    assert model.config()["prior_scale"] == 2.0


@pytest.mark.parametrize(
    "kwargs, err, arg",
    [
        ({"prior_scale": True}, TypeError, "prior_scale"),
        ({"prior_scale": "2.0"}, TypeError, "prior_scale"),
        ({"prior_scale": np.inf}, ValueError, "prior_scale"),
        ({"prior_scale": -2}, ValueError, "prior_scale"),
        ({"noise_scale": np.nan}, ValueError, "noise_scale"),
        ({"noise_scale": None}, TypeError, "noise_scale"),
        ({"target_accept_prob": 1.0}, ValueError, "target_accept_prob"),
        ({"target_accept_prob": "0.8"}, TypeError, "target_accept_prob"),
        ({"readapt_growth": True}, TypeError, "readapt_growth"),
        ({"num_warmup": np.float32(100)}, TypeError, "num_warmup"),
        ({"dense_mass": "yes"}, TypeError, "dense_mass"),
    ],
)
def test_bad_hyperparameter_types_raise(kwargs, err, arg):
    with pytest.raises(err, match=arg):
        BayesGLM(**kwargs)


def test_refresh_moves_the_mean_towards_the_data():
    model = LOGISTIC
    X, Y = _data(jax.random.key(21), 80, 2, 3, jnp.array([[2.0, -1.0, 0.5]] * 2), "logistic")
    state = update_many(model, model.init(2, 3), X, Y)
    before = np.asarray(model.mean(state))
    for k in jax.random.split(jax.random.key(22), 60):
        state = model.refresh(k, state)
    after = np.asarray(model.mean(state))
    assert not np.allclose(before, after)
    assert np.all(np.linalg.norm(after - np.array([2.0, -1.0, 0.5]), axis=1) < np.linalg.norm(
        before - np.array([2.0, -1.0, 0.5]), axis=1))


def test_overflow_raises_eagerly_and_under_jit():
    model = BayesGLM(link="identity", n_max=2)
    state = model.init(1, 2)
    x, y = jnp.ones((1, 2)), jnp.ones(1)
    state = model.update(model.update(state, x, y), x, y)
    with pytest.raises(ValueError, match="n_max"):
        model.update(state, x, y)
    with pytest.raises(Exception, match="n_max"):
        jax.block_until_ready(jax.jit(model.update)(state, x, y))
    # a full position that is not updated is fine
    model.update(state, x, y, valid=jnp.array([False]))


def test_overflow_window_keeps_most_recent():
    model = BayesGLM(link="identity", n_max=3, overflow="window")
    state = model.init(1, 1)
    for t in range(5):
        state = model.update(state, jnp.full((1, 1), float(t)), jnp.array([float(t)]))
    assert int(state.n[0]) == 5
    assert sorted(np.asarray(state.y[0]).tolist()) == [2.0, 3.0, 4.0]
    x, y = model.data(state, 0)
    pe = model.potential_energy({"theta": state.hmc.z["theta"][0]}, x, y)
    np.testing.assert_allclose(state.hmc.potential_energy[0], pe, rtol=1e-12)


# --------------------------------------------------------- sampling accuracy


def test_identity_nuts_recovers_conjugate_posterior():
    L, p, n, s0 = 2, 3, 40, 1.0
    theta = jnp.array([[1.0, -0.5, 0.3], [-1.0, 0.8, 0.0]])
    X, Y = _data(jax.random.key(2), n, L, p, theta, "identity")
    model = IDENTITY
    state = _run_bandit_like(model, X, Y, jax.random.key(3))
    _, draws = _chain(model, state, jax.random.key(4), 1500)
    draws = draws[100:]  # (rounds, L, p)
    for pos in range(L):
        x, y = np.asarray(X[:, pos]), np.asarray(Y[:, pos])
        prec = np.eye(p) / s0**2 + x.T @ x
        cov = np.linalg.inv(prec)
        mu = cov @ x.T @ y
        d = draws[:, pos]
        ess = np.asarray(effective_sample_size(d[None]))
        mcse = np.sqrt(np.diag(cov) / ess)
        assert np.all(ess > 300), ess
        assert np.all(np.abs(d.mean(0) - mu) < 4 * mcse), (d.mean(0), mu, mcse)
        np.testing.assert_allclose(d.std(0), np.sqrt(np.diag(cov)), rtol=0.12)


def test_logistic_warm_draws_match_a_fresh_reference_run():
    """Data added one round at a time (draw after each), then many rounds of draw on
    the now fixed data: the same distribution as a standard 2-chain MCMC run."""
    L, p, n = 2, 3, 120
    theta = jnp.array([[1.5, -1.0, 0.5], [0.0, 1.0, 1.0]])
    X, Y = _data(jax.random.key(5), n, L, p, theta * np.sqrt(p), "logistic")
    model = LOGISTIC
    state = _run_bandit_like(model, X, Y, jax.random.key(6))
    _, draws = _chain(model, state, jax.random.key(7), 1500)
    warm = draws[100:, 0]

    x, y = jnp.asarray(X[:, 0]), jnp.asarray(Y[:, 0])
    ref = MCMC(
        NUTS(functools.partial(models.glm, link="logistic", prior_scale=1.5)),
        num_warmup=500,
        num_samples=2000,
        num_chains=2,
        chain_method="vectorized",
        progress_bar=False,
    )
    ref.run(jax.random.key(8), x, y)
    rd = np.asarray(ref.get_samples(group_by_chain=True)["theta"])
    ess_w = np.asarray(effective_sample_size(warm[None]))
    ess_r = np.asarray(effective_sample_size(rd))
    sd = rd.reshape(-1, p).std(0)
    tol = 4 * np.sqrt(sd**2 / ess_w + sd**2 / ess_r)
    diff = np.abs(warm.mean(0) - rd.reshape(-1, p).mean(0))
    assert np.all(diff < tol), (diff, tol)
    np.testing.assert_allclose(warm.std(0), sd, rtol=0.15)
    # the running mean follows the posterior mean
    np.testing.assert_allclose(
        model.mean(state)[0], rd.reshape(-1, p).mean(0), atol=3 * sd.max()
    )


def test_diagnostics_are_recorded():
    model = LOGISTIC
    X, Y = _data(jax.random.key(9), 60, 2, 3, jnp.ones((2, 3)), "logistic")
    state = _run_bandit_like(model, X, Y, jax.random.key(10))
    diag = model.diagnostics(state)
    assert np.all(np.asarray(state.transitions) > 0)
    assert np.all((diag["accept_rate"] > 0.3) & (diag["accept_rate"] <= 1.0))
    assert np.all(diag["mean_steps"] >= 1)
    assert np.all((diag["tree_depth"] >= 1) & (diag["tree_depth"] <= 6))
    assert np.all(diag["divergences"] <= state.transitions)
    assert np.array_equal(diag["n"], [60, 60])
    assert not np.any(diag["adapting"])


def test_a_frozen_chain_is_rescued_by_a_warmup_rerun():
    model = LOGISTIC
    X, Y = _data(jax.random.key(9), 40, 2, 3, jnp.ones((2, 3)), "logistic")
    state = _run_bandit_like(model, X, Y, jax.random.key(10))
    state = state._replace(readapt_at=jnp.array([10**6, 10**6]))
    assert np.all(state.hmc.i >= 100)
    adapt = state.hmc.adapt_state._replace(step_size=jnp.array([40.0, 40.0]))
    state = state._replace(hmc=state.hmc._replace(adapt_state=adapt))
    i0 = state.hmc.i
    state, _ = _chain(model, state, jax.random.key(11), 8)  # 40 transitions
    assert np.all(state.hmc.i < i0)  # a warm-up re-run started
    state, _ = _chain(model, state, jax.random.key(12), 40)
    assert np.all(state.hmc.i > 100)  # and finished
    assert np.all(state.hmc.adapt_state.step_size < 5.0)
    state, _ = _chain(model, state, jax.random.key(13), 20)
    assert np.all(state.hmc.mean_accept_prob > 0.5)


def test_warmup_reruns_on_the_geometric_schedule():
    model = IDENTITY  # num_warmup=100, 5 transitions per draw, readapt_start=10
    state = model.init(1, 3)
    x, y = jnp.ones((1, 3)), jnp.ones(1)
    for t in range(20):
        _, state = model.draw(jax.random.key(t), model.update(state, x, y))
    assert int(state.hmc.i[0]) == 100  # first warm-up done (n = 20 >= 10: re-run due)
    assert int(state.readapt_at[0]) == 10
    step = float(state.hmc.adapt_state.step_size[0])
    _, state = model.draw(jax.random.key(99), model.update(state, x, y))
    assert int(state.hmc.i[0]) == 5  # the re-run started at this draw
    assert int(state.readapt_at[0]) == 84  # next at 21 * 4
    # dual averaging restarts centred on the adapted step size
    np.testing.assert_allclose(
        state.hmc.adapt_state.ss_state[-1][0], np.log(10 * step), rtol=1e-12
    )


@pytest.mark.slow
def test_refit_every_reuses_the_draw():
    model = BayesGLM(link="identity", n_max=8, num_warmup=5, refit_every=2)
    state = model.init(2, 2)
    t1, state = model.draw(jax.random.key(0), state)
    t2, state = model.draw(jax.random.key(1), state)
    t3, state = model.draw(jax.random.key(2), state)
    np.testing.assert_array_equal(t1, t2)
    assert not np.allclose(t2, t3)


# ------------------------------------------------------------- jax transforms


@pytest.mark.slow
def test_vmap_over_runs_equals_a_loop():
    model = BayesGLM(link="logistic", n_max=16, num_warmup=10)
    X, Y = _data(jax.random.key(11), 6, 2, 3, jnp.ones((2, 3)), "logistic")

    def run(key):
        state = model.init(2, 3)

        def body(s, xyk):
            x, y, k = xyk
            th, s = model.draw(k, model.update(s, x, y))
            return s, th

        return jax.lax.scan(body, state, (X, Y, jax.random.split(key, 6)))[1]

    keys = jax.random.split(jax.random.key(12), 3)
    batched = jax.jit(jax.vmap(run))(keys)
    looped = np.stack([jax.jit(run)(k) for k in keys])
    assert batched.shape == (3, 6, 2, 3)
    assert np.all(np.isfinite(batched))
    np.testing.assert_allclose(batched, looped, rtol=1e-8, atol=1e-10)


def test_raw_uint32_keys_work():
    model = IDENTITY
    state = model.init(2, 3)
    t1, _ = model.draw(jax.random.PRNGKey(0), state)
    t2, _ = model.draw(jax.random.key(0), state)
    np.testing.assert_array_equal(t1, t2)


# -------------------------------------------------------------- user models


@pytest.mark.slow
def test_hierarchical_model_with_deterministic_theta():
    model = NumPyroModel(models.hierarchical_glm, n_max=32, num_warmup=20)
    X, Y = _data(jax.random.key(13), 20, 2, 3, jnp.ones((2, 3)), "identity")
    state = _run_bandit_like(model, X, Y, jax.random.key(14))
    theta, state = model.draw(jax.random.key(15), state)
    z = state.hmc.z
    assert set(z) == {"mu", "tau", "z"}
    tau = jnp.exp(z["tau"])  # HalfNormal lives on log scale when unconstrained
    expected = z["mu"][:, None] + tau[:, None] * z["z"]
    np.testing.assert_allclose(theta, expected, rtol=1e-12)


@pytest.mark.slow
def test_student_t_model_and_mask_only_hits_observed_sites():
    model = NumPyroModel(functools.partial(models.student_t_glm, df=4.0), n_max=10)
    z = {"theta": jnp.array([0.5, -0.2])}
    x, y = jnp.ones((10, 2)), jnp.zeros(10)
    pe = model.potential_energy(z, x, y, jnp.zeros(10, bool))
    prior = dist.StudentT(4.0, 0.0, 1.0).log_prob(z["theta"]).sum()
    np.testing.assert_allclose(pe, -prior, rtol=1e-13)
    state = model.init(1, 2)
    state = model.update(state, x[:1], y[:1])
    theta, _ = model.draw(jax.random.key(0), state)
    assert theta.shape == (1, 2) and np.all(np.isfinite(theta))


def test_config_round_trip():
    glm = BayesGLM(link="probit", prior_scale=2.0, n_max=50, readapt_growth=None)
    cfg = json.loads(json.dumps(glm.config()))
    assert BayesGLM.from_config(cfg).config() == glm.config()
    user = NumPyroModel(
        functools.partial(models.student_t_glm, df=5.0), link="logistic"
    )
    cfg = json.loads(json.dumps(user.config()))
    again = NumPyroModel.from_config(cfg)
    assert again.config() == user.config()
    assert again.model.keywords == {"df": 5.0}
    with pytest.raises(TypeError, match="config"):
        NumPyroModel(lambda x, y=None: models.glm(x, y)).config()
    with pytest.raises(TypeError, match="prior"):
        BayesGLM(prior=dist.Laplace(0.0, 1.0)).config()


# ------------------------------------------------------------------ DataTree


def test_datatree_groups_densities_and_arviz_summaries():
    import arviz as az

    model = LOGISTIC
    X, Y = _data(jax.random.key(16), 40, 2, 3, jnp.ones((2, 3)), "logistic")
    state = update_many(model, model.init(2, 3), X, Y)
    dt = model.to_datatree(
        state, 1, key=jax.random.key(17), chains=2, draws=300, warmup=300
    )
    for group in (
        "posterior",
        "sample_stats",
        "log_likelihood",
        "log_prior",
        "observed_data",
    ):
        assert group in dt.children
    theta = dt["posterior"]["theta"].values  # (2, 300, 3)
    assert theta.shape == (2, 300, 3)
    np.testing.assert_array_equal(dt["observed_data"]["y"].values, Y[:, 1])
    # log densities equal hand-written ones for a few draws
    x, y = np.asarray(X[:, 1]), np.asarray(Y[:, 1])
    th = theta[1, :5]
    eta = th @ x.T
    ll = y * jax.nn.log_sigmoid(eta) + (1 - y) * jax.nn.log_sigmoid(-eta)
    np.testing.assert_allclose(dt["log_likelihood"]["y"].values[1, :5], ll, rtol=1e-10)
    lp = dist.Normal(0.0, 1.5).log_prob(th).sum(-1)
    np.testing.assert_allclose(dt["log_prior"]["theta"].values[1, :5], lp, rtol=1e-10)
    stats = dt["sample_stats"]
    assert {"diverging", "energy", "n_steps", "acceptance_rate", "tree_depth"} <= set(
        stats.data_vars
    )
    summary = az.summary(dt)
    assert np.all(summary["r_hat"].astype(float) < 1.05)
    assert np.all(summary["ess_bulk"].astype(float) > 100)
    sense = az.psense_summary(dt)
    assert len(sense) == 3
    assert np.all(np.isfinite(sense["prior"].astype(float)))


def test_a_hyperprior_on_the_prior_scale_recovers_the_exact_learnt_scale_posterior():
    """BayesGLM(prior_scale=HalfCauchy(1)) by NUTS against the exact grid posterior of
    GaussianLinear(prior_scale=HalfCauchy(1)) (known noise 1): theta's mean and sd, and
    the posterior mean of log g."""
    import numpyro.distributions as dist

    from bayesrank.posteriors import GaussianLinear

    L, p, n = 1, 3, 30
    theta = jnp.array([[0.4, -0.3, 0.2]])
    X, Y = _data(jax.random.key(5), n, L, p, theta, "identity")
    model = BayesGLM(link="identity", prior_scale=dist.HalfCauchy(1.0), n_max=32,
                     num_warmup=150)
    state = _run_bandit_like(model, X, Y, jax.random.key(6))
    _, draws = _chain(model, state, jax.random.key(7), 3000)
    draws = draws[200:, 0]
    exact = GaussianLinear(prior_scale=dist.HalfCauchy(1.0), noise_scale=1.0)
    es = exact.init(L, p)
    for x, y in zip(X, Y):
        es = exact.update(es, x, y)
    mu, cov = np.asarray(exact.mean(es))[0], np.asarray(exact.covariance(es))[0]
    ess = np.asarray(effective_sample_size(draws[None]))
    mcse = np.sqrt(np.diag(cov) / ess)
    assert np.all(ess > 200), ess
    assert np.all(np.abs(draws.mean(0) - mu) < 4 * mcse), (draws.mean(0), mu, mcse)
    np.testing.assert_allclose(draws.std(0), np.sqrt(np.diag(cov)), rtol=0.15)
    dt = model.to_datatree(state, 0, key=jax.random.key(8))
    assert {"prior_scale", "theta"} <= set(dt["posterior"].data_vars)


def test_hyperpriors_round_trip_and_bad_ones_are_refused():
    import numpyro.distributions as dist

    m = BayesGLM(link="identity", prior_scale=dist.HalfNormal(2.0),
                 noise_scale=dist.HalfCauchy(1.0), n_max=8)
    again = BayesGLM.from_config(json.loads(json.dumps(m.config())))
    assert again.config() == m.config()
    with pytest.raises(ValueError, match="noise_scale: a hyperprior needs the identity"):
        BayesGLM(link="logistic", noise_scale=dist.HalfCauchy(1.0))
    with pytest.raises(ValueError, match="prior_scale: the hyperprior must live on"):
        BayesGLM(link="logistic", prior_scale=dist.Normal(0.0, 1.0))
    with pytest.raises(ValueError, match="prior_scale: a hyperprior and prior="):
        BayesGLM(prior_scale=dist.HalfNormal(1.0), prior=dist.Laplace(0.0, 1.0))
