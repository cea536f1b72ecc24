"""RankingEnv: the reward model of Eq. 1, its best list, regret and input checks."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy.special import ndtr

from bayesrank.model import noise
from bayesrank.simulation.env import RankingEnv

LINK_FNS = {
    "identity": lambda z: z,
    "logistic": lambda z: 1.0 / (1.0 + np.exp(-z)),
    "probit": lambda z: np.asarray(ndtr(z)),
    "exp": np.exp,
}


def reference_means(V, Theta, W, v0, link, a):
    """Eq. 1 with a window, written as a plain loop: f(<theta^l, v_a^l + sum_i ...>)."""
    L, S1 = W.shape
    out = []
    for l in range(L):
        x = V[a[l]].copy()
        for i in range(1, S1 + 1):
            if l - i >= 0:
                x += W[l, i - 1] * V[a[l - i]]
            elif l - i == -1:
                x += W[l, i - 1] * v0
        out.append(LINK_FNS[link](Theta[l] @ x))
    return np.array(out)


def all_lists(K, L, distinct=False):
    it = (
        itertools.permutations(range(K), L)
        if distinct
        else itertools.product(range(K), repeat=L)
    )
    return np.array(list(it))


def test_paper_generator_follows_the_paper():
    env = RankingEnv.paper(seed=3, K=20, L=4, d=10, w_max=10.0)
    V, Th, w = map(np.asarray, (env.items, env.theta, env.w))
    assert (env.K, env.L, env.d, env.S) == (20, 4, 10, 2)
    np.testing.assert_allclose(V[:, -1], 1.0)
    np.testing.assert_allclose(np.linalg.norm(V[:, :-1], axis=1), 1.0)
    np.testing.assert_allclose(Th[:, -1], 0.5)
    np.testing.assert_allclose(np.linalg.norm(Th[:, :-1], axis=1), 0.5)
    assert np.abs(Th @ V.T).max() <= 1.0 + 1e-12
    assert np.all(np.abs(w) <= 10.0)
    np.testing.assert_allclose(np.asarray(env.v0), 0.0)
    again = RankingEnv.paper(seed=3, K=20, L=4, d=10, w_max=10.0)
    np.testing.assert_array_equal(np.asarray(again.items), V)
    assert type(env.noise) is noise.Gaussian
    assert type(RankingEnv.paper(link="logistic").noise) is noise.Bernoulli
    assert type(RankingEnv.paper(link="probit").noise) is noise.Bernoulli
    assert type(RankingEnv.paper(link="exp").noise) is noise.Poisson


@pytest.mark.parametrize("link", ["identity", "logistic", "probit", "exp"])
@pytest.mark.parametrize("S", [2, 3, 4])
def test_position_means_equal_eq1(link, S):
    rng = np.random.default_rng(S)
    K, L, d = 5, 4, 3
    V, Th = rng.normal(size=(K, d)) / 2, rng.normal(size=(L, d)) / 2
    W, v0 = rng.normal(size=(L, S - 1)), rng.normal(size=d)
    env = RankingEnv(V, Th, W[:, 0] if S == 2 else W, v0=v0, link=link)
    lists = rng.integers(0, K, size=(20, L))
    got = np.asarray(env.position_means(lists))
    want = np.stack([reference_means(V, Th, W, v0, link, a) for a in lists])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(env.position_means(lists[0])), want[0])
    np.testing.assert_allclose(np.asarray(env.expected_reward(lists)), want.sum(1))


@pytest.mark.parametrize("link", ["identity", "logistic", "exp"])
@pytest.mark.parametrize("seed", [0, 1])
def test_best_has_zero_regret_and_every_list_nonnegative_regret(link, seed):
    env = RankingEnv.paper(seed=seed, K=5, L=3, d=4, w_max=5.0, link=link)
    items, value = env.best()
    lists = all_lists(5, 3)
    rewards = np.asarray(env.expected_reward(lists))
    assert float(value) == pytest.approx(rewards.max(), abs=1e-12)
    assert float(env.regret(items)) == 0.0  # exactly: one route for both values
    regrets = np.asarray(env.regret(lists))
    assert regrets.min() >= -1e-12
    assert regrets.min() == pytest.approx(0.0, abs=1e-12)


def test_best_distinct_and_mask_equal_brute_force():
    env = RankingEnv.paper(seed=4, K=5, L=3, d=4, w_max=10.0)
    lists = all_lists(5, 3, distinct=True)
    items, value = env.best(distinct=True)
    assert float(value) == pytest.approx(np.asarray(env.expected_reward(lists)).max())
    mask = np.array([True, True, False, True, True])
    ok = mask[lists].all(axis=1)
    items, value = env.best(distinct=True, mask=mask)
    assert mask[np.asarray(items)].all()
    assert float(value) == pytest.approx(
        np.asarray(env.expected_reward(lists[ok])).max()
    )
    items, values = env.best(top_k=3)
    want = np.sort(np.asarray(env.expected_reward(all_lists(5, 3))))[::-1][:3]
    np.testing.assert_allclose(values, want)


@pytest.mark.parametrize("S", [3, 4])
def test_window_env_best_equals_brute_force(S):
    rng = np.random.default_rng(S)
    K, L, d = 4, 4, 3
    env = RankingEnv(
        rng.normal(size=(K, d)),
        rng.normal(size=(L, d)),
        rng.normal(size=(L, S - 1)),
        v0=rng.normal(size=d),
        link="logistic",
    )
    assert env.S == S and env.W.shape == (L, S - 1)
    lists = all_lists(K, L)
    rewards = np.asarray(env.expected_reward(lists))
    items, value = env.best()
    assert float(value) == pytest.approx(rewards.max())
    assert float(env.regret(items)) == pytest.approx(0.0, abs=1e-12)
    assert np.asarray(env.regret(lists)).min() >= -1e-12
    mask = np.array([True, False, True, True])
    items, value = env.best(mask=mask)
    assert mask[np.asarray(items)].all()
    assert float(value) == pytest.approx(rewards[mask[lists].all(1)].max())
    with pytest.raises(ValueError, match="distinct"):
        env.best(distinct=True)


def test_window_with_one_column_equals_pairwise():
    env = RankingEnv.paper(seed=1, K=6, L=4, d=5)
    env2 = RankingEnv(env.items, env.theta, env.w[:, None], v0=env.v0)
    lists = all_lists(6, 4)[::7]
    np.testing.assert_allclose(env.expected_reward(lists), env2.expected_reward(lists))
    assert float(env.best()[1]) == pytest.approx(float(env2.best()[1]))


def test_sample_mean_and_shapes():
    env = RankingEnv.paper(seed=0, K=6, L=4, d=5)
    lst = np.array([0, 3, 3, 5])
    keys = jax.random.split(jax.random.key(0), 4000)
    draws = np.asarray(jax.vmap(lambda k: env.sample(k, lst))(keys))  # (4000, L)
    assert draws.shape == (4000, 4)
    se = 1.0 / np.sqrt(4000)
    assert np.all(np.abs(draws.mean(0) - np.asarray(env.position_means(lst))) < 5 * se)
    assert env.sample(jax.random.PRNGKey(1), np.zeros((7, 4), int)).shape == (7, 4)


def test_env_under_jit_and_vmap():
    env = RankingEnv.paper(seed=2, K=5, L=3, d=4, link="logistic")
    lists = all_lists(5, 3)[:10]
    f = jax.jit(lambda e, a: e.regret(a, best_value=e.best()[1]))
    np.testing.assert_allclose(f(env, lists), env.regret(lists), atol=1e-12)
    looped = np.array([float(env.expected_reward(a)) for a in lists])
    np.testing.assert_allclose(jax.vmap(env.expected_reward)(lists), looped)


# ----------------------------------------------------------------------- bad input
V, TH, W = np.eye(3), np.ones((2, 3)), np.ones(2)


@pytest.mark.parametrize(
    "kwargs,err,match",
    [
        ({"items": np.ones((3, 4))}, ValueError, "theta"),
        ({"v0": np.ones(2)}, ValueError, "v0"),
        ({"w": np.ones(3)}, ValueError, "w"),
        ({"w": np.ones((2, 0))}, ValueError, "w"),
        ({"w": 1.0}, ValueError, "w"),
        ({"w": np.ones((2, 1, 1))}, ValueError, "w"),
        ({"items": np.full((3, 3), np.nan)}, ValueError, "items"),
        ({"theta": np.array([[1.0, np.inf, 0.0]] * 2)}, ValueError, "theta"),
        ({"items": [["a", "b", "c"]] * 3}, TypeError, "items"),
        ({"items": np.ones(3)}, ValueError, "items"),
        ({"theta": np.ones((0, 3)), "w": np.ones(0)}, ValueError, "L"),
        ({"items": np.ones((0, 3))}, ValueError, "K"),
        ({"link": "identity", "noise": noise.Bernoulli()}, ValueError, "Bernoulli"),
        ({"link": "identity", "noise": noise.Poisson()}, ValueError, "Poisson"),
        ({"link": "softmax"}, ValueError, "'identity', 'logistic', 'probit', 'exp'"),
        ({"link": ["identity"] * 3}, ValueError, "link"),
        ({"noise": "gaussian"}, TypeError, "noise"),
    ],
)
def test_bad_input_raises_naming_the_argument(kwargs, err, match):
    args = {"items": V, "theta": TH, "w": W} | kwargs
    with pytest.raises(err, match=match):
        RankingEnv(**args)


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        ({"K": 0}, ValueError, "^K: expected an integer >= 1"),
        ({"L": 1.5}, TypeError, "^L: expected an integer, got float"),  # wrong kind
        ({"L": True}, TypeError, "^L: expected an integer, got bool"),
        ({"d": 1}, ValueError, "d"),
        ({"w_max": -1.0}, ValueError, "w_max"),
        ({"w_max": float("nan")}, ValueError, "w_max"),
        ({"seed": -1}, ValueError, "^seed: expected an integer >= 0, got -1$"),
    ],
)
def test_paper_rejects_bad_sizes(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        RankingEnv.paper(**kwargs)


@pytest.mark.parametrize("seed, err", [(-1, ValueError), (1.5, TypeError),
                                       (True, TypeError), ("0", TypeError)])
@pytest.mark.parametrize("generator", ["paper", "semi_synthetic"])
def test_generators_name_a_bad_seed(generator, seed, err):
    if generator == "paper":
        call = lambda: RankingEnv.paper(seed=seed)  # noqa: E731
    else:
        items = np.random.default_rng(0).normal(size=(6, 3))
        call = lambda: RankingEnv.semi_synthetic(items, seed=seed)  # noqa: E731
    with pytest.raises(err, match="^seed: expected an integer >= 0"):
        call()


@pytest.mark.parametrize(
    "lists,err,match",
    [
        (np.array([0, 1, 2]), ValueError, r"lists: expected shape \(L,\) or \(n, L\)"),
        (np.array([0, 3]), ValueError, r"lists: item indices must lie in \[0, K-1\]"),
        (np.array([-1, 0]), ValueError, r"lists: item indices must lie in \[0, K-1\]"),
        (np.array([0.0, 1.0]), TypeError, "lists: expected integer item indices"),
    ],
)
def test_bad_lists_raise(lists, err, match):
    env = RankingEnv(V, TH, W)
    with pytest.raises(err, match=match):
        env.regret(lists)


def test_distinct_needs_enough_items():
    env = RankingEnv(np.eye(2), np.ones((3, 2)), np.ones(3))
    with pytest.raises(ValueError, match="K >= L"):
        env.best(distinct=True)


def test_per_position_links():
    rng = np.random.default_rng(0)
    V, Th, w = rng.normal(size=(4, 3)), rng.normal(size=(2, 3)), rng.normal(size=2)
    env = RankingEnv(V, Th, w, link=("logistic", "probit"))
    a = np.array([1, 2])
    want = [
        LINK_FNS["logistic"](Th[0] @ V[1]),
        LINK_FNS["probit"](Th[1] @ (V[2] + w[1] * V[1])),
    ]
    np.testing.assert_allclose(env.position_means(a), want)
    assert env.link == ("logistic", "probit")
    assert jnp.isfinite(env.best()[1])
