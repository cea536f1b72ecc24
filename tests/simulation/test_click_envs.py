"""Click-model environments (PBM, cascade, DCM, DBN) and RankingEnv(feedback="cascade"):
exact best lists against brute force, values and samplers against plain-NumPy
simulations of each model, NaN exactly where a position was not examined, pytrees
under jit and vmap, simulate with RankTS, and the bad-input refusals."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bayesrank as br
from bayesrank.decoding.backward import pick
from bayesrank.simulation import CascadeEnv, DBNEnv, DCMEnv, PBMEnv, RankingEnv

pytestmark = pytest.mark.x64  # exact comparisons with brute force at 1e-12

K, L = 7, 3
MODELS = ("pbm", "cascade", "dcm", "dbn")


def draw_params(model, rng, K=K, L=L):
    """Random parameters of a model (plain NumPy), with a few exact ties."""
    A = rng.uniform(0, 1, K)
    A[rng.integers(K)] = A[rng.integers(K)]
    if model == "pbm":
        return {"attraction": A, "examination": rng.uniform(0, 1, L)}
    if model == "cascade":
        return {"attraction": A, "L": L}
    if model == "dcm":
        return {"attraction": A, "continuation": rng.uniform(0, 1, L)}
    return {
        "attraction": A,
        "satisfaction": rng.uniform(0, 1, K),
        "gamma": float(rng.choice([0.0, rng.uniform(), 1.0])),
        "L": L,
    }


def make(model, params):
    cls = {"pbm": PBMEnv, "cascade": CascadeEnv, "dcm": DCMEnv, "dbn": DBNEnv}[model]
    return cls(**params)


def reference_value(model, P, a):
    """The model's value of list a, written from DESIGN.md as a plain loop."""
    A = P["attraction"]
    if model == "pbm":
        return sum(P["examination"][l] * A[a[l]] for l in range(len(a)))
    if model == "cascade":
        return 1.0 - np.prod([1.0 - A[i] for i in a])
    if model == "dcm":
        c = P["continuation"]
        return 1.0 - np.prod([1.0 - (1.0 - c[l]) * A[a[l]] for l in range(len(a))])
    u = A * P["satisfaction"]
    return sum(
        P["gamma"] ** l * np.prod([1.0 - u[a[j]] for j in range(l)]) * u[a[l]]
        for l in range(len(a))
    )


def simulate_users(model, P, a, n, rng):
    """An independent simulation of n users on list a: (clicks (n, L) with NaN where
    not examined, the reward each user gives: clicks for PBM, satisfied otherwise)."""
    A = P["attraction"][np.asarray(a)]
    Lh = len(a)
    out = np.full((n, Lh), np.nan)
    active = np.ones(n, bool)
    satisfied = np.zeros(n, bool)
    for l in range(Lh):
        click = rng.random(n) < A[l] * (P["examination"][l] if model == "pbm" else 1.0)
        out[active, l] = click[active]
        click &= active
        if model == "cascade":
            satisfied |= click
            active &= ~click
        elif model == "dcm":
            stop = click & (rng.random(n) >= P["continuation"][l])
            satisfied |= stop
            active &= ~stop
        elif model == "dbn":
            sat = click & (rng.random(n) < P["satisfaction"][a[l]])
            satisfied |= sat
            active &= ~sat & (rng.random(n) < P["gamma"])
    reward = np.nansum(out, axis=1) if model == "pbm" else satisfied.astype(float)
    return out, reward


def all_lists(available, L, distinct):
    it = (
        itertools.permutations(available, L)
        if distinct
        else itertools.product(available, repeat=L)
    )
    return np.array(list(it))


def pattern_freq(clicks):
    """Frequencies of the 3^L patterns (0, 1 or NaN at each position)."""
    code = np.where(np.isnan(clicks), 2, clicks).astype(int)
    idx = (code * 3 ** np.arange(code.shape[1])).sum(axis=1)
    return np.bincount(idx, minlength=3 ** code.shape[1]) / len(idx)


