"""Benchmark (not a test): how often `compare` calls a change where there is none, and
whether it sees changes that are known to be there.

Runs one experiment 2 x PAIRS times on unchanged builds, compares run 2k+1 against run 2k
series by series, and prints the false-verdict rate: the share of series whose verdict is
anything but "no difference" (target: at most 5 %). Within every run it also compares two
known changes, which must be detected ("faster" or "slower") every time:

- wolfSSL AES-128-GCM, default build against the intelasm build (AES-NI assembly);
- OpenSSL AES-128-GCM, CPU acceleration on against off (OPENSSL_ia32cap mask).

Usage: .venv/bin/python bench/self_compare.py [--pairs 3] [--repetitions 5] [--threshold T]
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import tempfile
from pathlib import Path

from tlsbench.core import paths
from tlsbench.core.stats import NO_DIFFERENCE
from tlsbench.core.store import Point, Store
from tlsbench.reportkit.compare import compare_points, compare_runs

EXPERIMENT = """
question = "Does compare say 'no difference' between two runs of unchanged builds?"
repetitions = {repetitions}
timeout = 300

[defaults]
tls = "1.3"

[per_scenario.handshake]
iterations = 50
warmup = 5

[per_scenario.records]
payload = 256
iterations = 2000
warmup = 200

[per_scenario.aead]
iterations = 500
warmup = 50

[[matrix]]
variant = ["wolfssl-5.7.2", "openssl-3.5.x", "mbedtls-3.6.6"]
scenario = ["handshake"]

[[matrix]]
variant = ["null", "wolfssl-5.7.2", "openssl-3.5.x"]
scenario = ["records"]

[[matrix]]
variant = ["wolfssl-5.7.2", "wolfssl-5.7.2:intelasm", "openssl-3.5.x"]
scenario = ["aead"]
aead = ["AES-128-GCM"]
payload = [16384]

[[include]]
variant = "openssl-3.5.x"
scenario = "aead"
aead = "AES-128-GCM"
payload = 16384
accel = "off"
"""


def run(experiment: Path, db: Path) -> None:
    proc = subprocess.run(
        [str(paths.REPO / "tlsbench"), "run", str(experiment), "--db", str(db), "--quiet"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        sys.exit(f"run failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")


def aead_point(points: list[Point], variant: str, accel: str | None = None) -> Point:
    return next(
        p for p in points
        if p.scenario == "aead" and p.variant == variant and p.params.get("accel") == accel
    )  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3, help="pairs of runs (default 3)")
    parser.add_argument("--repetitions", type=int, default=5, help="per point (default 5)")
    parser.add_argument("--threshold", type=float, default=None, help="compare --threshold")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tlsbench-self-compare-") as tmp:
        experiment = Path(tmp) / "self-compare.toml"
        experiment.write_text(EXPERIMENT.format(repetitions=args.repetitions))
        db = Path(tmp) / "r.db"
        verdicts: collections.Counter[str] = collections.Counter()
        wrong: list[str] = []
        known: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        for pair in range(args.pairs):
            for _ in range(2):
                run(experiment, db)
            store = Store(db, readonly=True)
            run_b = int(store.run("latest")["id"])
            run_a = run_b - 1
            for row in compare_runs(store, run_a, run_b, threshold=args.threshold):
                verdicts[row.verdict] += 1
                if row.verdict != NO_DIFFERENCE:
                    wrong.append(
                        f"pair {pair + 1}: {row.variant} {row.point} {row.series}: "
                        f"{row.verdict} (ratio {row.ratio:.3f}, p {row.p_value})"
                    )
            for run_id in (run_a, run_b):
                points = store.points(run_id)
                checks = {
                    "wolfSSL default -> intelasm": (
                        aead_point(points, "wolfssl-5.7.2"),
                        aead_point(points, "wolfssl-5.7.2:intelasm"),
                    ),
                    "OpenSSL accel on -> off": (
                        aead_point(points, "openssl-3.5.x"),
                        aead_point(points, "openssl-3.5.x", "off"),
                    ),
                }
                for label, (a, b) in checks.items():
                    for row in compare_points(store, a, b, threshold=args.threshold):
                        known[f"{label}: {row.series}"][row.verdict] += 1
            store.close()
            print(f"pair {pair + 1}/{args.pairs} done", file=sys.stderr)
            report(pair + 1, args.repetitions, verdicts, wrong, known)
    return 0


def report(
    pairs: int,
    repetitions: int,
    verdicts: collections.Counter[str],
    wrong: list[str],
    known: dict[str, collections.Counter[str]],
) -> None:
    """The figures so far (printed after every pair, so that a long run can be cut short)."""
    total = sum(verdicts.values())
    false = total - verdicts[NO_DIFFERENCE]
    print(f"Self-compare: {pairs} pairs of runs, {repetitions} repetitions per point, "
          f"{total} series compared")  # fmt: skip
    print(f"  verdicts: {dict(verdicts)}")
    print(f"  false-verdict rate: {false}/{total} = {false / max(total, 1):.1%} (target <= 5 %)")
    for line in wrong:
        print(f"    {line}")
    print(f"Known changes ({2 * pairs} runs each):")
    for label, counts in sorted(known.items()):
        detected = counts["faster"] + counts["slower"]
        print(f"  {label}: detected {detected}/{sum(counts.values())} {dict(counts)}")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
