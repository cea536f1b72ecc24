"""``bayesrank study NAME``: the command-line glue of the studies.

Kept free of heavy imports: :func:`add_parser` runs whenever the ``bayesrank`` parser
is built.
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["EXECUTOR_STUDIES", "RUNNERS", "STUDIES", "add_parser", "run"]

#: study name -> one-line help
STUDIES = {
    "click-models": "every policy on Eq. 1 and on the PBM, cascade, DCM and DBN click models",
    "obd": "the paper's algorithms on Open Bandit Dataset items",
    "ope": "off-policy estimators against an exact truth (bias, RMSE, coverage)",
    "units": "RankTS's regret and interval coverage when the rewards change units",
}


def add_parser(sub) -> argparse.ArgumentParser:
    """Add the ``study`` subcommand to ``sub`` (an argparse subparsers action)."""
    st = sub.add_parser(
        "study",
        help="studies beyond the paper (click-models, obd, ope, units)",
        description="Studies beyond the paper. click-models: "
        + STUDIES["click-models"]
        + "; writes regret.png, results.nc and report.md to --out. obd: "
        + STUDIES["obd"]
        + "; writes regret.png, results.nc and report.md to --out. ope: "
        + STUDIES["ope"]
        + "; writes rmse.png, coverage.png, results.nc and report.md to --out (with "
        "--click-models: the estimators' bias under each click model, bias.png, "
        "results.nc and report.md). units: "
        + STUDIES["units"]
        + "; writes units.png, units.nc and units.md to --out (--link logistic: the "
        "LaplaceGLM rows, units_logistic.*).",
    )
    st.add_argument("name", metavar="STUDY", choices=sorted(STUDIES),
                    help="which study: " + ", ".join(sorted(STUDIES)))
    st.add_argument(
        "--quick", action="store_true",
        help="small scale (2 cores: obd about 1 min, click-models about 2 min, ope about "
        "5 min)",
    )
    st.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output folder (default bayesrank-study-NAME)",
    )
    st.add_argument("--seed", type=int, default=0, help="master seed (default 0)")
    st.add_argument(
        "--click-models",
        action="store_true",
        help="ope only: the estimators' bias when the logs come from click models "
        "(PBM, cascade, DCM, DBN) and Eq. 1 (default out bayesrank-study-ope-click)",
    )
    st.add_argument("--link", choices=("identity", "logistic"), default="identity",
                    help="units only: the link of the rescaled instance (default identity)")
    st.add_argument("--w", nargs="+", choices=("known", "latent"), default=None,
                    dest="ws", metavar="{known,latent}",
                    help="units only: known and/or latent w (default both; the logistic "
                    "link's latent cells take hours at full scale on 2 cores)")
    st.add_argument("--executor", choices=("local", "dask"), default="local",
                    help="every study: run the study's cells in this process "
                    "(local, the default) or as tasks on a Dask cluster (dask: a "
                    "LocalCluster of --workers processes, or --scheduler)")
    st.add_argument("--scheduler", default=None, metavar="ADDR",
                    help="with --executor dask: a running scheduler's address "
                    "(e.g. tcp://10.0.0.5:8786)")
    st.add_argument("--workers", type=int, default=None, metavar="N",
                    help="with --executor dask: the LocalCluster's worker processes "
                    "(default 2)")
    return st


#: study name -> (module, function) of its runner, imported only when the study runs
#: (keeps JAX out of the parser); each runner takes ``(out, *, quick, seed)``
RUNNERS = {
    "click-models": ("bayesrank.studies.click_models", "run_click_models_study"),
    "obd": ("bayesrank.studies.obd.study", "run_obd_study"),
    "ope": ("bayesrank.studies.ope.study", "run_ope_study"),
    "ope-click": ("bayesrank.studies.ope.click", "run_click_study"),  # --click-models
    "units": ("bayesrank.studies.units", "run_units_study"),
}


#: the studies that take --executor, --scheduler and --workers
EXECUTOR_STUDIES = ("click-models", "obd", "ope", "ope-click", "units")


def run(args) -> None:
    """Run the study named by the parsed ``args``."""
    import importlib

    click = getattr(args, "click_models", False)
    if click and args.name != "ope":
        raise ValueError(
            f"--click-models: applies to the ope study only, got STUDY {args.name!r}"
        )
    link = getattr(args, "link", "identity")
    if link != "identity" and args.name != "units":
        raise ValueError(f"--link: applies to the units study only, got STUDY {args.name!r}")
    ws = getattr(args, "ws", None)
    if ws is not None and args.name != "units":
        raise ValueError(f"--w: applies to the units study only, got STUDY {args.name!r}")
    name = "ope-click" if click else args.name
    executor = getattr(args, "executor", "local")
    scheduler, workers = getattr(args, "scheduler", None), getattr(args, "workers", None)
    if (executor != "local" or scheduler or workers) and name not in EXECUTOR_STUDIES:
        raise ValueError(f"--executor, --scheduler, --workers: apply to the studies "
                         f"{', '.join(EXECUTOR_STUDIES)}, got STUDY {name!r}")
    if scheduler and executor != "dask":
        raise ValueError("--scheduler: needs --executor dask")
    if workers is not None and workers < 1:
        raise ValueError(f"--workers: expected at least 1, got {workers}")
    module, function = RUNNERS[name]
    runner = getattr(importlib.import_module(module), function)
    extra = {}
    if name in EXECUTOR_STUDIES:
        extra = {"executor": executor, "scheduler": scheduler}
        if workers is not None or name != "click-models":
            extra["workers"] = workers or 2
    if name == "units":
        extra |= {"link": link} if ws is None else {"link": link, "ws": tuple(ws)}
    runner(args.out or Path(f"bayesrank-study-{name}"), quick=args.quick, seed=args.seed,
           **extra)
