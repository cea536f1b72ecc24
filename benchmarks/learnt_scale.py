"""Cost of learning the scales: a RankTS round with the default ``GaussianLinear()``
(prior scale and noise learnt, g on a 160-node grid, one eigendecomposition per
position and round) against the fixed-scale ``GaussianLinear(prior_scale=1,
noise_scale=1)``, the same family's round before the learnt default (issue 44: at
most 1.5x at K = 100 and K = 10,000). Known w and latent w (``w=Normal(0, 5)``).

    python benchmarks/learnt_scale.py [--quick]

Both are timed in the same run, alternating, as the median of jitted
select-then-update rounds (the policy's functional core, as ``simulate`` runs it).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax
import numpy as np
import numpyro.distributions as dist
from _common import machine, table, timeit

import bayesrank as br


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

    return one


def main(quick: bool = False) -> None:
    rows = []
    repeat = 60 if quick else 300
    for K in (100, 10_000):
        env = br.RankingEnv.paper(seed=0, K=K, L=4, d=10, w_max=10.0)
        for wname, w in (("known", env.w), ("latent", dist.Normal(0.0, 5.0))):
            learnt = _stepper(br.GaussianLinear(), env, w)
            fixed = _stepper(br.GaussianLinear(prior_scale=1.0, noise_scale=1.0), env, w)
            t_l, t_f = [], []
            for _ in range(3):  # alternate, so drift hits both alike
                t_l.append(timeit(learnt, repeat=repeat))
                t_f.append(timeit(fixed, repeat=repeat))
            tl, tf = np.median(t_l), np.median(t_f)
            rows.append({"K": K, "w": wname, "fixed scales (us)": 1e6 * tf,
                         "learnt scales (us)": 1e6 * tl, "ratio": tl / tf})
    print(f"machine: {machine()}\n")
    print(table(rows))


if __name__ == "__main__":
    main("--quick" in sys.argv)
