"""A policy is (core, state, key, t) with one explicit update path (issue 47, item 3).

* the constructors take the catalogue (items, or K) positionally and every other
  argument by keyword; the old positional forms raise a TypeError that shows the new
  call;
* ``update`` records a single list as pending, ``flush`` applies it: a flushed
  policy's state equals replaying the updates through the pure core, and (for the
  conjugate Gaussian) a plain-NumPy ridge;
* off-policy evaluation draws through ``select_batch_at``, a pure function of an
  explicit state: it never writes the target's state or round counter.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bayesrank as br
from bayesrank.ope import as_log, draw_target
from bayesrank.policies import Context, Policy

K, L, D = 6, 3, 4


@pytest.fixture(scope="module")
def env():
    return br.RankingEnv.paper(seed=2, K=K, L=L, d=D, w_max=2.0)


# ---------------------------------------------------------------------- refusals
V = np.random.default_rng(0).normal(size=(K, D))
W = np.array([0.0, 0.5, -0.5])
MODEL = br.GaussianLinear(prior_scale=1.0, noise_scale=1.0)

#: (old positional call, the new call its message shows)
OLD_FORMS = {
    "RankTS(model, V)": (lambda: br.RankTS(MODEL, V, w=W),
                         "RankTS(items, model=model, w=w)"),
    "RankTS(model)": (lambda: br.RankTS(MODEL, items=V, w=W),
                      "RankTS(items, model=model, w=w)"),
    "RankTS(V, L, w)": (lambda: br.RankTS(V, 3, W), "RankTS(items, L=3, w=w)"),
    "RankUCB(model, V, L)": (lambda: br.RankUCB(MODEL, V, 3),
                             "RankUCB(items, model=model, L=3)"),
    "WindowRankUCB(model, V)": (lambda: br.WindowRankUCB(MODEL, V, w=W),
                                "WindowRankUCB(items, model=model, w=w)"),
    "GenRankTS(V, 4)": (lambda: br.GenRankTS(V, 3), "GenRankTS(items, L=3)"),
    "GenRankTS(V, L, v0)": (lambda: br.GenRankTS(V, 3, np.zeros(D), seed=1),
                            "GenRankTS(items, L=3, v0=v0, seed=1)"),
    "GenRankUCB(V, L)": (lambda: br.GenRankUCB(V, 3, alpha=1.0),
                         "GenRankUCB(items, L=3, alpha=1.0)"),
    "RankedBaseline(V, L)": (lambda: br.RankedBaseline(V, 3, kind="ts"),
                             "RankedBaseline(items, L=3, kind='ts')"),
    "CascadeKLUCB(K, L)": (lambda: br.CascadeKLUCB(K, 3), "CascadeKLUCB(K, L=3)"),
    "PBMUCB(K, L, e)": (lambda: br.PBMUCB(K, 2, [1.0, 0.5]),
                        "PBMUCB(K, L=2, examination=examination)"),
    "TopRank(K, L)": (lambda: br.TopRank(K, 2, seed=0), "TopRank(K, L=2, seed=0)"),
    "CascadeLinTS(V, L)": (lambda: br.CascadeLinTS(V, 2), "CascadeLinTS(items, L=2)"),
    "CascadeLinUCB(V, L)": (lambda: br.CascadeLinUCB(V, 2, alpha=0.5),
                            "CascadeLinUCB(items, L=2, alpha=0.5)"),
}


@pytest.mark.parametrize("name", OLD_FORMS)
def test_an_old_positional_form_is_refused_with_the_new_call(name):
    make, new = OLD_FORMS[name]
    with pytest.raises(TypeError, match="keyword-only") as err:
        make()
    assert str(err.value).endswith(f"write {new}"), str(err.value)


#: The new forms of the calls above: they build.
NEW_FORMS = {
    "RankTS": lambda: br.RankTS(V, model=MODEL, w=W),
    "RankUCB": lambda: br.RankUCB(V, model=MODEL, L=3),
    "WindowRankUCB": lambda: br.WindowRankUCB(V, model=MODEL, w=W),
    "GenRankTS": lambda: br.GenRankTS(V, L=3, v0=np.zeros(D), seed=1),
    "GenRankUCB": lambda: br.GenRankUCB(V, L=3, alpha=1.0),
    "RankedBaseline": lambda: br.RankedBaseline(V, L=3, kind="ts"),
    "CascadeKLUCB": lambda: br.CascadeKLUCB(K, L=3),
    "PBMUCB": lambda: br.PBMUCB(K, L=2, examination=[1.0, 0.5]),
    "TopRank": lambda: br.TopRank(K, L=2, seed=0),
    "CascadeLinTS": lambda: br.CascadeLinTS(V, L=2),
    "CascadeLinUCB": lambda: br.CascadeLinUCB(V, L=2, alpha=0.5),
}


@pytest.mark.parametrize("name", NEW_FORMS)
def test_the_new_form_builds_and_its_signature_is_keyword_only(name):
    import inspect

    policy = NEW_FORMS[name]()
    assert policy.select().shape == (policy.L,)
    params = list(inspect.signature(type(policy)).parameters.values())
    assert params[0].name in ("items", "K")
    assert params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:])


def test_the_keyword_only_arguments_come_in_one_order():
    import inspect

    order = ["L", "w", "v0", "model", "distinct", "mask", "seed"]
    for cls in (br.RankTS, br.RankUCB, br.WindowRankUCB, br.GenRankTS, br.GenRankUCB,
                br.RankedBaseline):
        names = list(inspect.signature(cls).parameters)[1:]
        common = [n for n in names if n in order]
        assert common == [n for n in order if n in names], (cls.__name__, names)


# ------------------------------------------------------------------------- flush
def _ridge_mean(x, y, seen, prior_scale, noise_scale):
    """(L, p) the conjugate Gaussian's posterior mean, position by position, in
    NumPy: (I / s0^2 + X^T X / s^2)^-1 X^T y / s^2 over the observed rows."""
    out = []
    for l in range(x.shape[1]):
        X, Y = x[seen[:, l], l], y[seen[:, l], l]
        A = np.eye(x.shape[2]) / prior_scale**2 + X.T @ X / noise_scale**2
        out.append(np.linalg.solve(A, X.T @ Y / noise_scale**2))
    return np.array(out)


def _rounds(env, n=12):
    rng = np.random.default_rng(5)
    lists = rng.integers(0, K, (n, L))
    rewards = rng.normal(size=(n, L))
    rewards[3, 1] = rewards[n - 1, 2] = np.nan  # not observed
    v0s = rng.normal(size=(n, D))
    return lists, rewards, v0s


MAKERS = {
    "RankTS": lambda e: br.RankTS(e.items, w=e.w, model=MODEL, seed=1),
    "RankUCB ridge": lambda e: br.RankUCB(e.items, w=e.w, alpha=1.0),
    "GenRankTS": lambda e: br.GenRankTS(e.items, L=L, model=MODEL, seed=1),
    "RankedBaseline ts": lambda e: br.RankedBaseline(e.items, L=L, kind="ts", seed=1),
}


@pytest.mark.parametrize("name", MAKERS)
def test_a_flushed_state_equals_the_pure_core_replay(env, name):
    policy = MAKERS[name](env)
    lists, rewards, v0s = _rounds(env)
    core = policy.core
    ref = core.init()
    update = jax.jit(core.update)
    mask = jnp.ones(K, bool)
    for it, r, v in zip(lists, rewards, v0s):
        assert policy.flush() is policy
        policy.update(it, r, v0=v)
        assert policy.pending == 1
        ref = update(ref, jnp.asarray(it, jnp.int32), jnp.asarray(r),
                     Context(jnp.asarray(v, jnp.float32), mask))
    assert policy.flush().pending == 0
    got = jax.tree_util.tree_leaves(policy._state)
    want = jax.tree_util.tree_leaves(ref)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    assert policy.flush().pending == 0  # a second flush: nothing to do
    assert policy.t == 0  # flushing is not a round


def test_a_flushed_gaussian_state_is_the_numpy_ridge(env):
    policy = br.RankTS(env.items, w=env.w, model=MODEL, seed=0)
    lists, rewards, v0s = _rounds(env)
    for it, r, v in zip(lists, rewards, v0s):
        policy.update(it, r, v0=v)
    policy.flush()
    # x^l = v_{a^l} + w_l v_{a^{l-1}}, a^0 the request's v0
    V, w = np.asarray(env.items, float), np.asarray(env.w, float)
    prev = np.concatenate([v0s[:, None], V[lists[:, :-1]]], axis=1)
    x = V[lists] + w[None, :, None] * prev
    seen = np.isfinite(rewards)
    want = _ridge_mean(x, np.nan_to_num(rewards), seen, 1.0, 1.0)
    np.testing.assert_allclose(policy.posterior_mean(), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", MAKERS)
def test_the_fused_select_equals_flush_then_select(env, name):
    """The pending update runs inside select's compiled call: the same state and
    list as flushing first."""
    a, b = MAKERS[name](env), MAKERS[name](env)
    lists, rewards, v0s = _rounds(env, 6)
    for it, r, v in zip(lists, rewards, v0s):
        a.update(it, r, v0=v)
        b.update(it, r, v0=v)
        b.flush()
        np.testing.assert_array_equal(a.select(), b.select())
        assert a.pending == 0
    for x, y in zip(jax.tree_util.tree_leaves(a.state), jax.tree_util.tree_leaves(b.state)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- OPE
class _NoWrites(br.RankTS):
    """A RankTS whose state and round counter may be read but not written after
    construction (the save-and-restore OPE did before would fail here)."""

    locked = False

    @property
    def state(self):
        return Policy.state.fget(self)

    @state.setter
    def state(self, value):
        if self.locked:
            raise AssertionError("state written")
        Policy.state.fset(self, value)


def test_ope_draws_from_the_pure_core_without_writing_the_target(env):
    ts = _NoWrites(env.items, w=env.w, v0=env.v0, seed=4)
    lists, rewards, v0s = _rounds(env)
    ts.update(lists, np.nan_to_num(rewards), v0=v0s)
    ts.update(lists[0], np.nan_to_num(rewards[0]))  # pending: draw_target flushes it
    ts.t = 9
    ts.locked = True
    v0 = np.zeros((2, D))
    v0[1, 0] = 1.0
    log = as_log(lists[:4] % K, np.zeros((4, L)), v0[[0, 1, 0, 1]])
    draws = draw_target(log, ts, n_draws=40, deterministic=False)
    assert ts.t == 9 and ts.pending == 0
    # the reference: the pure core, un-jitted, on the same state, rounds 9 and 10
    state = ts.state
    for g in range(2):
        ctxs = Context(jnp.asarray(np.repeat(draws.contexts[g][None], 40, 0), jnp.float32),
                       jnp.ones(K, bool))
        key = jax.random.fold_in(ts.key, 9 + g)
        state, sel = ts.core.select_batch(key, state, ctxs)
        np.testing.assert_array_equal(draws.lists[g], np.asarray(sel.items))


@pytest.mark.parametrize("state, t, exc, match", [
    (None, 0, TypeError, "^state:"),
    ("prior", -1, ValueError, "^t:"),
    ("prior", 1.5, TypeError, "^t:"),
    ("prior", True, TypeError, "^t:"),
    ("other", 0, TypeError, "^state:"),  # another core's state (a click baseline's)
])
def test_select_batch_at_refuses_a_bad_state_or_round(env, state, t, exc, match):
    policy = br.RankTS(env.items, w=env.w, seed=0)
    if state == "prior":
        state = policy.state
    elif state == "other":
        state = br.CascadeKLUCB(K, L=L).state
    before = [np.asarray(x) for x in jax.tree_util.tree_leaves(policy.state)]
    with pytest.raises(exc, match=match):
        policy.select_batch_at(state, t, n=2)
    assert policy.t == 0
    for a, b in zip(before, jax.tree_util.tree_leaves(policy.state)):
        np.testing.assert_array_equal(a, np.asarray(b))
