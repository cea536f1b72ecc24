"""``bayesrank study NAME``: the command-line glue of the studies.

Kept free of heavy imports: :func:`add_parser` runs whenever the ``bayesrank`` parser
is built.
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["STUDIES", "add_parser", "run"]

#: study name -> one-line help
STUDIES = {
    "obd": "the paper's algorithms on Open Bandit Dataset items",
    "ope": "off-policy estimators against an exact truth (bias, RMSE, coverage)",
    "units": "RankTS's regret and interval coverage when the rewards change units",
}


def add_parser(sub) -> argparse.ArgumentParser:
    """Add the ``study`` subcommand to ``sub`` (an argparse subparsers action)."""
    st = sub.add_parser(
        "study",
        help="studies beyond the paper (obd, ope, units)",
        description="Studies beyond the paper. obd: "
        + STUDIES["obd"]
        + "; writes regret.png, results.nc and report.md to --out. ope: "
        + STUDIES["ope"]
        + "; writes rmse.png, coverage.png, results.nc and report.md to --out. units: "
        + STUDIES["units"]
        + "; writes units.png, units.nc and units.md to --out (--link logistic: the "
        "LaplaceGLM rows, units_logistic.*).",
    )
    st.add_argument("name", metavar="STUDY", choices=sorted(STUDIES),
                    help="which study: " + ", ".join(sorted(STUDIES)))
    st.add_argument(
        "--quick", action="store_true", help="small scale (2 cores: obd about 1 min, ope about 5 min)"
    )
    st.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output folder (default bayesrank-study-NAME)",
    )
    st.add_argument("--seed", type=int, default=0, help="master seed (default 0)")
    st.add_argument("--link", choices=("identity", "logistic"), default="identity",
                    help="units only: the link of the rescaled instance (default identity)")
    return st


def run(args) -> None:
    """Run the study named by the parsed ``args``."""
    if args.name == "obd":
        from bayesrank.studies.obd.study import run_obd_study  # deferred: keeps JAX out

        run_obd_study(
            args.out or Path("bayesrank-study-obd"), quick=args.quick, seed=args.seed
        )
    elif args.name == "ope":
        from bayesrank.studies.ope.study import run_ope_study  # deferred: keeps JAX out

        run_ope_study(
            args.out or Path("bayesrank-study-ope"), quick=args.quick, seed=args.seed
        )
    elif args.name == "units":
        from bayesrank.studies.units import run_units_study  # deferred: keeps JAX out

        run_units_study(
            args.out or Path("bayesrank-study-units"), quick=args.quick, seed=args.seed,
            link=args.link,
        )
