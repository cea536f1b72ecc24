"""Vendor the Open Bandit Dataset files bayesrank needs, from the ``obp`` sdist.

``obp`` (Apache-2.0) cannot be installed beside bayesrank (it pins Python < 3.11), but
its source archive ships the small OBD sample. This script reads that archive (never
importing or unpickling anything from it) and writes, under
``bayesrank/datasets/data/obd/``:

* ``random/{all,men,women}/item_context.csv``: the item features, copied verbatim;
* ``log_summary.json``: per campaign, from the 10,000-row uniform-random log, the
  impressions and clicks at each position and what the timestamps allow (how many rows
  share a timestamp, i.e. how often a full shown list can be rebuilt), plus the SHA-256
  of every source file;
* ``LICENSE`` (obp's Apache-2.0 text), copied verbatim.

Usage (from the repository root)::

    python -m pip download --no-deps --ignore-requires-python obp==0.5.7 -d /tmp/obp
    python scripts/obd_vendor.py /tmp/obp/obp-0.5.7.tar.gz
"""

from __future__ import annotations

import argparse
import collections
import csv
import hashlib
import io
import json
import tarfile
from pathlib import Path

CAMPAIGNS = ("all", "men", "women")
OUT = Path(__file__).resolve().parents[1] / "bayesrank" / "datasets" / "data" / "obd"


def _read(tar: tarfile.TarFile, name: str) -> bytes:
    member = tar.getmember(name)
    if not member.isfile():
        raise ValueError(f"{name}: not a regular file in the archive")
    return tar.extractfile(member).read()


def summarise_log(raw: bytes) -> dict:
    """Per-position impressions/clicks and timestamp structure of one log CSV."""
    rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8"))))
    imp = collections.Counter()
    clk = collections.Counter()
    for r in rows:
        imp[int(r["position"])] += 1
        clk[int(r["position"])] += int(r["click"])
    per_ts = collections.Counter(r["timestamp"] for r in rows)
    sizes = collections.Counter(per_ts.values())
    positions = sorted(imp)
    return {
        "rows": len(rows),
        "positions": positions,
        "impressions": [imp[p] for p in positions],
        "clicks": [clk[p] for p in positions],
        "items_in_log": len({r["item_id"] for r in rows}),
        "propensity_scores": sorted({float(r["propensity_score"]) for r in rows}),
        "distinct_timestamps": len(per_ts),
        "rows_per_timestamp": {str(k): v for k, v in sorted(sizes.items())},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sdist", type=Path, help="obp-0.5.7.tar.gz")
    args = ap.parse_args()
    raw_sdist = args.sdist.read_bytes()
    summary = {
        "source": "obp 0.5.7 sdist (https://pypi.org/project/obp/0.5.7/)",
        "sdist_sha256": hashlib.sha256(raw_sdist).hexdigest(),
        "policy": "random",
        "campaigns": {},
    }
    with tarfile.open(args.sdist) as tar:
        root = "obp-0.5.7"
        (OUT / "LICENSE").write_bytes(_read(tar, f"{root}/LICENSE"))
        for c in CAMPAIGNS:
            base = f"{root}/obp/dataset/obd/random/{c}"
            ctx = _read(tar, f"{base}/item_context.csv")
            log = _read(tar, f"{base}/{c}.csv")
            dest = OUT / "random" / c
            dest.mkdir(parents=True, exist_ok=True)
            (dest / "item_context.csv").write_bytes(ctx)
            entry = summarise_log(log)
            entry["sha256"] = {
                "item_context.csv": hashlib.sha256(ctx).hexdigest(),
                f"{c}.csv": hashlib.sha256(log).hexdigest(),
            }
            summary["campaigns"][c] = entry
    (OUT / "log_summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
