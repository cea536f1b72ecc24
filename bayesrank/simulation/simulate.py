"""Vectorised simulation: ``lax.scan`` over rounds, ``vmap`` over runs, chunked.

Every policy plays the same environment with the same noise draws (common random
numbers): run r, round t uses the key ``fold_in(noise_key(seed, r), t)``. Run r's
policy is built by ``factory(policy_seed(seed, r))``; its own draws use
``fold_in(key(policy_seed), t)`` exactly as the class API does, so a simulation with
``runs=1`` equals a plain Python loop of ``select``/``update``.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from bayesrank._progress import progress
from bayesrank._validate import check_int, check_seed
from bayesrank.decoding.backward import pick
from bayesrank.policies.parts.context import Context
from bayesrank.simulation.dataset import results_dataset as _dataset
from bayesrank.simulation.play import fold_in_keys, play

__all__ = ["USERS", "noise_key", "policy_seed", "run_scan", "simulate"]


def policy_seed(seed: int, run: int) -> int:
    """The seed handed to the policy factory for run ``run``.

    Example:
        >>> from bayesrank.simulation import policy_seed
        >>> policy_seed(0, 1) == policy_seed(0, 1) != policy_seed(0, 2)
        True
    """
    return int(np.random.SeedSequence([int(seed), int(run)]).generate_state(1)[0] >> 1)


def noise_key(seed: int, run: int):
    """The environment's noise key of run ``run`` (round t uses ``fold_in(., t)``).

    Every policy simulated with the same seed sees the same noise in run ``run``
    (common random numbers).

    Example:
        >>> import jax, numpy as np
        >>> from bayesrank.simulation import noise_key
        >>> keys = [noise_key(0, run) for run in (1, 2)]
        >>> data = [np.asarray(jax.random.key_data(k)) for k in keys]
        >>> bool((data[0] != data[1]).any())                   # one stream per run
        True
    """
    return jax.random.fold_in(jax.random.fold_in(jax.random.key(seed), 0x5EED), run)


USERS = ("fixed", "items")


def run_scan(core, env, T: int, best_value, record_lists: bool = False, *,
             ctx=None, users: str = "fixed", to_go=None):
    """One run as a pure function ``(state, policy_key, noise_key) -> outputs``.

    The round loop is :func:`bayesrank.simulation.play.play`; this sets its hooks.

    Args:
        core: a policy's functional core; env: the environment.
        T: rounds; best_value: the best expected total reward (``users="fixed"``).
        record_lists: also output the chosen lists.
        ctx: the policy's default :class:`~bayesrank.policies.parts.context.Context` (its
            v0 and mask); default: the env's v0 and every item.
        users: ``"fixed"``: every round's user has the env's v0; ``"items"``: round
            t's user has a uniformly drawn catalogue item as last item (v0), drawn
            from ``fold_in(fold_in(noise_key, t), USER_STREAM)``; the policy is told
            that v0 and the regret compares with that user's best list.
        to_go: ``env.to_go(mask)`` for ``users="items"`` (computed when None).
    """
    if ctx is None:
        ctx = Context(env.v0, jnp.ones(env.K, bool))
    context = None
    if users == "items":
        bw = env.to_go(ctx.mask[: env.K]) if to_go is None else to_go

        def context(t, nk):
            u = jax.random.randint(jax.random.fold_in(nk, USER_STREAM), (), 0, env.K)
            envt = env.with_v0(env.items[u])
            best_items = pick(envt.first_scores(envt.v0), bw, ctx.mask[: env.K])[0]
            c = ctx._replace(v0=envt.v0.astype(ctx.v0.dtype))
            return envt, envt.expected_reward(best_items), c

    def record(r):
        out = (r.best - r.env.expected_reward(r.items), jnp.nansum(r.rewards))
        return out + (r.items,) if record_lists else out

    def run(state, pkey, nkey):
        return play(core, env, state, T, keys=fold_in_keys(pkey, nkey), ctx=ctx,
                    best=best_value, context=context, record=record)[1]

    return run


@functools.partial(jax.jit, static_argnames=("T", "record_lists", "users", "batched"))
def _play_runs(core, env, states, pkeys, nkeys, best, ctx, to_go, *, T, record_lists,
               users, batched):
    """Runs of one policy, compiled once per configuration (core, env and shapes are
    arguments): vmapped over runs when ``batched``."""
    run = run_scan(core, env, T, best, record_lists, ctx=ctx, users=users,
                   to_go=to_go)
    return jax.vmap(run)(states, pkeys, nkeys) if batched else run(states, pkeys, nkeys)


#: The stream of user contexts, folded into each round's noise key.
USER_STREAM = 0x05E2


class _Bar:
    """Progress over one policy's runs. Its first chunk compiles the policy's
    programs (unless this configuration ran before in the process, or its programs are
    in the persistent cache), which can take seconds: the bar says so until it is done,
    so nothing looks hung."""

    def __init__(self, name: str, runs: int, index: int, count: int, **kwargs):
        self.name = f"[{index + 1}/{count}] {name}"
        self.bar = progress(runs, f"{self.name} (compiling, first runs)", unit="run",
                            **kwargs)

    def advance(self, n: int) -> None:
        self.bar.set_description(self.name, refresh=False)
        self.bar.update(n)

    def close(self) -> None:
        self.bar.close()


def _stack(trees):
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *trees)


def simulate(
    env,
    policies: Mapping[str, Callable[[int], object]],
    T: int = 1000,
    runs: int = 10,
    seed: int = 0,
    *,
    chunk_runs: int | None = None,
    record_lists: bool = False,
    progress: bool = True,
    users: str = "fixed",
    workers: int = 1,
) -> xr.Dataset:
    """Play every policy on ``env`` for ``T`` rounds and ``runs`` independent runs.

    Args:
        env: a :class:`bayesrank.RankingEnv`.
        policies: ``{name: factory}``; ``factory(seed)`` returns a policy object
            (``RankTS``, ``RankUCB``, ...). Factories of one name must differ only in
            the seed: run 0's functional core is reused for every run.
        T: rounds per run; runs: independent runs; seed: the master seed.
        chunk_runs: runs vmapped at once (bounds memory); default all, or 1 for
            policies that cannot be vmapped (NUTS), which then run one by one.
        record_lists: also return the chosen lists (policy, run, round, position).
        progress: show a progress bar over each policy's runs (it says when the
            first chunk is compiling).
        users: ``"fixed"`` (every round's user has the env's v0) or ``"items"``
            (each round's user has a uniformly drawn catalogue item as last item;
            the policy is told it, and the regret is against that user's best
            list). ``"items"`` needs pairwise dependence (S = 2).
        workers: policies played at once. 1 (default): one after another, the next
            policy's program compiled in the background while the current one runs,
            so ``seconds`` is each policy's own time. 2 or more: each policy compiles
            and plays in its own thread (XLA runs outside Python's lock), the largest
            program first, so a multi-policy simulation uses the machine's cores
            (``benchmarks/demo.py``); ``seconds`` then overlap. Results are the same
            for every ``workers``.

    Returns:
        ``xarray.Dataset`` with ``regret`` (pseudo-regret per round) and ``reward``
        (realised total reward per round) over (policy, run, round), ``seconds``
        (wall time per policy, compilation included), and the configuration and
        package versions as attributes. ``ds.to_netcdf(path)`` round-trips.

    Example:
        >>> import bayesrank as br
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=4)
        >>> ds = br.simulate(env, {"RankTS": lambda s: br.RankTS(items=env.items,
        ...     w=env.w, seed=s)}, T=50, runs=2, progress=False)
        >>> ds.regret.dims
        ('policy', 'run', 'round')
    """
    if not isinstance(policies, Mapping) or not policies:
        raise ValueError("policies: expected a non-empty {name: factory(seed)} mapping")
    for name, fac in policies.items():
        if not callable(fac):
            raise TypeError(f"policies[{name!r}]: expected a callable seed -> policy")
    seed = check_seed(seed)
    T, runs, workers = (check_int(v, n, low=1) for v, n in
                        ((T, "T"), (runs, "runs"), (workers, "workers")))
    if chunk_runs is not None:
        chunk_runs = check_int(chunk_runs, "chunk_runs", low=1)

    if users not in USERS:
        raise ValueError(f"users: expected one of {USERS}, got {users!r}")
    if env is None or not hasattr(env, "sample") or not hasattr(env, "best"):
        raise TypeError(
            f"env: expected a bayesrank.RankingEnv, got {type(env).__name__}"
        )
    if users == "items" and env.S != 2:
        raise ValueError("users: 'items' needs pairwise dependence (env.S == 2)")
    names = list(policies)
    regret = np.zeros((len(names), runs, T))
    reward = np.zeros((len(names), runs, T))
    lists = np.zeros((len(names), runs, T, env.L), np.int32) if record_lists else None
    seconds = np.zeros(len(names))
    nkeys = jnp.stack([noise_key(seed, r) for r in range(runs)])

    plans = [_plan(policies, name, env, seed, runs, T, chunk_runs, record_lists, users,
                   nkeys) for name in names]
    common = (policies, env, seed, runs, T, chunk_runs, record_lists, users, nkeys,
              progress)
    out = (regret, reward, lists, seconds)
    if workers > 1 and len(names) > 1:
        _play_concurrently(plans, names, common, out, workers)
    else:
        _play_in_turn(plans, names, common, out)

    return _dataset(names, runs, T, env, seed, regret, reward, lists, seconds,
                    record_lists, users)


def _plan(policies, name, env, seed, runs, T, chunk_runs, record_lists, users, nkeys):
    """Run 0's policy and, for a vmappable policy, the first chunk's arguments (to
    compile it ahead); a policy that runs one run at a time is compiled on its first
    call. Anything else is left to :func:`_run_policy`, which refuses it."""
    first = policies[name](policy_seed(seed, 0))
    if not hasattr(first, "core") or not hasattr(first, "context") or not getattr(
            first, "vmappable", True):
        return {"first": first}
    if getattr(first, "L", env.L) != env.L or getattr(first, "K", env.K) != env.K:
        return {"first": first}
    size = min(chunk_runs or runs, runs)
    pols = [first] + [policies[name](policy_seed(seed, r)) for r in range(1, size)]
    args, static = _call_args(first, env, users, T, record_lists, True)
    states = _stack([pl.state for pl in pols])
    pkeys = jnp.stack([pl.key for pl in pols])
    return {"first": first, "pols": pols, "size": size,
            "args": (first.core, env, states, pkeys, nkeys[:size], *args),
            "static": static}


def _lower(plan):
    """The first chunk's program traced and lowered, or None (a failure is left to the
    ordinary call, which compiles and raises as it would have)."""
    try:
        return _play_runs.lower(*plan["args"], **plan["static"])
    except Exception:  # noqa: BLE001 - the ordinary call reports the error
        return None


def _compile(plan, lowered=None):
    """Compile the first chunk's program ahead: the executable, which every chunk of
    that size then calls without tracing again, or None (as for :func:`_lower`)."""
    lowered = _lower(plan) if lowered is None else lowered
    try:
        return None if lowered is None else lowered.compile()
    except Exception:  # noqa: BLE001 - the ordinary call reports the error
        return None


class _Ready:
    """An executable already at hand, read like a future's result."""

    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