# ------------------------------------------------------------------ best lists
@pytest.mark.parametrize("masked", [False, True], ids=["all", "masked"])
@pytest.mark.parametrize("distinct", [True, False], ids=["distinct", "repeats"])
@pytest.mark.parametrize("model", MODELS)
def test_best_list_equals_brute_force(model, distinct, masked):
    rng = np.random.default_rng([MODELS.index(model), distinct, masked])
    for _ in range(4):
        P = draw_params(model, rng)
        env = make(model, P)
        mask = np.ones(K, bool)
        if masked:
            mask[rng.choice(K, 3, replace=False)] = False
        lists = all_lists(np.flatnonzero(mask), L, distinct)
        ref = np.array([reference_value(model, P, a) for a in lists])
        np.testing.assert_allclose(
            np.asarray(env.expected_reward(lists)), ref, rtol=1e-12, atol=1e-14
        )
        items, value = env.best(distinct=distinct, mask=mask if masked else None)
        items = np.asarray(items)
        assert items.shape == (L,) and items.dtype.kind == "i"
        assert mask[items].all()
        if distinct:
            assert len(set(items.tolist())) == L
        assert float(value) == pytest.approx(ref.max(), rel=1e-12, abs=1e-14)
        assert reference_value(model, P, items) == pytest.approx(ref.max(), rel=1e-12)


@pytest.mark.parametrize("model", MODELS)
def test_best_value_has_zero_regret(model):
    env = make(model, draw_params(model, np.random.default_rng(5)))
    items, value = env.best()
    assert float(env.best_value) == float(value)
    assert float(env.regret(items)) == 0.0
    lists = all_lists(range(K), L, True)
    assert float(env.regret(lists).min()) >= 0.0
    assert env.regret(lists[:4], best_value=1.0).shape == (4,)


# ------------------------------------------------------- values and the samplers
@pytest.mark.parametrize("model", MODELS)
def test_value_is_what_an_independent_simulation_of_the_model_gives(model):
    rng = np.random.default_rng(10 + MODELS.index(model))
    n = 200_000
    for _ in range(2):
        P = draw_params(model, rng)
        if model == "dbn":
            P["gamma"] = 0.7
        env = make(model, P)
        a = rng.permutation(K)[:L]
        _, reward = simulate_users(model, P, a, n, rng)
        value = float(env.expected_reward(a))
        se = reward.std() / np.sqrt(n) + 1e-12
        assert abs(reward.mean() - value) < 5 * se, (reward.mean(), value)


@pytest.mark.parametrize("model", MODELS)
def test_sampler_has_the_law_of_an_independent_simulation(model):
    rng = np.random.default_rng(20 + MODELS.index(model))
    n = 100_000
    P = draw_params(model, rng)
    if model == "dbn":
        P["gamma"] = 0.7
    env = make(model, P)
    a = rng.permutation(K)[:L]
    ref, _ = simulate_users(model, P, a, n, rng)
    got = np.asarray(env.sample(jax.random.key(3), np.tile(a, (n, 1))))
    f_ref, f_got = pattern_freq(ref), pattern_freq(got)
    tol = 5 * np.sqrt(np.maximum(f_ref, 1.0 / n) * 2.0 / n)
    assert np.all(np.abs(f_got - f_ref) <= tol), (f_got, f_ref)
    if model in ("pbm", "cascade"):  # the sampler's own totals give the value
        total = np.nansum(got, 1) if model == "pbm" else (np.nansum(got, 1) > 0)
        value = float(env.expected_reward(a))
        assert abs(total.mean() - value) < 5 * total.std() / np.sqrt(n)


@pytest.mark.parametrize("model", MODELS)
def test_nan_exactly_where_a_position_was_not_examined(model):
    P = draw_params(model, np.random.default_rng(30))
    P["attraction"] = np.full(K, 0.5)
    if model == "dbn":
        P["gamma"] = 0.8
    env = make(model, P)
    got = np.asarray(env.sample(jax.random.key(0), np.tile(np.arange(L), (4000, 1))))
    nan = np.isnan(got)
    assert set(np.unique(got[~nan]).tolist()) <= {0.0, 1.0}
    if model == "pbm":
        assert not nan.any()
        return
    # NaN is a suffix: once a user has left, nothing after is examined
    assert np.all(nan[:, 1:] >= nan[:, :-1])
    first_nan = np.where(nan.any(1), nan.argmax(1), L)
    seen = first_nan[first_nan < L]
    before = got[first_nan < L, :][np.arange(len(seen)), seen - 1]
    clicks_before = np.nansum(got, 1)
    if model == "cascade":  # NaN right after the first (and only) click
        assert np.all(clicks_before <= 1)
        assert np.array_equal(first_nan < L, (clicks_before == 1) & (got[:, -1] != 1))
        assert np.all(before == 1)
    elif model == "dcm":  # a user leaves after a click only
        assert np.all(before == 1)
        assert nan.any()
    else:  # the DBN also abandons after a skip (gamma < 1)
        assert (before == 0).any() and (before == 1).any()


