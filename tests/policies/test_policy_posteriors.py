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
        "GenRankUCB": br.GenRankUCB(env.items, env.L),
        "WindowRankUCB": br.WindowRankUCB(items=env.items, w=W3),
        "Baseline-ucb": br.RankedBaseline(env.items, env.L),
        "Baseline-ts": br.RankedBaseline(env.items, env.L, kind="ts"),
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
    assert az.summary(dt).shape[0] == pol.posterior_mean().shape[1]
    assert az.psense_summary(dt).shape[0] == pol.posterior_mean().shape[1]
