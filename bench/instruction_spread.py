"""Benchmark (not a test): how much instruction counts differ between repetitions, per
library and scenario.

Runs the `instruction-noise` experiment in instruction mode (or reads a run already in a
store, --run) and prints, for every point and side, the spread of the per-repetition counts:
(largest - smallest) / median. Then the largest spread per variant, marked where it is
above the target (0.05 %), and what the drivers said of each library's randomness (the
output's `randomness`: seeded from the fixed stream, or the library's own).

--random measures the spread without deterministic randomness, as before it existed: the
runner passes `--deterministic` to every driver in instruction mode and has no option to
leave it out (a count is meant to be gated on), so this script alone runs the CLI with
that argument list emptied (RANDOM_RUNNER). --only narrows the points as `run --only` does.

Usage: .venv/bin/python bench/instruction_spread.py [--repetitions 5] [--random]
       [--only KEY=VALUE ...] [--db FILE] [--run N]
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tlsbench.core import paths
from tlsbench.core.store import Store

TARGET = 0.0005  # 0.05 %
# `tlsbench` with the drivers' real randomness in instruction mode (--random): the mode's
# extra driver arguments (["--deterministic"]) replaced by none, for this process only.
RANDOM_RUNNER = (
    "import sys; from tlsbench.scenarios import modes; modes.DETERMINISTIC_ARGS = []; "
    "from tlsbench.cli import main; sys.exit(main(sys.argv[1:]))"
)


def spread(counts: list[float]) -> float:
    """(largest - smallest) / median of per-repetition counts: 0 when every run agrees."""
    middle = statistics.median(counts)
    return (max(counts) - min(counts)) / middle if middle else 0.0


def run_experiment(experiment: str, repetitions: int, db: Path, random: bool,
                   only: list[str]) -> None:  # fmt: skip
    command = [sys.executable, "-c", RANDOM_RUNNER] if random else [str(paths.REPO / "tlsbench")]
    proc = subprocess.run(
        [*command, "run", experiment, "--mode", "instructions", "--repetitions",
         str(repetitions), "--db", str(db), "--quiet", *(a for kv in only for a in ("--only", kv))],
        check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        print(f"tlsbench run exited {proc.returncode}: figures below are what finished",
              file=sys.stderr)  # fmt: skip


def report(store: Store, run: str) -> None:
    run_id = int(store.run(run)["id"])
    worst: dict[str, tuple[float, str]] = {}
    randomness: dict[str, set[str]] = collections.defaultdict(set)
    refused: dict[str, str] = {}
    print(f"run {run_id}: spread of per-repetition instruction counts, (max - min) / median")
    print(f"{'variant':<20} {'point':<48} {'side':<6} {'reps':>4} {'median':>14} {'spread':>9}")
    for point in store.points(run_id):
        for result in store.results(point.id):
            output = json.loads(result["output"]) if result["output"] else {}
            if result["status"] == "unsupported":
                refused[point.variant] = (output.get("error") or {}).get("message", "")
            elif result["status"] == "ok":
                randomness[point.variant].add(describe_randomness(output))
        for series in store.series_names(point.id):
            if not series.endswith("_instructions"):
                continue
            per_repetition = [
                statistics.median(values)
                for values in store.samples_by_repetition(point.id, series)
                if values
            ]
            if len(per_repetition) < 2:
                continue
            side = series.removesuffix("_instructions")
            s = spread(per_repetition)
            print(f"{point.variant:<20} {point.name:<48} {side:<6} {len(per_repetition):>4} "
                  f"{statistics.median(per_repetition):>14,.1f} {s:>9.4%}")  # fmt: skip
            if s >= worst.get(point.variant, (-1.0, ""))[0]:
                worst[point.variant] = (s, f"{point.name} {side}")
    print(f"\nlargest spread per variant (target <= {TARGET:.2%}):")
    for variant, (s, where) in sorted(worst.items()):
        mark = "" if s <= TARGET else "  ABOVE TARGET"
        print(f"  {variant:<20} {s:>9.4%}  ({where}){mark}")
    for variant, why in sorted(refused.items()):
        if variant not in worst:
            print(f"  {variant:<20} {'-':>9}  unsupported: {why}")
    print("\nrandomness, as the drivers report it:")
    for variant, hows in sorted(randomness.items()):
        for how in sorted(hows):
            print(f"  {variant:<20} {how}")


def describe_randomness(output: dict[str, Any]) -> str:
    """What the driver said of the library's randomness (`randomness` in its output)."""
    randomness = output.get("randomness")
    if not randomness:
        return "not fixed (a run without --deterministic)"
    return f"{'seeded' if randomness['seeded'] else 'own'}: {randomness['how']}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="instruction-noise", help="name or path")
    parser.add_argument("--repetitions", type=int, default=5, help="per point (default 5)")
    parser.add_argument(
        "--db", type=Path, help="store to run into or read (default: a temporary one)"
    )
    parser.add_argument(
        "--run", help="read this run of --db (a number or 'latest') instead of running"
    )
    parser.add_argument(
        "--random", action="store_true", help="drivers without --deterministic (see above)"
    )
    parser.add_argument(
        "--only", action="append", default=[], metavar="KEY=VALUE",
        help="keep only these points, as `tlsbench run --only` (repeatable)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.run and not args.db:
        parser.error("--run reads a run of --db: give --db too")
    if args.run and (args.random or args.only):
        parser.error("--random and --only apply to a new run, not to --run")
    with tempfile.TemporaryDirectory(prefix="tlsbench-instruction-spread-") as tmp:
        db = args.db or Path(tmp) / "r.db"
        if not args.run:
            run_experiment(args.experiment, args.repetitions, db, args.random, args.only)
        store = Store(db, readonly=True)
        report(store, args.run or "latest")
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
