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


# ------------------------------------------- states of another size, big counters
# (issue 58, item 4): every entry that takes a state checks it on the host against
# the policy's own and names ``state``; the round counter is an int64


def _another(env, **kw):
    """A RankTS like the target's but for the changes in kw (items, L, w)."""
    args = dict(items=env.items, w=env.w, seed=0)
    args.update(kw)
    return br.RankTS(**args)


def _grown(env):
    pol = _another(env)
    pol.add_items(np.ones((3, D)))  # capacity 6 -> 12 item rows
    return pol


#: a state of another policy -> (its maker, the error, the message's start)
FOREIGN_STATES = {
    "another L": (lambda env: _another(env, w=np.zeros(L + 1)), ValueError,
                  r"^state: expected the policy's state, field model\.\w+ has shape "
                  rf"\({L + 1}, "),
    "another K": (lambda env: _another(env, items=env.items[:K - 2]), ValueError,
                  r"^state: expected the policy's state, field items has shape "
                  rf"\({K - 2}, {D}\), expected \({K}, {D}\)"),
    "another d": (lambda env: _another(env, items=np.ones((K, D + 1))), ValueError,
                  r"^state: expected the policy's state, field model\.\w+ has shape"),
    "another capacity (after add_items)": (_grown, ValueError,
                                           r"^state: .* field items has shape \(12, "),
    "another core's (a click baseline's)": (lambda env: br.CascadeKLUCB(K, L=L),
                                            TypeError, r"^state: expected a state of "
                                            r"this policy's core .*its field"),
}


def _leaves(policy):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(policy.state)]


def _unchanged(policy, before, t=0):
    assert policy.t == t
    after = _leaves(policy)
    assert len(after) == len(before)
    assert all(np.array_equal(a, b) for a, b in zip(before, after))


@pytest.mark.parametrize("case", FOREIGN_STATES)
@pytest.mark.parametrize("entry", ["select_batch_at", "state ="])
def test_a_state_of_another_policy_is_refused_naming_state(env, case, entry):
    """Checked on the host before any traced code (JAX raised a broadcasting error
    before, or the setter took it): the message names ``state`` and the first field
    that differs; the policy is left exactly as it was."""
    make, exc, match = FOREIGN_STATES[case]
    other = make(env)
    policy = br.RankTS(env.items, w=env.w, seed=0)
    twin = br.RankTS(env.items, w=env.w, seed=0)
    for p in (policy, twin):
        p.update(np.arange(L), np.ones(L))
        p.update(np.arange(1, L + 1), -np.ones(L))  # pending
    with pytest.raises(exc, match=match):
        if entry == "state =":
            policy.state = other.state
        else:
            policy.select_batch_at(other.state, 0, n=2)
    assert policy.pending == 1  # the pending update is kept too
    _unchanged(policy, _leaves(twin))


def _core_lists(policy, state, key, n=None):
    """The pure core's list(s) with the round key ``key`` (the reference)."""
    ctx = policy.context()
    if n is None:
        return np.asarray(policy.core.select(key, state, ctx)[1].items)
    ctxs = Context(jnp.broadcast_to(ctx.v0, (n,) + ctx.v0.shape), ctx.mask)
    return np.asarray(policy.core.select_batch(key, state, ctxs)[1].items)


def _documented_key(key, t):
    """round t's key as documented: fold_in(key, t) for t < 2**32, else folded in
    three steps (block, the unreached index 2**32 - 1, the low 32 bits)."""
    hi, lo = divmod(t, 2**32)
    if hi:
        key = jax.random.fold_in(jax.random.fold_in(key, np.uint32(hi)),
                                 np.uint32(2**32 - 1))
    return jax.random.fold_in(key, np.uint32(lo))


#: counters: below 2**31 the lists are today's (fold_in(key, t)), past it they work
BIG_ROUNDS = [0, 7, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 5, 2**40, 2**63 - 2]


@pytest.mark.parametrize("t", BIG_ROUNDS)
def test_a_round_counter_past_int32_selects_with_its_documented_key(env, t):
    """select, select_batch and select_batch_at at round t draw with the key
    ``fold_in(key, t)`` (t < 2**32) or its documented extension, and select goes on
    to round t + 1 (across a block of 2**32 rounds too); no OverflowError."""
    policy = br.RankTS(env.items, w=env.w, seed=5)
    state, key = policy.state, policy.key
    assert policy.select_batch_at(state, t, n=3)[1].tolist() == \
        _core_lists(policy, state, _documented_key(key, t), 3).tolist()
    policy.t = t
    assert policy.select_batch(n=3).tolist() == \
        _core_lists(policy, state, _documented_key(key, t), 3).tolist()
    assert policy.t == t + 1
    policy.t = t
    assert policy.select().tolist() == \
        _core_lists(policy, state, _documented_key(key, t)).tolist()
    assert policy.select().tolist() == \
        _core_lists(policy, state, _documented_key(key, t + 1)).tolist()
    assert policy.t == t + 2
    post = policy.posterior(0, draws=10)  # its key is derived from t too
    assert np.isfinite(post.posterior.to_dataset()["theta"].values).all()


#: a bad round counter -> (the error, the message's start), for every entry taking one
BAD_ROUNDS = {
    "negative": (-1, ValueError, "^t: expected an integer >= 0, got -1"),
    "past int64": (2**63, ValueError, r"^t: expected a round counter <= 2\*\*63 - 1"),
    "float": (2.0, TypeError, "^t: expected an integer, got float"),
    "bool": (True, TypeError, "^t: expected an integer, got bool"),
    "string": ("3", TypeError, "^t: expected an integer, got str"),
}


@pytest.mark.parametrize("case", BAD_ROUNDS)
@pytest.mark.parametrize("entry", ["t =", "select_batch_at"])
def test_a_bad_round_counter_is_refused_naming_t(env, case, entry):
    bad, exc, match = BAD_ROUNDS[case]
    policy = br.RankTS(env.items, w=env.w, seed=0)
    policy.t = 4
    before = _leaves(policy)
    with pytest.raises(exc, match=match):
        if entry == "t =":
            policy.t = bad
        else:
            policy.select_batch_at(policy.state, bad, n=2)
    _unchanged(policy, before, t=4)


@pytest.mark.parametrize("entry", ["select", "select_batch"])
def test_a_counter_at_its_bound_selects_no_further(env, entry):
    """At 2**63 - 1 (the int64's largest) a select would move the counter past what
    a file can hold: refused naming t, nothing changed; round 2**63 - 1 is still
    drawable through select_batch_at, which moves no counter."""
    policy = br.RankTS(env.items, w=env.w, seed=0)
    policy.t = 2**63 - 1
    before = _leaves(policy)
    with pytest.raises(ValueError, match=r"^t: the round counter is at its bound"):
        policy.select() if entry == "select" else policy.select_batch(n=2)
    _unchanged(policy, before, t=2**63 - 1)
    assert policy.select_batch_at(policy.state, 2**63 - 1, n=2)[1].shape == (2, L)
