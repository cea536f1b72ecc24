"""The 2d relaxation's learnt-scale default (GenRankTS, GenRankUCB): a HalfNormal(1)
hyperprior on g, measured against the paper's fixed prior at the paper's own units
(a reference that learns there) and equivariant in the reward's units."""

import numpy as np
import numpyro.distributions as dist
import pytest

import bayesrank as br
from bayesrank.posteriors.conjugate import GaussianLinear


def _rescaled(c):
    env = br.RankingEnv.paper(seed=0, K=100, L=4, d=5, w_max=10.0)
    return br.RankingEnv(items=env.items, theta=c * np.asarray(env.theta), w=env.w,
                         v0=env.v0, noise=br.noise.Gaussian(c))


def test_the_default_is_the_relaxation_model():
    env = br.RankingEnv.paper(seed=0, K=6, L=3, d=3)
    for pol in (br.GenRankTS(env.items, L=3), br.GenRankUCB(env.items, L=3)):
        assert isinstance(pol.model.hyperprior, dist.HalfNormal), type(pol).__name__
        assert float(pol.model.hyperprior.scale) == 1.0
    # a ridge argument keeps the paper's fixed model
    assert getattr(br.GenRankUCB(env.items, L=3, alpha=2.0).model, "hyperprior",
                   None) is None


@pytest.mark.heavy  # 2 policies compiled, 3 x 600 rounds
def test_gen_rank_ts_default_learns_in_any_units():
    """In the paper's units the fixed N(0, I) prior learns; the default matches it
    there and at c = 0.01 and 100 (identical lists: its regret / c is the same).
    Why HalfNormal(1) rather than the conjugate default HalfCauchy(1): measured by
    scripts/relaxation_hyperprior.py (docs/design-choices.md), not asserted here
    (over 2 runs the gap swings between 1.25x and 1.55x the fixed prior's regret)."""
    T, runs = 600, 2
    env1 = _rescaled(1.0)
    ref = br.simulate(env1, {"fixed": lambda s: br.GenRankTS(
        env1.items, L=4, v0=env1.v0, model=GaussianLinear(prior_scale=1.0,
                                                          noise_scale=1.0), seed=s)},
        T=T, runs=runs, seed=0, progress=False)
    fixed = float(ref.regret.sel(policy="fixed").sum("round").mean())
    got = []
    for c in (0.01, 100.0):
        env = _rescaled(c)
        ds = br.simulate(env, {"default": lambda s: br.GenRankTS(
            env.items, L=4, v0=env.v0, seed=s)}, T=T, runs=runs, seed=0, progress=False)
        got.append(float(ds.regret.sum("round").mean()) / c)
    np.testing.assert_allclose(got[0], got[1], rtol=1e-3)
    assert got[0] <= 1.25 * fixed, (got, fixed)
