"""The units study split across processes, one (w, prior, c) cell per process, then merged.

``bayesrank study units`` plays every cell in one process. The cells are independent
(every run's keys depend on the seed and the run alone), so on a machine with many
cores (or a GPU beside them) each cell can run in its own process::

    for prior in default "old default" oracle; do
      for c in 0.1 0.3 1 3; do
        python scripts/units_split.py run --link logistic --w latent --scale medium \\
            --prior "$prior" --c $c --out pieces &
      done
    done; wait
    python scripts/units_split.py merge pieces docs/units --stem units_logistic_latent

``merge`` joins the pieces with :func:`bayesrank.studies.units.merge_cells` (tested
equal to one ``units_cells`` call) and writes ``<stem>.nc``, ``.md`` and ``.png``.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import xarray as xr

from bayesrank.studies import units


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="one cell")
    r.add_argument("--link", choices=("identity", "logistic"), default="identity")
    r.add_argument("--w", choices=("known", "latent"), required=True)
    r.add_argument("--prior", choices=units.PRIORS, required=True)
    r.add_argument("--c", type=float, required=True)
    r.add_argument("--scale", choices=sorted(units.SCALES), default="full")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--out", type=Path, required=True)
    m = sub.add_parser("merge", help="join the pieces and write the outputs")
    m.add_argument("pieces", type=Path)
    m.add_argument("out", type=Path)
    m.add_argument("--stem", default=None)
    args = ap.parse_args()
    if args.cmd == "run":
        t0 = time.perf_counter()
        ds = units.units_cells(args.scale, seed=args.seed, progress=True,
                               priors=(args.prior,), cs=(args.c,), ws=(args.w,),
                               link=args.link)
        import jax

        ds.attrs["device"] = str(jax.devices()[0])
        ds.attrs["seconds"] = time.perf_counter() - t0
        args.out.mkdir(parents=True, exist_ok=True)
        tag = re.sub(r"[^A-Za-z0-9.]+", "_", f"{args.w}-{args.prior}-{args.c:g}")
        path = args.out / f"{tag}.nc"
        ds.to_netcdf(path)
        print(f"{tag}: {ds.attrs['seconds']:.0f} s on {ds.attrs['device']} -> {path}")
        return
    pieces = [xr.load_dataset(p) for p in sorted(args.pieces.glob("*.nc"))]
    args.out.mkdir(parents=True, exist_ok=True)
    units.write_outputs(units.merge_cells(pieces), args.out, stem=args.stem)


if __name__ == "__main__":
    main()
