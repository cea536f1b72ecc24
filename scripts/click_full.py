"""The click-models study split across processes, one cell group per process, then merged.

``bayesrank study click-models`` plays every environment in one process. On a machine
with many cores the study's cells are independent, so this script runs one environment's
policies (``--part main``: every policy but RankTS-NUTS; ``--part nuts``: RankTS-NUTS,
which runs one run at a time) per process, and merges the pieces into the study's
``results.nc``, ``report.md`` and ``regret.png``::

    for e in "Eq. 1" "Eq. 1 cascade" PBM cascade DCM DBN; do
      for part in main nuts; do
        python scripts/click_full.py run --env "$e" --part $part --out pieces &
      done
    done; wait
    python scripts/click_full.py merge pieces docs/click-models

Every piece uses the study's own seeds (the catalogue, the environments and each run's
keys depend on the master seed only), so the merged results equal one
``click_cells(scale)`` call's, cell for cell (``merge_cells``, tested in
tests/studies/click_models).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import numpy as np
import xarray as xr

from bayesrank.studies import store
from bayesrank.studies.click_models import report as click_report
from bayesrank.studies.click_models.setup import POLICIES
from bayesrank.studies.click_models.study import SHORT, click_cells, merge_cells


def piece_name(env: str, part: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", env).strip("_") + f"-{part}.nc"


def run_piece(env: str, part: str, out: Path, scale, seed: int, workers: int) -> Path:
    names = [SHORT] if part == "nuts" else [n for n in POLICIES if n != SHORT]
    t0 = time.perf_counter()
    ds = click_cells(scale, seed=seed, names=names, envs=[env], workers=workers)
    ds.attrs["seconds_total"] = time.perf_counter() - t0
    out.mkdir(parents=True, exist_ok=True)
    path = out / piece_name(env, part)
    store.save_netcdf(ds, path)
    print(f"{env} ({part}): {ds.attrs['seconds_total']:.0f} s -> {path}", flush=True)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="one environment's policies")
    r.add_argument("--env", required=True)
    r.add_argument("--part", choices=("main", "nuts"), default="main")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--scale", default="full",
                   help="a scale name or a JSON dict (default full)")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--workers", type=int, default=2)
    m = sub.add_parser("merge", help="merge the pieces; write the study's files")
    m.add_argument("pieces", type=Path)
    m.add_argument("out", type=Path)
    args = ap.parse_args()
    if args.cmd == "run":
        scale = json.loads(args.scale) if args.scale.startswith("{") else args.scale
        run_piece(args.env, args.part, args.out, scale, args.seed, args.workers)
        return
    ds = merge_cells(xr.load_dataset(p) for p in sorted(args.pieces.glob("*.nc")))
    args.out.mkdir(parents=True, exist_ok=True)
    store.save_netcdf(ds, args.out / "results.nc")
    store.write_text(args.out / "report.md", click_report.report(ds))
    click_report.figure(ds, args.out / "regret.png")
    print(f"merged {ds.sizes['env']} environments x {ds.sizes['policy']} policies into "
          f"{args.out}", flush=True)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
