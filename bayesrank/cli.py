"""The ``bayesrank`` command line: demo, reproduce, sweep, bench, calibrate, study, cache.

Bad flags print the usage of the subcommand they were given to (exit code 2), never
a traceback; numeric flags are checked while parsing, before anything runs or prints.
``bayesrank --version`` prints the version.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from bayesrank import _cache  # no JAX: environment variables and files
from bayesrank._version import __version__

__all__ = ["build_parser", "main"]


class _Version(argparse.Action):
    """``--version``: reads ``bayesrank._version`` only when asked (no JAX import)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, **kwargs):
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"bayesrank {__version__}")
        parser.exit(0)


def _parsed(check, parse, text: str, **bounds):
    """An argparse ``type``: parse ``text``, then check it with bayesrank's own argument
    checks (:mod:`bayesrank._validate`, NumPy only: the parser stays free of JAX)."""
    from bayesrank._validate import check_int, check_real  # deferred: numpy on first use

    try:
        value = parse(text)
        return {"int": check_int, "real": check_real}[check](value, "value", **bounds)
    except (TypeError, ValueError) as e:
        raise argparse.ArgumentTypeError(
            str(e).replace("value: ", "", 1) if "value: " in str(e)
            else f"expected {'an integer' if check == 'int' else 'a number'}, got {text!r}"
        ) from None


def _positive_int(text: str) -> int:
    return _parsed("int", int, text, low=1)


def _nonneg_float(text: str) -> float:
    return _parsed("real", float, text, low=0)


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None

