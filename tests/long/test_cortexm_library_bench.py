"""`cortex-m --library-bench`: wolfCrypt's own benchmark program, built with the firmware
variant's configuration and run on the same board and clock, counts what `--ops` counts.

One wolfSSL Cortex-M4 image (built for test_cortexm.py too) and the benchmark image beside
it: a compile of benchmark.c and two QEMU runs, a few seconds."""

from __future__ import annotations

import subprocess

import pytest

from tlsbench.builds import arches, firmware
from tlsbench.core import paths
from tlsbench.embedded import libbench, qemu

VARIANT = "wolfssl-5.7.2:cortex-m4"
M4 = firmware.core_of("cortex-m4")
# Where the benchmark calls what --ops calls, the two differ only by the benchmark's loop, its
# timer reads and its RNG's state around 2 operations: measured 0.005 % to 0.14 % (wolfSSL
# 5.7.2 on the M4). Where it does other work (libbench.WOLFCRYPT.notes: another RSA key and
# message, no AEAD additional data, SHA-256's final) up to 1.1 %. The bounds leave room for
# other inputs and stay far below what a different operation would give (P-256 key
# generation and ECDH are 17 % apart, RSA's public and private operations 30 times).
SAME_CALL = 0.005
OTHER_WORK = 0.03

pytestmark = pytest.mark.skipif(
    bool(arches.missing_tools("cortex-m4")),
    reason=f"missing {arches.missing_tools('cortex-m4')} (make deps installs them)",
)


def test_the_library_benchmark_counts_what_ops_counts(build_of) -> None:
    build = build_of(VARIANT)
    program = libbench.program_of(build.variant)
    bench = libbench.run(libbench.image(build, M4), M4, program)
    ops = qemu.run_ops(qemu.image_of(build), M4)
    rows = {r["name"]: r for r in libbench.compare(bench, ops, program)}
    # Every operation the benchmark was asked for has its row, set against --ops' count.
    assert set(rows) == set(program.rows.values())
    for name, row in rows.items():
        bound = OTHER_WORK if name in program.notes else SAME_CALL
        assert abs(row["ratio"] - 1) < bound, (name, row)
    # The benchmark's own figures, not --ops' again: its lines are read from its output.
    assert rows["p256_sign"]["library_bench_line"].startswith("ECDSA")
    assert rows["sha256_kib"]["library_bench_amount"] == "25 KiB"
    # A second run counts the same instructions.
    assert libbench.run(libbench.image(build, M4), M4, program) == bench


def test_cli_library_bench_refuses_what_it_cannot_run() -> None:
    def tlsbench(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(paths.REPO / "tlsbench"), "cortex-m", *args],
                              capture_output=True, text=True, timeout=60, check=False)  # fmt: skip

    other = tlsbench("mbedtls-3.6.6:cortex-m4", "--library-bench")
    assert other.returncode == 2 and "wolfssl only, not mbedtls" in other.stderr
    both = tlsbench(VARIANT, "--library-bench", "--ops")
    assert both.returncode == 2 and "choose one" in both.stderr
    job = tlsbench(VARIANT, "--library-bench", "--suite", "TLS-AES-128-GCM-SHA256")
    assert job.returncode == 2 and "--suite" in job.stderr
