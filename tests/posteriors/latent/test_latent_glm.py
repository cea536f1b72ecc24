"""Latent w under a GLM link (LatentLaplace, LatentBayesGLM, a user model with a "w"
site) against the exact posterior computed here by brute force.

The reference: d = 1, so (theta, w) is two-dimensional and the exact posterior
p(theta, w | D) of the logistic model is a product of the priors and the Bernoulli
likelihood on a fine 2-D grid, integrated numerically. It shares no code with
bayesrank.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import bayesrank as br
from bayesrank.posteriors import LaplaceGLM, LatentLaplace, latent_model
from bayesrank.posteriors.base import update_many

PRIOR_SCALE, W_SD = 1.0, 2.0


def _data(n, theta=1.2, w=0.8, seed=0):
    rng = np.random.default_rng(seed)
    a, p = rng.normal(size=n), rng.normal(size=n)
    prob = 1 / (1 + np.exp(-theta * (a + w * p)))
    y = (rng.uniform(size=n) < prob).astype(float)
    return np.stack([a, p], 1), y


def _grid_posterior(X, y):
    """E[w], sd(w), E[theta] of the exact posterior on a 2-D grid."""
    th = np.linspace(-5, 5, 801)[:, None]
    ww = np.linspace(-9, 9, 1201)[None, :]
    logp = -0.5 * (th / PRIOR_SCALE) ** 2 - 0.5 * (ww / W_SD) ** 2
    for (a, p), r in zip(X, y):
        eta = th * (a + ww * p)
        logp = logp + r * eta - np.logaddexp(0.0, eta)
    wts = np.exp(logp - logp.max())
    wts /= wts.sum()
    mw = float((wts * ww).sum())
    return mw, float(np.sqrt((wts * (ww - mw) ** 2).sum())), float((wts * th).sum())


def _latent_laplace(X, y):
    model = latent_model(LaplaceGLM("logistic", prior_scale=PRIOR_SCALE,
                                    n_max=len(y)), dist.Normal(0.0, W_SD))
    state = update_many(model, model.init(1, 2), jnp.asarray(X)[:, None, :],
                        jnp.asarray(y)[:, None])
    return model, state


def _agrees(model, state, ref):
    """E[w] within 0.2 posterior sd, sd(w) within 25 %, E[theta] within 0.15."""
    mw, sw, mth = ref
    return (abs(float(model.w_mean(state)[0]) - mw) < 0.2 * sw
            and abs(float(model.w_sd(state)[0]) - sw) < 0.25 * sw
            and abs(float(model.mean(state)[0, 0]) - mth) < 0.15)


@pytest.mark.parametrize("n", [60, 400])
def test_latent_laplace_matches_the_exact_posterior_of_w(n):
    """The Laplace likelihood in the 2d relaxation, with w collapsed, agrees with the
    exact posterior with few data and with many."""
    X, y = _data(n)
    model, state = _latent_laplace(X, y)
    assert isinstance(model, LatentLaplace)
    assert _agrees(model, state, _grid_posterior(X, y))


def test_broken_expansions_fail_the_check():
    """Broken on purpose, at n = 60: dropping the score at the ridge MAP (g = H_L
    phi_hat instead of H phi_hat: an expansion of something other than the
    likelihood), or flipping the sign of the a-p block, fails the check above."""
    X, y = _data(60)
    ref = _grid_posterior(X, y)
    model, state = _latent_laplace(X, y)
    fit = state.fit
    H = fit.chol @ jnp.swapaxes(fit.chol, -1, -2)
    g_bad = jnp.einsum("lij,lj->li", H - model.laplace.lam * jnp.eye(2), fit.theta)
    assert not _agrees(model, state._replace(ba=g_bad[:, :1], bp=g_bad[:, 1:]), ref)
    assert not _agrees(model, state._replace(Sap=-state.Sap), ref)


def test_latent_bayes_glm_chains_reach_the_exact_posterior():
    """NUTS over (theta, w) jointly: fresh chains' mean of w within Monte Carlo
    error of the grid integral, and R-hat near 1."""
    import arviz as az

    X, y = _data(120, seed=1)
    mw, sw, _ = _grid_posterior(X, y)
    model = latent_model(br.BayesGLM("logistic", prior_scale=PRIOR_SCALE, n_max=120,
                                     num_warmup=100), dist.Normal(0.0, W_SD))
    state = update_many(model, model.init(1, 2), jnp.asarray(X)[:, None, :],
                        jnp.asarray(y)[:, None])
    dt = model.to_datatree(state, 0, key=jax.random.key(3), draws=400, chains=4)
    w = np.asarray(dt.posterior["w"]).ravel()
    ess = float(az.ess(dt, var_names=["w"])["w"])
    assert abs(w.mean() - mw) < 4 * sw / np.sqrt(ess), (w.mean(), mw, sw, ess)
    assert float(az.rhat(dt, var_names=["w"])["w"]) < 1.05


def _user_model(x, y=None):
    d = x.shape[-1] // 2
    theta = numpyro.sample("theta", dist.Normal(0.0, PRIOR_SCALE).expand([d]).to_event(1))
    w = numpyro.sample("w", dist.Normal(0.0, W_SD))
    with numpyro.plate("obs", x.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=x[:, :d] @ theta
                                           + w * (x[:, d:] @ theta)), obs=y)


def test_a_user_model_with_a_w_site_learns_w():
    """A NumPyroModel whose model declares "w" is latent-w: the link is inferred
    through <theta, a + w p>, draws are (theta, w), and RankTS takes it with w=None."""
    m = br.NumPyroModel(_user_model, n_max=50, num_warmup=50)
    assert m.latent_w and m.link.name == "logistic"
    env = br.RankingEnv.paper(seed=0, K=6, L=2, d=2, link="logistic")
    ts = br.RankTS(model=m, items=env.items, L=2, seed=0)
    for r in range(5):
        items = ts.select()
        ts.update(items, env.sample(jax.random.key(r), items))
    assert ts.latent_w and ts.w_hat.shape == (2,)
    with pytest.raises(ValueError, match="w: the model already learns w"):
        br.RankTS(model=m, items=env.items, L=2, w=dist.Normal(0.0, 1.0))


@pytest.mark.parametrize("model", [LaplaceGLM("probit", n_max=30),
                                   br.BayesGLM("logistic", n_max=30, num_warmup=20)],
                         ids=["laplace", "nuts"])
def test_rank_ts_with_a_glm_and_a_prior_on_w_runs_and_saves(model, tmp_path):
    env = br.RankingEnv.paper(seed=1, K=6, L=3, d=2, link="logistic")
    ts = br.RankTS(model=model, items=env.items, w=dist.Normal(0.0, 3.0), L=3, seed=2)
    for r in range(8):
        items = ts.select()
        ts.update(items, env.sample(jax.random.key(r), items))
    ts.save(tmp_path / "p.npz")
    back = br.RankTS.load(tmp_path / "p.npz")
    assert type(back.model) is type(ts.model)
    np.testing.assert_allclose(back.w_hat, ts.w_hat)
    np.testing.assert_array_equal(back.select(), ts.select())


def _bad_cases():
    return [
        ("laplace-batch-prior-nuts", br.BayesGLM("logistic", n_max=10),
         dist.Normal(jnp.zeros(3), 1.0), ValueError, "w: NUTS models take"),
        ("nuts-custom-theta-prior", br.BayesGLM("logistic", prior=dist.Laplace(0, 1)),
         dist.Normal(0.0, 1.0), TypeError, "custom prior on theta"),
        ("laplace-discrete-prior", LaplaceGLM("logistic"), dist.Poisson(2.0),
         ValueError, "w: the prior must be a continuous"),
        ("numpyro-model-without-w", br.NumPyroModel(
            functools.partial(br.posteriors.nuts.numpyro_models.glm, link="logistic")),
         dist.Normal(0.0, 1.0), TypeError, "declares a scalar sample site 'w'"),
    ]


@pytest.mark.parametrize("case", _bad_cases(), ids=lambda c: c[0])
def test_bad_latent_glm_input_is_refused_naming_the_argument(case):
    _, model, prior, exc, match = case
    env = br.RankingEnv.paper(seed=0, K=6, L=3, d=2)
    with pytest.raises(exc, match=match):
        br.RankTS(model=model, items=env.items, L=3, w=prior)


@pytest.mark.parametrize("make", ["laplace", "nuts"])
def test_everywhere_rank_ts_works(make):
    """Requests with context and masks, distinct lists, partial feedback (the state
    of an unobserved position stays bit for bit), add_items, fit from a log, and
    simulate, with a GLM posterior and a prior on w."""
    env = br.RankingEnv.paper(seed=2, K=8, L=3, d=2, link="logistic")
    model = (LaplaceGLM("logistic", n_max=40) if make == "laplace"
             else br.BayesGLM("logistic", n_max=40, num_warmup=20))
    pol = br.RankTS(model=model, items=env.items, L=3, w=dist.Normal(0.0, 3.0),
                    seed=0, distinct=True)
    for r in range(4):
        items = pol.select()
        pol.update(items, env.sample(jax.random.key(r), items))
    mask = np.ones(env.K, bool)
    mask[:3] = False
    lists = pol.select_batch(v0=np.asarray(env.items[:4]), mask=mask)
    assert lists.shape == (4, 3) and np.all(lists >= 3)
    assert all(len(set(r)) == 3 for r in lists.tolist())
    n_before = np.asarray(pol.state.model.n).copy()
    pol.update(pol.select(mask=mask), np.array([1.0, np.nan, np.nan]))
    np.testing.assert_array_equal(np.asarray(pol.state.model.n) - n_before, [1, 0, 0])
    assert pol.add_items(np.asarray(env.items[:1]) * 0.5).tolist() == [env.K]
    log = br.ope.collect(env, br.ope.UniformLogger(env.K, 3), 6, seed=1)
    fresh = br.RankTS(model=model, items=env.items, L=3, w=dist.Normal(0.0, 3.0))
    fresh.fit(log)
    assert np.asarray(fresh.state.model.n).tolist() == [6, 6, 6]
    ds = br.simulate(env, {"latent": lambda s: br.RankTS(
        model=model, items=env.items, L=3, w=dist.Normal(0.0, 3.0), seed=s)},
        T=5, runs=2, progress=False)
    assert np.isfinite(ds["regret"].values).all()
