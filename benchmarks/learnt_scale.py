"""Cost of learning the scales: a RankTS round with the default ``GaussianLinear()``
(prior scale and noise learnt, g on a 160-node grid, one Householder reduction per
position and round) against the fixed-scale ``GaussianLinear(prior_scale=1,
noise_scale=1)``, the same family's round before the learnt default (issue 44: at
most 1.5x at K = 100 and K = 10,000). Known w and latent w (``w=Normal(0, 5)``).

    python benchmarks/learnt_scale.py [--quick]

Both are timed in the same run, in adjacent pairs (the ratio is the median of the
pairs' ratios, with its interquartile range), two ways: blocks of 20 single jitted
select-then-update calls (one round as a serving loop pays it, dispatch included), and
200 rounds scanned inside one compiled program (as ``simulate`` runs them: the
model's arithmetic alone, where the fixed model's O(p^2) round is hardest to match).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from _common import machine, table, timeit

import bayesrank as br
from bayesrank.posteriors.hyperprior import GRID, grid_index
from bayesrank.posteriors.conjugate.scale_grid import tridiagonal, tridiagonal_loglik
from bayesrank.posteriors.conjugate.variates import uniforms_normals_gamma


def _stepper(model, env, w):
    pol = br.RankTS(model=model, items=env.items, w=w, L=env.L, v0=env.v0, seed=0)
    core, ctx = pol.core, pol.context()

    @jax.jit
    def step(state, key):
        state, sel = core.select(key, state, ctx)
        return core.update(state, sel.items, env.sample(key, sel.items), ctx)

    state = [pol.state]
    for t in range(20):  # some data in the posterior first
        state[0] = step(state[0], jax.random.key(t))
    key = jax.random.key(99)

    def one():
        state[0] = step(state[0], key)
        jax.block_until_ready(state[0])

    keys = jax.random.split(jax.random.key(7), SCANNED)
    scanned = jax.jit(lambda s, ks: jax.lax.scan(lambda c, k: (step(c, k), None), s, ks)[0])
    start = state[0]
    jax.block_until_ready(scanned(start, keys))

    def rounds():
        jax.block_until_ready(scanned(start, keys))

    return one, rounds


#: rounds per compiled scan
SCANNED = 200


def _in_loop(op, x, n=200):
    """Seconds per call of ``op(x)`` inside one compiled loop (each call depends on
    the last, so nothing is hoisted or dispatched)."""
    @jax.jit
    def run(x):
        def body(i, acc):
            return acc + 1e-9 * op(x + acc * 1e-9).reshape(-1)[0]
        return jax.lax.fori_loop(0, n, body, jnp.zeros((), x.dtype))
    jax.block_until_ready(run(x))
    return timeit(lambda: jax.block_until_ready(run(x)), repeat=20) / n


def _separately(key, a):
    k_g, k_s, k_e = jax.random.split(key, 3)
    u = jax.random.uniform(k_g, a.shape, a.dtype)
    z = jax.random.normal(k_e, (*a.shape, 10), a.dtype)
    return u + jax.random.gamma(k_s, a) + z[:, 0]


def _one_call(key, a):
    u, z, gam = uniforms_normals_gamma(key, a, n_uniform=1, n_normal=10)
    return u[:, 0] + gam + z[:, 0]


def parts() -> list[dict]:
    """The draw's building blocks for L = 4 positions of p = 10, in one loop."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4, 30, 10))
    S = jnp.asarray(np.einsum("lni,lnj->lij", X, X), jnp.float32)
    u, m0 = jnp.ones((4, 10), jnp.float32), jnp.zeros(10, jnp.float32)
    logw = jnp.log(jnp.full((4, GRID), 1.0 / GRID, jnp.float32))
    key = jax.random.key(0)
    log_g = jnp.asarray(br.GaussianLinear().log_g, jnp.float32)

    def recurrence(M):
        tri = jax.vmap(lambda a, b: tridiagonal(a, b, 0.0, m0))(M, u)
        return jax.vmap(lambda t: tridiagonal_loglik(t, 30.0, log_g, True)[1])(tri)
    ops = {
        "eigh (the summaries' route)": (lambda M: jnp.linalg.eigh(M)[0], S),
        "LAPACK sytrd (jax.lax.linalg.tridiagonal)":
            (lambda M: jax.lax.linalg.tridiagonal(M)[1], S),
        "fused Householder (scale_grid.tridiagonal)":
            (lambda M: jax.vmap(lambda a, b: tridiagonal(a, b, 0.0, m0).a)(M, u), S),
        "fused Householder + LDL^T recurrence at the 160 nodes": (recurrence, S),
        "Cholesky": (jnp.linalg.cholesky, S),
        "gamma draw (the noise's precision)":
            (lambda M: jax.random.gamma(key, M[:, 0, 0] + 15.0), S),
        "jax.random: split, uniform, gamma, p normals (a draw's randomness before)":
            (lambda M: _separately(key, M[:, 0, 0] + 15.0), S),
        "variates.uniforms_normals_gamma (the same from one call)":
            (lambda M: _one_call(key, M[:, 0, 0] + 15.0), S),
        "categorical over 160 nodes (Gumbel)":
            (lambda w: jax.random.categorical(key, w, -1).astype(w.dtype), logw),
        "grid_index over 160 nodes": (lambda w: grid_index(key, w).astype(w.dtype), logw),
    }
    return [{"operation (4 positions)": name, "us": 1e6 * _in_loop(f, x)}
            for name, (f, x) in ops.items()]


