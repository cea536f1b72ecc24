"""SoftmaxLogger: its four propensities against brute-force enumeration of the list
probability table over all K^L lists, its sampled frequencies within binomial
tolerance, contexts through a callable, and bad inputs named in the message."""

import itertools

import numpy as np
import pytest

import bayesrank as br
from bayesrank.ope import SoftmaxLogger, check_log, collect


def _table(probs):
    """Every list (K^L, L) and its probability under independent positions."""
    L, K = probs.shape
    every = np.array(list(itertools.product(range(K), repeat=L)))
    return every, np.prod(probs[np.arange(L), every], axis=1)


def _softmax(s, t):
    z = np.exp(s / t - (s / t).max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def _marginals(every, prob, a):
    L = len(a)
    pos = [prob[every[:, l] == a[l]].sum() for l in range(L)]
    pair = [pos[0]] + [prob[(every[:, l - 1] == a[l - 1]) & (every[:, l] == a[l])].sum()
                       for l in range(1, L)]
    casc = [prob[(every[:, : l + 1] == a[: l + 1]).all(axis=1)].sum() for l in range(L)]
    return pos, pair, casc, prob[(every == a).all(axis=1)].sum()


@pytest.mark.parametrize("K, L, temperature", [(3, 3, 1.0), (4, 2, 0.3), (2, 4, 5.0)])
def test_propensities_equal_enumeration(K, L, temperature):
    rng = np.random.default_rng(K * 10 + L)
    scores = rng.normal(size=(L, K)) * 2
    logger = SoftmaxLogger(scores, temperature)
    every, prob = _table(_softmax(scores, temperature))
    assert np.isclose(prob.sum(), 1.0)
    p = logger.propensities(every, np.zeros((len(every), 2)))
    for i, a in enumerate(every):
        pos, pair, casc, full = _marginals(every, prob, a)
        np.testing.assert_allclose(p["pscore_position"][i], pos, rtol=1e-12)
        np.testing.assert_allclose(p["pscore_pair"][i], pair, rtol=1e-12)
        np.testing.assert_allclose(p["pscore_cascade"][i], casc, rtol=1e-12)
        np.testing.assert_allclose(p["pscore_list"][i], full, rtol=1e-12)


def test_sampled_list_frequencies_match_the_table():
    K, L, n = 3, 3, 300_000
    scores = np.array([[0.0, 1.0, -1.0], [2.0, 0.0, 0.0], [0.5, 0.5, -0.5]])
    logger = SoftmaxLogger(scores, temperature=0.8)
    lists = logger.sample(np.random.default_rng(7), np.zeros((n, 1)))
    assert lists.shape == (n, L) and lists.dtype.kind == "i"
    every, prob = _table(_softmax(scores, 0.8))
    code = lists @ K ** np.arange(L)[::-1]
    freq = np.bincount(code, minlength=K**L) / n
    codes = every @ K ** np.arange(L)[::-1]
    tol = 4.5 * np.sqrt(prob * (1 - prob) / n)
    assert np.all(np.abs(freq[codes] - prob) < tol)


def test_minus_inf_scores_are_never_shown():
    scores = np.array([[0.0, -np.inf, 0.0], [-np.inf, -np.inf, 1.0]])
    lists = SoftmaxLogger(scores).sample(np.random.default_rng(0), np.zeros((5000, 1)))
    assert not (lists[:, 0] == 1).any() and (lists[:, 1] == 2).all()
    assert set(np.unique(lists[:, 0])) == {0, 2}


def test_callable_scores_depend_on_the_context():
    K, L = 3, 2

    def scores(v0):
        return np.outer([1.0, -1.0], v0[:K]) * 3

    logger = SoftmaxLogger(scores, K=K, L=L)
    ctx = np.eye(K)
    v0s = np.repeat(ctx, 40_000, axis=0)
    lists = logger.sample(np.random.default_rng(1), v0s)
    p = logger.propensities(lists, v0s)
    for g in range(K):
        probs = _softmax(scores(ctx[g]), 1.0)
        rows = slice(g * 40_000, (g + 1) * 40_000)
        np.testing.assert_allclose(p["pscore_position"][rows],
                                   probs[np.arange(L), lists[rows]], rtol=1e-12)
        freq = np.bincount(lists[rows, 0], minlength=K) / 40_000
        assert np.all(np.abs(freq - probs[0]) < 4.5 * np.sqrt(probs[0] / 40_000))


def test_collect_with_a_softmax_logger_gives_a_checked_log():
    env = br.RankingEnv.paper(seed=0, K=5, L=3, d=4)
    scores = np.asarray(env.score_tables()[0], float)[None].repeat(3, axis=0)
    log = collect(env, SoftmaxLogger(scores, temperature=0.5), 300, seed=2)
    check_log(log, K=5)
    p = SoftmaxLogger(scores, temperature=0.5).propensities(log.lists.values, log.v0.values)
    np.testing.assert_allclose(log.pscore_cascade.values, p["pscore_cascade"])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"scores": np.zeros((2, 3)), "temperature": 0.0}, "^temperature:"),
        ({"scores": np.zeros((2, 3)), "temperature": -1.0}, "^temperature:"),
        ({"scores": np.zeros((2, 3)), "temperature": np.inf}, "^temperature:"),
        ({"scores": np.zeros((2, 3)), "temperature": np.nan}, "^temperature:"),
        ({"scores": np.zeros(3)}, "^scores:"),
        ({"scores": np.zeros((2, 3, 1))}, "^scores:"),
        ({"scores": np.array([[0.0, np.nan]])}, "^scores:"),
        ({"scores": np.array([[0.0, np.inf]])}, "^scores:"),
        ({"scores": np.array([[-np.inf, -np.inf]])}, "^scores:"),
        ({"scores": np.zeros((2, 3)), "K": 4}, "^K:"),
        ({"scores": np.zeros((2, 3)), "L": 3}, "^L:"),
        ({"scores": lambda v0: np.zeros((2, 3))}, "^K, L:"),
        ({"scores": lambda v0: np.zeros((2, 3)), "K": 0, "L": 2}, "^K:"),
    ],
)
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SoftmaxLogger(**kwargs)


def test_bad_temperature_type_and_scores_dtype():
    with pytest.raises(TypeError, match="^temperature:"):
        SoftmaxLogger(np.zeros((2, 3)), temperature="1")
    with pytest.raises(TypeError, match="^scores:"):
        SoftmaxLogger(np.array([["a", "b"]]))


@pytest.mark.parametrize("bad", [np.zeros((3, 3)), np.full((2, 3), np.nan), np.zeros(6)])
def test_a_callable_returning_bad_scores_is_named(bad):
    logger = SoftmaxLogger(lambda v0: bad, K=3, L=2)
    with pytest.raises(ValueError, match="^scores:"):
        logger.sample(np.random.default_rng(0), np.zeros((4, 2)))
