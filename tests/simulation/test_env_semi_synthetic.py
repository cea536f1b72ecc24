"""RankingEnv.semi_synthetic: real items, click parameters matched to click rates."""

import itertools

import jax
import numpy as np
import pytest

import bayesrank as br

V_MEN = br.datasets.obd_items("men", d=6)  # 34 items: all 34^3 lists enumerable


def _all_lists(K, L):
    return np.array(list(itertools.product(range(K), repeat=L)), dtype=np.int32)


@pytest.mark.parametrize("link", ["logistic", "probit"])
@pytest.mark.parametrize("w_max, seed", [(0.0, 0), (1.0, 1), (5.0, 2), (10.0, 3)])
def test_random_list_click_rates_equal_the_log_targets_exactly(link, w_max, seed):
    env = br.RankingEnv.semi_synthetic(
        V_MEN, w_max=w_max, link=link, campaign="men", seed=seed
    )
    # exact expectation over a uniformly random list: the mean over all K^L lists
    rates = np.asarray(env.position_means(_all_lists(env.K, env.L))).mean(axis=0)
    target = br.datasets.obd_position_clicks("men").rates
    np.testing.assert_allclose(rates, target, rtol=1e-8)


def test_default_targets_are_the_all_campaign_log_rates():
    env = br.RankingEnv.semi_synthetic(br.datasets.obd_items("all", d=4), w_max=2.0)
    lists = _all_lists(env.K, env.L)
    rates = np.asarray(env.position_means(lists)).mean(axis=0)
    np.testing.assert_allclose(rates, [13 / 3322, 14 / 3412, 11 / 3266], rtol=1e-8)


def test_bernoulli_clicks_of_random_lists_match_the_targets_monte_carlo():
    env = br.RankingEnv.semi_synthetic(V_MEN, w_max=3.0, campaign="men", seed=5)
    n = 400_000
    k1, k2 = jax.random.split(jax.random.key(0))
    lists = jax.random.randint(k1, (n, env.L), 0, env.K)
    clicks = np.asarray(env.sample(k2, lists))
    assert set(np.unique(clicks)) <= {0.0, 1.0}
    target = br.datasets.obd_position_clicks("men").rates
    se = np.sqrt(target * (1 - target) / n)
    assert np.all(np.abs(clicks.mean(axis=0) - target) < 4 * se)


@pytest.mark.parametrize("base_rate", [0.05, [0.2, 0.1, 0.05, 0.01]])
def test_base_rate_sets_the_targets(base_rate):
    env = br.RankingEnv.semi_synthetic(V_MEN, L=4, w_max=2.0, base_rate=base_rate)
    rates = np.asarray(env.position_means(_all_lists(env.K, 4))).mean(axis=0)
    np.testing.assert_allclose(rates, np.broadcast_to(base_rate, (4,)), rtol=1e-8)


@pytest.mark.parametrize("w_max", [0.0, 0.3, 2.0, 10.0])
def test_structure_w_spread_intercept(w_max):
    spread = 0.7
    env = br.RankingEnv.semi_synthetic(V_MEN, w_max=w_max, spread=spread, seed=4)
    items, theta, w = map(np.asarray, (env.items, env.theta, env.w))
    np.testing.assert_array_equal(items[:, :-1], V_MEN)
    np.testing.assert_array_equal(items[:, -1], 1.0)
    np.testing.assert_array_equal(np.asarray(env.v0), 0.0)
    assert isinstance(env.noise, br.noise.Bernoulli)
    assert env.link == "logistic"
    assert np.all(np.abs(w) <= w_max)
    assert np.all(np.abs(1 + w[1:]) >= br.RankingEnv.SEMI_SYNTHETIC_MIN_OFFSET)
    scores = V_MEN @ theta[:, :-1].T  # (K, L) item scores s_l(j)
    np.testing.assert_allclose(scores.std(axis=0), spread, rtol=1e-10)


def test_same_seed_same_environment_other_seed_differs():
    a = br.RankingEnv.semi_synthetic(V_MEN, w_max=2.0, seed=7)
    b = br.RankingEnv.semi_synthetic(V_MEN, w_max=2.0, seed=7)
    c = br.RankingEnv.semi_synthetic(V_MEN, w_max=2.0, seed=8)
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.w, b.w)
    assert not np.allclose(a.theta, c.theta)


@pytest.mark.parametrize(
    "kwargs, argname",
    [
        ({"link": "identity"}, "link"),
        ({"link": "exp"}, "link"),
        ({"w_max": -1.0}, "w_max"),
        ({"w_max": float("nan")}, "w_max"),
        ({"spread": 0.0}, "spread"),
        ({"spread": "big"}, "spread"),
        ({"base_rate": 1.5}, "base_rate"),
        ({"base_rate": 0.0}, "base_rate"),
        ({"base_rate": [0.1, 0.2]}, "base_rate"),
        ({"L": 4}, "L"),
        ({"L": 0, "base_rate": 0.1}, "L"),
        ({"campaign": "kids"}, "campaign"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, argname):
    with pytest.raises(ValueError, match=rf"^{argname}:"):
        br.RankingEnv.semi_synthetic(V_MEN, **kwargs)


def test_bad_items():
    with pytest.raises(ValueError, match="^items:"):
        br.RankingEnv.semi_synthetic(np.ones(5))
    with pytest.raises(ValueError, match="^items:"):
        br.RankingEnv.semi_synthetic(np.ones((5, 3)))  # identical items


def test_w_near_minus_one_is_redrawn_for_positions_after_the_first():
    # with w_max = 2 a first draw lands in (-1.5, -0.5) a quarter of the time
    ws = np.array(
        [
            np.asarray(br.RankingEnv.semi_synthetic(V_MEN, w_max=2.0, seed=s).w)
            for s in range(40)
        ]
    )
    assert np.all(np.abs(1 + ws[:, 1:]) >= br.RankingEnv.SEMI_SYNTHETIC_MIN_OFFSET)
    assert np.all(np.abs(ws) <= 2.0)
    assert np.any(np.abs(1 + ws[:, 0]) < 0.5)  # w_1 (inert) is not redrawn
