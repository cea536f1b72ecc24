"""RankTS speed: per-round cost, a vmap x scan study, and NUTS RankTS.

    python benchmarks/rankts.py [--quick]

Prints markdown tables; numbers go in docs/performance.md with the machine line.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _common import machine, table, timeit  # noqa: E402

import bayesrank as br  # noqa: E402
from bayesrank.simulation.simulate import noise_key, run_scan  # noqa: E402

PAPER_MS = 729.57  # the paper's RankTS ART at K = 100


def per_round(K: int, quick: bool) -> dict:
    env = br.RankingEnv.paper(seed=0, K=K, L=4, d=10, w_max=10.0)
    pol = br.RankTS(items=env.items, w=env.w, v0=env.v0, seed=0)
    core = pol.core
    ctx = pol.context()  # the request's context: the constructor's v0, no mask

    @jax.jit
    def step(state, key):
        state, sel = core.select(key, state, ctx)
        rewards = env.sample(key, sel.items)
        return core.update(state, sel.items, rewards, ctx)

    state = [pol.state]
    key = jax.random.key(1)

    def one():
        state[0] = step(state[0], key)
        jax.block_until_ready(state[0])

    core_s = timeit(one, repeat=200 if not quick else 50)
    r = np.zeros(4)

    def cls():
        it = pol.select()
        pol.update(it, r)

    cls_s = timeit(cls, repeat=200 if not quick else 50)
    paper = {10: 8.02, 100: PAPER_MS}.get(K)
    return {
        "K": K,
        "jitted core select+update (us)": 1e6 * core_s,
        "class API select+update (us)": 1e6 * cls_s,
        "paper ART (ms)": paper if paper else "-",
        "speed-up of core vs paper": paper / (1e3 * core_s) if paper else "-",
    }


def study(runs: int, T: int) -> dict:
    env = br.RankingEnv.paper(seed=0, K=100, L=4, d=10, w_max=10.0)
    pols = [br.RankTS(items=env.items, w=env.w, seed=s) for s in range(runs)]
    run = jax.jit(jax.vmap(run_scan(pols[0].core, env, T, env.best_value)))
    states = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *[p.state for p in pols])
    keys = jnp.stack([p.key for p in pols])
    nkeys = jnp.stack([noise_key(0, r) for r in range(runs)])
    t0 = time.perf_counter()
    compiled = run.lower(states, keys, nkeys).compile()
    t_compile = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = compiled(states, keys, nkeys)
    jax.block_until_ready(out)
    t_run = time.perf_counter() - t0
    final = float(np.asarray(out[0])[:, -100:].mean())
    return {
        "runs x rounds": f"{runs} x {T}",
        "compile (s)": t_compile,
        "run (s)": t_run,
        "us per round per run": 1e6 * t_run / (runs * T),
        "final regret/round": final,
    }


def nuts(T: int, quick: bool) -> list[dict]:
    try:
        from bayesrank.posteriors import BayesGLM
    except ImportError:
        return []
    import arviz as az

    env = br.RankingEnv.paper(seed=0, K=100, L=4, d=10, w_max=1.0, link="logistic")
    model = BayesGLM(link="logistic", n_max=max(T, 16))
    pol = br.RankTS(model=model, items=env.items, w=env.w, seed=0)
    run = jax.jit(run_scan(pol.core, env, T, env.best_value))
    t0 = time.perf_counter()
    compiled = run.lower(pol.state, pol.key, noise_key(0, 0)).compile()
    t_compile = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = compiled(pol.state, pol.key, noise_key(0, 0))
    jax.block_until_ready(out)
    t_run = time.perf_counter() - t0
    rows = [
        {
            "NUTS RankTS (logistic, K=100, L=4, d=10)": f"{T} rounds",
            "compile (s)": t_compile,
            "run (s)": t_run,
            "ms per round": 1e3 * t_run / T,
            "regret/round, first 100": float(np.asarray(out[0])[:100].mean()),
            "regret/round, last 100": float(np.asarray(out[0])[-100:].mean()),
        }
    ]
    # diagnostics of the final posteriors: replay the run through the class API
    if not quick:
        lists = []
        state = pol.state
        nk = noise_key(0, 0)
        sel_fn = jax.jit(pol.core.select)
        upd_fn = jax.jit(pol.core.update)
        ctx = pol.context()
        X_items, R = [], []
        for t in range(T):
            state, sel = sel_fn(jax.random.fold_in(pol.key, t), state, ctx)
            r = env.sample(jax.random.fold_in(nk, t), sel.items)
            state = upd_fn(state, sel.items, r, ctx)
            X_items.append(np.asarray(sel.items))
            R.append(np.asarray(r))
        pol2 = br.RankTS(model=model, items=env.items, w=env.w, seed=0)
        pol2.update(np.stack(X_items), np.stack(R))
        for pos in range(env.L):
            dt = pol2.posterior(pos)
            rh = float(np.max(az.rhat(dt)["theta"].values))
            ess = float(np.min(az.ess(dt, method="bulk")["theta"].values))
            lists.append({"position": pos, "max R-hat": rh, "min bulk ESS": ess})
        rows.append(
            {
                "NUTS RankTS (logistic, K=100, L=4, d=10)": "final posteriors",
                "compile (s)": "",
                "run (s)": "",
                "ms per round": "",
                "regret/round, first 100": "",
                "regret/round, last 100": "; ".join(
                    f"pos {x['position']}: R-hat {x['max R-hat']:.3f}, "
                    f"ESS {x['min bulk ESS']:.0f}"
                    for x in lists
                ),
            }
        )
    return rows


def main() -> None:
    quick = "--quick" in sys.argv
    print(f"machine: {machine()}\n")
    print("### Conjugate RankTS per round (L=4, d=10, after compilation)\n")
    print(table([per_round(K, quick) for K in (10, 100, 1000)]))
    print("\n### Conjugate RankTS, vmap over runs x lax.scan over rounds (K=100)\n")
    sizes = [(100, 1000)] if quick else [(100, 1000), (100, 10_000)]
    print(table([study(r, T) for r, T in sizes]))
    rows = nuts(200 if quick else 1000, quick)
    if rows:
        print("\n### NUTS RankTS\n")
        print(table(rows))


if __name__ == "__main__":
    main()
