"""The paper's explicit L-layered graph (Section "The Graph-Based Approach").

A teaching and test tool: it builds the graph of the paper with networkx so that its
longest path can be compared with the DP of :mod:`bayesrank.decoding.dense`. Never use it on the
hot path: it has K + (L-1) K^2 nodes and K^2 + (L-2) K^3 edges.

Nodes are ``(l, i, j)``: super-arm (i, j) at position l (1-based); layer 1 holds
``(1, "v0", j)``. The edge ``(l, i, j) -> (l+1, j, q)`` has Eq. 2's weight

    c_e = 1/2 (a s_l(i, j) + b s_{l+1}(j, q)),  a = 2 if l = 1, b = 2 if l+1 = L, else 1,

so every interior score is counted twice with weight 1/2 and the path weight equals the
sum of the per-position scores (for L = 2 both factors are 2). A ``"source"`` node
feeds layer 1 and layer L feeds a ``"sink"``, both with weight 0 (for L = 1 the source
edge carries s_1(j), the only score). Nodes whose score is ``-inf`` are left out, and so
are nodes that then lie on no source-to-sink path.

networkx's ``dag_longest_path`` stops a path where its running weight turns negative,
so each edge also stores ``"shifted"`` = weight - (smallest weight) + 1 >= 1. Every
source-to-sink path has L+1 edges, so the shift changes every path weight by the same
amount: ``nx.dag_longest_path(G, weight="shifted")`` is a longest path under
``"weight"``.

Example:
    >>> import numpy as np
    >>> from bayesrank.decoding import graph
    >>> first = np.array([0.0, 1.0]); pairs = np.array([[[0.0, 2.0], [3.0, 0.0]]])
    >>> items, value = graph.longest_path(first, pairs)
    >>> items.tolist(), value
    ([1, 0], 4.0)
"""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np

from bayesrank.decoding.checks import refuse_bad_inputs as _check_inputs

__all__ = [
    "SHIFTED",
    "SINK",
    "SOURCE",
    "env_graph",
    "layered_graph",
    "longest_path",
    "path_items",
    "path_weight",
]

SOURCE = "source"
SINK = "sink"
SHIFTED = "shifted"


def layered_graph(first, pairs, *, mask=None) -> nx.DiGraph:
    """Build the L-layered graph of Eq. 2 from pairwise scores.

    Args:
        first: (K,) score s_1(j) of item j at position 1 (including the v0 term).
        pairs: (L-1, K, K); ``pairs[l-2, i, j]`` = s_l(i, j).
        mask: (K,) bool, True where the item may be shown (masked items get no node).

    Returns:
        A ``networkx.DiGraph`` with edge attributes ``"weight"`` (Eq. 2) and
        ``"shifted"`` (for ``nx.dag_longest_path``), and ``G.graph["L"]``,
        ``G.graph["K"]``.
    """
    _check_inputs(first, pairs, mask, False)
    s1 = np.asarray(first, dtype=np.float64).copy()
    sp = np.asarray(pairs, dtype=np.float64).copy()
    K, L = s1.shape[0], sp.shape[0] + 1
    if mask is not None:
        m = np.asarray(mask, bool)
        s1[~m] = -np.inf
        sp[:, :, ~m] = -np.inf

    def score(l, i, j):  # s_l(i, j), l 1-based
        return s1[j] if l == 1 else sp[l - 2, i, j]

    def node(l, i, j):
        return (1, "v0", j) if l == 1 else (l, i, j)

    # Edges as (u, v, weight) lists per layer, the weights computed row by row.
    edges: list[tuple] = []
    alive = {1: [(None, j) for j in range(K) if np.isfinite(s1[j])]}
    for l in range(2, L + 1):
        ok = np.isfinite(sp[l - 2])
        alive[l] = [(int(i), int(j)) for i, j in zip(*np.nonzero(ok))]
    for _, j in alive[1]:
        edges.append((SOURCE, node(1, None, j), float(s1[j]) if L == 1 else 0.0))
    for l in range(1, L):
        a = 2.0 if l == 1 else 1.0
        b = 2.0 if l + 1 == L else 1.0
        nxt = sp[l - 1]
        for i, j in alive[l]:
            qs = np.flatnonzero(np.isfinite(nxt[j]))
            c = 0.5 * (a * score(l, i, j) + b * nxt[j, qs])
            u = node(l, i, j)
            edges.extend((u, (l + 1, j, q), w) for q, w in zip(qs.tolist(), c.tolist()))
    edges.extend((node(L, i, j), SINK, 0.0) for i, j in alive[L])
    w_min = min(e[2] for e in edges) if edges else 0.0
    G = nx.DiGraph(L=L, K=K)
    G.add_edges_from(
        (u, v, {"weight": c, SHIFTED: c - w_min + 1.0}) for u, v, c in edges
    )
    if SINK in G and not (np.isfinite(s1).all() and np.isfinite(sp).all()):
        # -inf scores can leave dead ends; keep only nodes on a source-to-sink path.
        keep = (nx.ancestors(G, SINK) & nx.descendants(G, SOURCE)) | {SOURCE, SINK}
        G = G.subgraph(keep).copy()
    return G


def env_graph(env) -> nx.DiGraph:
    """The L-layered graph of a :class:`bayesrank.RankingEnv`'s true scores (S = 2)."""
    if env.S != 2:
        raise ValueError(
            f"env: the L-layered graph needs pairwise dependence (S = 2), got S={env.S}"
        )
    first, pairs = env.score_tables()
    return layered_graph(np.asarray(first), np.asarray(pairs))


def path_items(path) -> np.ndarray:
    """The item list (L,) int array read off a path (source and sink are ignored)."""
    nodes = [n for n in path if n not in (SOURCE, SINK)]
    if not nodes:
        raise ValueError("path: expected at least one layer node, got none")
    return np.asarray([n[2] for n in nodes], dtype=np.int32)


def path_weight(G: nx.DiGraph, path, weight: str = "weight") -> float:
    """Sum of the edge attribute ``weight`` along ``path``."""
    return float(sum(G.edges[u, v][weight] for u, v in itertools.pairwise(path)))


def longest_path(first, pairs, *, mask=None) -> tuple[np.ndarray, float]:
    """Best list by networkx's DAG longest path on the explicit graph.

    Returns:
        items: (L,) int32; value: the path's Eq. 2 weight (= the list's total score).
    """
    G = layered_graph(first, pairs, mask=mask)
    if SINK not in G or SOURCE not in G:
        raise ValueError("first/pairs: every list has score -inf; nothing to rank")
    path = nx.dag_longest_path(G, weight=SHIFTED)
    if path[0] != SOURCE or path[-1] != SINK:
        raise ValueError("first/pairs: no list with a finite score reaches layer L")
    return path_items(path), path_weight(G, path)
