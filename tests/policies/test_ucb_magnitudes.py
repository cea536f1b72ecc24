"""Reward magnitudes (issue 58, item 2), in float32: RankUCB and RankTS over the
learnt-scale default and over a fixed noise scale, fed ``c x`` the same rewards for
c from 2^-66 (1.4e-20) to 2^95 (4e28). With learnt scales the lists are those of
c = 1 and the posterior mean is c times its own, bit for bit, and matches a NumPy
float64 grid reference; with a fixed noise scale everything stays finite; a reward
beyond the documented bound (2^100 in float32) is refused naming ``rewards``, the
state as it was."""

import jax
import numpy as np
import pytest

import bayesrank as br

T = 40
#: c as powers of two, so that c r is exact and scale-free maths gives the same bits
CS = (-66, -40, -12, 20, 40, 63, 95)


@pytest.fixture(scope="module")
def env():
    return br.RankingEnv.paper(seed=0, K=20, L=3, d=5, w_max=3.0)


def _policy(env, family):
    fixed = br.GaussianLinear(prior_scale=1.0, noise_scale=1.0)
    if family == "ts-learnt":
        return br.RankTS(items=env.items, L=3, w=env.w, seed=1)
    if family == "ts-fixed":
        return br.RankTS(items=env.items, L=3, w=env.w, seed=1, model=fixed)
    if family == "ucb-learnt":
        return br.RankUCB(items=env.items, L=3, w=env.w)
    return br.RankUCB(items=env.items, L=3, w=env.w, model=fixed)


def _run(env, family, c, rounds=T):
    """(lists (rounds, L), rewards / c (rounds, L) float64, the policy)."""
    pol = _policy(env, family)
    lists, rewards = [], []
    for t in range(rounds):
        a = np.asarray(pol.select())
        r = np.asarray(env.sample(jax.random.fold_in(jax.random.key(5), t), a),
                       np.float64)
        pol.update(a, c * r)
        lists.append(a)
        rewards.append(r)
    return np.array(lists), np.array(rewards), pol


@pytest.fixture(scope="module")
def unit_runs(env):
    return {f: _run(env, f, 1.0) for f in ("ts-learnt", "ucb-learnt", "ts-fixed",
                                           "ucb-fixed")}


@pytest.mark.parametrize("k", CS)
@pytest.mark.parametrize("family", ["ts-learnt", "ucb-learnt"])
def test_learnt_scale_lists_and_mean_do_not_depend_on_the_magnitude(env, unit_runs,
                                                                    family, k):
    c = 2.0**k
    lists, _, pol = _run(env, family, c)
    lists1, _, pol1 = unit_runs[family]
    mean, mean1 = np.asarray(pol.posterior_mean()), np.asarray(pol1.posterior_mean())
    assert mean.dtype == np.float32 and np.all(np.isfinite(mean))
    np.testing.assert_array_equal(lists, lists1)
    np.testing.assert_array_equal(mean / np.float32(c), mean1)
    noise = np.asarray(pol.model.noise_sd(pol.state.model))
    np.testing.assert_array_equal(noise / np.float32(c),
                                  np.asarray(pol1.model.noise_sd(pol1.state.model)))


def _grid_reference(model, X, y):
    """E[theta | data] of the learnt-scale model (HalfCauchy(1) on g, Jeffreys on s,
    theta | g, s ~ N(0, g^2 s^2 I)) on the model's grid of g, in NumPy float64:
    log p(y | g) = -1/2 log det(I + g^2 S) - n/2 log(q - u^T (S + I/g^2)^-1 u)."""
    S, u, q, n = X.T @ X, X.T @ y, y @ y, len(y)
    logp, means = [], []
    for lg, lw in zip(model.log_g, model.log_w0):
        P = S + np.eye(len(u)) * np.exp(-2 * lg)
        m = np.linalg.solve(P, u)
        logdet = np.linalg.slogdet(np.eye(len(u)) + np.exp(2 * lg) * S)[1]
        logp.append(lw - 0.5 * logdet - 0.5 * n * np.log(q - u @ m))
        means.append(m)
    w = np.exp(np.array(logp) - max(logp))
    return (w / w.sum()) @ np.array(means)


@pytest.mark.parametrize("k", [-66, 0, 63, 95])
def test_learnt_scale_mean_equals_a_float64_reference_at_every_magnitude(env, k):
    c = 2.0**k
    lists, rewards, pol = _run(env, "ts-learnt", c)
    feats = np.asarray(env.items, np.float64)
    mean = np.asarray(pol.posterior_mean(), np.float64)
    for pos in range(3):
        X = feats[lists[:, pos]].copy()
        if pos == 0:
            X += float(env.w[0]) * np.asarray(env.v0, np.float64)
        else:
            X += float(env.w[pos]) * feats[lists[:, pos - 1]]
        ref = _grid_reference(pol.model, X, rewards[:, pos])
        np.testing.assert_allclose(mean[pos] / c, ref, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("k", (-140, *CS))
@pytest.mark.parametrize("family", ["ts-fixed", "ucb-fixed", "ts-learnt", "ucb-learnt"])
def test_every_family_stays_finite_and_shows_real_lists(env, family, k):
    """A fixed noise scale puts the rewards in its units (the lists move with c), but
    nothing turns NaN; 2^-140 is below float32's smallest normal number: such rewards
    count as 0 (all-zero rewards tie every item: finite, but no list to check)."""
    lists, _, pol = _run(env, family, 2.0**k, rounds=25)
    assert np.all(np.isfinite(np.asarray(pol.posterior_mean())))
    first, pairs = pol.scores()
    assert np.all(np.isfinite(np.asarray(first)))
    assert np.all(np.isfinite(np.asarray(pairs)))
    if k > -126:  # not one item repeated down every list (what NaN scores gave)
        assert len(np.unique(lists[-10:])) > 1


@pytest.mark.parametrize("family", ["ts-learnt", "ucb-learnt", "ts-fixed", "ucb-fixed"])
@pytest.mark.parametrize("r", [2.0**101, -1e39, 3e38])
def test_a_reward_beyond_the_bound_is_refused_and_the_state_kept(env, family, r):
    pol = _policy(env, family)
    a = np.asarray(pol.select())
    pol.update(a, np.array([1.0, 2.0, 3.0]))
    a = np.asarray(pol.select())
    before = [np.asarray(x).copy() for x in jax.tree_util.tree_leaves(pol.state.model)]
    with pytest.raises(ValueError, match=r"rewards: expected magnitudes up to 1\.268e\+30"
                                         r" \(float32: a score sums L of them\)"):
        pol.update(a, np.array([1.0, r, 0.5]))
    after = jax.tree_util.tree_leaves(pol.state.model)
    assert all(np.array_equal(x, np.asarray(y)) for x, y in zip(before, after))


@pytest.mark.parametrize("make, bound", [
    (lambda: br.GaussianLinear(prior_scale=1.0, noise_scale=0.5), 2.0**100 * 0.25),
    (lambda: br.GaussianLinear(noise_scale=0.5), 0.5 * 2.0**50),
    (lambda: br.posteriors.GaussianLinearUnknownNoise(), 2.0**50),
])
def test_models_whose_sums_hold_squares_or_over_s2_refuse_sooner(make, bound):
    model = make()
    assert model.reward_bound("float32")[0] == bound
    model.check_rewards(np.array([bound, -bound]))
    with pytest.raises(ValueError, match=r"^rewards: expected magnitudes up to "):
        model.check_rewards(np.array([0.0, np.nextafter(bound, np.inf)]))
