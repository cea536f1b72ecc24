"""The explicit L-layered graph of Eq. 2 against the DP and the environment."""

import itertools

import networkx as nx
import numpy as np
import pytest

from bayesrank.decoding import graph
from bayesrank.decoding.api import best_list
from bayesrank.simulation.env import RankingEnv


def path_of(items):
    """The graph path (source, layer nodes, sink) of an item list."""
    nodes = [(1, "v0", int(items[0]))]
    nodes += [(l + 1, int(items[l - 1]), int(items[l])) for l in range(1, len(items))]
    return [graph.SOURCE, *nodes, graph.SINK]


@pytest.mark.parametrize(
    "seed,K,L", [(0, 3, 1), (1, 3, 2), (2, 4, 3), (3, 3, 4), (4, 2, 5)]
)
def test_graph_shape_matches_the_paper(seed, K, L):
    rng = np.random.default_rng(seed)
    G = graph.layered_graph(rng.normal(size=K), rng.normal(size=(L - 1, K, K)))
    assert nx.is_directed_acyclic_graph(G)
    layer_nodes = [n for n in G if n not in (graph.SOURCE, graph.SINK)]
    assert len(layer_nodes) == K + (L - 1) * K**2
    # K^2 edges from layer 1, K^3 between later layers, K source and K^2 (or K) sink edges.
    n_sink = K if L == 1 else K**2
    assert (
        G.number_of_edges()
        == K + (K**2 if L > 1 else 0) + (L - 2 if L > 1 else 0) * K**3 + n_sink
    )


@pytest.mark.parametrize("integer", [False, True])
@pytest.mark.parametrize(
    "seed,K,L",
    [(s, K, L) for s, (K, L) in enumerate(itertools.product([1, 2, 4], [1, 2, 3, 4]))],
)
def test_networkx_longest_path_equals_dp(seed, K, L, integer):
    rng = np.random.default_rng(seed)
    first, pairs = rng.normal(size=K) - 3.0, rng.normal(size=(L - 1, K, K)) - 3.0
    if integer:
        first, pairs = np.round(first), np.round(pairs)
    items, value = graph.longest_path(first, pairs)
    _, dp_value = best_list(first, pairs)
    assert items.shape == (L,)
    assert value == pytest.approx(float(dp_value), abs=1e-9)
    lst = first[items[0]] + sum(
        pairs[l - 1, items[l - 1], items[l]] for l in range(1, L)
    )
    assert lst == pytest.approx(value, abs=1e-9)


def test_networkx_longest_path_with_mask_equals_dp():
    rng = np.random.default_rng(5)
    K, L = 5, 3
    first, pairs = rng.normal(size=K), rng.normal(size=(L - 1, K, K))
    mask = np.array([False, True, True, False, True])
    first[~mask] += 50.0  # tempting, but masked
    items, value = graph.longest_path(first, pairs, mask=mask)
    _, dp_value = best_list(first, pairs, mask=mask)
    assert mask[items].all()
    assert value == pytest.approx(float(dp_value))


def test_dead_ends_from_minus_inf_are_pruned():
    # A huge prefix that cannot be completed must not win.
    first = np.array([100.0, 0.0])
    pairs = np.zeros((2, 2, 2))
    pairs[1, :, :] = -np.inf
    pairs[1, 1, 1] = 1.0  # only lists ending (.., 1, 1) are finite
    pairs[0, 0, 1] = -np.inf  # and item 0 cannot be followed by 1
    items, value = graph.longest_path(first, pairs)
    _, dp_value = best_list(first, pairs)
    assert value == pytest.approx(float(dp_value)) == 1.0
    assert items.tolist() == [1, 1, 1]


@pytest.mark.parametrize("link", ["identity", "logistic", "exp"])
@pytest.mark.parametrize("L", [1, 2, 3, 4])
def test_eq2_path_weight_equals_expected_reward(link, L):
    env = RankingEnv.paper(seed=L, K=4, L=L, d=5, w_max=2.0, link=link)
    G = graph.env_graph(env)
    lists = np.array(list(itertools.product(range(env.K), repeat=L)))
    rewards = np.asarray(env.expected_reward(lists))  # (K^L,)
    weights = np.array([graph.path_weight(G, path_of(a)) for a in lists])
    np.testing.assert_allclose(weights, rewards, atol=1e-9)
    path = nx.dag_longest_path(G, weight=graph.SHIFTED)
    items = graph.path_items(path)
    assert float(env.regret(items)) == pytest.approx(0.0, abs=1e-9)
    assert graph.path_weight(G, path) == pytest.approx(float(env.best()[1]))


def test_eq2_halves_interior_scores_and_doubles_the_ends():
    # With constant scores per layer (L = 4), the edge weights show the factors.
    K = 2
    first = np.full(K, 1.0)
    pairs = np.stack([np.full((K, K), c) for c in (10.0, 100.0, 1000.0)])
    G = graph.layered_graph(first, pairs)
    assert G.edges[(1, "v0", 0), (2, 0, 1)]["weight"] == 0.5 * (2 * 1.0 + 10.0)
    assert G.edges[(2, 0, 1), (3, 1, 0)]["weight"] == 0.5 * (10.0 + 100.0)
    assert G.edges[(3, 1, 0), (4, 0, 0)]["weight"] == 0.5 * (100.0 + 2 * 1000.0)


def test_env_graph_rejects_windows():
    env = RankingEnv(np.eye(3), np.ones((3, 3)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="env"):
        graph.env_graph(env)


def test_path_items_rejects_empty_path():
    with pytest.raises(ValueError, match="path"):
        graph.path_items([graph.SOURCE, graph.SINK])
