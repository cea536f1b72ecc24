"""The cost of learning w: RankTS with a prior on w against RankTS given w.

    python benchmarks/latent_w.py [--quick]

Rows (conjugate model, identity link, L = 4, d = 10):

* one round through the class API (``select()`` then ``update()``) at K = 100:
  ``RankTS(w=Normal(0, 5))`` against ``RankTS(w=env.w)``, timed in turns in one
  process (target: at most 2x);
* one ``select()`` at K = 100,000 with w latent (target: at most 100 ms), beside the
  known-w select;
* ``simulate`` (runs vmapped, rounds scanned): seconds per round-run of the latent-w
  policy against the known-w one, after compilation, in the same run (target: at most
  2x).

Every ratio is against a reference measured in the same run. Prints markdown tables.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
import numpy as np  # noqa: E402
import numpyro.distributions as dist  # noqa: E402
from _common import interleaved, machine, parse, table, timeit  # noqa: E402

import bayesrank as br  # noqa: E402


def _played(pol, env, rounds: int):
    for t in range(rounds):
        it = pol.select()
        pol.update(it, np.asarray(env.sample(jax.random.key(t), it)))
    return pol


def round_cost(K: int, rounds: int, number: int) -> list[dict]:
    env = br.RankingEnv.paper(seed=0, K=K, L=4, d=10, w_max=10.0)
    rewards = np.asarray(env.sample(jax.random.key(0), np.arange(4)))
    pols = {
        "known w": _played(br.RankTS(items=env.items, w=env.w, seed=0), env, 50),
        "latent w": _played(br.RankTS(items=env.items, L=4, w=dist.Normal(0.0, 5.0),
                                      seed=0), env, 50),
    }

    def one(pol):
        def fn():
            it = pol.select()
            pol.update(it, rewards)
        return fn

    got = interleaved({n: one(p) for n, p in pols.items()}, rounds=rounds,
                      number=number, warmup=20)
    ref = got["known w"]
    return [{"K": K, "policy": n, "ms per round": 1e3 * s, "ratio to known w": s / ref}
            for n, s in got.items()]


def big_select(K: int, repeat: int) -> list[dict]:
    env = br.RankingEnv.paper(seed=0, K=K, L=4, d=10, w_max=10.0)
    rows = []
    ref = None
    for name, pol in (
        ("known w", br.RankTS(items=env.items, w=env.w, seed=0)),
        ("latent w", br.RankTS(items=env.items, L=4, w=dist.Normal(0.0, 5.0), seed=0)),
    ):
        _played(pol, env, 20)
        s = timeit(lambda p=pol: np.asarray(p.select()), repeat=repeat, warmup=2)
        ref = s if ref is None else ref
        rows.append({"K": K, "policy": name, "ms per select": 1e3 * s,
                     "ratio to known w": s / ref})
    return rows


def simulate_cost(T: int, runs: int) -> list[dict]:
    """simulate's inner loop (vmap over runs of a scan over rounds), compiled once and
    timed on its second call; and the whole ``br.simulate`` call (compile included)."""
    import jax.numpy as jnp

    from bayesrank.simulation.simulate import noise_key, run_scan

    env = br.RankingEnv.paper(seed=0, K=100, L=4, d=10, w_max=10.0)
    pols = {
        "known w": lambda s: br.RankTS(items=env.items, w=env.w, seed=s),
        "latent w": lambda s: br.RankTS(items=env.items, L=4, w=dist.Normal(0.0, 5.0),
                                        seed=s),
    }
    rows, ref = [], None
    for name, fac in pols.items():
        t0 = time.perf_counter()
        br.simulate(env, {name: fac}, T=T, runs=runs, progress=False)
        whole = time.perf_counter() - t0
        made = [fac(r) for r in range(runs)]
        run = run_scan(made[0].core, env, T, jnp.asarray(env.best_value),
                       ctx=made[0].context())
        fn = jax.jit(jax.vmap(run))
        states = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *[m.state for m in made])
        pkeys = jnp.stack([m.key for m in made])
        nkeys = jnp.stack([noise_key(1, r) for r in range(runs)])
        jax.block_until_ready(fn(states, pkeys, nkeys))
        t0 = time.perf_counter()
        jax.block_until_ready(fn(states, pkeys, nkeys))
        s = (time.perf_counter() - t0) / (T * runs)
        ref = s if ref is None else ref
        rows.append({"policy": name, "us per round-run (compiled)": 1e6 * s,
                     "ratio to known w": s / ref,
                     "br.simulate seconds (incl. compile)": whole})
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--number", type=int, default=40)
    ap.add_argument("--big-K", type=int, default=100_000)
    ap.add_argument("--T", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=50)
    args = parse(ap, argv, rounds=3, number=10, big_K=10_000, T=100, runs=4)
    jax.config.update("jax_enable_x64", True)
    print(f"# Learning w: cost against known w\n\nMachine: {machine()}\n")
    print("## One round (select + update), class API\n")
    print(table(round_cost(100, args.rounds, args.number)) + "\n")
    print(f"## One select at K = {args.big_K:,}\n")
    print(table(big_select(args.big_K, repeat=5)) + "\n")
    print(f"## simulate, {args.runs} runs x {args.T} rounds (after compilation)\n")
    print(table(simulate_cost(args.T, args.runs)))


if __name__ == "__main__":
    main()
