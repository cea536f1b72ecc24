"""Every policy exposes its per-position posterior as an ArviZ DataTree."""

import arviz as az
import jax
import numpy as np
import pytest

import bayesrank as br


def _make(env):
    W3 = np.c_[np.asarray(env.w), np.ones(env.L)]
    return {
        "RankTS": br.RankTS(items=env.items, w=env.w),
        "RankUCB": br.RankUCB(items=env.items, w=env.w),
        "GenRankUCB": br.GenRankUCB(env.items, L=env.L),
        "WindowRankUCB": br.WindowRankUCB(items=env.items, w=W3),
        "Baseline-ucb": br.RankedBaseline(env.items, L=env.L),
        "Baseline-ts": br.RankedBaseline(env.items, L=env.L, kind="ts"),
    }


@pytest.mark.parametrize(
    "name",
    ["RankTS", "RankUCB", "GenRankUCB", "WindowRankUCB", "Baseline-ucb", "Baseline-ts"],
)
def test_posterior_datatree_matches_the_policy_state(name):
    env = br.RankingEnv.paper(seed=0, K=8, L=3, d=4, w_max=3.0)
    pol = _make(env)[name]
    n = 25
    for t in range(n):
        it = pol.select()
        pol.update(it, np.asarray(env.sample(jax.random.key(t), it)))
    dt = pol.posterior(2, draws=2000)
    # the draws summarise the policy's own posterior (exact draws: MC tolerance)
    mean = dt.posterior["theta"].mean(("chain", "draw")).values
    sd = dt.posterior["theta"].std(("chain", "draw")).values
    np.testing.assert_allclose(mean, pol.posterior_mean()[2], atol=5 * sd.max() / 90)
    # the likelihood and data groups cover every impression at that position
    assert dt.log_likelihood.sizes["obs"] == n
    np.testing.assert_allclose(dt.observed_data["y"].values, pol.history()[1][:, 2])
    p = pol.posterior_mean().shape[1]
    assert az.summary(dt, var_names=["theta"]).shape[0] == p
    assert az.psense_summary(dt, var_names=["theta"]).shape[0] == p


@pytest.mark.parametrize("latent", [False, True], ids=["known w", "latent w"])
def test_a_fresh_policy_gives_its_prior(latent):
    """Before any update the posterior is the prior: theta ~ N(0, 1.5^2 I) (closed
    form), and for a latent w, w ~ Normal(2, 3) (it crashed on an empty history)."""
    import numpyro.distributions as dist

    env = br.RankingEnv.paper(seed=0, K=8, L=3, d=3)
    w = dist.Normal(2.0, 3.0) if latent else env.w
    pol = br.RankTS(model=br.GaussianLinear(prior_scale=1.5), items=env.items, L=3, w=w)
    post = pol.posterior(1, draws=4000).posterior
    theta = np.asarray(post["theta"]).reshape(-1, np.asarray(post["theta"]).shape[-1])
    np.testing.assert_allclose(theta.mean(0), 0.0, atol=0.1)
    np.testing.assert_allclose(theta.std(0), 1.5, rtol=0.05)
    if latent:
        wd = np.asarray(post["w"]).ravel()
        assert abs(wd.mean() - 2.0) < 0.2 and abs(wd.std() - 3.0) < 0.2


def _learnt_forms():
    import numpyro.distributions as dist

    V = np.random.default_rng(0).normal(size=(8, 3))
    w = dist.Normal(0.0, 5.0)
    return {  # the policy, and the scales its posterior must hold beside theta (and w)
        "latent-default": (br.RankTS(items=V, L=3, w=w),
                           {"prior_scale", "noise_scale"}),
        "latent-nig": (br.RankTS(items=V, L=3, w=w,
                                 model=br.GaussianLinearUnknownNoise()),
                       {"noise_scale"}),
        "latent-laplace": (br.RankTS(items=V, L=3, w=w,
                                     model=br.LaplaceGLM("logistic")),
                           {"prior_scale"}),
        "known-default": (br.RankTS(items=V, L=3, w=np.zeros(3)),
                          {"prior_scale", "noise_scale"}),
        "known-laplace": (br.RankTS(items=V, L=3, w=np.zeros(3), model=br.LaplaceGLM()),
                          {"prior_scale"}),
    }


@pytest.mark.parametrize("name", sorted(_learnt_forms()))
def test_posterior_holds_every_learnt_scale(name):
    pol, scales = _learnt_forms()[name]
    rng = np.random.default_rng(1)
    for _ in range(4):
        a = pol.select()
        pol.update(a, rng.integers(0, 2, size=3).astype(float))
    dt = pol.posterior(0, draws=30, chains=2)
    latent = name.startswith("latent")
    expect = {"theta"} | scales | ({"w"} if latent else set())
    assert set(dt.posterior.data_vars) == expect
    for s in scales:
        v = np.asarray(dt.posterior[s])
        assert v.shape == (2, 30) and np.all(np.isfinite(v)) and np.all(v > 0)
        assert np.all(np.isfinite(np.asarray(dt.log_prior[s])))
