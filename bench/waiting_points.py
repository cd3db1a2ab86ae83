"""Benchmark (not a test): the `network` grid with its waiting points run one at a time
(`run --serial`) against several at a time (parallel.py), wall time and figures.

1. The whole grid once each way (the experiment's 1 repetition): wall time of each run.
2. A slice of the grid with --repetitions 4 each way (4 against 4 is the fewest with which
   compare's rank test can say anything), compared series by series: how many verdicts are
   anything but "no difference" (the parallel run's figures must be the serial run's).

Both into one store (--db, default a temporary file). The machine should be quiet: other
work on it changes every figure of both runs, the serial one most (it lasts longest).

Usage: .venv/bin/python bench/waiting_points.py [--skip-full] [--slice KEY=VALUE ...]
       [--db FILE]
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tlsbench.core import paths
from tlsbench.core.stats import NO_DIFFERENCE
from tlsbench.core.store import Store
from tlsbench.reportkit.compare import compare_runs

# A slice of the grid: both groups and every round trip and loss, one client, one cert.
SLICE = ["variant=openssl-3.5.x", "cert=ecdsa-p256", "chain=1"]


def run(db: str, *args: str) -> float:
    started = time.monotonic()
    proc = subprocess.run([str(paths.REPO / "tlsbench"), "run", "network", "--db", db,
                           "--quiet", "--seed", "11", *args], check=False)  # fmt: skip
    if proc.returncode not in (0, 1):
        sys.exit(f"tlsbench run failed with exit {proc.returncode}")
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default=None)
    parser.add_argument("--skip-full", action="store_true", help="the slice only")
    parser.add_argument("--slice", nargs="*", default=SLICE, metavar="KEY=VALUE")
    args = parser.parse_args()
    db = args.db or str(Path(tempfile.mkdtemp(prefix="tlsbench-waiting-")) / "r.db")
    print(f"store: {db}")
    if not args.skip_full:
        serial = run(db, "--serial")
        parallel = run(db)
        print(f"network grid: serial {serial / 60:.1f} min, parallel {parallel / 60:.1f} min "
              f"({serial / parallel:.1f}x)")  # fmt: skip
    only = [a for kv in args.slice for a in ("--only", kv)]
    serial = run(db, "--serial", "--repetitions", "4", *only)
    parallel = run(db, "--repetitions", "4", *only)
    store = Store(db, readonly=True)
    runs = [r["id"] for r in store.runs()][-2:]
    rows = compare_runs(store, runs[0], runs[1])
    verdicts = collections.Counter(r.verdict for r in rows)
    print(f"slice {' '.join(args.slice)} x 4 repetitions: serial {serial / 60:.1f} min, "
          f"parallel {parallel / 60:.1f} min; compare {runs[1]} against {runs[0]}: "
          f"{dict(verdicts)}")  # fmt: skip
    for r in rows:
        if r.verdict != NO_DIFFERENCE:
            print(f"  {r.point} {r.series}: {r.verdict} (ratio {r.ratio:.3f})")
    changed = sum(n for v, n in verdicts.items() if v != NO_DIFFERENCE)
    print(
        f"{changed} of {len(rows)} series not 'no difference' "
        f"(`tlsbench compare {runs[0]} {runs[1]} --db {db}` shows them all)"
    )


if __name__ == "__main__":
    main()
