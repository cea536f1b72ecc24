"""Benchmark: LaplaceGLM versus BayesGLM (warm NUTS), seconds per update + draw.

Both models are filled with the same synthetic logistic data (L positions, p
features) up to each checkpoint (``--at``, default 200 and 1000 observations per
position), then one round (``update`` of one more impression + ``draw``), jitted as a
policy would run it, is timed (median of ``--repeat`` calls after compilation). The
ratio NUTS / Laplace is printed per checkpoint; both are measured in the same run.

Also printed: ``posterior(l)``-style ``to_datatree`` time for BayesGLM (first call,
which compiles, and a second call) and for LaplaceGLM.

Usage:
    python benchmarks/laplace.py [--L 4] [--p 10] [--n-max 2000] [--at 200 1000]
        [--repeat 30] [--x64]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _common import machine, parse, table, timeit  # noqa: E402


def _data(key, n: int, L: int, p: int):
    kt, kx, ky = jax.random.split(key, 3)
    theta = jax.random.normal(kt, (L, p))
    X = jax.random.normal(kx, (n, L, p)) / np.sqrt(p)
    prob = jax.nn.sigmoid(jnp.einsum("nlp,lp->nl", X, theta))
    Y = (jax.random.uniform(ky, prob.shape) < prob).astype(X.dtype)
    return X, Y


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int, default=4)
    ap.add_argument("--p", type=int, default=10)
    ap.add_argument("--n-max", type=int, default=2000)
    ap.add_argument("--at", type=int, nargs="+", default=[200, 1000])
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--x64", action="store_true")
    args = parse(ap, argv, repeat=3, at=[200])
    if args.x64:
        jax.config.update("jax_enable_x64", True)

    from bayesrank.posteriors import BayesGLM, LaplaceGLM, update_many

    L, p = args.L, args.p
    n_total = max(args.at) + args.repeat + 10
    X, Y = _data(jax.random.key(0), n_total, L, p)
    models = {
        "LaplaceGLM": LaplaceGLM(link="logistic", prior_scale=1.0, n_max=args.n_max),
        "BayesGLM (NUTS)": BayesGLM(link="logistic", prior_scale=1.0, n_max=args.n_max),
    }
    print(f"# LaplaceGLM vs BayesGLM, L={L}, p={p}, n_max={args.n_max}")
    print(f"# {machine()}")
    rows = []
    states = {}
    for name, model in models.items():
        fill = jax.jit(lambda s, X, Y, m=model: update_many(m, s, X, Y))

        @jax.jit
        def round_(key, s, x, y, m=model):
            s = m.update(s, x, y)
            theta, s = m.draw(key, s)
            return theta, s

        state = model.init(L, p)
        done = 0
        for n in sorted(args.at):
            state = fill(state, X[done:n], Y[done:n])
            if name.startswith("BayesGLM"):  # let the chains follow the data
                for k in jax.random.split(jax.random.key(n), 50):
                    state = model.refresh(k, state)
            done = n
            keys = iter(jax.random.split(jax.random.key(n + 1), 10 * args.repeat))
            rows_x = iter(range(n, n + args.repeat + 10))

            def one(state=state):
                i = next(rows_x)
                th, _ = round_(next(keys), state, X[i], Y[i])
                th.block_until_ready()

            t0 = time.perf_counter()
            one()
            compile_s = time.perf_counter() - t0
            sec = timeit(one, repeat=args.repeat, warmup=2)
            rows.append(
                {"model": name, "n": n, "s/round": sec, "first call s": compile_s}
            )
        states[name] = state
    print(table(rows))
    print()
    for n in sorted(args.at):
        lap = next(r for r in rows if r["model"] == "LaplaceGLM" and r["n"] == n)
        nuts = next(r for r in rows if r["model"] != "LaplaceGLM" and r["n"] == n)
        print(
            f"n={n}: NUTS / Laplace seconds per update+draw = "
            f"{nuts['s/round'] / lap['s/round']:.1f}x"
        )
    print()
    for name, model in models.items():
        times = []
        for i in range(2):
            t0 = time.perf_counter()
            model.to_datatree(states[name], 0, key=jax.random.key(i))
            times.append(time.perf_counter() - t0)
        print(
            f"{name}: to_datatree first call {times[0]:.2f} s, second {times[1]:.2f} s"
        )


if __name__ == "__main__":
    main()
