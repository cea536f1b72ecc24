"""The ``bayesrank sweep`` command.

bayesrank sweep CONFIG.toml [--quick] [--out DIR] [--executor local|dask]
                [--scheduler ADDRESS]
"""

from __future__ import annotations

import re
from pathlib import Path

from bayesrank.studies.sensitivity.config import load_config
from bayesrank.studies.sensitivity.report import write_report
from bayesrank.studies.sensitivity.run import run_sweep

__all__ = ["run_sweep_cli"]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "sweep"


def run_sweep_cli(
    config_path, quick: bool = False, out=None, executor=None, scheduler=None,
    workers: int | None = None,
) -> Path:
    """Validate the config, run (or resume) the sweep, write NetCDF, figures, report.

    Args:
        config_path: the sweep's TOML file.
        quick: shrink rounds, runs and draws (``[sweep.quick]``).
        out: output folder (default ``sweeps/<config name>[-quick]``).
        executor: "local" or "dask" (default: the config's).
        scheduler: a Dask scheduler address (implies ``executor="dask"``).
        workers: the LocalCluster's worker processes (default: the config's).

    Returns:
        The path of the markdown report.

    Raises:
        ValueError: invalid configuration (the message names the key), before any
            work starts; FileNotFoundError: no such config file.

    Example:
        >>> import os, tempfile
        >>> from bayesrank.studies.sensitivity import run_sweep_cli
        >>> toml = '''
        ... [sweep]
        ... T = 10
        ... runs = 2
        ... checkpoints = [10]
        ... draws = 20
        ... chains = 2
        ... [env]
        ... K = 4
        ... L = 2
        ... d = 2
        ... [priors.weak]
        ... scale = [1.0, 10.0]
        ... '''
        >>> import contextlib, io
        >>> printed = io.StringIO()  # the progress lines it prints
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = os.path.join(folder, "sweep.toml")
        ...     with open(path, "w") as f:
        ...         _ = f.write(toml)
        ...     with contextlib.redirect_stdout(printed):
        ...         report = run_sweep_cli(path, out=os.path.join(folder, "out"))
        ...     written = sorted(os.listdir(report.parent))
        >>> printed.getvalue().startswith("sweep: 2 cells, T=10, runs=2")
        True
        >>> "report.md" in written and "regret_heatmap.png" in written
        True
    """
    if executor not in (None, "local", "dask"):
        raise ValueError(f"executor: expected 'local' or 'dask', got {executor!r}")
    spec = load_config(config_path, quick=quick)
    if scheduler and executor is None:
        executor = "dask"
    if scheduler and executor == "local":
        raise ValueError("scheduler: a scheduler address needs --executor dask")
    if out is None:
        out = Path("sweeps") / (
            _slug(Path(config_path).stem) + ("-quick" if quick else "")
        )
    out = Path(out)
    n = len(spec.cells)
    print(
        f"sweep: {n} cells, T={spec.settings.T}, runs={spec.settings.runs}, "
        f"executor={executor or spec.settings.executor} -> {out}"
    )
    ds = run_sweep(spec, out, executor=executor, scheduler=scheduler, workers=workers)
    report = write_report(ds, out)
    print(f"results: {out / 'results.nc'}")
    print(f"report:  {report}")
    return report
