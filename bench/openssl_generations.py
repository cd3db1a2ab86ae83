"""Three OpenSSL generations side by side (1.1.1w, the machine's 3.0, the pinned 3.5): a TLS
1.3 RSA-2048 mutual handshake's heap per side (first connection of a process, and a warm one
on the same contexts), its CPU time per side, the 256-byte record latency and bulk
throughput. Time figures: the median over ROUNDS interleaved rounds of each run's median
(drift spreads over all three); heap figures are exact and the same every round.

Usage: .venv/bin/python bench/openssl_generations.py [ROUNDS]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from typing import Any

from tlsbench.builds.build import Build, Builder
from tlsbench.builds.variants import Catalog
from tlsbench.driver.drive import driver_command

VARIANTS = ["openssl-1.1.1w", "openssl-system", "openssl-3.5.x"]
HANDSHAKE = ["--tls", "1.3", "--cert", "rsa2048", "--auth", "mutual"]
RUNS = {
    "heap": ("handshake", [*HANDSHAKE, "--iterations", "5", "--warmup", "1"], "heap"),
    "handshake": ("handshake", [*HANDSHAKE, "--iterations", "50", "--warmup", "5"], "time"),
    "records": ("records", ["--tls", "1.3", "--payload", "256", "--iterations", "5000",
                            "--warmup", "500"], "time"),
    "bulk": ("bulk", ["--tls", "1.3", "--bytes", "16777216", "--iterations", "3",
                      "--warmup", "1"], "time"),
}  # fmt: skip


def run(build: Build, what: str) -> dict[str, Any]:
    scenario, args, measure = RUNS[what]
    command = driver_command(build, scenario, [*args, "--json"], measure)
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    catalog, builder = Catalog(), Builder(quiet=True)
    builds = {v: builder.build(catalog.resolve(v)) for v in VARIANTS}
    heap = {v: run(builds[v], "heap")["heap"] for v in VARIANTS}
    figures: dict[str, dict[str, list[float]]] = {v: {} for v in VARIANTS}
    for _ in range(rounds):
        for variant in VARIANTS:  # interleaved
            got = figures[variant]
            hs = run(builds[variant], "handshake")["summary"]
            rec = run(builds[variant], "records")["summary"]
            bulk = run(builds[variant], "bulk")["summary"]
            for key, value in (
                ("client_ms", hs["client_cpu_ns"]["median"] / 1e6),
                ("server_ms", hs["server_cpu_ns"]["median"] / 1e6),
                ("record_ns", rec["write_ns"]["median"] + rec["read_ns"]["median"]),
                ("send_MBps", bulk["sender_MBps"]["median"]),
                ("recv_MBps", bulk["receiver_MBps"]["median"]),
            ):
                got.setdefault(key, []).append(value)
    print(
        "| variant | heap peak client / server, first conn (B) | warm conn (B) "
        "| handshake CPU client / server (ms) | 256-B record write+read p50 (ns) "
        "| bulk send / receive (MB/s) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for variant in VARIANTS:
        h, m = heap[variant], {k: statistics.median(v) for k, v in figures[variant].items()}
        print(
            f"| {variant} | {h['client']['peak_minus_start']:,} / "
            f"{h['server']['peak_minus_start']:,} | {h['client_warm']['conn_peak']:,} / "
            f"{h['server_warm']['conn_peak']:,} | {m['client_ms']:.2f} / {m['server_ms']:.2f} "
            f"| {m['record_ns']:.0f} | {m['send_MBps']:.0f} / {m['recv_MBps']:.0f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
