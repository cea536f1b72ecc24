"""In-loop coverage of w's 90 % intervals beyond the paper's instance (issue 58).

RankTS(items=V, L=3, w=Normal(0, 5)) plays the bandit loop on
``RankingEnv.paper(seed=run, K, L=3, d, w_max, noise=Gaussian(sd))`` with rewards
multiplied by c, one factor at a time around the base cell K = 30, d = 6, w_max = 3,
sd = 1, c = 1. Each run draws a fresh instance (theta, items and w ~ U(-w_max, w_max)
from the environment's seed = the run's index) and both policies see the same reward
draws (common random numbers). After the last round, coverage is the share of
(run, position 2..L) whose central 90 % interval
``model.w_quantiles(state, (0.05, 0.95))`` holds the true w (position 1 multiplies
v0 = 0: its interval is the prior's), with its binomial standard error.

Two policies per cell:

* **default**: ``RankTS(items=V, L=3, w=Normal(0, 5))``: theta's prior scale and the
  noise sd learnt (``GaussianLinear()``);
* **oracle**: the same with ``model=GaussianLinear(prior_scale=c * rms(theta),
  noise_scale=c * sd)``: rms(theta) the root mean square of the instance's theta
  coordinates (all positions; sqrt(0.5 / d) for the paper's generator), the noise
  sd the environment's, both in reward units.

The regret column is the ratio of the default's summed pseudo-regret to the oracle's
(``env.regret`` in the environment's units, the same at every c), with a 95 %
bootstrap interval over runs.

    python scripts/latent_w_coverage.py [--runs 20] [--rounds 600] [--out FILE]
    python scripts/latent_w_coverage.py --quick          # 2 runs x 60 rounds
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np
import numpyro.distributions as dist

import bayesrank as br

L = 3
BASE = {"K": 30, "d": 6, "w_max": 3.0, "sd": 1.0, "c": 1.0}
#: one factor at a time around BASE
VARIANTS = (("K", (20, 100)), ("d", (4, 8)), ("w_max", (1.0,)),
            ("sd", (0.3, 3.0)), ("c", (0.01, 100.0)))


def cells() -> list[tuple[str, dict]]:
    """(label, parameters) of every cell: the base, then one change at a time."""
    out = [("base", dict(BASE))]
    for name, values in VARIANTS:
        out += [(f"{name} = {v:g}", {**BASE, name: v}) for v in values]
    return out


def play(env, pol, rounds: int, c: float, key):
    """One run: the list each round and the 90 % interval of w at the end."""
    lists = []
    for t in range(rounds):
        lst = pol.select()
        r = c * np.asarray(env.sample(jax.random.fold_in(key, t), lst))
        pol.update(lst, r)
        lists.append(np.asarray(lst))
    q = np.asarray(pol.model.w_quantiles(pol.state.model, (0.05, 0.95)))
    return np.stack(lists), q  # (T, L), (2, L)


def run_cell(p: dict, runs: int, rounds: int) -> dict:
    """Coverage, interval widths and regret of both policies over ``runs`` runs."""
    hits = {"default": [], "oracle": []}
    width = {"default": [], "oracle": []}
    regret = {"default": [], "oracle": []}
    for run in range(runs):
        env = br.RankingEnv.paper(seed=run, K=p["K"], L=L, d=p["d"], w_max=p["w_max"],
                                  noise=br.noise.Gaussian(p["sd"]))
        w = np.asarray(env.w)
        rms = float(np.sqrt(np.mean(np.asarray(env.theta) ** 2)))
        models = {"default": {},
                  "oracle": {"model": br.GaussianLinear(prior_scale=p["c"] * rms,
                                                        noise_scale=p["c"] * p["sd"])}}
        key = jax.random.key(10_000 + run)  # the reward draws, shared by both
        for label, kw in models.items():
            pol = br.RankTS(items=env.items, L=L, w=dist.Normal(0.0, 5.0), seed=run,
                            **kw)
            lists, q = play(env, pol, rounds, p["c"], key)
            hits[label] += [bool(q[0, l] <= w[l] <= q[1, l]) for l in range(1, L)]
            width[label] += [float(q[1, l] - q[0, l]) for l in range(1, L)]
            regret[label].append(float(np.sum(np.asarray(env.regret(lists)))))
    out = {}
    for label in hits:
        h = np.asarray(hits[label], float)
        out[label] = (h.mean(), np.sqrt(h.mean() * (1 - h.mean()) / h.size),
                      float(np.median(width[label])))
    rd, ro = np.asarray(regret["default"]), np.asarray(regret["oracle"])
    rng = np.random.default_rng(0)
    idx = rng.integers(0, runs, (2000, runs))
    boot = rd[idx].sum(1) / np.maximum(ro[idx].sum(1), 1e-12)
    out["ratio"] = (rd.sum() / ro.sum(), *np.quantile(boot, [0.025, 0.975]))
    return out


def table(rows: list[tuple[str, dict, dict]], runs: int, rounds: int) -> str:
    head = (f"{runs} runs x {rounds} rounds per cell, L = {L}, 90 % intervals of "
            f"w_2..w_{L} after the last round ({runs * (L - 1)} per policy and cell; "
            "coverage +- binomial se; width: the median interval's)\n\n"
            "| cell | K | d | w_max | noise sd | c | default coverage | oracle "
            "coverage | default width | oracle width | regret default / oracle "
            "[95 % CI] |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
    lines = []
    for label, p, r in rows:
        (cd, sd_, wd), (co, so, wo) = r["default"], r["oracle"]
        ratio, lo, hi = r["ratio"]
        lines.append(
            f"| {label} | {p['K']} | {p['d']} | {p['w_max']:g} | {p['sd']:g} | "
            f"{p['c']:g} | {cd:.2f} +- {sd_:.2f} | {co:.2f} +- {so:.2f} | {wd:.2f} | "
            f"{wo:.2f} | {ratio:.2f} [{lo:.2f}, {hi:.2f}] |")
    hits_d = sum(r["default"][0] for _, _, r in rows) / len(rows)
    hits_o = sum(r["oracle"][0] for _, _, r in rows) / len(rows)
    n = len(rows) * runs * (L - 1)
    foot = (f"\nAll cells: default {hits_d:.3f} +- "
            f"{np.sqrt(hits_d * (1 - hits_d) / n):.3f}, oracle {hits_o:.3f} +- "
            f"{np.sqrt(hits_o * (1 - hits_o) / n):.3f} ({n} intervals each)\n")
    return head + "\n".join(lines) + "\n" + foot


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=600)
    ap.add_argument("--quick", action="store_true", help="2 runs x 60 rounds a cell")
    ap.add_argument("--out", default=None, help="write the markdown table here")
    args = ap.parse_args()
    runs, rounds = (2, 60) if args.quick else (args.runs, args.rounds)
    rows = []
    t_all = time.perf_counter()
    for label, p in cells():
        t0 = time.perf_counter()
        r = run_cell(p, runs, rounds)
        rows.append((label, p, r))
        print(f"{label}: default {r['default'][0]:.2f}, oracle {r['oracle'][0]:.2f}, "
              f"regret ratio {r['ratio'][0]:.2f} ({time.perf_counter() - t0:.0f} s)",
              flush=True)
    text = table(rows, runs, rounds)
    text += f"({time.perf_counter() - t_all:.0f} s in all)\n"
    print("\n" + text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