def _paired(learnt, fixed, pairs: int, block: int) -> tuple[float, float, float, float]:
    """Median seconds of ``learnt()`` and ``fixed()`` and the median and the quartiles'
    spread of their ratio, timed in adjacent pairs (``block`` calls each, the order
    swapped every pair): this shared machine's speed drifts by up to 2x between
    minutes, and a pair's ratio sees one speed."""
    for fn in (learnt, fixed):
        fn()
    t_l, t_f = [], []
    for i in range(pairs):
        order = (learnt, fixed) if i % 2 == 0 else (fixed, learnt)
        times = {}
        for fn in order:
            t0 = time.perf_counter()
            for _ in range(block):
                fn()
            times[fn] = (time.perf_counter() - t0) / block
        t_l.append(times[learnt])
        t_f.append(times[fixed])
    ratio = np.asarray(t_l) / np.asarray(t_f)
    q1, q3 = np.percentile(ratio, [25, 75])
    return float(np.median(t_l)), float(np.median(t_f)), float(np.median(ratio)), \
        float(q3 - q1)


def main(quick: bool = False) -> None:
    rows = []
    pairs = 20 if quick else 60
    for K in (100, 10_000):
        env = br.RankingEnv.paper(seed=0, K=K, L=4, d=10, w_max=10.0)
        for wname, w in (("known", env.w), ("latent", dist.Normal(0.0, 5.0))):
            learnt = _stepper(br.GaussianLinear(), env, w)
            fixed = _stepper(br.GaussianLinear(prior_scale=1.0, noise_scale=1.0), env, w)
            tl, tf, cr, ciqr = _paired(learnt[0], fixed[0], pairs, 20)
            sl, sf, sr, siqr = _paired(learnt[1], fixed[1], pairs, 1)
            rows.append({"K": K, "w": wname, "call: fixed (us)": 1e6 * tf,
                         "call: learnt (us)": 1e6 * tl, "call ratio": cr,
                         "(IQR)": ciqr,
                         "scanned: fixed (us)": 1e6 * sf / SCANNED,
                         "scanned: learnt (us)": 1e6 * sl / SCANNED,
                         "scanned ratio": sr, "(IQR) ": siqr})
    print(f"machine: {machine()}\n")
    print(table(rows))
    print()
    print(table(parts()))


if __name__ == "__main__":
    main("--quick" in sys.argv)