FIGURES = [
    "figure1",
    "appendix",
    "robustness",
    "nonlinear",
    "timing",
    "tightness",
    "unknown-w",
    "all",
]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``bayesrank`` command and its subcommands.

    Example:
        >>> from bayesrank.cli import build_parser
        >>> args = build_parser().parse_args(["demo", "--runs", "3", "--quick"])
        >>> args.command, args.runs, args.quick
        ('demo', 3, True)
    """
    p = argparse.ArgumentParser(
        prog="bayesrank",
        description=(
            "Bayesian online learning-to-rank with neighbour-aware GLM bandits."
        ),
    )
    p.add_argument("--version", action=_Version, help="print the version and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    d = sub.add_parser(
        "demo",
        help="compare RankTS, RankUCB, GenRankUCB, the baseline and RankTS with w learnt",
        description=(
            "Run RankTS, RankUCB, GenRankUCB, the baseline and RankTS with w learnt (a prior on w) on the paper's "
            "instance (L = 4, d = 10) and print a summary table. Writes two files "
            "into --out: regret.png (per-round regret curves) and results.nc "
            "(the simulation as NetCDF: regret, rewards and timings per policy, "
            "run and round)."
        ),
    )
    d.add_argument(
        "--out",
        type=Path,
        default=Path("bayesrank-demo"),
        help="output folder for regret.png and results.nc (default bayesrank-demo)",
    )
    d.add_argument(
        "--K", type=_positive_int, default=100, help="number of items (default 100)"
    )
    d.add_argument(
        "--T", type=_positive_int, default=1000, help="rounds (default 1000)"
    )
    d.add_argument(
        "--runs", type=_positive_int, default=20, help="independent runs (default 20)"
    )
    d.add_argument(
        "--w-max",
        type=_nonneg_float,
        default=10.0,
        help="w_l is drawn from U(-w_max, w_max) (default 10)",
    )
    d.add_argument("--seed", type=_int, default=0)
    d.add_argument("--quick", action="store_true", help="a tiny run (about 30 s on 2 cores, compilation included)")

    r = sub.add_parser(
        "reproduce", help="reproduce the paper's figures and timing table"
    )
    r.add_argument(
        "what",
        metavar="PART",
        choices=FIGURES,
        help="which part: " + ", ".join(FIGURES) + " (all: the paper's parts; "
        "at full scale that is hours: start with --quick)",
    )
    r.add_argument(
        "--quick", action="store_true",
        help="small scale (2 cores: all 3 min; unknown-w about 13 min)"
    )
    r.add_argument(
        "--scale",
        choices=["quick", "medium", "full"],
        default=None,
        help="quick (400 x 8), medium (3,000 x 50) or full (10,000 x 100; default)",
    )
    r.add_argument("--out", type=Path, default=Path("bayesrank-reproduce"))
    r.add_argument("--seed", type=_int, default=0)
    r.add_argument("--executor", choices=["local", "dask"], default="local",
                   help="run the parts here one after the other (local) or as tasks on "
                   "a Dask cluster (dask: a LocalCluster of --workers processes, or "
                   "--scheduler; --out must then be a folder the workers share)")
    r.add_argument("--scheduler", default=None, metavar="ADDR",
                   help="with --executor dask: a running scheduler's address")
    r.add_argument("--workers", type=_positive_int, default=2, metavar="N",
                   help="with --executor dask: the LocalCluster's worker processes")

    s = sub.add_parser("sweep", help="prior-sensitivity sweep from a TOML config")
    s.add_argument("config", type=Path, help="the sweep's TOML file (see examples/)")
    s.add_argument("--quick", action="store_true", help="shrink rounds and seeds")
    s.add_argument("--out", type=Path, default=None, help="output folder")
    s.add_argument("--executor", choices=["local", "dask"], default=None)
    s.add_argument(
        "--scheduler", default=None, help="address of a running Dask scheduler"
    )
    s.add_argument("--workers", type=_positive_int, default=None, metavar="N",
                   help="with --executor dask: the LocalCluster's worker processes "
                   "(default: the config's, 2)")

    b = sub.add_parser("bench", help="run the benchmarks and print their tables")
    b.add_argument("--quick", action="store_true", help="fewer repetitions")
    b.add_argument("which", nargs="*", default=[], help="benchmark names (default all)")

    from bayesrank.studies import cli as studies_cli  # deferred: the parser's fast start

    studies_cli.add_parser(sub)

    c = sub.add_parser(
        "calibrate", help="simulation-based calibration of the posteriors (SBC)"
    )
    c.add_argument("--quick", action="store_true",
                   help="small scale (about 3.5 minutes on 2 cores)")
    c.add_argument("--out", type=Path, default=None,
                   help="output folder (default calibration[-quick])")
    c.add_argument("--models", nargs="+", default=None, metavar="NAME",
                   help="labels to run (default all; see the report for names)")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--executor", choices=["local", "dask"], default="local",
                   help="run the cases here (local) or as tasks on a Dask cluster")
    c.add_argument("--scheduler", default=None, metavar="ADDR",
                   help="with --executor dask: a running scheduler's address")
    c.add_argument("--workers", type=_positive_int, default=2, metavar="N",
                   help="with --executor dask: the LocalCluster's worker processes")
    k = sub.add_parser(
        "cache", help="where the compilation cache is and what it holds; --clear empties it"
    )
    k.add_argument("--clear", action="store_true",
                   help="delete its compiled programs (JAX rebuilds them when needed)")
    p._subcommands = dict(sub.choices)  # for subcommand-level usage errors
    return p


def _unknown_before_command(parser, argv) -> list[str]:
    """Options given before the subcommand that the top-level parser does not know
    (argparse would only say that COMMAND is missing)."""
    known = set(parser._option_string_actions)
    out = []
    for tok in argv:
        if not tok.startswith("-"):
            break  # the subcommand: its own parser judges the rest
        if tok.split("=", 1)[0] not in known:
            out.append(tok)
    return out


def main(argv=None) -> int:
    """Run the ``bayesrank`` command with ``argv`` (default: ``sys.argv[1:]``).

    Returns:
        0 on success. Bad flags and errors of the command exit with code 2 and a
        one-line message (``SystemExit``), never a traceback.

    Example:
        >>> from bayesrank.cli import main
        >>> try:                                   # doctest: +ELLIPSIS
        ...     main(["--version"])
        ... except SystemExit as done:
        ...     print("exit code", done.code)
        bayesrank ...
        exit code 0
    """
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    unknown = _unknown_before_command(parser, argv)
    if unknown:
        parser.error(
            f"unrecognized arguments: {' '.join(unknown)} (expected a COMMAND first: "
            f"{', '.join(parser._subcommands)})"
        )
    args, extra = parser.parse_known_args(argv)
    subparser = parser._subcommands[args.command]
    if extra:
        subparser.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "reproduce" and args.quick and args.scale not in (None, "quick"):
        subparser.error(f"--quick: conflicts with --scale {args.scale}")
    try:
        if args.command == "demo":
            from bayesrank.studies.paper.demo import run_demo  # deferred: fast start

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
            from bayesrank.studies.paper.reproduce import reproduce  # deferred: fast start

            if args.scheduler and args.executor != "dask":
                raise ValueError("--scheduler: needs --executor dask")
            reproduce(
                args.what,
                out=args.out,
                quick=args.quick,
                seed=args.seed,
                scale=args.scale,
                executor=args.executor,
                scheduler=args.scheduler,
                workers=args.workers,
            )
        elif args.command == "sweep":
            from bayesrank.studies.sensitivity.cli import run_sweep_cli  # deferred: fast start

            run_sweep_cli(
                args.config,
                quick=args.quick,
                out=args.out,
                executor=args.executor,
                scheduler=args.scheduler,
                workers=args.workers,
            )
        elif args.command == "bench":
            _run_bench(args.which, quick=args.quick)
        elif args.command == "study":
            from bayesrank.studies import cli as studies_cli  # deferred: the parser's fast start

            studies_cli.run(args)
        elif args.command == "cache":
            _cache_command(clear=args.clear)
        elif args.command == "calibrate":
            from bayesrank.studies.calibration.cli import run_calibrate_cli  # deferred: fast start

            if args.scheduler and args.executor != "dask":
                raise ValueError("--scheduler: needs --executor dask")
            run_calibrate_cli(
                quick=args.quick, out=args.out, models=args.models, seed=args.seed,
                executor=args.executor, scheduler=args.scheduler, workers=args.workers,
            )
    except (ValueError, TypeError, OSError) as exc:  # OSError: files and folders
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        subparser.exit(2, f"bayesrank {args.command}: error: {msg}\n")
    return 0


def _cache_command(clear: bool = False) -> None:
    """``bayesrank cache [--clear]``: environment variables and files only, no JAX."""
    folder = _cache.configured_dir()
    if folder is None:
        print("compilation cache: off (BAYESRANK_CACHE_DIR is empty or JAX's cache "
              "is disabled); nothing to clear" if clear else "compilation cache: off")
        return
    if clear:
        programs, size = _cache.clear(folder)
        print(f"compilation cache: {folder}\nremoved {programs:,} compiled programs "
              f"({size / 2**20:,.1f} MiB)")
        return
    programs, size = _cache.contents(folder)
    try:
        bound = int(os.environ.get("JAX_COMPILATION_CACHE_MAX_SIZE", "-1"))
    except ValueError:
        bound = -1
    print(f"compilation cache: {folder}\n{programs:,} compiled programs "
          f"({size / 2**20:,.1f} MiB; "
          + (f"bounded at {bound / 2**20:,.0f} MiB)" if bound > 0 else "unbounded)")
          + ("" if folder.is_dir() else ", folder not created yet"))
    if bound > 0 and programs >= 5_000:
        print("each program compiled for the first time reads every entry first: "
              "`bayesrank cache --clear` keeps new configurations quick")


def _run_bench(which=(), quick: bool = False) -> None:
    """Run the checkout's ``benchmarks/NAME.py`` scripts (all, or those named), each in
    a fresh Python process, so that a first-answer figure is a cold process's."""
    import subprocess

    folder = Path(__file__).resolve().parents[1] / "benchmarks"
    if not folder.is_dir():
        raise FileNotFoundError(
            "benchmarks: no benchmarks/ folder beside this installation; run from a "
            "source checkout (pip install -e .)"
        )
    scripts = {p.stem: p for p in sorted(folder.glob("*.py")) if not p.stem.startswith("_")}
    names = list(which) or list(scripts)
    unknown = [n for n in names if n not in scripts]
    if unknown:
        raise ValueError(
            f"which: unknown benchmark(s) {unknown}; expected some of {sorted(scripts)}"
        )
    for name in names:
        print(f"\n## benchmarks/{name}.py\n", flush=True)
        cmd = [sys.executable, str(scripts[name])] + (["--quick"] if quick else [])
        code = subprocess.run(cmd, check=False).returncode
        if code:
            raise SystemExit(f"bayesrank bench: benchmarks/{name}.py failed (exit {code})")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
