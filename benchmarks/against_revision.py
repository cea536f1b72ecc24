"""Benchmark: first answers and steady rounds of this tree against an earlier revision.

    python benchmarks/against_revision.py [--against e168dac] [--K 100 10000]
        [--families RankTS RankUCB ...] [--repeats 3]

Exports ``bayesrank/`` as it was at ``--against`` (``git archive``) into a temporary
folder, with this tree's compiled C kernel copied in when the kernel's C source is the
same at both revisions (otherwise the old tree runs without it, and the table says
so). Then, for each family and K, fresh Python processes run the first round of
:mod:`first_answer` (build, select, update, select; then a second instance and 30
steady rounds) with ``PYTHONPATH`` pointing at one tree or the other, in turns: the
first process of each tree starts from an empty compilation cache (``cold``), the
later ones (``--repeats`` - 1) find the cache it left (``warm cache``). Each child
prints the file it imported bayesrank from, so a wrong tree cannot go unnoticed.

The families are :mod:`first_answer`'s, with every model written out in the same
configuration at both revisions (defaults changed between them: ``LaplaceGLM()``
learns its scale now, GenRankUCB's default hyperprior is ``HalfNormal(1)``), so a
ratio measures the code, not a change of model. Prints the medians and the ratio
new / old per column, and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parents[1]
KERNEL = ("bayesrank/decoding/_prefix_scan.c", "bayesrank/decoding/_prefix_scan.h")

# Identical configurations at both revisions (first_answer.FAMILIES, defaults pinned).
PINNED = {
    "RankTS": "br.RankTS(model=br.GaussianLinear(), items=env.items, w=env.w, "
              "v0=env.v0, seed=s)",
    "RankUCB": "br.RankUCB(model=br.GaussianLinear(), items=env.items, w=env.w, "
               "v0=env.v0, seed=s)",
    "latent-w RankTS": "br.RankTS(model=br.GaussianLinear(), items=env.items, L=4, "
                       "v0=env.v0, w=dist.Normal(0.0, 5.0), seed=s)",
    "GenRankUCB": "br.GenRankUCB(items=env.items, L=4, v0=env.v0, seed=s, "
                  "model=br.GaussianLinear(prior_scale=dist.HalfNormal(1.0)))",
    "RankedBaseline": "br.RankedBaseline(items=env.items, L=4, v0=env.v0, seed=s)",
    "Laplace RankTS": "br.RankTS(model=br.LaplaceGLM('logistic', prior_scale=1.0), "
                      "items=env.items, w=env.w, v0=env.v0, seed=s)",
    "NUTS RankTS": "br.RankTS(model=br.BayesGLM('logistic'), items=env.items, "
                   "w=env.w, v0=env.v0, seed=s)",
}


def export(rev: str, dest: Path) -> str:
    """``bayesrank/`` at ``rev`` under ``dest``; returns how the C kernel was provided."""
    archive = subprocess.run(["git", "archive", rev, "bayesrank"], cwd=ROOT,
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    same = subprocess.run(["git", "diff", "--quiet", rev, "HEAD", "--", *KERNEL],
                          cwd=ROOT).returncode == 0
    built = sorted((ROOT / "bayesrank" / "decoding").glob("_prefix_scan*.so"))
    if same and built:
        for so in built:
            shutil.copy2(so, dest / "bayesrank" / "decoding" / so.name)
        return "this tree's build (same C source)"
    return "none (C source differs or not built here)"


def child(family: str, K: int, steady: int) -> dict:
    import first_answer

    import bayesrank

    first_answer.FAMILIES[family] = PINNED[family]
    out = first_answer.child(family, K, steady)
    out["file"] = bayesrank.__file__
    return out


def run(tree: Path, family: str, K: int, cache: str, steady: int) -> dict:
    env = dict(os.environ, BAYESRANK_CACHE_DIR=cache, PYTHONPATH=str(tree))
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    proc = subprocess.run(
        [sys.executable, __file__, "--child", family, str(K), str(steady)],
        env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    if proc.returncode:
        raise RuntimeError(f"{family} K={K} in {tree}:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if not out["file"].startswith(str(tree)):
        raise RuntimeError(f"imported {out['file']}, expected a file under {tree}")
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", default="e168dac", help="git revision to compare with")
    ap.add_argument("--K", type=int, nargs="+", default=[100, 10_000])
    ap.add_argument("--families", nargs="+", default=list(PINNED), choices=list(PINNED),
                    metavar="FAMILY")
    ap.add_argument("--repeats", type=int, default=3,
                    help="processes per tree and cell (the first one cold)")
    ap.add_argument("--steady-rounds", type=int, default=30)
    ap.add_argument("--quick", action="store_true",
                    help="one family at K = 100, 2 processes per tree, 5 steady rounds")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.quick:
        args.K, args.families = [100], args.families[:1]
        args.repeats, args.steady_rounds = 2, 5
    if args.child:
        family, K, n = args.child
        print(json.dumps(child(family, int(K), int(n))))
        return
    if args.repeats < 2:
        ap.error("--repeats: expected at least 2 (one cold process, then warm ones)")

    from _common import machine

    with tempfile.TemporaryDirectory(prefix="bayesrank-old-") as old:
        kernel = export(args.against, Path(old))
        trees = {"old": Path(old), "new": ROOT}
        rows = []
        for K in args.K:
            for family in args.families:
                caches = {k: tempfile.mkdtemp(prefix="bayesrank-cache-") for k in trees}
                res = {k: [] for k in trees}
                try:
                    for _ in range(args.repeats):
                        for name, tree in trees.items():
                            res[name].append(run(tree, family, K, caches[name],
                                                 args.steady_rounds))
                finally:
                    for c in caches.values():
                        shutil.rmtree(c, ignore_errors=True)
                cell = {}
                for name, runs in res.items():
                    cell[name] = {
                        "cold": runs[0]["first"],
                        "warm": float(np.median([r["first"] for r in runs[1:]])),
                        "second": float(np.median([r["second"] for r in runs[1:]])),
                        "steady": float(np.median([r["steady"] for r in runs])),
                    }
                rows.append((family, K, cell))
                print(f"  {family} K={K}: " + ", ".join(
                    f"{c}: {cell['new'][c] / cell['old'][c]:.2f}x" for c in cell["new"]),
                    file=sys.stderr, flush=True)
    print(f"\nMachine: {machine()}\nagainst {args.against}; its C kernel: {kernel}\n")
    print("| policy | K | cold first round (old / new) | warm-cache first round | "
          "2nd instance | steady round | new / old (cold, warm, 2nd, steady) |")
    print("|---|---|---|---|---|---|---|")
    for family, K, c in rows:
        o, n = c["old"], c["new"]
        ratios = ", ".join(f"{n[k] / o[k]:.2f}" for k in ("cold", "warm", "second",
                                                          "steady"))
        print(f"| {family} | {K:,} | {o['cold']:.2f} / {n['cold']:.2f} s | "
              f"{o['warm']:.2f} / {n['warm']:.2f} s | {o['second'] * 1e3:.1f} / "
              f"{n['second'] * 1e3:.1f} ms | {o['steady'] * 1e3:.2f} / "
              f"{n['steady'] * 1e3:.2f} ms | {ratios} |")


if __name__ == "__main__":
    main()
