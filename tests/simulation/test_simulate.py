"""simulate: equals the class loop, vmapped runs equal separate runs, NetCDF round-trip."""

import json

import jax
import numpy as np
import numpyro.distributions as dist
import pytest
import xarray as xr

import bayesrank as br
from bayesrank.policies.ts import RankTS
from bayesrank.simulation.simulate import noise_key, policy_seed, simulate


@pytest.fixture(scope="module")
def env():
    return br.RankingEnv.paper(seed=2, K=8, L=3, d=5, w_max=5.0)


def _factories(env):
    return {
        "RankTS": lambda s: RankTS(items=env.items, w=env.w, v0=env.v0, seed=s),
        "RankTS (w=0)": lambda s: RankTS(items=env.items, L=env.L, seed=s),
    }


def test_single_run_equals_python_loop(env):
    """Run 0 of simulate replays the class API's choices (same keys, same noise), for
    known w, w = 0 and w learned as a latent variable."""
    T = 40
    facs = dict(_factories(env), **{"RankTS (latent w)": lambda s: RankTS(
        items=env.items, L=env.L, w=dist.Normal(0.0, 3.0), v0=env.v0, seed=s)})
    ds = simulate(env, facs, T=T, runs=1, seed=11, record_lists=True, progress=False)
    for name, fac in facs.items():
        pol = fac(policy_seed(11, 0))
        nk = noise_key(11, 0)
        regrets, lists = [], []
        for t in range(T):
            it = pol.select()
            r = env.sample(jax.random.fold_in(nk, t), it)
            pol.update(it, np.asarray(r))
            lists.append(it)
            regrets.append(float(env.regret(it)))
        np.testing.assert_array_equal(ds["lists"].sel(policy=name, run=0).values, np.stack(lists))
        np.testing.assert_allclose(ds["regret"].sel(policy=name, run=0).values, regrets, atol=1e-9)


def test_vmapped_runs_equal_separate_runs(env):
    a = simulate(env, _factories(env), T=30, runs=3, seed=4, progress=False)
    b = simulate(env, _factories(env), T=30, runs=3, seed=4, chunk_runs=1, progress=False)
    np.testing.assert_allclose(a["regret"].values, b["regret"].values, atol=1e-10)
    np.testing.assert_allclose(a["reward"].values, b["reward"].values, atol=1e-10)


def test_common_random_numbers_and_regret_sign(env):
    """Every policy meets the same noise: the realised reward of run r, round t is
    env.sample(fold_in(noise_key(seed, r), t), list) for the list that policy showed,
    so two policies showing the same list get the same reward."""
    seed, T = 0, 50
    ds = simulate(env, _factories(env), T=T, runs=2, seed=seed, record_lists=True,
                  progress=False)
    assert (ds["regret"].values >= -1e-9).all()
    for name in ds["policy"].values:
        for r in range(2):
            nk = noise_key(seed, r)
            lists = ds["lists"].sel(policy=name, run=r).values
            want = [float(np.sum(env.sample(jax.random.fold_in(nk, t), lists[t])))
                    for t in range(T)]
            np.testing.assert_allclose(
                ds["reward"].sel(policy=name, run=r).values, want, rtol=1e-12, atol=1e-12
            )


def test_users_from_items_equal_python_loop(env):
    """users="items": round t's user has the item drawn from the user stream as last
    item; the policy is told that v0 and the regret is against that user's best list."""
    from bayesrank.simulation.simulate import USER_STREAM

    seed, T = 5, 25
    facs = _factories(env)
    ds = simulate(env, facs, T=T, runs=1, seed=seed, record_lists=True,
                  users="items", progress=False)
    for name, fac in facs.items():
        pol = fac(policy_seed(seed, 0))
        nk = noise_key(seed, 0)
        for t in range(T):
            kt = jax.random.fold_in(nk, t)
            u = int(jax.random.randint(jax.random.fold_in(kt, USER_STREAM), (), 0, env.K))
            user_env = env.with_v0(env.items[u])
            it = pol.select(v0=np.asarray(env.items[u]))
            r = np.asarray(user_env.sample(kt, it))
            pol.update(it, r, v0=np.asarray(env.items[u]))
            np.testing.assert_array_equal(ds["lists"].sel(policy=name, run=0).values[t], it)
            best = float(user_env.best()[1])
            np.testing.assert_allclose(
                ds["regret"].sel(policy=name, run=0).values[t],
                best - float(user_env.expected_reward(it)), atol=1e-9,
            )


