"""Compiled once per configuration: policy objects share their programs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest

import bayesrank as br
from bayesrank._static import Part, static_key
from bayesrank.policies.runtime import program
from bayesrank.simulation.play import fold_in_keys, play

STEPS = ("init", "update_select")


def _round(policy, env, t=0):
    items = policy.select()
    policy.update(items, np.asarray(env.sample(jax.random.key(t), items)))
    policy.select()


def _sizes():
    return {s: program.cache_size(s) for s in STEPS}


FAMILIES = {
    "RankTS": lambda env, s: br.RankTS(items=env.items, w=env.w, v0=env.v0, seed=s),
    "RankUCB": lambda env, s: br.RankUCB(items=env.items, w=env.w, v0=env.v0, seed=s),
    "latent-w RankTS": lambda env, s: br.RankTS(
        items=env.items, L=env.L, v0=env.v0, w=dist.Normal(0.0, 5.0), seed=s
    ),
    "GenRankUCB": lambda env, s: br.GenRankUCB(items=env.items, L=env.L, seed=s),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_second_policy_of_one_configuration_compiles_nothing(family):
    make = FAMILIES[family]
    env = br.RankingEnv.paper(seed=1, K=12, L=3, d=4)
    _round(make(env, 0), env)
    before = _sizes()
    # another seed, other item vectors and other weights: the same configuration
    other = br.RankingEnv.paper(seed=2, K=12, L=3, d=4)
    _round(make(other, 7), other, t=1)
    assert _sizes() == before
    # the check can fail: another configuration (L = 2) compiles new programs
    small = br.RankingEnv.paper(seed=2, K=12, L=2, d=4)
    _round(make(small, 7), small)
    assert all(_sizes()[s] > before[s] for s in STEPS)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_first_round_compiles_one_round_program(family):
    """A select with no update pending runs the update-then-select program with
    the update skipped: a new process traces and loads one program per round, not
    two (and the skipped update leaves the state as it was)."""
    env = br.RankingEnv.paper(seed=1, K=11, L=3, d=5)  # a configuration of its own
    before = {s: program.cache_size(s) for s in ("select", "update_select")}
    policy = FAMILIES[family](env, 0)
    state0 = jax.tree_util.tree_map(np.asarray, (policy.state.model, policy.state.est))
    items = policy.select()
    if not policy.core.estimate.random:  # a closed form's select changes nothing
        after = (policy.state.model, policy.state.est)
        for a, b in zip(jax.tree_util.tree_leaves(state0), jax.tree_util.tree_leaves(after)):
            np.testing.assert_array_equal(a, np.asarray(b))
    policy.update(items, np.asarray(env.sample(jax.random.key(0), items)))
    policy.select()
    policy.select()
    assert program.cache_size("select") == before["select"]
    assert program.cache_size("update_select") == before["update_select"] + 1


def _compiles(caplog, build):
    """The programs JAX compiles (or loads) while ``build()`` runs, caches cleared."""
    jax.clear_caches()
    jax.config.update("jax_log_compiles", True)
    try:
        with caplog.at_level("WARNING"):
            caplog.clear()
            build()
    finally:
        jax.config.update("jax_log_compiles", False)
    names = [r.getMessage().split()[1] for r in caplog.records
             if r.getMessage().startswith("Compiling ")]
    return [n.removeprefix("jit(").removesuffix(")") for n in names]  # older jax: bare


def test_building_a_latent_w_policy_runs_a_few_programs_not_dozens_of_ops(caplog):
    """Checking the prior and building the first state are compiled programs (a
    new process loads each from the persistent cache in milliseconds); op by op they
    were 60 small programs, each a cache read."""
    env = br.RankingEnv.paper(seed=1, K=10, L=3, d=4)
    names = _compiles(caplog, lambda: br.RankTS(
        items=env.items, L=3, v0=env.v0, w=dist.TruncatedNormal(0.0, 5.0, low=-4.0),
        seed=0))
    assert {"inside", "quantiles", "init"} <= set(names), names
    assert len(names) <= 20, names  # op by op, before: about 60


def test_shared_programs_give_each_policy_its_own_answer():
    """Sharing a program never shares data: each policy's lists equal those of its
    own core driven through per-instance ``jax.jit`` closures (no shared program)."""
    env_a = br.RankingEnv.paper(seed=3, K=6, L=2, d=3)
    env_b = br.RankingEnv.paper(seed=4, K=6, L=2, d=3)

    def lists(env, seed, shared):
        policy = br.RankTS(items=env.items, w=env.w, v0=env.v0, seed=seed)
        core, ctx = policy.core, policy.context()
        select, update = jax.jit(core.select), jax.jit(core.update)  # closures
        state, out = core.init(), []
        for t in range(12):
            if shared:
                items = policy.select()
            else:
                state, sel = select(jax.random.fold_in(policy.key, t), state, ctx)
                items = np.asarray(sel.items)
            r = np.asarray(env.sample(jax.random.key(t), items))
            if shared:
                policy.update(items, r)
            else:
                state = update(state, items, r, ctx)
            out.append(items)
        return np.stack(out)

    a, b = lists(env_a, 0, True), lists(env_b, 1, True)
    ref_a, ref_b = lists(env_a, 0, False), lists(env_b, 1, False)
    np.testing.assert_array_equal(a, ref_a)
    np.testing.assert_array_equal(b, ref_b)
    assert not np.array_equal(a, b)


class _Affine(Part):
    def __init__(self, scale, shift, prior=None):
        self.scale, self.shift, self.prior = scale, jnp.asarray(shift), prior

    def apply(self, x):
        return self.scale * x + self.shift


def test_parts_are_pytrees_with_static_settings_compared_by_value():
    f = jax.jit(lambda part, x: part.apply(x))
    assert float(f(_Affine(2.0, 1.0), 1.0)) == 3.0
    assert float(f(_Affine(2.0, 5.0), 1.0)) == 7.0  # shift is a leaf: no recompile
    assert f._cache_size() == 1
    assert float(f(_Affine(3.0, 5.0), 1.0)) == 8.0  # scale is static: a new program
    assert f._cache_size() == 2
    leaves = jax.tree_util.tree_leaves(_Affine(2.0, [1.0, 2.0], dist.Normal(0.0, 1.0)))
    assert [leaf.shape for leaf in leaves] == [(2,)]


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (2.0, 2.0, True),
        (2.0, 2, False),  # a float and an int trace differently
        (dist.Normal(0.0, 5.0), dist.Normal(0.0, 5.0), True),
        (dist.Normal(0.0, 5.0), dist.Normal(0.0, 4.0), False),
        (dist.Normal(0.0, 5.0), dist.Cauchy(0.0, 5.0), False),
        (br.links.get_link("logistic"), br.links.get_link("logistic"), True),
        (br.links.get_link("logistic"), br.links.get_link("probit"), False),
        (np.arange(3.0), np.arange(3.0), True),
        (np.arange(3.0), np.arange(3.0) + 1, False),
        ({"a": 1}, {"a": 1}, True),
        (object(), object(), False),  # unknown objects: by identity
    ],
)
def test_static_key_is_equal_exactly_for_equal_values(a, b, equal):
    assert (static_key(a) == static_key(b)) is equal


@pytest.mark.parametrize("family", ["RankTS", "RankUCB", "latent-w RankTS"])
def test_play_equals_the_policy_classes_loop(family):
    """The one round loop (simulate, sweeps, in-loop calibration) against the
    friendly class driven by hand: the same lists, rewards and state."""
    env = br.RankingEnv.paper(seed=5, K=10, L=3, d=3)
    make = FAMILIES[family]
    policy, nkey, T = make(env, 4), jax.random.key(9), 25
    state0 = policy.state

    def record(r):
        return r.items, r.rewards

    state, (items, rewards) = jax.jit(
        lambda s: play(policy.core, env, s, T, keys=fold_in_keys(policy.key, nkey),
                       ctx=policy.context(), record=record)
    )(state0)
    for t in range(T):
        shown = policy.select()
        np.testing.assert_array_equal(shown, items[t])
        r = np.asarray(env.sample(jax.random.fold_in(nkey, t), shown))
        np.testing.assert_allclose(r, rewards[t])
        policy.update(shown, r)
    for got, want in zip(jax.tree_util.tree_leaves(state.model),
                         jax.tree_util.tree_leaves(policy.state.model)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-9,
                                   atol=1e-12)


def test_building_a_nuts_policy_runs_its_start_as_one_program(caplog):
    """NumPyro's initial values, potential and first HMC state are computed as one
    compiled program (``start``) when every latent support is parameter-free; op by
    op they were about 150 small programs, each a cache read in a new process."""
    env = br.RankingEnv.paper(seed=1, K=10, L=3, d=4, link="logistic")
    names = _compiles(caplog, lambda: br.RankTS(
        model=br.BayesGLM("logistic", n_max=50), items=env.items, w=env.w, seed=0))
    assert {"start", "init"} <= set(names), names
    assert len(names) <= 40, names  # op by op, before: about 150


@pytest.mark.parametrize("family", ["RankTS", "RankUCB"])
def test_a_part_rebuilt_from_placeholders_has_the_same_tree(family):
    """JAX rebuilds parts with placeholders in place of the leaves (an ahead-of-time
    compilation's argument infos, not arrays) and compares the trees: the rebuilt
    part must flatten to the tree it came from, or the compiled executable refuses
    the very arguments it was compiled for (as simulate's ahead compilation did)."""
    env = br.RankingEnv.paper(seed=0, K=6, L=3, d=2)
    core = FAMILIES[family](env, 0).core
    leaves, tree = jax.tree_util.tree_flatten(core)
    rebuilt = jax.tree_util.tree_unflatten(tree, [object()] * len(leaves))
    assert jax.tree_util.tree_structure(rebuilt) == tree
    exe = jax.jit(lambda c, x: x + c.items0.sum()).lower(core, 1.0).compile()
    np.testing.assert_allclose(exe(core, 1.0), 1.0 + np.asarray(core.items0).sum(),
                               rtol=1e-6)