def test_every_position_examined_when_nobody_stops():
    lists = np.tile(np.arange(L), (500, 1))
    no_click = CascadeEnv(np.zeros(K), L).sample(jax.random.key(1), lists)
    assert np.array_equal(np.asarray(no_click), np.zeros((500, L)))
    always_on = DCMEnv(np.ones(K), np.ones(L)).sample(jax.random.key(1), lists)
    assert np.array_equal(np.asarray(always_on), np.ones((500, L)))
    dbn = DBNEnv(np.ones(K), np.zeros(K), 1.0, L).sample(jax.random.key(1), lists)
    assert np.array_equal(np.asarray(dbn), np.ones((500, L)))


# --------------------------------------------------------------- jit and vmap
@pytest.mark.parametrize("model", MODELS)
def test_jit_and_vmap_over_a_batch_of_envs_equal_a_loop(model):
    rng = np.random.default_rng(40)
    envs = [make(model, draw_params(model, rng)) for _ in range(3)]
    batch = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *envs)
    lists = jnp.asarray(rng.integers(0, K, (3, 5, L)))
    keys = jax.random.split(jax.random.key(7), 3)

    def one(env, key, lst):
        return env.expected_reward(lst), env.sample(key, lst), env.best()[0]

    vm = jax.vmap(one)(batch, keys, lists)
    jitted = [jax.jit(one)(e, k, lst) for e, k, lst in zip(envs, keys, lists)]
    loop = [one(e, k, lst) for e, k, lst in zip(envs, keys, lists)]
    for i, (v, s, b) in enumerate(loop):
        for got in ((vm[0][i], vm[1][i], vm[2][i]), jitted[i]):
            np.testing.assert_allclose(np.asarray(got[0]), np.asarray(v), rtol=1e-12)
            np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(s))
            np.testing.assert_array_equal(np.asarray(got[2]), np.asarray(b))


def test_vmap_over_a_batched_attraction_builds_envs_inside():
    A = np.random.default_rng(1).uniform(0, 1, (4, K))
    e = np.linspace(1, 0.2, L)
    lists = np.array([0, 3, 5])
    vm = jax.vmap(lambda a: PBMEnv(a, e).expected_reward(lists))(jnp.asarray(A))
    loop = [float(PBMEnv(a, e).expected_reward(lists)) for a in A]
    np.testing.assert_allclose(np.asarray(vm), loop, rtol=1e-12)


# ------------------------------------------------------ generators, simulate
def test_from_features_takes_the_sigmoid_of_the_scores():
    rng = np.random.default_rng(2)
    V, th = rng.normal(size=(K, 4)), rng.normal(size=4)
    want = 1.0 / (1.0 + np.exp(-V @ th))
    envs = [
        PBMEnv.from_features(V, th, np.ones(L)),
        CascadeEnv.from_features(V, th, L),
        DCMEnv.from_features(V, th, np.full(L, 0.5)),
        DBNEnv.from_features(V, th, np.full(K, 0.5), 0.9, L),
    ]
    for env in envs:
        np.testing.assert_allclose(np.asarray(env.attraction), want, rtol=1e-12)
        np.testing.assert_array_equal(np.asarray(env.items), V)
        assert (env.K, env.L, env.d) == (K, L, 4)


@pytest.mark.parametrize("cls", [PBMEnv, CascadeEnv, DCMEnv, DBNEnv])
def test_synthetic_gives_L_items_of_attraction_p_and_they_are_best(cls):
    env = cls.synthetic(K=8, L=3, seed=4, p=0.3, delta=0.1)
    A = np.asarray(env.attraction)
    top = np.flatnonzero(A == 0.3)
    assert len(top) == 3 and np.allclose(np.delete(A, top), 0.2)
    assert sorted(np.asarray(env.best()[0]).tolist()) == top.tolist()
    assert not np.array_equal(np.asarray(cls.synthetic(K=8, L=3, seed=5).attraction), A)


