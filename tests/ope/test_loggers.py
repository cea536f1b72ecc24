"""Loggers: propensities against formulas and brute-force enumeration written here,
and empirical frequencies within binomial tolerance."""

import itertools

import numpy as np
import pytest

import bayesrank as br
from bayesrank.ope import EpsilonGreedyLogger, UniformLogger, check_log, collect


def test_uniform_propensities_equal_the_formulas():
    K, L, n = 7, 4, 5
    lists = np.random.default_rng(1).integers(0, K, (n, L))
    p = UniformLogger(K, L).propensities(lists, np.zeros((n, 2)))
    np.testing.assert_allclose(p["pscore_position"], np.full((n, L), 1 / 7))
    np.testing.assert_allclose(p["pscore_pair"][:, 0], 1 / 7)
    np.testing.assert_allclose(p["pscore_pair"][:, 1:], 1 / 49)
    np.testing.assert_allclose(p["pscore_cascade"], np.tile([1 / 7, 1 / 49, 1 / 343, 1 / 2401], (n, 1)))
    np.testing.assert_allclose(p["pscore_list"], np.full(n, 1 / 2401))


def test_uniform_frequencies_are_within_binomial_tolerance():
    K, L, n = 6, 3, 200_000
    lists = UniformLogger(K, L).sample(np.random.default_rng(2), np.zeros((n, 2)))
    assert lists.shape == (n, L) and lists.min() >= 0 and lists.max() < K
    for freq, p in [
        (np.mean(lists[:, 1] == 4), 1 / K),
        (np.mean((lists[:, 1] == 4) & (lists[:, 2] == 4)), 1 / K**2),  # repeats allowed
        (np.mean((lists == [0, 5, 2]).all(axis=1)), 1 / K**3),
    ]:
        assert abs(freq - p) < 4.5 * np.sqrt(p * (1 - p) / n)


def _enumerated_marginals(a, base, K, eps):
    """Probabilities of a's events by summing the mixture's law over all K^L lists."""
    L = len(a)
    every = np.array(list(itertools.product(range(K), repeat=L)))
    prob = eps / K**L + (1 - eps) * (every == base).all(axis=1)
    assert np.isclose(prob.sum(), 1.0)
    pos = [prob[every[:, l] == a[l]].sum() for l in range(L)]
    pair = [pos[0]] + [prob[(every[:, l - 1] == a[l - 1]) & (every[:, l] == a[l])].sum()
                       for l in range(1, L)]
    casc = [prob[(every[:, : l + 1] == a[: l + 1]).all(axis=1)].sum() for l in range(L)]
    return pos, pair, casc, prob[(every == a).all(axis=1)].sum()


def test_epsilon_greedy_propensities_equal_enumeration():
    K, L, eps = 4, 3, 0.3
    base = np.array([2, 0, 3])
    logger = EpsilonGreedyLogger(lambda v0: base, K, L, eps)
    lists = np.array([[2, 0, 3], [2, 0, 1], [2, 1, 3], [1, 0, 3], [0, 1, 2], [2, 2, 2]])
    p = logger.propensities(lists, np.zeros((len(lists), 2)))
    for i, a in enumerate(lists):
        pos, pair, casc, full = _enumerated_marginals(a, base, K, eps)
        np.testing.assert_allclose(p["pscore_position"][i], pos)
        np.testing.assert_allclose(p["pscore_pair"][i], pair)
        np.testing.assert_allclose(p["pscore_cascade"][i], casc)
        np.testing.assert_allclose(p["pscore_list"][i], full)


def test_epsilon_greedy_shows_the_base_list_as_often_as_its_propensity():
    K, L, eps, n = 5, 2, 0.4, 100_000
    logger = EpsilonGreedyLogger(lambda v0: np.array([1, 4]), K, L, eps)
    lists = logger.sample(np.random.default_rng(3), np.zeros((n, 2)))
    p = 1 - eps + eps / K**2
    freq = np.mean((lists == [1, 4]).all(axis=1))
    assert abs(freq - p) < 4.5 * np.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("bad", [-0.1, 1.5])
def test_epsilon_must_be_a_probability(bad):
    with pytest.raises(ValueError, match="^epsilon:"):
        EpsilonGreedyLogger(lambda v0: np.zeros(2, int), 3, 2, bad)


def test_collect_makes_a_checked_log_with_exact_propensities():
    env = br.RankingEnv.paper(seed=0, K=8, L=3, d=5, w_max=5.0)
    logger = EpsilonGreedyLogger(lambda v0: np.array([1, 2, 3]), 8, 3, 0.5)
    log = collect(env, logger, 500, seed=4)
    check_log(log, K=8)
    assert dict(log.sizes) == {"round": 500, "position": 3, "dim": 5, "item": 8}
    np.testing.assert_array_equal(log["items"].values, np.asarray(env.items, float))
    np.testing.assert_allclose(log["v0"].values, np.tile(np.asarray(env.v0), (500, 1)))
    shown_base = (log["lists"].values == [1, 2, 3]).all(axis=1)
    np.testing.assert_allclose(log["pscore_list"].values,
                               np.where(shown_base, 0.5 + 0.5 / 512, 0.5 / 512))
    assert np.isfinite(log["rewards"].values).all()
    with pytest.raises(ValueError, match="^logger:"):
        collect(env, UniformLogger(9, 3), 10)
