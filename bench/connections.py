"""Memory per open connection: the `connections` scenario for every TLS library, with its
buffer-release option or build where it has one, at N connections held open in one
process (client and server sides both there, each connection after its handshake and an
exchange of --payload bytes each way).

Each case at each N runs in two processes: the heap driver (requested and usable heap per
side, per connection) and the timing driver (the process's resident set growth and its
peak, per connection, read from /proc). The table gives them per connection (both ends),
and per end ("session", as the rustls reports count: N connections are 2N sessions) with
the process's peak resident set divided by 2N, which is the rustls reports' measure
(/usr/bin/time's maximum RSS of the whole process over the sessions it held).

TLS 1.3 with TLS_AES_256_GCM_SHA384 and an RSA-2048 certificate, as the rustls reports'
TLS 1.3 row; mbedTLS 2.28 has no TLS 1.3 and runs TLS 1.2 (ECDHE-RSA, AES-256-GCM). The
mbedTLS variable-buffers cases run TLS 1.2 with max_fragment_length 4096, the only way
that build shrinks its buffers, beside the default build with the same offer.

Usage: .venv/bin/python bench/connections.py [--connections N ...] [--case LABEL ...]
           [--jsonl FILE] [--replay FILE] [--plot FILE]

--connections takes several values (default 10000): the table is for the largest, and a
second table gives the per-connection figures against N. --jsonl keeps every driver output,
one JSON object a line; --replay makes the tables from such a file instead of running;
--plot draws heap and resident set per connection against N.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tlsbench.builds.build import Builder
from tlsbench.builds.variants import Catalog
from tlsbench.driver.drive import driver_command

TLS13 = ["--tls", "1.3", "--suite", "TLS_AES_256_GCM_SHA384"]
TLS12 = ["--tls", "1.2", "--suite", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"]
MFL_4096 = [*TLS12, "--record-size", "4096"]
# rustls-ffi cannot be told another RSA scheme than the one it signs with (tests/drivers.py).
RUSTLS = [*TLS13, "--sigalg", "rsa_pss_rsae_sha512"]
RELEASE = ["--release-buffers"]


@dataclass(frozen=True)
class Case:
    label: str
    variant: str
    args: list[str] = field(default_factory=list)


CASES = [
    Case("mbedtls-3.6.6", "mbedtls-3.6.6", TLS13),
    Case("mbedtls-3.6.6 TLS 1.2, MFL 4096", "mbedtls-3.6.6", MFL_4096),
    Case("mbedtls-3.6.6:variable-buffers TLS 1.2, MFL 4096", "mbedtls-3.6.6:variable-buffers",
         MFL_4096),
    Case("mbedtls-2.28.x TLS 1.2", "mbedtls-2.28.x", TLS12),
    Case("mbedtls-2.28.x TLS 1.2, MFL 4096", "mbedtls-2.28.x", MFL_4096),
    Case("mbedtls-2.28.x:variable-buffers TLS 1.2, MFL 4096", "mbedtls-2.28.x:variable-buffers",
         MFL_4096),
    Case("wolfssl-5.7.2", "wolfssl-5.7.2", TLS13),
    Case("wolfssl-5.7.2:large-static-buffers", "wolfssl-5.7.2:large-static-buffers", TLS13),
    Case("openssl-3.5.x", "openssl-3.5.x", TLS13),
    Case("openssl-3.5.x --release-buffers", "openssl-3.5.x", TLS13 + RELEASE),
    Case("openssl-1.1.1w", "openssl-1.1.1w", TLS13),
    Case("openssl-1.1.1w --release-buffers", "openssl-1.1.1w", TLS13 + RELEASE),
    Case("openssl-system", "openssl-system", TLS13),
    Case("openssl-system --release-buffers", "openssl-system", TLS13 + RELEASE),
    Case("gnutls-3.8.x", "gnutls-3.8.x", TLS13),
    Case("gnutls-system", "gnutls-system", TLS13),
    Case("aws-lc-5.12.0", "aws-lc-5.12.0", TLS13),
    Case("boringssl-5.4.0", "boringssl-5.4.0", TLS13),
    Case("rustls-ffi-0.15.7", "rustls-ffi-0.15.7", RUSTLS),
    Case("rustls-ffi-0.15.7:ring", "rustls-ffi-0.15.7:ring", RUSTLS),
]  # fmt: skip

# The rustls reports' memory figures (TLS 1.3, TLS13_AES_256_GCM_SHA384, RSA-2048): the maximum
# RSS in KiB of a process holding 5,000 clients and 5,000 servers after their handshakes (run
# in lockstep over all connections) and a 1 KiB write from each client to its server, over
# its 10,000 sessions (aochagavia/rustls-bench-results, data/memory/: OpenSSL 3.2.0 built with
# gcc; rustls 0.22.0 with aws-lc-rs and jemalloc).
RUSTLS_REPORT_KIB = {"OpenSSL 3.2.0": 688436, "rustls 0.22.0 (aws-lc-rs)": 131816}
RUSTLS_REPORT_SESSIONS = 10000


def run(build, args: list[str], n: int, measure: str) -> dict:
    command = driver_command(build, "connections", [*args, "--connections", str(n), "--json"],
                             measure)  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if not proc.stdout.strip():
        raise SystemExit(f"{' '.join(command)}: no output (exit {proc.returncode})\n{proc.stderr}")
    return json.loads(proc.stdout)


def first(output: dict, series: str) -> float | None:
    values = output.get("samples", {}).get(series)
    return values[0] if values else None


def kib(value: float | None) -> str:
    return "" if value is None else f"{value / 1024:.1f}"


@dataclass
class Point:
    heap: dict
    time: dict

    def failed(self) -> str | None:
        for output in (self.heap, self.time):
            if output["exit"] != 0:
                return "unsupported" if output["exit"] == 3 else f"exit {output['exit']}"
        return None

    def heap_per_connection(self) -> float:  # both ends, requested
        return first(self.heap, "client_heap_per_connection") + first(  # type: ignore[operator]
            self.heap, "server_heap_per_connection")  # fmt: skip

    def usable_per_connection(self) -> float:
        return first(self.heap, "client_usable_per_connection") + first(  # type: ignore[operator]
            self.heap, "server_usable_per_connection")  # fmt: skip

    def peak_rss_per_session(self, n: int) -> float | None:
        rss = self.time.get("connections", {}).get("rss") or {}
        return rss["peak"] / (2 * n) if rss.get("peak") else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, nargs="+", default=[10000])
    parser.add_argument("--case", action="append", help="only these cases (by label)")
    parser.add_argument("--jsonl", type=Path, help="every driver output, one a line")
    parser.add_argument("--replay", type=Path, help="the tables from a --jsonl file, no runs")
    parser.add_argument("--plot", type=Path, help="per-connection figures against N (PNG)")
    opts = parser.parse_args()
    cases = [c for c in CASES if not opts.case or c.label in opts.case]
    if opts.case and len(cases) != len(opts.case):
        known = ", ".join(c.label for c in CASES)
        print(f"connections.py: unknown case in {opts.case}; the cases: {known}", file=sys.stderr)
        return 2
    points = replay(opts.replay) if opts.replay else measure(cases, opts.connections, opts.jsonl)
    report(cases, opts.connections, points, opts.plot)
    return 0


def replay(path: Path) -> dict[tuple[str, int], Point]:
    outputs: dict[tuple[str, int], dict[str, dict]] = {}
    for line in path.read_text().splitlines():
        output = json.loads(line)
        key = (output["case"], output["params"]["connections"])
        outputs.setdefault(key, {})[output["measure"]] = output
    return {key: Point(o["heap"], o["time"]) for key, o in outputs.items()}


def measure(cases: list[Case], ns: list[int], jsonl: Path | None) -> dict[tuple[str, int], Point]:
    catalog, builder = Catalog(), Builder(quiet=True)
    builds = {c.variant: builder.build(catalog.resolve(c.variant)) for c in cases}
    points: dict[tuple[str, int], Point] = {}
    log = jsonl.open("a") if jsonl else None
    for case in cases:
        for n in sorted(ns):
            heap = run(builds[case.variant], case.args, n, "heap")
            time = run(builds[case.variant], case.args, n, "time")
            points[case.label, n] = Point(heap, time)
            if log is not None:
                for output in (heap, time):
                    log.write(json.dumps({"case": case.label, **output}) + "\n")
                log.flush()
            print(f"connections.py: {case.label} at {n}: done", file=sys.stderr)
    return points


def report(cases: list[Case], ns: list[int], points: dict, plot_file: Path | None) -> None:
    largest = max(ns)
    print(f"\nAt {largest} open connections (KiB; a connection is both ends, a session one):\n")
    print("| case | client heap | server heap | heap, usable | RSS growth | RSS peak growth "
          "| per session: heap | RSS growth | process peak RSS / 2N |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for case in cases:
        p = points[case.label, largest]
        if p.failed():
            print(f"| {case.label} | {p.failed()} ({(p.heap.get('error') or p.time.get('error') or {}).get('message', '')}) | | | | | | | |")  # fmt: skip  # noqa: E501
            continue
        rss = first(p.time, "rss_per_connection")
        print(f"| {case.label} | {kib(first(p.heap, 'client_heap_per_connection'))} "
              f"| {kib(first(p.heap, 'server_heap_per_connection'))} "
              f"| {kib(p.usable_per_connection())} | {kib(rss)} "
              f"| {kib(first(p.time, 'rss_peak_per_connection'))} "
              f"| {kib(p.heap_per_connection() / 2)} | {kib(rss / 2 if rss else None)} "
              f"| {kib(p.peak_rss_per_session(largest))} |")  # fmt: skip
    for name, total in RUSTLS_REPORT_KIB.items():
        print(f"| the rustls report: {name} | | | | | | | | {total / RUSTLS_REPORT_SESSIONS:.1f} |")
    if len(ns) > 1:
        ns = sorted(ns)
        print("\nPer connection against N (KiB): requested heap of both ends / RSS growth:\n")
        print("| case | " + " | ".join(f"N = {n}" for n in ns) + " |")
        print("| --- |" + " ---: |" * len(ns))
        for case in cases:
            cells = []
            for n in ns:
                p = points[case.label, n]
                rss = first(p.time, "rss_per_connection") if not p.failed() else None
                cells.append("" if p.failed() else f"{kib(p.heap_per_connection())} / {kib(rss)}")
            print(f"| {case.label} | " + " | ".join(cells) + " |")
        if plot_file:
            plot(plot_file, cases, ns, points)


def plot(path: Path, cases: list[Case], ns: list[int], points: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (heap_ax, rss_ax) = plt.subplots(1, 2, figsize=(13, 6))
    for case in cases:
        ok = [n for n in ns if not points[case.label, n].failed()]
        if not ok:
            continue
        heap_ax.plot(ok, [points[case.label, n].heap_per_connection() / 1024 for n in ok],
                     marker="o", label=case.label)  # fmt: skip
        rss_ax.plot(ok, [(first(points[case.label, n].time, "rss_per_connection") or 0) / 1024
                         for n in ok], marker="o", label=case.label)  # fmt: skip
    for ax, title in ((heap_ax, "heap (requested), both ends"), (rss_ax, "resident set growth")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("open connections N")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
    heap_ax.set_ylabel("KiB per connection (both ends)")
    rss_ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