def _feature_envs():
    rng = np.random.default_rng(3)
    V, th = rng.normal(size=(6, 3)), rng.normal(size=3)
    base = RankingEnv(
        V, rng.normal(size=(L, 3)) * 0.5, rng.uniform(-1, 1, L), link="logistic"
    )
    return {
        "pbm": PBMEnv.from_features(V, th, np.array([1.0, 0.6, 0.3])),
        "cascade": CascadeEnv.from_features(V, th, L),
        "dcm": DCMEnv.from_features(V, th, np.array([0.2, 0.5, 0.8])),
        "dbn": DBNEnv.from_features(V, th, np.full(6, 0.7), 0.8, L),
        "ranking-cascade": RankingEnv(
            base.items, base.theta, base.w, link="logistic", feedback="cascade"
        ),
    }


@pytest.mark.parametrize("distinct", [False, True], ids=["repeats", "distinct"])
def test_simulate_runs_rank_ts_on_each(distinct):
    envs = _feature_envs()
    for name, env in envs.items():
        items = np.asarray(env.items)
        ds = br.simulate(
            env,
            {
                "RankTS": lambda s, items=items: br.RankTS(
                    items=items, w=np.zeros(L), seed=s, distinct=distinct
                )
            },
            T=15,
            runs=2,
            progress=False,
        )
        regret = ds.regret.values
        assert regret.shape == (1, 2, 15) and np.isfinite(regret).all(), name
        assert regret.min() >= -1e-12, name  # against the best list it could show
        # the realised reward counts the clicks seen (NaN: not examined, not a click)
        assert np.isfinite(ds.reward.values).all(), name


# ------------------------------------------------- RankingEnv(feedback="cascade")
def _cascade_env(seed, link="logistic", window=False, K=6):
    rng = np.random.default_rng(seed)
    d = 4
    V = np.c_[rng.normal(size=(K, d - 1)), np.ones(K)]
    Th = np.c_[rng.normal(size=(L, d - 1)), np.full(L, -1.0)] * 0.8
    w = rng.uniform(-1.5, 1.5, (L, 2) if window else L)
    return RankingEnv(
        V, Th, w, v0=rng.normal(size=d) * 0.3, link=link, feedback="cascade"
    )


def _click_probs(env, a):
    """Eq. 1's click probability at each position of a, as a plain loop."""
    V, Th, v0 = map(np.asarray, (env.items, env.theta, env.v0))
    W = np.asarray(env.W)
    out = []
    for l in range(len(a)):
        x = V[a[l]].copy()
        for i in range(1, W.shape[1] + 1):
            x += W[l, i - 1] * (V[a[l - i]] if l - i >= 0 else v0 if l - i == -1 else 0)
        z = Th[l] @ x
        out.append(
            1 / (1 + np.exp(-z))
            if env.link == "logistic"
            else float(jax.scipy.stats.norm.cdf(z))
        )
    return np.array(out)


@pytest.mark.parametrize("case", ["logistic", "probit", "distinct", "masked", "window"])
def test_cascade_feedback_best_list_equals_brute_force(case):
    for seed in range(3):
        env = _cascade_env(
            seed,
            link="probit" if case == "probit" else "logistic",
            window=case == "window",
        )
        distinct = case == "distinct"
        mask = (
            np.array([True, False, True, True, False, True])
            if case in ("masked", "window")
            else None
        )
        avail = np.flatnonzero(mask) if mask is not None else np.arange(env.K)
        lists = all_lists(avail, L, distinct)
        ref = np.array([1 - np.prod(1 - _click_probs(env, a)) for a in lists])
        np.testing.assert_allclose(
            np.asarray(env.expected_reward(lists)), ref, rtol=1e-12
        )
        items, value = env.best(distinct=distinct, mask=mask)
        assert float(value) == pytest.approx(ref.max(), rel=1e-12)
        assert float(env.regret(items)) <= 1e-15 or mask is not None or distinct