def _play_in_turn(plans, names, common, out):
    """Play the policies one after another. The later policies' programs compile in a
    background thread while the earlier ones run: XLA compiles outside the GIL, so on
    2 cores a cold multi-policy simulation overlaps compiling with running; each
    policy then calls its executable directly, without tracing and lowering again."""
    ahead = len(names) > 1
    with ThreadPoolExecutor(max_workers=1) as pool:
        compiled = [pool.submit(_compile, plan) if ahead and p and "args" in plan
                    else None for p, plan in enumerate(plans)]
        for p, name in enumerate(names):
            start = time.perf_counter()
            _run_policy(plans[p], compiled[p], name, p, len(names), *common, *out[:3])
            out[3][p] = time.perf_counter() - start


def _play_concurrently(plans, names, common, out, workers):
    """Play ``workers`` policies at once, each compiling and running in its own thread.

    Every program is lowered first (in this thread: tracing holds the GIL), then the
    pool takes them largest first, by the size of the lowered program, which tracks
    both its compile time and its cost per round; policies that cannot be compiled
    ahead (one run at a time, e.g. NUTS, the slowest kind) go first. The progress bar
    of each thread keeps its own line."""
    lowered = [_lower(plan) if "args" in plan else None for plan in plans]
    size = [len(low.as_text()) if low is not None else -1 for low in lowered]
    order = sorted(range(len(names)), key=lambda p: (size[p] >= 0, -size[p]))
    slots = list(range(workers))
    lock = threading.Lock()

    def job(p):
        with lock:
            slot = slots.pop(0)
        try:
            start = time.perf_counter()
            exe = _compile(plans[p], lowered[p]) if lowered[p] is not None else None
            _run_policy(plans[p], _Ready(exe), names[p], p, len(names), *common,
                        *out[:3], position=slot)
            out[3][p] = time.perf_counter() - start
        finally:
            with lock:
                slots.append(slot)
                slots.sort()

    pool = ThreadPoolExecutor(max_workers=workers)
    futures = [pool.submit(job, p) for p in order]
    wait(futures, return_when=FIRST_EXCEPTION)
    failed = [f for f in futures if f.done() and f.exception() is not None]
    # the first failure (in the policies' order) is raised at once; runs of other
    # policies already under way finish in the background and are discarded
    pool.shutdown(wait=not failed, cancel_futures=True)
    if failed:
        raise min(failed, key=futures.index).exception()