def test_netcdf_round_trip(env, tmp_path):
    ds = simulate(env, _factories(env), T=20, runs=2, seed=1, record_lists=True, progress=False)
    path = tmp_path / "sim.nc"
    ds.to_netcdf(path)
    back = xr.load_dataset(path)
    xr.testing.assert_identical(ds, back)
    cfg = json.loads(back.attrs["config"])
    assert cfg["T"] == 20 and cfg["K"] == env.K
    assert "jax" in json.loads(back.attrs["versions"])


def _good(env):
    return dict(env=env, policies=_factories(env), T=5, runs=1, progress=False)


SIMULATE_BAD = {
    "no policies": ({"policies": {}}, ValueError, "policies: expected a non-empty"),
    "policies a list": ({"policies": [1]}, ValueError, "policies: expected a non-empty"),
    "factory not callable": ({"policies": {"x": 3}}, TypeError, "policies['x']: expected a callable"),
    "T zero": ({"T": 0}, ValueError, "T: expected an integer >= 1, got 0"),
    "T float": ({"T": 2.5}, TypeError, "T: expected an integer, got float"),
    "T bool": ({"T": True}, TypeError, "T: expected an integer, got bool"),
    "T string": ({"T": "5"}, TypeError, "T: expected an integer, got str"),
    "runs negative": ({"runs": -1}, ValueError, "runs: expected an integer >= 1"),
    "runs float": ({"runs": 1.0}, TypeError, "runs: expected an integer, got float"),
    "chunk_runs zero": ({"chunk_runs": 0}, ValueError, "chunk_runs: expected an integer >= 1"),
    "chunk_runs str": ({"chunk_runs": "2"}, TypeError, "chunk_runs: expected an integer"),
    "users unknown": ({"users": "random"}, ValueError, "users: expected one of"),
    "env None": ({"env": None}, TypeError, "env: expected a bayesrank.RankingEnv"),
    "env a dict": ({"env": {}}, TypeError, "env: expected a bayesrank.RankingEnv"),
    "factory returns a non-policy": ({"policies": {"x": lambda s: 3}}, TypeError,
                                     "policies['x']"),
    "other catalogue size": ("other K", ValueError, "K="),
    "seed negative": ({"seed": -1}, ValueError, "seed: expected an integer >= 0, got -1"),
    "seed float": ({"seed": 0.5}, TypeError, "seed: expected an integer >= 0"),
    "workers zero": ({"workers": 0}, ValueError, "workers: expected an integer >= 1"),
    "workers bool": ({"workers": True}, TypeError, "workers: expected an integer, got bool"),
    "workers float": ({"workers": 2.0}, TypeError, "workers: expected an integer, got"),
    "non-policy, in a worker": ({"policies": {"x": lambda s: 3, "y": lambda s: 4},
                                 "workers": 2}, TypeError, "policies['x']"),
}


@pytest.mark.parametrize("case", list(SIMULATE_BAD))
def test_bad_arguments(env, case):
    change, exc, words = SIMULATE_BAD[case]
    kw = _good(env)
    if change == "other K":
        kw["env"] = br.RankingEnv.paper(seed=0, K=5, L=3, d=5)
    else:
        kw.update(change)
    with pytest.raises(exc) as info:
        simulate(**kw)
    assert words in str(info.value)


