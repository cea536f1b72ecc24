"""The ``bayesrank calibrate`` command: run the study, write NetCDF, figures, report.

bayesrank calibrate [--quick] [--out DIR] [--models NAME ...]

The subcommand's arguments are declared in :mod:`bayesrank.cli` (building the parser
imports nothing heavy; importing this package imports JAX).
"""

from __future__ import annotations

import time
from pathlib import Path

__all__ = ["run_calibrate_cli"]


def run_calibrate_cli(
    quick: bool = False, out=None, models=None, seed: int = 0, executor: str = "local",
    scheduler: str | None = None, workers: int = 2,
) -> Path:
    """Run the calibration study and write ``calibration.nc``, PNGs and a report.

    Args:
        quick: use ``registry.QUICK`` sizes instead of ``registry.FULL``.
        out: output folder (default ``calibration`` or ``calibration-quick``).
        models: labels to run (default all).
        seed: the study's seed.
        executor, scheduler, workers: where the cases run (:func:`run_study`).

    Returns:
        The path of the markdown report.

    Raises:
        ValueError: an unknown model label (before any work starts).

    Note:
        Switches JAX to float64 for the process (``jax_enable_x64``).
    """
    import jax

    # float64: the exact models are checked for exactness (in float32 a rank-one
    # Cholesky update over 50-300 rows drifts enough to be seen at N = 1,000)
    jax.config.update("jax_enable_x64", True)
    from bayesrank.studies.calibration import registry  # deferred: x64 first
    from bayesrank.studies.calibration.report import write_report  # deferred: x64 first
    from bayesrank.studies.calibration.study import (  # deferred: x64 first
        _resolve,
        run_study,
        save,
    )

    settings = (registry.QUICK if quick else registry.FULL)._replace(seed=int(seed))
    names = _resolve(models, settings)
    out = Path(out) if out is not None else Path(
        "calibration-quick" if quick else "calibration")
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    dt = run_study(settings, names, verbose=True, executor=executor, scheduler=scheduler,
                   workers=workers)
    save(dt, out / "calibration.nc")
    report = write_report(dt, out)
    print(f"calibrate: {len(names)} models in {time.perf_counter() - start:.0f} s "
          f"-> {report}")
    for name, p in zip(dt["model"].values, dt["p_value"].values):
        print(f"  {name:32s} p = {float(p):.3g}")
    return report
