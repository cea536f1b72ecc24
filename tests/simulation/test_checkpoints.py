"""play_to_checkpoints: simulate's keys (common random numbers), posteriors at rounds."""

import jax
import numpy as np
import numpyro.distributions as dist
import pytest

import bayesrank as br
from bayesrank.simulation.checkpoints import play_to_checkpoints
from bayesrank.simulation.simulate import noise_key, policy_seed
from bayesrank.studies.paper.unknown_w import w_tracking

SEED = 3


@pytest.fixture(scope="module")
def env():
    return br.RankingEnv.paper(seed=1, K=8, L=3, d=3, w_max=2.0)


def _class_loop(make, env, r, T):
    """The reference: the class API, round by round, with simulate's documented keys."""
    pol = make(policy_seed(SEED, r))
    nk = noise_key(SEED, r)
    regret = []
    for t in range(T):
        items = pol.select()
        regret.append(float(env.best_value - env.expected_reward(items)))
        pol.update(items, env.sample(jax.random.fold_in(nk, t), items))
    return pol, np.array(regret)


def test_regret_and_posteriors_equal_the_class_api_round_by_round(env):
    def make(s):
        return br.RankTS(items=env.items, w=env.w, v0=env.v0, seed=s)

    regret, means = play_to_checkpoints(
        make, env, (4, 9, 15), 2, lambda m, st: jax.vmap(m.mean)(st), seed=SEED)
    assert regret.shape == (2, 15) and len(means) == 3
    for r in range(2):
        pol, ref = _class_loop(make, env, r, 15)
        np.testing.assert_allclose(regret[r], ref, atol=1e-4)
        np.testing.assert_allclose(means[-1][r], pol.model.mean(pol.state.model),
                                   rtol=1e-4, atol=1e-5)


@pytest.mark.heavy  # three latent-w compilations
def test_w_tracking_shares_the_regret_study_runs(env):
    """Run r of the w-tracking is run r of simulate's "latent w" curve, and its
    intervals and coverage are the posterior's own after those rounds."""
    tr = w_tracking(env, 12, 2, seed=SEED, checkpoints=3)
    prior = dist.Normal(0.0, 5.0)
    ds = br.simulate(env, {"latent": lambda s: br.RankTS(
        items=env.items, L=env.L, w=prior, v0=env.v0, seed=s)}, T=12, runs=2, seed=SEED)
    np.testing.assert_allclose(tr["regret"], ds["regret"].sel(policy="latent").values,
                               atol=1e-4)
    pol, _ = _class_loop(lambda s: br.RankTS(items=env.items, L=env.L, w=prior,
                                             v0=env.v0, seed=s), env, 1, 12)
    np.testing.assert_allclose(tr["mean"][1, -1], pol.w_hat, rtol=1e-4, atol=1e-5)
    q = np.asarray(pol.model.w_quantiles(pol.state.model, (0.05, 0.95)))
    np.testing.assert_allclose(tr["lo"][1, -1], q[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(tr["hi"][1, -1], q[1], rtol=1e-4, atol=1e-5)
    w = tr["w"]
    inside = (tr["lo"][:, :, 1:] <= w[1:]) & (w[1:] <= tr["hi"][:, :, 1:])
    np.testing.assert_allclose(tr["coverage"], inside.mean(axis=(0, 2)))


@pytest.mark.parametrize("rounds, runs, match", [
    ((5, 5), 1, "rounds"), ((0, 3), 1, "rounds"), ((), 1, "rounds"),
    ((3,), 0, "runs"), ((3,), 1.5, "runs"),
])
def test_bad_arguments_are_refused(env, rounds, runs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        play_to_checkpoints(lambda s: br.RankTS(items=env.items, w=env.w, seed=s), env,
                            rounds, runs, lambda m, st: st)
