"""GLM RankTS: Laplace-approximate Thompson sampling against NUTS Thompson sampling.

    python benchmarks/glm_rankts.py [--quick] [--T 1000] [--runs 3]

Three parts, all measured in the same run (so the ratios compare like with like):

1. Regret and cost on a logistic paper instance (``RankingEnv.paper(seed=0, K=100,
   L=4, d=10, w_max=1.0, link="logistic")``, the instance of the other logistic
   benchmarks): RankTS with ``LaplaceGLM(link="logistic", prior_scale=1.0, n_max=T)``
   against RankTS with ``BayesGLM(link="logistic", n_max=T)`` (NUTS), both through
   ``br.simulate`` (T rounds, ``runs`` runs; NUTS runs one by one). Reported: mean
   regret per round over the last 100 rounds, total regret, the ratio Laplace / NUTS
   (issue target: <= 1.5), and seconds per round (``simulate``'s wall time divided by
   T * runs), with and without compilation. Compilation time is read from JAX's own
   monitoring events (tracing, lowering, backend compile) fired during ``simulate``;
   the union of their time spans is subtracted. The ratio NUTS / Laplace seconds per
   round is the issue's ">= 10x fewer seconds per round". A short Gaussian
   ``simulate`` runs first, so that the process's one-time costs fall on neither.
   Wall time is the whole ``simulate`` call, policy construction included.
2. Seconds per round through the class API (``policy.select()`` then
   ``policy.update(items, rewards)``, median after warm-up) for RankTS with
   ``GaussianLinear``, ``LaplaceGLM(logistic)`` and ``BayesGLM(logistic)`` at K = 100
   and K = 1,000 (L = 4, d = 10, n_max = T for the buffered models).
3. ``policy.posterior(l)`` wall time after some rounds: BayesGLM (first call, which
   compiles the fresh chains, and a second call on another position; issue target:
   under 2 s after the first call) and LaplaceGLM.

Prints markdown tables; numbers go in docs/performance.md with the machine line.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
import numpy as np  # noqa: E402
from _common import machine, table, timeit  # noqa: E402

import bayesrank as br  # noqa: E402

W_MAX = 1.0  # the logistic instances of benchmarks/rankts.py and the tests
COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


class CompileClock:
    """Seconds spent compiling (tracing + lowering + XLA) while the block runs.

    JAX reports each phase as a monitoring event right after it ends; nested traces
    overlap, so the union of the spans [end - duration, end] is summed.
    """

    def __enter__(self):
        self.spans: list[tuple[float, float]] = []

        def listen(event, duration_secs, **kwargs):
            if event in COMPILE_EVENTS:
                end = time.perf_counter()
                self.spans.append((end - float(duration_secs), end))

        self._listen = listen
        jax.monitoring.register_event_duration_secs_listener(listen)
        return self

    def __exit__(self, *exc):
        jax.monitoring.unregister_event_duration_listener(self._listen)
        return False

    @property
    def seconds(self) -> float:
        total, cur_a, cur_b = 0.0, None, None
        for a, b in sorted(self.spans):
            if cur_b is None or a > cur_b:
                if cur_b is not None:
                    total += cur_b - cur_a
                cur_a, cur_b = a, b
            else:
                cur_b = max(cur_b, b)
        if cur_b is not None:
            total += cur_b - cur_a
        return total


def logistic_env(K: int):
    return br.RankingEnv.paper(seed=0, K=K, L=4, d=10, w_max=W_MAX, link="logistic")


def models(T: int) -> dict:
    return {
        "Gaussian": lambda: br.GaussianLinear(),
        "Laplace": lambda: br.LaplaceGLM(link="logistic", prior_scale=1.0, n_max=T),
        # the exact Hessian at the MAP in float32 too (hessian_tol's default there is
        # 1e-4: the last small Newton step is taken without a fresh Hessian)
        "Laplace, exact Hessian": lambda: br.LaplaceGLM(
            link="logistic", prior_scale=1.0, n_max=T, hessian_tol=0.0
        ),
        "NUTS": lambda: br.BayesGLM(link="logistic", n_max=T),
    }


# ------------------------------------------------------------------ 1. regret
def regret_and_cost(T: int, runs: int) -> tuple[list[dict], list[str]]:
    env = logistic_env(100)
    make = models(T)
    rows, per_round = [], {}
    # one-time costs of the process's first simulate (about 0.8 s here, not compile
    # events) would otherwise fall on whichever policy runs first
    br.simulate(env, {"warm-up": lambda s: br.RankTS(items=env.items, w=env.w, seed=s)},
                T=5, runs=1, seed=0, progress=False)
    for name in ("Laplace", "Laplace, exact Hessian", "NUTS"):
        def fac(s, name=name):
            return br.RankTS(model=make[name](), items=env.items, w=env.w, seed=s)

        t0 = time.perf_counter()
        with CompileClock() as clock:
            ds = br.simulate(env, {name: fac}, T=T, runs=runs, seed=0, progress=False)
        wall = time.perf_counter() - t0
        reg = ds.regret.sel(policy=name).values  # (runs, T)
        # the whole simulate call (ds.seconds starts a little later, after simulate
        # has made its noise keys, whose compilation the clock does see)
        sec = wall
        comp = clock.seconds
        per_round[name] = ((sec - comp) / (T * runs), sec / (T * runs))
        rows.append(
            {
                "RankTS model": name,
                "regret/round, first 100": float(reg[:, :100].mean()),
                "regret/round, last 100": float(reg[:, -100:].mean()),
                "total regret (mean over runs)": float(reg.sum(axis=1).mean()),
                "sd of total over runs": float(reg.sum(axis=1).std(ddof=1))
                if runs > 1
                else "-",
                "simulate wall (s)": sec,
                "of which compiling (s)": comp,
                "ms/round incl. compile": 1e3 * sec / (T * runs),
                "ms/round excl. compile": 1e3 * (sec - comp) / (T * runs),
            }
        )
    lap, _, nuts = rows
    exact = per_round["Laplace, exact Hessian"]
    lines = [
        "Laplace / NUTS regret, last 100 rounds: "
        f"{lap['regret/round, last 100'] / nuts['regret/round, last 100']:.2f}x "
        "(target <= 1.5x)",
        "Laplace / NUTS total regret: "
        f"{lap['total regret (mean over runs)'] / nuts['total regret (mean over runs)']:.2f}x",
        "NUTS / Laplace seconds per round, compile included: "
        f"{per_round['NUTS'][1] / per_round['Laplace'][1]:.1f}x (target >= 10x)",
        "NUTS / Laplace seconds per round, compile excluded: "
        f"{per_round['NUTS'][0] / per_round['Laplace'][0]:.1f}x (target >= 10x)",
        "NUTS / Laplace with the exact Hessian (hessian_tol=0), compile excluded: "
        f"{per_round['NUTS'][0] / exact[0]:.1f}x",
    ]
    return rows, lines


# ------------------------------------------------------------ 2. class API
def class_api(K: int, T: int, quick: bool) -> dict:
    env = logistic_env(K)
    rng = np.random.default_rng(0)
    rewards = (rng.random((4096, env.L)) < 0.5).astype(float)
    row = {"K": K}
    for name, make in models(T).items():
        pol = br.RankTS(model=make(), items=env.items, w=env.w, seed=0)
        i = [0]

        def one(pol=pol):
            items = pol.select()
            pol.update(items, rewards[i[0] % len(rewards)])
            i[0] += 1

        nuts = name == "NUTS"
        rep = (10 if quick else 30) if nuts else (50 if quick else 200)
        row[f"{name} (ms)"] = 1e3 * timeit(one, repeat=rep, warmup=5 if nuts else 10)
    row["NUTS / Laplace"] = row["NUTS (ms)"] / row["Laplace (ms)"]
    row["Laplace / Gaussian"] = row["Laplace (ms)"] / row["Gaussian (ms)"]
    return row


# ----------------------------------------------------------- 3. posterior(l)
def posterior_times(T: int, rounds: int) -> list[dict]:
    env = logistic_env(100)
    make = models(T)
    key = jax.random.key(7)
    rows = []
    for name in ("Laplace", "NUTS"):
        pol = br.RankTS(model=make[name](), items=env.items, w=env.w, seed=0)
        for t in range(rounds):
            items = pol.select()
            r = np.asarray(env.sample(jax.random.fold_in(key, t), items))
            pol.update(items, r)
        times = []
        for pos in (0, 1, 1):
            t0 = time.perf_counter()
            dt = pol.posterior(pos)
            times.append(time.perf_counter() - t0)
        draws = dt["posterior"]["theta"].shape
        rows.append(
            {
                "RankTS model": name,
                "rounds seen": rounds,
                "posterior(0), first call (s)": times[0],
                "posterior(1), second call (s)": times[1],
                "posterior(1), third call (s)": times[2],
                "theta draws (chain, draw, p)": "x".join(map(str, draws)),
            }
        )
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--T", type=int, default=None)
    ap.add_argument("--runs", type=int, default=None)
    args = ap.parse_args(argv)
    T = args.T or (300 if args.quick else 1000)
    runs = args.runs or (2 if args.quick else 3)
    t_start = time.perf_counter()
    print(f"machine: {machine()}\n")

    print(
        f"### RankTS on a logistic paper instance (K=100, L=4, d=10, w_max={W_MAX}), "
        f"{runs} runs x {T} rounds through br.simulate\n"
    )
    rows, lines = regret_and_cost(T, runs)
    print(table(rows))
    print()
    for line in lines:
        print(f"- {line}")

    print(
        "\n### Seconds per round, class API select + update "
        f"(L=4, d=10, logistic rewards, n_max={T}; median after warm-up)\n"
    )
    print(table([class_api(K, T, args.quick) for K in (100, 1000)]))

    rounds = 100 if args.quick else 300
    print(f"\n### policy.posterior(l) after {rounds} rounds (K=100, L=4, d=10)\n")
    print(table(posterior_times(T, rounds)))
    print(f"\n(total benchmark wall time {time.perf_counter() - t_start:.0f} s)")


if __name__ == "__main__":
    main()
