"""The ``bayesrank`` command line: demo, reproduce, sweep, bench.

Bad flags print a usage message (exit code 2), never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["build_parser", "main"]

FIGURES = [
    "figure1",
    "appendix",
    "robustness",
    "nonlinear",
    "timing",
    "tightness",
    "all",
]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bayesrank",
        description=(
            "Bayesian online learning-to-rank with neighbour-aware GLM bandits."
        ),
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    d = sub.add_parser(
        "demo", help="compare RankTS, RankUCB, GenRankUCB and the baseline"
    )
    d.add_argument(
        "--out", type=Path, default=Path("bayesrank-demo"), help="output folder"
    )
    d.add_argument("--K", type=int, default=100, help="number of items (default 100)")
    d.add_argument("--T", type=int, default=1000, help="rounds (default 1000)")
    d.add_argument("--runs", type=int, default=20, help="independent runs (default 20)")
    d.add_argument("--w-max", type=float, default=10.0, help="max |w_l| (default 10)")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--quick", action="store_true", help="a tiny run (seconds)")

    r = sub.add_parser(
        "reproduce", help="reproduce the paper's figures and timing table"
    )
    r.add_argument(
        "what",
        nargs="?",
        choices=FIGURES,
        default="all",
        help="which part (default all)",
    )
    r.add_argument(
        "--quick", action="store_true", help="small scale: a couple of minutes"
    )
    r.add_argument("--out", type=Path, default=Path("bayesrank-reproduce"))
    r.add_argument("--seed", type=int, default=0)

    s = sub.add_parser("sweep", help="prior-sensitivity sweep from a TOML config")
    s.add_argument("config", type=Path, help="the sweep's TOML file (see examples/)")
    s.add_argument("--quick", action="store_true", help="shrink rounds and seeds")
    s.add_argument("--out", type=Path, default=None, help="output folder")
    s.add_argument("--executor", choices=["local", "dask"], default=None)
    s.add_argument(
        "--scheduler", default=None, help="address of a running Dask scheduler"
    )

    b = sub.add_parser("bench", help="run the benchmarks and print their tables")
    b.add_argument("--quick", action="store_true", help="fewer repetitions")
    b.add_argument("which", nargs="*", default=[], help="benchmark names (default all)")
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            from bayesrank.experiments.demo import run_demo

            run_demo(
                out=args.out,
                K=args.K,
                T=args.T,
                runs=args.runs,
                w_max=args.w_max,
                seed=args.seed,
                quick=args.quick,
            )
        elif args.command == "reproduce":
            from bayesrank.experiments.reproduce import reproduce

            reproduce(args.what, out=args.out, quick=args.quick, seed=args.seed)
        elif args.command == "sweep":
            from bayesrank.sensitivity.cli import run_sweep_cli

            run_sweep_cli(
                args.config,
                quick=args.quick,
                out=args.out,
                executor=args.executor,
                scheduler=args.scheduler,
            )
        elif args.command == "bench":
            from bayesrank.experiments.bench import run_bench

            run_bench(args.which, quick=args.quick)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        parser.exit(2, f"bayesrank {args.command}: error: {exc}\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