def test_cascade_feedback_sampler_nan_after_the_first_click_and_value():
    env = _cascade_env(7)
    a = np.asarray(env.best()[0])
    n = 100_000
    got = np.asarray(env.sample(jax.random.key(5), np.tile(a, (n, 1))))
    clicked = np.nansum(got, 1)
    assert clicked.max() == 1
    first = np.where(clicked > 0, np.nanargmax(np.nan_to_num(got, nan=-1), 1), L)
    pos = np.arange(L)
    assert np.array_equal(np.isnan(got), pos[None, :] > first[:, None])
    p = _click_probs(env, a)  # P(first click at l) = prod_{j<l} (1 - p_j) p_l
    want = [np.prod(1 - p[:l]) * p[l] for l in range(L)]
    freq = np.bincount(first, minlength=L + 1)[:L] / n
    assert np.all(np.abs(freq - want) < 5 * np.sqrt(np.array(want) / n))
    v = float(env.expected_reward(a))
    assert abs(clicked.mean() - v) < 5 * np.sqrt(v * (1 - v) / n)


def test_cascade_feedback_user_context_picks_each_users_best_list():
    env = _cascade_env(2)
    bw = env.to_go()
    for u in range(env.K):
        v0 = env.items[u]
        items = pick(env.first_scores(v0), bw, jnp.ones(env.K, bool))[0]
        assert float(env.with_v0(v0).regret(items)) <= 1e-15


def test_full_feedback_is_the_default_and_unchanged():
    env = _cascade_env(1)
    full = RankingEnv(env.items, env.theta, env.w, v0=env.v0, link="logistic")
    assert full.feedback == "full"
    lists = all_lists(range(env.K), L, False)[:20]
    np.testing.assert_allclose(
        np.asarray(full.expected_reward(lists)),
        np.asarray(full.position_means(lists)).sum(-1),
    )
    key = jax.random.key(0)
    np.testing.assert_array_equal(  # the same draws, seen up to the first click
        np.asarray(env.sample(key, lists)),
        np.asarray(br.simulation.click_base.through_cascade(full.sample(key, lists))),
    )
    back = jax.tree_util.tree_map(lambda x: x, env)
    assert back.feedback == "cascade" and "feedback='cascade'" in repr(back)


