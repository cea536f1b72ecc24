"""RankTS with a prior on w, and GenRankTS: against references computed here from the
policies' own histories (plain NumPy), and everywhere RankTS works."""

from __future__ import annotations

import jax
import numpy as np
import numpyro.distributions as dist
import pytest

import bayesrank as br
from bayesrank.posteriors import GaussianLinear, GaussianLinearUnknownNoise


@pytest.fixture(scope="module")
def env():
    return br.RankingEnv.paper(seed=2, K=12, L=3, d=4, w_max=5.0)


def _play(pol, env, T, seed=0):
    for t in range(T):
        it = pol.select()
        pol.update(it, np.asarray(env.sample(jax.random.key(seed * 10_000 + t), it)))
    return pol


def _latent(env, **kw):
    return br.RankTS(items=env.items, L=env.L, w=dist.Normal(0.0, 3.0), v0=env.v0, **kw)


def _leaves(pol):
    return [np.asarray(x).copy() for x in jax.tree_util.tree_leaves(pol.state)
            if not jax.dtypes.issubdtype(np.asarray(x).dtype, jax.dtypes.prng_key)]


# --------------------------------------------------------------- references
def test_gen_rank_ts_posterior_mean_is_ridge_over_pair_features(env):
    """The conjugate GenRankTS mean equals ridge regression of the rewards on
    (v_{a^l}, v_{a^{l-1}}) computed from the history (prior N(0, 2^2 I), noise 0.5)."""
    pol = br.GenRankTS(env.items, L=env.L, v0=env.v0, model=GaussianLinear(
        prior_scale=2.0, noise_scale=0.5), seed=1)
    _play(pol, env, 60)
    items, rewards = pol.history()
    V, v0 = np.asarray(env.items), np.asarray(env.v0)
    for l in range(env.L):
        a = V[items[:, l]]
        p = np.broadcast_to(v0, a.shape) if l == 0 else V[items[:, l - 1]]
        X = np.concatenate([a, p], axis=1)
        lam = 0.5**2 / 2.0**2
        ref = np.linalg.solve(X.T @ X + lam * np.eye(X.shape[1]), X.T @ rewards[:, l])
        np.testing.assert_allclose(pol.posterior_mean()[l], ref, rtol=1e-8, atol=1e-10)


def _grid_w(a, p, y, prior_sd, s=1.0, prior_scale=1.0):
    """Mean and sd of w's exact marginal posterior, by brute force on a grid: the
    evidence N(y | 0, s^2 I + (a + w p)(a + w p)^T prior_scale^2) in data space."""
    g = np.linspace(-6 * prior_sd, 6 * prior_sd, 3001)
    lp = []
    for w in g:
        X = a + w * p
        cov = s * s * np.eye(len(y)) + prior_scale**2 * X @ X.T
        _, logdet = np.linalg.slogdet(cov)
        lp.append(-0.5 * logdet - 0.5 * y @ np.linalg.solve(cov, y))
    lp = np.array(lp) - 0.5 * (g / prior_sd) ** 2
    wt = np.exp(lp - lp.max())
    wt /= wt.sum()
    mean = float(np.sum(wt * g))
    return mean, float(np.sqrt(np.sum(wt * (g - mean) ** 2)))


def test_w_hat_is_the_exact_marginal_mean_of_the_history(env):
    fixed = br.GaussianLinear(prior_scale=1.0, noise_scale=1.0)  # the reference's prior
    pol = _play(_latent(env, seed=3, model=fixed), env, 40)
    items, rewards = pol.history()
    V = np.asarray(env.items)
    w_hat = pol.w_hat
    for l in (1, 2):
        mean, sd = _grid_w(V[items[:, l]], V[items[:, l - 1]], rewards[:, l], 3.0)
        assert abs(w_hat[l] - mean) < 0.02 * sd, (l, w_hat[l], mean, sd)
    # v0 = 0: nothing is learnt about w_1, which keeps its prior
    assert w_hat[0] == pytest.approx(0.0, abs=1e-6)
    assert float(pol.model.w_sd(pol.state.model)[0]) == pytest.approx(3.0, rel=1e-3)


def test_known_w_reports_it_as_w_hat(env):
    pol = br.RankTS(items=env.items, w=env.w, seed=0)
    np.testing.assert_array_equal(pol.w_hat, env.w)
    assert not pol.latent_w


def test_posterior_holds_w_draws(env):
    pol = _play(_latent(env, seed=4), env, 30)
    dt = pol.posterior(1, draws=400, chains=2)
    w = dt["posterior"]["w"].values
    assert w.shape == (2, 400)
    sd = float(pol.model.w_sd(pol.state.model)[1])
    assert abs(w.mean() - pol.w_hat[1]) < 5 * sd / np.sqrt(800)
    assert w.std() == pytest.approx(sd, rel=0.1)
    import arviz as az

    assert "w" in az.summary(dt).index.str.cat(sep=" ")
    gen = _play(br.GenRankTS(env.items, L=env.L, v0=env.v0, seed=0), env, 30)
    dtg = gen.posterior(2, draws=100, chains=2)
    assert dtg["posterior"]["w"].shape == (2, 100)


# ----------------------------------------------------- everywhere RankTS works
@pytest.mark.parametrize("make", ["latent", pytest.param("latent-nig", marks=pytest.mark.slow),
                                  pytest.param("gen", marks=pytest.mark.slow)])
