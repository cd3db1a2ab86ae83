"""Harness overhead: the null adapter's cost per 256-byte record as a fraction of the fastest
library's, measured in the same run (interleaved processes); and the cost of one malloc +
free in a timed region with the heap driver's accounting and without it (the timing
driver), which is why time and heap are measured in separate processes.

Usage: .venv/bin/python bench/harness_overhead.py [ROUNDS]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

from tlsbench.builds.build import Builder
from tlsbench.builds.variants import Catalog
from tlsbench.driver.drive import driver_command

VARIANTS = ["null", "mbedtls-3.6.6", "wolfssl-5.7.2:intelasm", "openssl-3.5.x", "gnutls-3.8.x"]
ARGS = ["--tls", "1.3", "--suite", "TLS_AES_128_GCM_SHA256", "--payload", "256",
        "--iterations", "20000", "--warmup", "2000", "--json"]  # fmt: skip


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    catalog, builder = Catalog(), Builder(quiet=True)
    builds = {v: builder.build(catalog.resolve(v)) for v in VARIANTS}
    medians: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for _ in range(rounds):
        for variant in VARIANTS:  # interleaved: drift spreads over all variants
            out = subprocess.run(driver_command(builds[variant], "records", ARGS),
                                 capture_output=True, text=True, check=True).stdout  # fmt: skip
            summary = json.loads(out)["summary"]
            medians[variant].append(summary["write_ns"]["median"] + summary["read_ns"]["median"])
    per_record = {v: statistics.median(m) for v, m in medians.items()}
    fastest = min((v for v in VARIANTS if v != "null"), key=per_record.__getitem__)
    print("| variant | write + read, median ns per 256-byte record |")
    print("| --- | ---: |")
    for variant in VARIANTS:
        print(f"| {variant} | {per_record[variant]:.0f} |")
    ratio = per_record["null"] / per_record[fastest]
    print(f"\nnull / fastest ({fastest}) = {ratio:.1%} (target: at most 5 %, aim 2 %)")
    pairs: dict[str, list[float]] = {"time": [], "heap": []}
    for _ in range(rounds):
        for kind in pairs:
            program = builds["null"].program(f"tlsbench-bench-malloc-{kind}")
            out = subprocess.run([str(program)], capture_output=True, text=True, check=True)
            pairs[kind].append(float(out.stdout.split()[0]))
    plain, counted = statistics.median(pairs["time"]), statistics.median(pairs["heap"])
    print("\n| malloc + free in a timed region | ns per pair (median) |")
    print("| --- | ---: |")
    print(f"| timing driver (glibc alone) | {plain:.1f} |")
    print(f"| heap driver (accounting) | {counted:.1f} |")
    print(f"\naccounting / glibc alone = {counted / plain:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