# ------------------------------------------------------------------ bad inputs
A3, E2 = np.array([0.1, 0.9, 0.5]), np.array([0.5, 1.0])
BAD = {
    "attraction above 1": (
        lambda: PBMEnv([0.1, 1.2, 0.5], E2),
        ValueError,
        "attraction: expected values in \\[0, 1\\]",
    ),
    "attraction negative": (
        lambda: CascadeEnv([-0.1, 0.2], 1),
        ValueError,
        "attraction: expected values",
    ),
    "attraction nan": (
        lambda: DCMEnv([np.nan, 0.2], [0.5]),
        ValueError,
        "attraction: expected finite",
    ),
    "attraction 2-d": (
        lambda: CascadeEnv(np.ones((2, 3)) / 2, 1),
        ValueError,
        "attraction: expected a 1-d",
    ),
    "attraction strings": (lambda: CascadeEnv(["a", "b"], 1), TypeError, "attraction:"),
    "attraction empty": (lambda: CascadeEnv([], 1), ValueError, "attraction:"),
    "examination above 1": (
        lambda: PBMEnv(A3, [0.5, 2.0]),
        ValueError,
        "examination: expected values",
    ),
    "examination inf": (lambda: PBMEnv(A3, [0.5, np.inf]), ValueError, "examination:"),
    "continuation 2-d": (lambda: DCMEnv(A3, [[0.5]]), ValueError, "continuation:"),
    "satisfaction shape": (
        lambda: DBNEnv(A3, [0.5, 0.5], 0.9, 2),
        ValueError,
        "satisfaction: expected shape \\(3,\\)",
    ),
    "satisfaction above 1": (
        lambda: DBNEnv(A3, [0.5, 0.5, 3], 0.9, 2),
        ValueError,
        "satisfaction: expected values",
    ),
    "gamma above 1": (lambda: DBNEnv(A3, A3, 1.5, 2), ValueError, "gamma:"),
    "gamma nan": (lambda: DBNEnv(A3, A3, np.nan, 2), ValueError, "gamma:"),
    "gamma bool": (lambda: DBNEnv(A3, A3, True, 2), TypeError, "gamma:"),
    "L zero": (lambda: CascadeEnv(A3, 0), ValueError, "L:"),
    "L float": (lambda: DBNEnv(A3, A3, 0.5, 2.0), TypeError, "L:"),
    "items rows": (
        lambda: CascadeEnv(A3, 2, items=np.ones((2, 2))),
        ValueError,
        "items:",
    ),
    "theta shape": (
        lambda: CascadeEnv.from_features(np.ones((3, 2)), np.ones(3), 2),
        ValueError,
        "theta: expected shape",
    ),
    "L > K distinct": (
        lambda: CascadeEnv(A3, 4).best(),
        ValueError,
        "distinct:.*K >= L",
    ),
    "distinct not bool": (
        lambda: CascadeEnv(A3, 2).best(distinct=1),
        TypeError,
        "distinct:",
    ),
    "mask shape": (
        lambda: CascadeEnv(A3, 2).best(mask=np.ones(2, bool)),
        ValueError,
        "mask:",
    ),
    "mask dtype": (
        lambda: CascadeEnv(A3, 2).best(mask=np.ones(3)),
        ValueError,
        "mask:",
    ),
    "mask too few": (
        lambda: PBMEnv(A3, E2).best(mask=np.array([True, False, False])),
        ValueError,
        "mask: needs at least 2",
    ),
    "lists out of range": (
        lambda: PBMEnv(A3, E2).expected_reward(np.array([0, 3])),
        ValueError,
        "lists:",
    ),
    "lists length": (
        lambda: DBNEnv(A3, A3, 0.5, 2).sample(jax.random.key(0), np.array([0, 1, 2])),
        ValueError,
        "lists:",
    ),
    "lists floats": (
        lambda: CascadeEnv(A3, 2).expected_reward(np.array([0.0, 1.0])),
        TypeError,
        "lists:",
    ),
    "p above 1": (lambda: CascadeEnv.synthetic(p=1.5), ValueError, "p:"),
    "delta above p": (
        lambda: CascadeEnv.synthetic(p=0.2, delta=0.3),
        ValueError,
        "delta:",
    ),
    "synthetic L > K": (lambda: PBMEnv.synthetic(K=2, L=3), ValueError, "L:"),
    "continuation scalar": (
        lambda: DCMEnv.synthetic(continuation=2.0),
        ValueError,
        "continuation:",
    ),
    "feedback name": (
        lambda: RankingEnv(
            np.ones((3, 2)),
            np.ones((2, 2)),
            np.zeros(2),
            link="logistic",
            feedback="pbm",
        ),
        ValueError,
        "feedback: expected one of",
    ),
    "cascade needs clicks": (
        lambda: RankingEnv(
            np.ones((3, 2)), np.ones((2, 2)), np.zeros(2), feedback="cascade"
        ),
        ValueError,
        "feedback: 'cascade' needs Bernoulli",
    ),
    "no user context": (lambda: CascadeEnv(A3, 2).to_go(), ValueError, "users:"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_inputs_are_refused_naming_the_argument(case):
    fn, exc, match = BAD[case]
    with pytest.raises(exc, match=match):
        fn()


def test_logs_of_click_environments_for_offline_evaluation():
    """ope.collect logs a click model (NaN where not examined) with the logger's exact
    propensities, and ope.evaluate reads the log; without item vectors collect says
    why."""
    K_, L_ = 8, 3
    rng = np.random.default_rng(0)
    V = rng.normal(size=(K_, 4))
    env = CascadeEnv.from_features(V, rng.normal(size=4), L_)
    log = br.ope.collect(env, br.ope.UniformLogger(K_, L_), 400, seed=1)
    r = log["rewards"].values
    assert np.isnan(r).any() and np.nanmax(r) == 1.0
    # a cascade: at most one click per list, and nothing seen after it
    first = np.argmax(r == 1.0, axis=1)
    clicked = (r == 1.0).any(axis=1)
    for i in np.flatnonzero(clicked):
        assert np.all(np.isnan(r[i, first[i] + 1:]))
    target = br.RankTS(items=V, w=np.zeros(L_), seed=0)
    est = br.ope.evaluate(log, target, estimators=("list_ips",), n_draws=50)
    assert np.isfinite(est["estimate"].values).all()
    with pytest.raises(ValueError, match="items: CascadeEnv was built without item"):
        br.ope.collect(CascadeEnv(np.full(K_, 0.3), L_), br.ope.UniformLogger(K_, L_), 5)