def test_requests_masks_distinct_and_partial_feedback(env, make):
    if make == "gen":
        pol = br.GenRankTS(env.items, L=env.L, v0=env.v0, seed=0, distinct=True)
    else:
        base = GaussianLinearUnknownNoise() if make == "latent-nig" else GaussianLinear()
        pol = br.RankTS(model=base, items=env.items, L=env.L, w=dist.Normal(0.0, 3.0),
                        seed=0, distinct=True)
    _play(pol, env, 10)
    mask = np.ones(env.K, bool)
    mask[:5] = False
    lists = pol.select_batch(v0=np.asarray(env.items[:6]), mask=mask)
    assert lists.shape == (6, env.L) and np.all(lists >= 5)
    assert all(len(set(r)) == env.L for r in lists.tolist())
    one = pol.select(mask=mask)
    assert np.all(one >= 5) and len(set(one.tolist())) == env.L
    before = _leaves(pol)
    pol.update(one, np.array([1.0, np.nan, np.nan]))  # only position 1 observed
    after = _leaves(pol)
    assert any(not np.array_equal(b, a) for b, a in zip(before, after))
    new = pol.add_items(np.asarray(env.items[:2]) + 0.1)
    assert new.tolist() == [env.K, env.K + 1]
    assert pol.select().shape == (env.L,)


@pytest.mark.parametrize("make", ["latent", pytest.param("gen", marks=pytest.mark.slow)])
def test_save_and_load_continue_exactly(env, make, tmp_path):
    pol = (_latent(env, seed=5) if make == "latent"
           else br.GenRankTS(env.items, L=env.L, v0=env.v0, seed=5))
    _play(pol, env, 15)
    cls = type(pol)
    pol.save(tmp_path / "p.npz")
    back = cls.load(tmp_path / "p.npz")
    np.testing.assert_allclose(back.w_hat, pol.w_hat, rtol=1e-12)
    for _ in range(3):
        a, b = pol.select(), back.select()
        np.testing.assert_array_equal(a, b)
        r = np.asarray(env.sample(jax.random.key(99), a))
        pol.update(a, r)
        back.update(b, r)


@pytest.mark.slow
def test_simulate_runs_latent_w_and_gen_rank_ts_vmapped(env):
    ds = br.simulate(env, {
        "latent": lambda s: _latent(env, seed=s),
        "gen": lambda s: br.GenRankTS(env.items, L=env.L, v0=env.v0, seed=s),
    }, T=40, runs=3, progress=False)
    assert ds["regret"].shape == (2, 3, 40)
    assert np.all(np.isfinite(ds["regret"].values)) and np.all(ds["regret"].values > -1e-9)


@pytest.mark.slow
def test_catalogue_scale_select_takes_the_separable_path(env):
    """For a fixed draw the pair score is separable: the latent-w tables are of the
    separable kind, which never builds K x K tables."""
    pol = _latent(env)
    assert pol.core.tables.kind == "separable"
    big = br.RankingEnv.paper(seed=0, K=20_000, L=3, d=4)
    polb = br.RankTS(items=big.items, L=3, w=dist.Normal(0.0, 3.0), seed=0)
    assert polb.select().shape == (3,)


# ------------------------------------------------------------------ bad input
BAD_W = {
    "discrete prior": (dist.Poisson(2.0), ValueError, "w: the prior must be a continuous"),
    "simplex prior": (dist.Dirichlet(np.ones(3)), ValueError, "w: the prior"),
    "wrong batch shape": (dist.Normal(np.zeros(5), 1.0), ValueError,
                          r"w: the prior's batch shape must be \(\) or \(L,\) = \(3,\)"),
    "not a distribution": ({"loc": 0.0}, ValueError, "w: expected"),
    "a string": ("normal", ValueError, "w:"),
    "NaN array": (np.array([0.0, np.nan, 1.0]), ValueError, "w: expected finite values"),
}


@pytest.mark.parametrize("case", list(BAD_W))
def test_bad_w_is_refused_naming_w(env, case):
    w, exc, match = BAD_W[case]
    with pytest.raises((exc, TypeError), match=match):
        br.RankTS(items=env.items, L=env.L, w=w)


class _NoLatentForm:
    """A posterior bayesrank knows no latent-w form of."""


def test_latent_w_with_a_model_without_latent_form_names_the_alternative(env):
    with pytest.raises(TypeError, match="GenRankTS"):
        br.RankTS(model=_NoLatentForm(), items=env.items, L=env.L,
                  w=dist.Normal(0.0, 1.0))


def test_a_scalar_prior_needs_L(env):
    with pytest.raises(ValueError, match="L: give the list length"):
        br.RankTS(items=env.items, w=dist.Normal(0.0, 1.0))
    pol = br.RankTS(items=env.items, w=dist.Normal(np.zeros(env.L), 1.0))
    assert pol.L == env.L


BAD_REWARDS = [
    (np.array([1.0, np.inf, 0.0]), "rewards"),
    (np.array([1.0, 2.0]), "rewards"),
    (np.array(["a", "b", "c"]), "rewards"),
]


@pytest.mark.parametrize("make", ["latent", "gen"])
def test_a_rejected_update_leaves_the_state_as_it_was(env, make):
    pol = (_latent(env) if make == "latent"
           else br.GenRankTS(env.items, L=env.L, v0=env.v0, seed=0))
    _play(pol, env, 5)
    items = pol.select()
    before = _leaves(pol)
    for rewards, match in BAD_REWARDS:
        with pytest.raises((ValueError, TypeError), match=match):
            pol.update(items, rewards)
        for b, a in zip(before, _leaves(pol)):
            np.testing.assert_array_equal(b, a)