def test_nuts_policy_runs_run_by_run_and_saves(env, tmp_path):
    """A NUTS-driven RankTS goes through the same simulate API, one run at a time,
    and a saved NUTS policy resumes exactly."""
    from bayesrank.posteriors import BayesGLM

    model = BayesGLM(link="identity", n_max=64, num_warmup=20)
    fac = {"RankTS-NUTS": lambda s: RankTS(model=model, items=env.items, w=env.w, seed=s)}
    assert fac["RankTS-NUTS"](0).vmappable is False
    ds = simulate(env, fac, T=12, runs=2, seed=3, record_lists=True, progress=False)
    for r in range(2):  # the run-by-run path equals the class loop
        pol = fac["RankTS-NUTS"](policy_seed(3, r))
        nk = noise_key(3, r)
        for t in range(12):
            it = pol.select()
            np.testing.assert_array_equal(ds["lists"].sel(run=r).values[0, t], it)
            pol.update(it, np.asarray(env.sample(jax.random.fold_in(nk, t), it)))
    assert np.isfinite(ds["regret"].values).all()

    pol = fac["RankTS-NUTS"](1)
    for t in range(6):
        it = pol.select()
        pol.update(it, np.asarray(env.sample(jax.random.key(t), it)))
    pol.save(tmp_path / "nuts.npz")
    back = RankTS.load(tmp_path / "nuts.npz")
    for t in range(6, 10):
        x, y = pol.select(), back.select()
        np.testing.assert_array_equal(x, y)
        r = np.asarray(env.sample(jax.random.key(t), x))
        pol.update(x, r)
        back.update(y, r)


@pytest.mark.parametrize("chunk_runs", [None, 2])
def test_policies_compiled_ahead_give_what_each_gives_alone(env, monkeypatch,
                                                            chunk_runs):
    """simulate compiles the later policies' programs in a background thread and
    calls those executables (chunks of another size, the last of 3 runs in chunks of
    2, take the ordinary call): the results are those of each policy simulated alone
    (no ahead compilation), and the ahead path was taken."""
    import sys

    sim = sys.modules["bayesrank.simulation.simulate"]  # the module, not the function
    calls = []
    real = sim._compile
    monkeypatch.setattr(sim, "_compile",
                        lambda plan: calls.append(out := real(plan)) or out)
    pols = {
        "ts": lambda s: RankTS(items=env.items, w=env.w, v0=env.v0, seed=s),
        "ucb": lambda s: br.RankUCB(items=env.items, w=env.w, v0=env.v0, seed=s),
    }
    both = simulate(env, pols, T=30, runs=3, seed=5, progress=False,
                    chunk_runs=chunk_runs)
    assert len(calls) == 1 and calls[0] is not None  # the executable was built
    for name, fac in pols.items():
        alone = simulate(env, {name: fac}, T=30, runs=3, seed=5, progress=False,
                         chunk_runs=chunk_runs)
        np.testing.assert_array_equal(both["regret"].sel(policy=name).values,
                                      alone["regret"].sel(policy=name).values)


def test_concurrent_policies_equal_each_alone_largest_first(env, monkeypatch):
    """workers=2 plays two policies at once, each in its own thread: every policy's
    results (regret, reward, lists) are those it gives simulated alone, whatever ran
    beside it, and the smallest program (RankUCB's; RankTS learning w is the
    largest) waits for a free worker."""
    import sys

    sim = sys.modules["bayesrank.simulation.simulate"]
    started = []
    real = sim._compile
    monkeypatch.setattr(sim, "_compile", lambda plan, low=None:
                        started.append(type(plan["first"]).__name__) or real(plan, low))
    pols = {
        "ts": lambda s: RankTS(items=env.items, w=env.w, v0=env.v0, seed=s),
        "ucb": lambda s: br.RankUCB(items=env.items, w=env.w, v0=env.v0, seed=s),
        "latent": lambda s: RankTS(items=env.items, L=env.L, w=dist.Normal(0.0, 5.0),
                                   v0=env.v0, seed=s),
    }
    both = simulate(env, pols, T=20, runs=3, seed=5, progress=False, workers=2,
                    record_lists=True, chunk_runs=2)
    assert started[2] == "RankUCB" and len(started) == 3
    assert list(both["policy"].values) == list(pols)  # rows keep the caller's order
    for name, fac in pols.items():
        alone = simulate(env, {name: fac}, T=20, runs=3, seed=5, progress=False,
                         record_lists=True, chunk_runs=2)
        for var in ("regret", "reward", "lists"):
            np.testing.assert_array_equal(both[var].sel(policy=name).values,
                                          alone[var].sel(policy=name).values)
