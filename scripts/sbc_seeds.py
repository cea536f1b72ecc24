"""Simulation-based calibration of one registry entry at many seeds: how often does a
calibrated posterior fail at 1 %, and is one failing seed a fault or chance?

    python scripts/sbc_seeds.py LatentW-learnt-rankts-draw --seeds 0-39

Each seed runs ``bayesrank calibrate --models NAME --seed S`` at full size without
the by-n sweep (float64, as the CLI runs it) and prints its p-value (Bonferroni over
the coordinates). Under calibration, each p-value is at least uniform, so about one
seed in a hundred falls below 1 %; the last line counts them.
"""

from __future__ import annotations

import argparse
import time

import jax


def seeds(text: str) -> list[int]:
    """``"0-9"`` or ``"0,3,5"`` (or both, comma-separated) as a list of ints."""
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="a registry label (bayesrank calibrate --help)")
    ap.add_argument("--seeds", type=seeds, default=seeds("0-9"))
    args = ap.parse_args()
    jax.config.update("jax_enable_x64", True)
    from bayesrank.studies.calibration.registry import FULL
    from bayesrank.studies.calibration.study import run_study

    ps = []
    for s in args.seeds:
        t0 = time.perf_counter()
        tree = run_study(FULL._replace(n_grid=(), seed=s), [args.model])
        ps.append(float(tree.to_dataset()["p_value"][0]))
        print(f"seed {s}: p = {ps[-1]:.3g} ({time.perf_counter() - t0:.0f} s)", flush=True)
    low = [s for s, p in zip(args.seeds, ps) if p < 0.01]
    print(f"{args.model}: {len(low)} of {len(ps)} seeds below 0.01 {low}; "
          f"smallest p = {min(ps):.3g}")


if __name__ == "__main__":
    main()
