"""RankTS: the loop, convergence on the paper instance, persistence, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bayesrank as br
from bayesrank.policies.parts.context import Context
from bayesrank.policies.ts import RankTS, rank_ts
from bayesrank.posteriors.conjugate import GaussianLinear
from bayesrank.simulation.simulate import noise_key, run_scan


@pytest.fixture(scope="module")
def env():
    return br.RankingEnv.paper(seed=0, K=10, L=4, d=10, w_max=10.0)


def _mean_final_regret(env, make, T=1500, runs=4, tail=200):
    pol = make(0)
    run = jax.jit(jax.vmap(run_scan(pol.core, env, T, env.best_value)))
    pols = [make(s) for s in range(runs)]
    states = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *[p.state for p in pols])
    keys = jnp.stack([p.key for p in pols])
    nkeys = jnp.stack([noise_key(7, r) for r in range(runs)])
    regret, _ = run(states, keys, nkeys)
    return float(np.asarray(regret)[:, -tail:].mean())


def test_rankts_learns_while_w0_stalls(env):
    """Figure 1's finding: modelling the neighbour dependency drives regret to ~0."""
    ts = _mean_final_regret(env, lambda s: RankTS(items=env.items, w=env.w, seed=s))
    ts_w0 = _mean_final_regret(env, lambda s: RankTS(items=env.items, L=env.L, seed=s))
    # the paper's appendix figure (K=10, max|w|=10) shows ~0.1 per round at T=1000
    assert ts < 0.1
    assert ts_w0 > 1.0 and ts_w0 > 20 * ts


def test_select_returns_the_best_list_under_the_draw(env):
    ts = RankTS(items=env.items, w=env.w, seed=3)
    items = ts.select()
    first, pairs = ts.scores()
    _, value = br.best_list(np.asarray(first), np.asarray(pairs))
    eps = np.finfo(np.asarray(first).dtype).eps  # the same sum, rounded in another order
    np.testing.assert_allclose(float(ts._last.value), float(value), rtol=8 * eps)
    # the chosen list attains the optimum of its own scores
    tot = first[items[0]] + sum(
        pairs[l - 1, items[l - 1], items[l]] for l in range(1, 4)
    )
    np.testing.assert_allclose(float(tot), float(value), rtol=1e-10)


def test_batch_update_equals_sequential(env):
    a = RankTS(items=env.items, w=env.w, seed=1)
    b = RankTS(items=env.items, w=env.w, seed=1)
    rng = np.random.default_rng(0)
    lists = rng.integers(0, env.K, size=(20, env.L))
    rewards = rng.normal(size=(20, env.L))
    a.update(lists, rewards)
    for it, r in zip(lists, rewards):
        b.update(it, r)
    flat_a = jax.tree_util.tree_flatten_with_path(a.state)[0]
    flat_b = dict(jax.tree_util.tree_flatten_with_path(b.state)[0])
    for path, x in flat_a:
        y = flat_b[path]
        if jax.tree_util.keystr(path).endswith("_lo"):
            # compensation terms: the rounding error of a sum, equal up to the last
            # bit of the sum itself (the batched and one-by-one programs may fuse
            # a multiply-add differently)
            hi = jax.tree_util.keystr(path)[: -len("_lo")]
            top = max(np.abs(np.asarray(v)).max() for p, v in flat_a
                      if jax.tree_util.keystr(p) == hi)
            eps = np.finfo(np.asarray(x).dtype).eps
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), atol=4 * eps * top)
        else:
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-10,
                                       atol=1e-12)
    np.testing.assert_array_equal(a.select(), b.select())


def test_save_load_resumes_identically(env, tmp_path):
    ts = RankTS(model=GaussianLinear(prior_scale=2.0), items=env.items, w=env.w, seed=5)
    for t in range(15):
        it = ts.select()
        ts.update(it, env.sample(jax.random.key(t), it))
    ts.save(tmp_path / "ts.npz")
    loaded = RankTS.load(tmp_path / "ts.npz")
    assert loaded.t == ts.t
    for t in range(15, 30):
        a, b = ts.select(), loaded.select()
        np.testing.assert_array_equal(a, b)
        r = env.sample(jax.random.key(t), a)
        ts.update(a, r)
        loaded.update(b, r)
    np.testing.assert_allclose(ts.posterior_mean(), loaded.posterior_mean(), rtol=1e-12)


