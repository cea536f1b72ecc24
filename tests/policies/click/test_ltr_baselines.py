"""The online-LTR click-model baselines: CascadeKLUCB, CascadeLinTS, CascadeLinUCB and
PBMUCB.

* each chooses the same lists as an independent plain-NumPy loop over the paper's
  pseudo-code, fed the same clicks (pre-drawn uniform numbers; for CascadeLinTS also
  the same standard-normal draws, and its M and B compared with the loop's);
* each learns on its own environment through ``br.simulate``;
* save/load resumes identically, and a tampered file is refused;
* bad inputs raise ValueError/TypeError naming the argument and leave the state as
  it was.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from scipy.optimize import brentq

import bayesrank as br
from bayesrank.simulation import CascadeEnv, PBMEnv

K, L, T_REF = 10, 3, 80


# ------------------------------------------------------------------ references
def _kl(p, q):
    out = 0.0
    if p > 0:
        out += p * np.log(p / q)
    if p < 1:
        out += (1 - p) * np.log((1 - p) / (1 - q))
    return out


class RefCascadeKLUCB:
    """Kveton et al. (2015), Algorithm 1 with the KL-UCB index; an item never
    observed has an infinite index (the paper's one initial observation per item,
    made inside the interaction)."""

    def __init__(self, K, L):
        self.L, self.T, self.w = L, np.zeros(K), np.zeros(K)
        self.t = 1

    def index(self, e):
        if self.T[e] == 0:
            return np.inf
        p, n = self.w[e], self.T[e]
        t = self.t
        c = np.log(t) + 3 * np.log(np.log(t)) if t >= 3 else 0.0
        if c <= 0 or p >= 1:
            return p
        f = lambda q: n * _kl(p, q) - c
        hi = 1 - 1e-15
        if f(hi) <= 0:
            return 1.0
        return brentq(f, p, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps)

    def select(self):
        U = np.array([self.index(e) for e in range(len(self.T))])
        return np.argsort(-U, kind="stable")[: self.L]

    def update(self, a, rewards):
        clicks = np.flatnonzero(rewards == 1)
        C = clicks[0] if clicks.size else self.L - 1  # observe positions 0..C
        for k in range(C + 1):
            e = a[k]
            self.w[e] = (self.T[e] * self.w[e] + (k == C and rewards[k] == 1)) / (
                self.T[e] + 1)
            self.T[e] += 1
        self.t += 1


class RefCascadeLin:
    """Zong et al. (2016), Algorithms 1 (TS, ``alpha=None``) and 2 (UCB), sigma=1."""

    def __init__(self, X, L, alpha=None, seed=0):
        d = X.shape[1]
        self.X, self.L, self.alpha = X, L, alpha
        self.M, self.B = np.eye(d), np.zeros(d)
        self.key, self.t = jax.random.key(seed), 0

    def select(self):
        theta_bar = np.linalg.solve(self.M, self.B)
        if self.alpha is None:  # the policy's standard-normal draw of round t
            z = np.asarray(jax.random.normal(jax.random.fold_in(self.key, self.t),
                                             (self.X.shape[1],), np.float64))
            C = np.linalg.cholesky(self.M)  # theta ~ N(theta_bar, M^-1)
            theta = theta_bar + np.linalg.solve(C.T, z)
            U = self.X @ theta
        else:
            Minv = np.linalg.inv(self.M)
            width = np.sqrt(np.einsum("kd,de,ke->k", self.X, Minv, self.X))
            U = np.minimum(self.X @ theta_bar + self.alpha * width, 1.0)
        self.t += 1
        return np.argsort(-U, kind="stable")[: self.L]

    def update(self, a, rewards):
        clicks = np.flatnonzero(rewards == 1)
        C = clicks[0] if clicks.size else self.L - 1
        for k in range(C + 1):
            x = self.X[a[k]]
            self.M += np.outer(x, x)
            self.B += x * (k == C and rewards[k] == 1)


class RefPBMUCB:
    """Lagree et al. (2016), PBM-UCB with delta = log t."""

    def __init__(self, K, L, kappa):
        self.kappa, self.L = np.asarray(kappa), L
        self.S, self.N, self.Nt = np.zeros(K), np.zeros(K), np.zeros(K)
        self.t = 1

    def select(self):
        U = np.full(len(self.S), np.inf)
        seen = self.N > 0
        S, N, Nt = self.S[seen], self.N[seen], self.Nt[seen]
        U[seen] = S / Nt + np.sqrt(N / Nt) * np.sqrt(np.log(self.t) / (2 * Nt))
        best = np.argsort(-U, kind="stable")[: self.L]
        a = np.empty(self.L, int)
        a[np.argsort(-self.kappa, kind="stable")] = best
        return a

    def update(self, a, rewards):
        for pos, e in enumerate(a):
            if np.isnan(rewards[pos]):
                continue
            self.N[e] += 1
            self.Nt[e] += self.kappa[pos]
            self.S[e] += rewards[pos]
        self.t += 1


def _cascade_clicks(attraction, a, u):
    """Cascade feedback of list a from pre-drawn uniforms u (L,)."""
    attractive = u < attraction[a]
    r = np.zeros(len(a))
    if attractive.any():
        c = int(np.argmax(attractive))
        r[c] = 1.0
        r[c + 1 :] = np.nan
    return r


def _pbm_clicks(attraction, kappa, a, u, v):
    r = (u < kappa * attraction[a]).astype(float)
    r[v < 0.15] = np.nan  # some positions not observed
    return r


def _play_both(policy, ref, feedback, T=T_REF):
    for t in range(T):
        a = policy.select()
        a_ref = ref.select()
        assert a.tolist() == list(map(int, a_ref)), f"round {t}: {a} != {a_ref}"
        r = feedback(t, a)
        policy.update(a, r)
        ref.update(a, r)


# ------------------------------------------------------------------ environments
def _attraction(seed=0):
    return np.random.default_rng(seed).uniform(0.02, 0.45, K)


def _vectors(K_=K, d=4, seed=0):
    X = np.random.default_rng(seed).normal(size=(K_, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


KAPPA = np.array([1.0, 0.6, 0.3])


# ------------------------------------------------------------------ references
@pytest.mark.x64
def test_cascade_klucb_chooses_the_reference_lists():
    A = _attraction()
    u = np.random.default_rng(1).random((T_REF, L))
    _play_both(br.CascadeKLUCB(K, L=L), RefCascadeKLUCB(K, L),
               lambda t, a: _cascade_clicks(A, a, u[t]))


@pytest.mark.x64
def test_cascade_lin_ucb_chooses_the_reference_lists():
    X, A = _vectors(), _attraction(2)
    u = np.random.default_rng(3).random((T_REF, L))
    _play_both(br.CascadeLinUCB(X, L=L, alpha=0.7), RefCascadeLin(X, L, alpha=0.7),
               lambda t, a: _cascade_clicks(A, a, u[t]))


@pytest.mark.x64
def test_cascade_lin_ts_chooses_the_reference_lists_with_the_same_normal_draws():
    X, A = _vectors(seed=4), _attraction(5)
    u = np.random.default_rng(6).random((T_REF, L))
    policy, ref = br.CascadeLinTS(X, L=L, seed=7), RefCascadeLin(X, L, seed=7)
    _play_both(policy, ref, lambda t, a: _cascade_clicks(A, a, u[t]))
    m = policy.state.model  # and the statistics the draws come from
    np.testing.assert_allclose(np.asarray(m.prec), ref.M, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(m.chol) @ np.asarray(m.chol).T, ref.M,
                               rtol=1e-10)
    np.testing.assert_allclose(policy.theta_hat(), np.linalg.solve(ref.M, ref.B),
                               rtol=1e-9, atol=1e-12)


@pytest.mark.x64
def test_pbm_ucb_chooses_the_reference_lists():
    A = _attraction(8)
    rng = np.random.default_rng(9)
    u, v = rng.random((T_REF, L)), rng.random((T_REF, L))
    _play_both(br.PBMUCB(K, L=L, examination=KAPPA), RefPBMUCB(K, L, KAPPA),
               lambda t, a: _pbm_clicks(A, KAPPA, a, u[t], v[t]))


def test_the_default_alpha_is_one():
    X = _vectors()
    assert br.CascadeLinUCB(X, L=L).alpha == 1.0


# ------------------------------------------------------------------ learning
def _lin_env():
    X = _vectors(K_=20, d=4, seed=11)
    theta = np.random.default_rng(12).normal(size=4)
    theta = 2.5 * theta / np.linalg.norm(theta)
    return CascadeEnv.from_features(X, theta, L=4), X


def _learning_cases():
    cascade = CascadeEnv.synthetic(K=20, L=4, seed=0)
    lin, X = _lin_env()
    pbm = PBMEnv.synthetic(K=10, L=3, seed=0, p=0.5, delta=0.3)
    return {
        "CascadeKLUCB": (cascade, lambda s: br.CascadeKLUCB(20, L=4)),
        "CascadeLinTS": (lin, lambda s: br.CascadeLinTS(X, L=4, seed=s)),
        "CascadeLinUCB": (lin, lambda s: br.CascadeLinUCB(X, L=4)),
        "PBMUCB": (pbm, lambda s: br.PBMUCB(10, L=3, examination=pbm.examination)),
    }


@pytest.mark.parametrize("name", ["CascadeKLUCB", "CascadeLinTS", "CascadeLinUCB",
                                  "PBMUCB"])
def test_each_learns_on_its_environment(name):
    env, factory = _learning_cases()[name]
    T = 1000
    ds = br.simulate(env, {name: factory}, T=T, runs=4, progress=False)
    regret = ds.regret.values[0]  # (run, round)
    assert np.all(np.isfinite(regret)) and regret.min() >= -1e-6
    first, last = regret[:, : T // 4].mean(), regret[:, -T // 4 :].mean()
    assert last < 0.6 * first, (first, last)


def test_simulate_plays_cascade_klucb_as_in_the_design():
    ds = br.simulate(CascadeEnv.synthetic(K=20, L=4, seed=0),
                     {"CascadeKLUCB": lambda s: br.CascadeKLUCB(20, L=4)},
                     T=500, runs=4, progress=False)
    r = ds.regret.values[0]
    assert r.shape == (4, 500) and r[:, -125:].mean() < r[:, :125].mean()


# ------------------------------------------------------------------ save / load
def _policies():
    X = _vectors()
    return {
        "CascadeKLUCB": lambda: br.CascadeKLUCB(K, L=L),
        "CascadeLinTS": lambda: br.CascadeLinTS(X, L=L, seed=3),
        "CascadeLinUCB": lambda: br.CascadeLinUCB(X, L=L, alpha=0.5),
        "PBMUCB": lambda: br.PBMUCB(K, L=L, examination=KAPPA),
    }


NAMES = list(_policies())


def _feedback(t, a):
    return _cascade_clicks(_attraction(), a, np.random.default_rng(100 + t).random(L))


@pytest.mark.parametrize("name", NAMES)
def test_save_load_resumes_identically(name, tmp_path):
    policy = _policies()[name]()
    for t in range(15):
        a = policy.select()
        policy.update(a, _feedback(t, a))
    policy.save(tmp_path / "p.npz")
    loaded = type(policy).load(tmp_path / "p.npz")
    assert loaded.t == policy.t
    for t in range(15, 25):
        a, b = policy.select(), loaded.select()
        assert a.tolist() == b.tolist()
        r = _feedback(t, a)
        policy.update(a, r)
        loaded.update(b, r)
    assert policy.select_batch(n=3).tolist() == loaded.select_batch(n=3).tolist()


@pytest.mark.parametrize("name", NAMES)
def test_a_tampered_file_is_refused(name, tmp_path):
    policy = _policies()[name]()
    a = policy.select()
    policy.update(a, np.array([0.0, 1.0, np.nan]))
    path = tmp_path / "p.npz"
    policy.save(path)
    data = dict(np.load(path))
    data["state_0"] = data["state_0"] + 1  # an edit the digest sees
    np.savez(path, **data)
    with pytest.raises(ValueError, match=r"path: .*p\.npz: "):  # digest or checks
        type(policy).load(path)


def test_inconsistent_counts_are_refused_even_with_a_recomputed_digest(tmp_path):
    from bayesrank.policies.runtime import persist
    policy = br.CascadeKLUCB(K, L=L)
    policy.update(np.array([0, 1, 2]), np.array([0.0, 1.0, np.nan]))
    path = tmp_path / "p.npz"
    policy.save(path)
    data = dict(np.load(path))
    data["state_1"] = data["state_1"] + 5  # clicks > observations
    data["digest"] = np.frombuffer(persist._digest(data).encode(), np.uint8)
    np.savez(path, **data)
    with pytest.raises(ValueError, match="path: .*more clicks than observations"):
        br.CascadeKLUCB.load(path)


# ------------------------------------------------------------------ bad inputs
@pytest.mark.parametrize(
    ("build", "exc", "arg"),
    [
        (lambda: br.CascadeKLUCB(0, L=1), ValueError, "K"),
        (lambda: br.CascadeKLUCB(3, L=4), ValueError, "L"),
        (lambda: br.CascadeKLUCB(5, L=1.5), (TypeError, ValueError), "L"),
        (lambda: br.CascadeKLUCB(True, L=1), (TypeError, ValueError), "K"),
        (lambda: br.CascadeLinTS(None, L=2), ValueError, "items"),
        (lambda: br.CascadeLinTS(np.array([[np.nan, 1.0], [0, 1]]), L=1), ValueError,
         "items"),
        (lambda: br.CascadeLinTS(np.eye(3), L=4), ValueError, "L"),
        (lambda: br.CascadeLinTS(np.eye(3), L=2, seed=-1), (TypeError, ValueError),
         "seed"),
        (lambda: br.CascadeLinUCB(np.eye(3), L=2, alpha=-1.0), ValueError, "alpha"),
        (lambda: br.CascadeLinUCB(np.eye(3), L=2, alpha=0.0), ValueError, "alpha"),
        (lambda: br.CascadeLinUCB(np.array(["a"]), L=1), TypeError, "items"),
        (lambda: br.PBMUCB(5, L=3, examination=[1.0, 0.5]), ValueError, "examination"),
        (lambda: br.PBMUCB(5, L=2, examination=[1.0, 0.0]), ValueError, "examination"),
        (lambda: br.PBMUCB(5, L=2, examination=[1.0, 1.5]), ValueError, "examination"),
        (lambda: br.PBMUCB(5, L=2, examination=[1.0, np.nan]), ValueError,
         "examination"),
        (lambda: br.PBMUCB(5, L=2, examination=["a", "b"]), TypeError, "examination"),
        (lambda: br.PBMUCB(5, L=2, examination=None), ValueError, "examination"),
    ],
)
def test_bad_constructor_arguments_are_refused(build, exc, arg):
    with pytest.raises(exc, match=arg):
        build()


BAD_UPDATES = [
    (np.array([0, 1, 10]), np.zeros(3), ValueError, "items"),  # out of range
    (np.array([0, 1, -1]), np.zeros(3), ValueError, "items"),
    (np.array([0, 1, 1]), np.zeros(3), ValueError, "items"),  # a repeated item
    (np.array([0.0, 1.0, 2.0]), np.zeros(3), TypeError, "items"),  # not ints
    (np.array([0, 1]), np.zeros(2), ValueError, "items"),  # wrong L
    (np.array([0, 1, 2]), np.zeros(2), ValueError, "rewards"),
    (np.array([0, 1, 2]), np.array([0.0, 0.5, 0.0]), ValueError, "rewards"),
    (np.array([0, 1, 2]), np.array([0.0, 2.0, 0.0]), ValueError, "rewards"),
    (np.array([0, 1, 2]), np.array([0.0, np.inf, 0.0]), ValueError, "rewards"),
    (np.array([0, 1, 2]), np.array(["a", "b", "c"]), TypeError, "rewards"),
    (np.array([[0, 1, 2], [3, 4, 5]]), np.array([[0.0, 1, 0], [0, 0.5, 0]]),
     ValueError, "rewards"),
    (np.array([[0, 1, 2], [3, 3, 5]]), np.zeros((2, 3)), ValueError, "items"),
]


def _snapshot(policy):
    leaves = [np.asarray(x).copy() for x in jax.tree_util.tree_leaves(policy.state)]
    return leaves, policy.t, [h.copy() for h in policy.history()]


def _same(a, b):
    (la, ta, ha), (lb, tb, hb) = a, b
    return ta == tb and all(np.array_equal(x, y) for x, y in zip(la, lb)) and all(
        np.array_equal(x, y, equal_nan=True) for x, y in zip(ha, hb))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("items", "rewards", "exc", "arg"), BAD_UPDATES)
def test_a_refused_update_leaves_the_policy_as_it_was(name, items, rewards, exc, arg):
    policy = _policies()[name]()
    a = policy.select()
    policy.update(a, np.array([0.0, 1.0, np.nan]))
    before = _snapshot(policy)
    with pytest.raises(exc, match=arg):
        policy.update(items, rewards)
    assert _same(before, _snapshot(policy))
    assert policy.select().tolist() == policy.select().tolist() or name == "CascadeLinTS"


@pytest.mark.parametrize("name", NAMES)
def test_bad_requests_are_refused(name):
    policy = _policies()[name]()
    before = _snapshot(policy)
    with pytest.raises(ValueError, match="n"):
        policy.select_batch(n=0)
    with pytest.raises(ValueError, match="mask"):
        policy.select(mask=np.ones(K - 1, bool))
    with pytest.raises(ValueError, match="mask"):  # fewer than L available items
        policy.select(mask=np.arange(K) < L - 1)
    assert _same(before, _snapshot(policy))
    with pytest.raises(TypeError, match="posterior"):
        policy.posterior(0)


@pytest.mark.parametrize("name", NAMES)
def test_masked_items_are_never_shown_and_lists_are_distinct(name):
    policy = _policies()[name]()
    mask = np.arange(K) % 2 == 0
    for t in range(10):
        a = policy.select(mask=mask)
        assert mask[a].all() and len(set(a.tolist())) == L
        policy.update(a, _feedback(t, a))
    rows = policy.select_batch(n=4)
    assert rows.shape == (4, L) and all(len(set(r)) == L for r in rows.tolist())


def test_cascade_positions_after_the_first_click_are_ignored():
    policy = br.CascadeKLUCB(K, L=L)
    policy.update(np.array([0, 1, 2]), np.array([0.0, 1.0, 0.0]))  # 2 not examined
    m = policy.state.model
    assert m.n.tolist()[:3] == [1, 1, 0] and m.clicks.tolist()[:3] == [0, 1, 0]


# ------------------------------------------ feedback the click model cannot produce
CASCADES = ["CascadeKLUCB", "CascadeLinTS", "CascadeLinUCB"]
#: lists a cascade (examine top-down, stop at the first click) cannot produce, with
#: the part of the message that says why
NOT_A_CASCADE = [
    ([0.0, 1.0, 1.0], r"list 0 has a second click at position 2: \[0.0, 1.0, 1.0\]"),
    ([1.0, 0.0, 1.0], "list 0 has a second click at position 2"),
    ([1.0, 1.0, np.nan], "list 0 has a second click at position 1"),
    ([0.0, np.nan, 0.0], "list 0 has an observed reward at position 2 below an "
                         r"unobserved \(NaN\) one"),
    ([np.nan, 1.0, np.nan], "list 0 has an observed reward at position 1 below"),
    ([np.nan, np.nan, 0.0], "list 0 has an observed reward at position 2 below"),
    ([[0.0, 1.0, np.nan], [0.0, 1.0, 1.0]], "list 1 has a second click at position 2"),
    ([[0.0, 0.0, 0.0], [np.nan, 0.0, 1.0]], "list 1 has an observed reward at "
                                            "position 1 below"),
]
#: values no click model gives, refused by every baseline (the value in the message
#: as the user wrote it, not a NumPy repr)
NOT_A_CLICK = [
    ([0.0, 0.5, np.nan], "got 0.5$"),
    ([2.0, np.nan, np.nan], "got 2.0$"),
    ([-1.0, 0.0, 0.0], "got -1.0$"),
    ([[0.0, 1.0, np.nan], [0.0, 0.0, 0.25]], "got 0.25$"),
]


def _all_policies():
    return {**_policies(), "TopRank": lambda: br.TopRank(K, L=L, horizon=50, seed=1)}


def _lists(rewards):
    r = np.asarray(rewards)
    return np.arange(L) if r.ndim == 1 else np.arange(r.size).reshape(r.shape) % K


def _played(name):
    """A policy after three valid cascades, and the lists and clicks it saw."""
    policy, seen = _all_policies()[name](), []
    for t in range(3):
        a = policy.select()
        r = _feedback(t, a)
        policy.update(a, r)
        seen.append((a, r))
    return policy, seen


@pytest.mark.parametrize("name", CASCADES)
@pytest.mark.parametrize(("rewards", "match"), NOT_A_CASCADE)
def test_a_cascade_refuses_feedback_it_cannot_produce(name, rewards, match):
    policy, _ = _played(name)
    twin, _ = _played(name)
    before = _snapshot(policy)
    with pytest.raises(ValueError, match="^rewards: a cascade .*" + match):
        policy.update(_lists(rewards), np.array(rewards))
    assert _same(before, _snapshot(policy))  # every state leaf, t and the history
    a, r = np.array([3, 4, 5]), np.array([0.0, 0.0, 1.0])  # still learns as the twin
    policy.update(a, r)
    twin.update(a, r)
    assert _same(_snapshot(policy), _snapshot(twin))


@pytest.mark.parametrize("name", list(_all_policies()))
@pytest.mark.parametrize(("rewards", "match"), NOT_A_CLICK)
def test_values_other_than_clicks_are_refused(name, rewards, match):
    policy, _ = _played(name)
    before = _snapshot(policy)
    with pytest.raises(ValueError, match=r"^rewards: expected clicks 1.0/0.0 \(NaN = "
                                         r"not observed\), " + match):
        policy.update(_lists(rewards), np.array(rewards))
    assert _same(before, _snapshot(policy))


@pytest.mark.x64
def test_cascade_klucb_keeps_learning_valid_cascades_as_the_reference():
    """Valid cascades (zeros below the click, a truncated list, nothing observed, a
    batch) are accepted and counted as Kveton et al.'s loop counts them; refused ones
    in between change nothing."""
    policy, ref = br.CascadeKLUCB(K, L=L), RefCascadeKLUCB(K, L)
    valid = [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, np.nan, np.nan],
             [0.0, 0.0, 0.0], [0.0, 0.0, np.nan], [np.nan] * 3]
    for t, r in enumerate(valid):
        a = policy.select()
        assert a.tolist() == ref.select().tolist()
        with pytest.raises(ValueError, match="rewards"):
            policy.update(a, np.array([1.0, 1.0, 1.0]))
        policy.update(a, np.array(r))
        seen = np.isfinite(r)  # the reference observes 0..C: drop what it cannot see
        ref.update(a, np.where(seen, r, 0.0)) if seen.all() else _ref_partial(ref, a, r)
    m = policy.state.model
    np.testing.assert_array_equal(m.n, ref.T)
    np.testing.assert_allclose(m.clicks, ref.w * ref.T, atol=1e-9)
    assert policy.t == ref.t - 1


def _ref_partial(ref, a, r):
    """Kveton et al.'s update over the observed prefix only (a truncated list)."""
    seen = int(np.isfinite(r).sum())
    clicks = np.flatnonzero(np.asarray(r)[:seen] == 1)
    last = clicks[0] if clicks.size else seen - 1
    for k in range(last + 1):
        e = a[k]
        ref.w[e] = (ref.T[e] * ref.w[e] + (r[k] == 1)) / (ref.T[e] + 1)
        ref.T[e] += 1
    ref.t += 1


@pytest.mark.parametrize("rewards", [r for r, _ in NOT_A_CASCADE])
def test_position_models_accept_what_a_cascade_cannot_produce(rewards):
    """PBM-UCB observes every position on its own (NaN: that position not logged),
    so several clicks and gaps are feedback its model produces: counted as the
    reference counts them. TopRank's click model allows them too."""
    policy, ref = br.PBMUCB(K, L=L, examination=KAPPA), RefPBMUCB(K, L, KAPPA)
    rows, lists = np.atleast_2d(rewards), np.atleast_2d(_lists(rewards))
    policy.update(lists, rows)
    for a, r in zip(lists, rows):
        ref.update(a, r)
    m = policy.state.model
    np.testing.assert_array_equal(m.n, ref.N)
    np.testing.assert_array_equal(m.clicks, ref.S)
    top = br.TopRank(K, L=L)
    top.update(lists, rows)
    np.testing.assert_array_equal(top.history()[1], rows)
