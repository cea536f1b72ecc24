"""Does RankUCB behave the same whatever the reward's units? (issue 44, item 2)

The units study's instance (``RankingEnv.paper(seed=0, K=100, L=4, d=10, w_max=10)``,
identity link, noise sd 1) rescaled by c (theta and the noise times c, every reward c
times the original's), played with common random numbers by three RankUCBs (known w,
Lemma 1's width, delta = 0.1):

* ``default``: ``RankUCB(items=..., w=...)``: ``GaussianLinear()`` learns both
  scales, the width is Lemma 1's times the posterior's noise sd;
* ``old default``: ``RankUCB(..., lam=1.0)``: the ridge model and Lemma 1 with noise
  sd 1 and ``||theta|| <= 1`` whatever the units (the default before);
* ``oracle``: ``RankUCB(model=GaussianLinear(prior_scale=c, noise_scale=c))``: the
  ridge estimate and Lemma 1 told the true noise sd c (R = c, ``||theta|| <= c``);
  at c = 1 it is the old default.

Records the cumulative pseudo-regret divided by c at checkpoint rounds (mean and 95 %
CI over runs) and prints a Markdown table. Untimed.

    python scripts/ucb_units.py [--runs 10] [--rounds 100,1000,3000] [--out FILE]
"""

from __future__ import annotations

import argparse
import functools

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank.model import noise
from bayesrank.policies.ucb import RankUCB
from bayesrank.posteriors.conjugate import GaussianLinear
from bayesrank.simulation.env import RankingEnv
from bayesrank.simulation.play import fold_in_keys, play

CS = (0.01, 0.1, 1.0, 10.0, 100.0)
POLICIES = {
    "default": lambda env, c: RankUCB(items=env.items, w=env.w, v0=env.v0),
    "old default": lambda env, c: RankUCB(items=env.items, w=env.w, v0=env.v0,
                                          lam=1.0),
    "oracle": lambda env, c: RankUCB(
        model=GaussianLinear(prior_scale=c, noise_scale=c), items=env.items,
        w=env.w, v0=env.v0),
}


def rescaled(env: RankingEnv, c: float) -> RankingEnv:
    """The instance in other units: theta and the noise sd times c."""
    return RankingEnv(items=env.items, theta=c * np.asarray(env.theta, float), w=env.w,
                      v0=env.v0, link="identity", noise=noise.Gaussian(c))


@functools.partial(jax.jit, static_argnames=("T",))
def segment(core, env, states, nkeys, ctx, best, t0, *, T: int):
    """Rounds t0 .. t0 + T - 1 of every run (vmapped): final states, regret (runs, T).
    RankUCB draws nothing; each run's noise key is its own."""
    def run(state, nk):
        keys = fold_in_keys(jax.random.key(0), nk)
        return play(core, env, state, T, keys=lambda t: keys(t + t0), ctx=ctx,
                    best=best, record=lambda r: r.best - r.env.expected_reward(r.items))

    return jax.vmap(run)(states, nkeys)


def measure(runs: int, rounds: tuple[int, ...], K: int = 100, d: int = 10):
    """regret / c, shape (policy, c, run, round)."""
    base = RankingEnv.paper(seed=0, K=K, L=4, d=d, w_max=10.0)
    nkeys = jnp.stack([jax.random.fold_in(jax.random.key(1), r) for r in range(runs)])
    out = np.zeros((len(POLICIES), len(CS), runs, len(rounds)))
    for ip, make in enumerate(POLICIES.values()):
        for ic, c in enumerate(CS):
            env = rescaled(base, c)
            pol = make(env, c)
            core, ctx = pol.core, pol.context()
            states = jax.tree_util.tree_map(lambda x: jnp.stack([x] * runs), pol.state)
            total, start = np.zeros(runs), 0
            for ir, T in enumerate(rounds):
                states, reg = segment(core, env, states, nkeys, ctx, env.best_value,
                                      start, T=T - start)
                total = total + np.asarray(reg, float).sum(axis=1)
                out[ip, ic, :, ir] = total / c
                start = T
            print(f"  {list(POLICIES)[ip]}, c = {c:g}: regret/c at {rounds} "
                  f"{np.round(out[ip, ic].mean(axis=0), 1).tolist()} (runs: "
                  f"{np.round(out[ip, ic, :, -1], 1).tolist()})", flush=True)
    return out


def table(out: np.ndarray, rounds: tuple[int, ...]) -> str:
    """Markdown: regret / c at each checkpoint (mean [95 % CI]) and the ratio to the
    oracle at the last."""
    lines = []
    for ir, T in enumerate(rounds):
        lines += [f"Regret / c at round {T:,} (mean over {out.shape[2]} runs "
                  "[95 % CI]; ratio to the oracle):", "",
                  "| RankUCB | " + " | ".join(f"c = {c:g}" for c in CS) + " |",
                  "|---|" + "---|" * len(CS)]
        for ip, name in enumerate(POLICIES):
            cells = []
            for ic in range(len(CS)):
                x, o = out[ip, ic, :, ir], out[-1, ic, :, ir]
                h = 1.96 * x.std(ddof=1) / np.sqrt(len(x))
                cells.append(f"{x.mean():,.1f} [{x.mean() - h:,.1f}, {x.mean() + h:,.1f}]"
                             f" ({x.mean() / o.mean():.2f}x)")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--rounds", default="100,1000,3000")
    ap.add_argument("--K", type=int, default=100)
    ap.add_argument("--out", default=None, help="also save the raw array (.npy)")
    args = ap.parse_args()
    rounds = tuple(int(r) for r in args.rounds.split(","))
    out = measure(args.runs, rounds, K=args.K)
    if args.out:
        np.save(args.out, out)
    print(table(out, rounds))


if __name__ == "__main__":
    main()
