"""Benchmark: warm-started NUTS per round versus calling ``MCMC.run`` every round.

Measures, for BayesGLM (logistic, L positions, d features, n_max buffer):

* compile time of one round (update + draw) and of a scan over ``--rounds`` rounds;
* time per round after compilation, called from Python (jitted round, one call each);
* a ``lax.scan`` over ``--rounds`` rounds of update + draw on synthetic data;
* the same scan vmapped over ``--runs`` independent runs;
* the L positions' chains in turn (``lax.map``, the CPU default) against batched
  (``vmap``): compile time and time per round of the jitted round;
* the naive alternative: a fresh ``numpyro.infer.MCMC.run`` per position per round
  (warm-up ``--mcmc-warmup``, 5 draws), and a re-run from ``post_warmup_state``
  (no warm-up), for ``--mcmc-rounds`` rounds each.

Usage:
    python benchmarks/nuts.py [--L 4] [--d 10] [--n-max 2000] [--rounds 1000]
        [--x64] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import parse  # noqa: E402


def _synthetic(key, rounds: int, L: int, d: int):
    kt, kx, ky = jax.random.split(key, 3)
    theta = jax.random.normal(kt, (L, d))
    X = jax.random.normal(kx, (rounds, L, d)) / np.sqrt(d)
    p = jax.nn.sigmoid(jnp.einsum("tld,ld->tl", X, theta))
    Y = (jax.random.uniform(ky, p.shape) < p).astype(X.dtype)
    return X, Y


def _timed(fn, *args, repeat: int = 1):
    best = np.inf
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t0)
    return out, best


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int, default=4)
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--n-max", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--steps-per-round", type=int, default=5)
    ap.add_argument("--mcmc-rounds", type=int, default=3)
    ap.add_argument("--mcmc-warmup", type=int, default=200)
    ap.add_argument("--x64", action="store_true")
    ap.add_argument("--json", default=None)
    args = parse(ap, argv, rounds=100, runs=2, mcmc_rounds=2, mcmc_warmup=50)
    if args.x64:
        jax.config.update("jax_enable_x64", True)

    from numpyro.infer import MCMC, NUTS

    from bayesrank.posteriors.nuts import BayesGLM

    L, d, T = args.L, args.d, args.rounds
    model = BayesGLM(
        link="logistic",
        n_max=args.n_max,
        num_warmup=200,
        steps_per_round=args.steps_per_round,
    )
    X, Y = _synthetic(jax.random.key(0), T, L, d)
    keys = jax.random.split(jax.random.key(1), T)
    res: dict = {
        "device": str(jax.devices()[0]),
        "machine": platform.processor() or platform.machine(),
        "x64": bool(args.x64),
        "L": L,
        "d": d,
        "n_max": args.n_max,
        "steps_per_round": args.steps_per_round,
    }

    # ---- one round, jitted, called from Python
    def round_fn(state, key, x, y):
        state = model.update(state, x, y)
        theta, state = model.draw(key, state)
        return theta, state

    state0 = model.init(L, d)
    t0 = time.perf_counter()
    step = jax.jit(round_fn).lower(state0, keys[0], X[0], Y[0]).compile()
    res["round_compile_s"] = time.perf_counter() - t0
    state = state0
    n_loop = min(T, 300)
    for t in range(20):  # settle (warm-up transitions are no cheaper)
        _, state = step(state, keys[t], X[t], Y[t])
    jax.block_until_ready(state)
    t0 = time.perf_counter()
    for t in range(20, n_loop):
        _, state = step(state, keys[t], X[t], Y[t])
    jax.block_until_ready(state)
    res["round_ms_python_loop"] = 1e3 * (time.perf_counter() - t0) / (n_loop - 20)

    # ---- a lax.scan over T rounds
    def run(state, keys, X, Y):
        def body(s, kxy):
            th, s = round_fn(s, *kxy)
            return s, th

        return jax.lax.scan(body, state, (keys, X, Y))

    t0 = time.perf_counter()
    scan = jax.jit(run).lower(state0, keys, X, Y).compile()
    res["scan_compile_s"] = time.perf_counter() - t0
    (final, _), res["scan_s"] = _timed(scan, state0, keys, X, Y, repeat=2)
    res["scan_rounds"] = T
    res["scan_ms_per_round"] = 1e3 * res["scan_s"] / T
    diag = model.diagnostics(final)
    res["final_accept_rate"] = np.asarray(diag["accept_rate"]).round(3).tolist()
    res["final_divergences"] = np.asarray(diag["divergences"]).tolist()
    res["final_mean_steps"] = np.asarray(diag["mean_steps"]).round(2).tolist()

    # ---- vmapped over runs
    if args.runs > 1:
        R = args.runs
        rkeys = jax.vmap(lambda k: jax.random.split(k, T))(
            jax.random.split(jax.random.key(2), R)
        )
        states = jax.vmap(lambda _: model.init(L, d))(jnp.arange(R))
        vrun = jax.jit(jax.vmap(run, in_axes=(0, 0, None, None)))
        t0 = time.perf_counter()
        vcomp = vrun.lower(states, rkeys, X, Y).compile()
        res["vmap_compile_s"] = time.perf_counter() - t0
        _, res["vmap_scan_s"] = _timed(vcomp, states, rkeys, X, Y)
        res["vmap_runs"] = R

    # ---- the L chains in turn (lax.map) against batched (vmap), same run
    from bayesrank.posteriors.nuts import kernel as nuts_module
    for name, in_turn in (("in_turn", True), ("batched", False)):
        nuts_module.POSITIONS_IN_TURN = in_turn
        jax.clear_caches()  # the setting is read at trace time: trace afresh
        t0 = time.perf_counter()
        one = jax.jit(lambda s, k, x, y: round_fn(s, k, x, y)).lower(
            state0, keys[0], X[0], Y[0]).compile()
        res[f"positions_{name}_compile_s"] = time.perf_counter() - t0
        state = state0
        for t in range(20):
            _, state = one(state, keys[t], X[t], Y[t])
        jax.block_until_ready(state)
        t0 = time.perf_counter()
        for t in range(20, n_loop):
            _, state = one(state, keys[t], X[t], Y[t])
        jax.block_until_ready(state)
        res[f"positions_{name}_round_ms"] = 1e3 * (time.perf_counter() - t0) / (n_loop - 20)
    nuts_module.POSITIONS_IN_TURN = None
    res["positions_batched_over_in_turn"] = (
        res["positions_batched_round_ms"] / res["positions_in_turn_round_ms"])

    # ---- naive: MCMC.run per position per round (data grow -> new shapes)
    glm = model.model
    n0 = 50
    fresh, reuse = [], []
    mcmcs = [None] * L
    for r in range(args.mcmc_rounds):
        n = n0 + r
        t_fresh = 0.0
        t_reuse = 0.0
        for pos in range(L):
            x, y = X[:n, pos], Y[:n, pos]
            mc = MCMC(
                NUTS(glm, max_tree_depth=6),
                num_warmup=args.mcmc_warmup,
                num_samples=5,
                progress_bar=False,
                jit_model_args=True,
            )
            t0 = time.perf_counter()
            mc.run(jax.random.key(r * L + pos), x, y)
            jax.block_until_ready(mc.get_samples())
            t_fresh += time.perf_counter() - t0
            if mcmcs[pos] is not None:
                prev = mcmcs[pos]
                prev.post_warmup_state = prev.last_state
                t0 = time.perf_counter()
                prev.run(prev.post_warmup_state.rng_key, x, y)
                jax.block_until_ready(prev.get_samples())
                t_reuse += time.perf_counter() - t0
            mcmcs[pos] = mc
        fresh.append(t_fresh)
        if r > 0:
            reuse.append(t_reuse)
    res["mcmc_run_per_round_s"] = [round(v, 3) for v in fresh]
    res["mcmc_rerun_post_warmup_per_round_s"] = [round(v, 3) for v in reuse]

    for k, v in res.items():
        print(f"{k:36s} {v}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=2)
    return res


if __name__ == "__main__":
    main()