def test_bad_input_raises_and_leaves_state_untouched(env):
    ts = RankTS(items=env.items, w=env.w, seed=0)
    it = ts.select()
    ts.update(it, np.zeros(env.L))
    before = [np.asarray(x).copy() for x in jax.tree_util.tree_leaves(ts.state)]
    bad = [
        (it, np.array([0.0, 1e30j, 0.0, 0.0]), TypeError, "rewards"),
        (it, np.array(["0.5", "0", "0", "0"]), TypeError, "rewards"),
        (it, np.array([0.0, -np.inf, 0.0, 0.0]), ValueError, "rewards"),
        (it, np.array([0.0, np.inf, 0.0, 0.0]), ValueError, "rewards"),
        (it, np.zeros(3), ValueError, "rewards"),
        (np.array([0, 1, 2, 10]), np.zeros(4), ValueError, "items"),
        (np.array([0, 1, -1, 2]), np.zeros(4), ValueError, "items"),
        (np.array([0.5, 1, 2, 3]), np.zeros(4), TypeError, "items"),
        (np.array([0, 1, 2]), np.zeros(3), ValueError, "items"),
    ]
    for items, rewards, exc, word in bad:
        with pytest.raises(exc, match=word):
            ts.update(items, rewards)
    after = jax.tree_util.tree_leaves(ts.state)
    for x, y in zip(before, after):
        np.testing.assert_array_equal(x, np.asarray(y))


def test_constructor_checks(env):
    with pytest.raises(ValueError, match=r"w: expected 3 rows \(one per position"):
        RankTS(items=env.items, L=3, w=env.w)
    with pytest.raises(ValueError, match=r"v0: expected shape \(d,\)"):
        RankTS(items=env.items, w=env.w, v0=np.zeros(3))
    with pytest.raises(ValueError, match="items"):
        RankTS(items=np.zeros(5), w=env.w)
    with pytest.raises(ValueError, match="w: expected finite values"):
        RankTS(items=env.items, w=np.array([0.0, np.nan, 0.0, 0.0]))
    with pytest.raises(TypeError, match="model"):
        RankTS(model="gaussian", items=env.items, w=env.w)
    with pytest.raises(ValueError, match="distinct"):
        RankTS(items=env.items[:3], w=env.w, distinct=True)


def test_distinct_and_mask_are_respected(env):
    mask = np.ones(env.K, bool)
    mask[[0, 3]] = False
    ts = RankTS(items=env.items, w=env.w, distinct=True, mask=mask, seed=2)
    for t in range(20):
        it = ts.select()
        assert len(set(it.tolist())) == env.L
        assert not np.isin(it, [0, 3]).any()
        ts.update(it, env.sample(jax.random.key(t), it))


def test_window_model_learns():
    base = br.RankingEnv.paper(seed=1, K=8, L=4, d=6, w_max=3.0)
    rng = np.random.default_rng(1)
    W = rng.uniform(-3, 3, size=(4, 2))
    env = br.RankingEnv(base.items, base.theta, W)
    reg = _mean_final_regret(
        env, lambda s: RankTS(items=env.items, w=W, seed=s), T=1000
    )
    reg_w0 = _mean_final_regret(
        env, lambda s: RankTS(items=env.items, L=4, seed=s), T=1000
    )
    assert reg < 0.2
    assert reg < 0.25 * reg_w0


def test_core_jits_and_vmaps(env):
    core = rank_ts(GaussianLinear(), env.items, env.W)

    ctx = Context(env.v0, jnp.ones(env.K, bool))

    def one(key):
        state = core.init()
        state, sel = core.select(key, state, ctx)
        state = core.update(state, sel.items, jnp.ones(env.L), ctx)
        return sel.items, sel.value

    keys = jax.random.split(jax.random.key(0), 5)
    items, values = jax.jit(jax.vmap(one))(keys)
    assert items.shape == (5, env.L) and np.isfinite(np.asarray(values)).all()
    for i in range(5):
        it, _ = one(keys[i])
        np.testing.assert_array_equal(np.asarray(items[i]), np.asarray(it))


def test_posterior_datatree_works_with_arviz(env):
    import arviz as az

    ts = RankTS(items=env.items, w=env.w, seed=0)
    for t in range(30):
        it = ts.select()
        ts.update(it, env.sample(jax.random.key(t), it))
    dt = ts.posterior(1)
    summ = az.summary(dt, var_names=["theta"])
    assert summ.shape[0] == env.d
    # the default learns theta's prior scale and the noise sd: they are summarised too
    assert az.summary(dt).shape[0] == env.d + 2
    # posterior mean of the draws is near the closed-form mean
    mean_draws = dt.posterior["theta"].mean(("chain", "draw")).values
    np.testing.assert_allclose(mean_draws, ts.posterior_mean()[1], atol=0.1)
    ps = az.psense_summary(dt)
    assert ps.shape[0] == env.d + 2  # theta, prior_scale, noise_scale
    with pytest.raises(ValueError, match="position"):
        ts.posterior(env.L)