def _call_args(first, env, users, T, record_lists, vm):
    """(best, ctx, to_go) and the static keywords of ``_play_runs`` for a policy."""
    mask = getattr(first, "mask", None)
    if env.S == 2:
        bv = env.best(distinct=getattr(first, "distinct", False), mask=mask)[1]
    elif mask is not None:  # the best list among the items the policy may show
        bv = env.best(mask=mask)[1]
    else:
        bv = env.best_value
    ctx = first.context()
    to_go = env.to_go(ctx.mask[: env.K]) if users == "items" else None
    static = {"T": int(T), "record_lists": bool(record_lists), "users": users,
              "batched": vm}
    return (jnp.asarray(bv), ctx, to_go), static


def _run_policy(plan, compiled, name, p, count, policies, env, seed, runs, T,
                chunk_runs, record_lists, users, nkeys, progress, regret, reward, lists,
                **bar_kwargs):
    """Play one policy's runs into the result arrays (row p)."""
    first = plan["first"]  # built once, by _plan
    if not hasattr(first, "core") or not hasattr(first, "context"):
        raise TypeError(
            f"policies[{name!r}]: the factory must return a bayesrank policy, got "
            f"{type(first).__name__}"
        )
    if getattr(first, "L", env.L) != env.L or getattr(first, "K", env.K) != env.K:
        raise ValueError(
            f"policies[{name!r}]: the policy has K={first.K}, L={first.L} but the "
            f"environment has K={env.K}, L={env.L}"
        )
    vm = getattr(first, "vmappable", True)
    size = chunk_runs or (runs if vm else 1)
    (best, ctx, to_go), static = _call_args(first, env, users, T, record_lists, vm)
    fn = functools.partial(_play_runs, first.core, env, best=best, ctx=ctx,
                           to_go=to_go, **static)
    exe = None if compiled is None else compiled.result()  # compiled ahead
    bar = _Bar(name, runs, p, count, **bar_kwargs) if progress else None
    for c0 in range(0, runs, size):
        idx = range(c0, min(c0 + size, runs))
        if c0 == 0 and "pols" in plan:
            pols = plan["pols"]
        else:
            pols = [first if r == 0 else policies[name](policy_seed(seed, r))
                    for r in idx]
        if vm:
            states = _stack([pl.state for pl in pols])
            pkeys = jnp.stack([pl.key for pl in pols])
            keys = nkeys[c0 : c0 + len(pols)]
            if exe is not None and len(pols) == plan["size"]:
                outs = exe(first.core, env, states, pkeys, keys, best, ctx, to_go)
            else:
                outs = fn(states, pkeys, keys)
            outs = [np.asarray(o) for o in outs]
        else:
            per = [fn(pl.state, pl.key, nkeys[r]) for pl, r in zip(pols, idx)]
            outs = [
                np.stack([np.asarray(o[i]) for o in per])
                for i in range(len(per[0]))
            ]
        sl = slice(c0, c0 + len(pols))
        regret[p, sl], reward[p, sl] = outs[0], outs[1]
        if record_lists:
            lists[p, sl] = outs[2]
        if bar is not None:
            bar.advance(len(pols))
    if bar is not None:
        bar.close()
