"""TopRank (Lattimore et al. 2018), built like the other click-model baselines.

* it chooses the same lists as an independent plain-NumPy loop over the paper's
  Algorithm 1, fed the same clicks; the in-block random order is drawn by the
  reference with the same key the same way (``jax.random.permutation`` of
  ``fold_in(key(seed), t)``), and S, N and G are compared with the loop's;
* it learns on a PBM environment through ``br.simulate``;
* save/load resumes identically, and a tampered file is refused;
* bad inputs raise ValueError/TypeError naming the argument and leave the state as
  it was.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

import bayesrank as br
from bayesrank.simulation import PBMEnv

K, L, T_REF = 10, 3, 80


# ------------------------------------------------------------------ reference
class RefTopRank:
    """Lattimore et al. (2018), Algorithm 1, for K items and the top L positions:
    G a set of pairs (i, j), "j is better than i"; c = 4 sqrt(2/pi) / erf(sqrt(2)),
    delta = 1 / horizon; an item not shown has click 0, a NaN click skips its pairs.
    """

    def __init__(self, K, L, horizon=10_000, seed=0):
        self.K, self.L = K, L
        self.S, self.N = np.zeros((K, K)), np.zeros((K, K))
        self.G: set[tuple[int, int]] = set()
        self.c = 4 * math.sqrt(2 / math.pi) / math.erf(math.sqrt(2))
        self.delta = 1.0 / horizon
        self.key, self.t = jax.random.key(seed), 0

    def partition(self):
        rest, blocks = set(range(self.K)), []
        while rest:
            P = {i for i in rest if not any((i, j) in self.G for j in rest)}
            blocks.append(P)
            rest -= P
        return blocks

    def select(self):
        # the same draw as the policy: a uniform permutation from round t's key
        perm = np.asarray(jax.random.permutation(
            jax.random.fold_in(self.key, self.t), self.K))
        rank = np.empty(self.K, int)
        rank[perm] = np.arange(self.K)
        self.t += 1
        ranking = [i for P in self.partition() for i in sorted(P, key=lambda i: rank[i])]
        return np.array(ranking[: self.L])

    def update(self, a, rewards):
        C, seen = np.zeros(self.K), np.ones(self.K, bool)
        for pos, e in enumerate(a):
            if np.isnan(rewards[pos]):
                seen[e] = False
            else:
                C[e] = rewards[pos]
        for P in self.partition():
            for i in P:
                for j in P:
                    if i != j and seen[i] and seen[j]:
                        self.S[i, j] += C[i] - C[j]
                        self.N[i, j] += abs(C[i] - C[j])
        for i in range(self.K):
            for j in range(self.K):
                n = self.N[i, j]
                if n > 0 and self.S[i, j] >= math.sqrt(
                        2 * n * math.log(self.c / self.delta * math.sqrt(n))):
                    self.G.add((j, i))


def _pbm_clicks(attraction, kappa, a, u, v):
    r = (u < kappa * attraction[a]).astype(float)
    r[v < 0.15] = np.nan  # some positions not observed
    return r


KAPPA = np.array([1.0, 0.8, 0.6])
ATTRACTION = np.linspace(0.9, 0.05, K)[np.random.default_rng(0).permutation(K)]


def _play_both(policy, ref, T=T_REF, seed=1):
    rng = np.random.default_rng(seed)
    u, v = rng.random((T, L)), rng.random((T, L))
    for t in range(T):
        a = policy.select()
        a_ref = ref.select()
        assert a.tolist() == list(map(int, a_ref)), f"round {t}: {a} != {a_ref}"
        r = _pbm_clicks(ATTRACTION, KAPPA, a, u[t], v[t])
        policy.update(a, r)
        ref.update(a, r)


@pytest.mark.x64
@pytest.mark.parametrize("horizon", [1, 3])
def test_toprank_chooses_the_reference_lists(horizon):
    policy = br.TopRank(K, L=L, horizon=horizon, seed=5)
    ref = RefTopRank(K, L, horizon=horizon, seed=5)
    _play_both(policy, ref)
    m = policy.state.model
    np.testing.assert_array_equal(np.asarray(m.s), ref.S)
    np.testing.assert_array_equal(np.asarray(m.n), ref.N)
    G = {(int(i), int(j)) for i, j in zip(*np.nonzero(np.asarray(m.better)))}
    assert G == ref.G
    assert len(ref.G) >= 3 and len(ref.partition()) >= 2  # the test saw an order


@pytest.mark.x64
def test_toprank_with_the_default_horizon_matches_the_reference():
    policy, ref = br.TopRank(K, L=L, seed=2), RefTopRank(K, L, seed=2)
    assert policy.horizon == 10_000
    _play_both(policy, ref, seed=3)
    np.testing.assert_array_equal(np.asarray(policy.state.model.s), ref.S)


def test_the_threshold_constant_is_the_papers():
    from bayesrank.policies.click.toprank import TOPRANK_C, toprank_threshold

    assert TOPRANK_C == pytest.approx(4 * math.sqrt(2 / math.pi) / math.erf(math.sqrt(2)))
    assert TOPRANK_C == pytest.approx(3.3437, abs=1e-4)
    n, T = 7.0, 50
    want = math.sqrt(2 * n * math.log(TOPRANK_C * T * math.sqrt(n)))
    assert float(toprank_threshold(n, T)) == pytest.approx(want, rel=1e-6)
    assert float(toprank_threshold(0.0, T)) == math.inf


def test_items_of_one_block_come_in_a_uniformly_random_order():
    policy = br.TopRank(4, L=4, seed=0)  # G empty: one block, every order possible
    rows = policy.select_batch(n=2400)
    first = np.bincount(rows[:, 0], minlength=4) / len(rows)
    assert np.all(np.abs(first - 0.25) < 0.04), first
    assert len({tuple(r) for r in rows.tolist()}) == 24


# ------------------------------------------------------------------ learning
def test_toprank_learns_on_a_pbm_environment():
    env = PBMEnv.synthetic(K=10, L=3, seed=0, p=0.5, delta=0.3)
    T = 1000
    ds = br.simulate(env, {"TopRank": lambda s: br.TopRank(10, L=3, horizon=T, seed=s)},
                     T=T, runs=4, progress=False)
    regret = ds.regret.values[0]  # (run, round)
    assert np.all(np.isfinite(regret)) and regret.min() >= -1e-6
    first, last = regret[:, : T // 4].mean(), regret[:, -T // 4 :].mean()
    assert last < 0.6 * first, (first, last)


# ------------------------------------------------------------------ save / load
def _feedback(t, a):
    rng = np.random.default_rng(100 + t)
    return _pbm_clicks(ATTRACTION, KAPPA, a, rng.random(L), rng.random(L))


def test_save_load_resumes_identically(tmp_path):
    policy = br.TopRank(K, L=L, horizon=2, seed=3)
    for t in range(40):
        a = policy.select()
        policy.update(a, _feedback(t, a))
    assert policy.blocks().max() > 0
    policy.save(tmp_path / "p.npz")
    loaded = br.TopRank.load(tmp_path / "p.npz")
    assert loaded.t == policy.t and loaded.horizon == 2
    for t in range(40, 55):
        a, b = policy.select(), loaded.select()
        assert a.tolist() == b.tolist()
        r = _feedback(t, a)
        policy.update(a, r)
        loaded.update(b, r)
    assert policy.select_batch(n=3).tolist() == loaded.select_batch(n=3).tolist()


def test_a_tampered_file_is_refused(tmp_path):
    policy = br.TopRank(K, L=L)
    a = policy.select()
    policy.update(a, np.array([0.0, 1.0, np.nan]))
    path = tmp_path / "p.npz"
    policy.save(path)
    data = dict(np.load(path))
    data["state_0"] = data["state_0"] + 1
    np.savez(path, **data)
    with pytest.raises(ValueError, match=r"path: .*p\.npz: "):
        br.TopRank.load(path)


def test_inconsistent_statistics_are_refused_even_with_a_recomputed_digest(tmp_path):
    from bayesrank.policies.runtime import persist
    policy = br.TopRank(K, L=L)
    a = policy.select()
    policy.update(a, np.array([0.0, 1.0, np.nan]))
    path = tmp_path / "p.npz"
    policy.save(path)
    data = dict(np.load(path))
    data["state_0"] = data["state_0"] + 2  # an item counted against itself
    data["digest"] = np.frombuffer(persist._digest(data).encode(), np.uint8)
    np.savez(path, **data)
    with pytest.raises(ValueError, match="path: .*against itself"):
        br.TopRank.load(path)


# ------------------------------------------------------------------ bad inputs
@pytest.mark.parametrize(
    ("build", "exc", "arg"),
    [
        (lambda: br.TopRank(0, L=1), ValueError, "K"),
        (lambda: br.TopRank(3, L=4), ValueError, "L"),
        (lambda: br.TopRank(5, L=1.5), (TypeError, ValueError), "L"),
        (lambda: br.TopRank(True, L=1), (TypeError, ValueError), "K"),
        (lambda: br.TopRank(5, L=2, horizon=0), ValueError, "horizon"),
        (lambda: br.TopRank(5, L=2, horizon=10.0), TypeError, "horizon"),
        (lambda: br.TopRank(5, L=2, seed=-1), (TypeError, ValueError), "seed"),
    ],
)
def test_bad_constructor_arguments_are_refused(build, exc, arg):
    with pytest.raises(exc, match=arg):
        build()


BAD_UPDATES = [
    (np.array([0, 1, 10]), np.zeros(3), ValueError, "items"),
    (np.array([0, 1, -1]), np.zeros(3), ValueError, "items"),
    (np.array([0, 1, 1]), np.zeros(3), ValueError, "items"),
    (np.array([0.0, 1.0, 2.0]), np.zeros(3), TypeError, "items"),
    (np.array([0, 1]), np.zeros(2), ValueError, "items"),
    (np.array([0, 1, 2]), np.zeros(2), ValueError, "rewards"),
    (np.array([0, 1, 2]), np.array([0.0, 0.5, 0.0]), ValueError, "rewards"),
    (np.array([0, 1, 2]), np.array([0.0, np.inf, 0.0]), ValueError, "rewards"),
    (np.array([0, 1, 2]), np.array(["a", "b", "c"]), TypeError, "rewards"),
]


def _snapshot(policy):
    leaves = [np.asarray(x).copy() for x in jax.tree_util.tree_leaves(policy.state)]
    return leaves, policy.t, [h.copy() for h in policy.history()]


def _same(a, b):
    (la, ta, ha), (lb, tb, hb) = a, b
    return ta == tb and all(np.array_equal(x, y) for x, y in zip(la, lb)) and all(
        np.array_equal(x, y, equal_nan=True) for x, y in zip(ha, hb))


@pytest.mark.parametrize(("items", "rewards", "exc", "arg"), BAD_UPDATES)
def test_a_refused_update_leaves_the_policy_as_it_was(items, rewards, exc, arg):
    policy = br.TopRank(K, L=L, horizon=1)
    a = policy.select()
    policy.update(a, np.array([1.0, 0.0, np.nan]))
    before = _snapshot(policy)
    with pytest.raises(exc, match=arg):
        policy.update(items, rewards)
    assert _same(before, _snapshot(policy))


def test_bad_requests_are_refused_and_masked_items_never_shown():
    policy = br.TopRank(K, L=L)
    before = _snapshot(policy)
    with pytest.raises(ValueError, match="n"):
        policy.select_batch(n=0)
    with pytest.raises(ValueError, match="mask"):
        policy.select(mask=np.ones(K - 1, bool))
    assert _same(before, _snapshot(policy))
    with pytest.raises(TypeError, match="posterior"):
        policy.posterior(0)
    mask = np.arange(K) % 2 == 0
    for t in range(10):
        a = policy.select(mask=mask)
        assert mask[a].all() and len(set(a.tolist())) == L
        policy.update(a, _feedback(t, a))
