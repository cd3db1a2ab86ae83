"""Heap accounting checked against an independent instrument: valgrind massif.

massif replaces malloc itself (so the driver's own counters read zero under it); its
peak with --heap-admin=0 is the peak of requested bytes, which is what the driver reports
as the process peak when run normally. The same command must agree within 1 %.

valgrind runs the program on a CPU of its own (no AVX-512, SHA or ADX), and libraries that
choose code by CPUID allocate differently on it: AWS-LC's RSA on an AVX-512 IFMA CPU takes
RSAZ's two-exponent path, whose work area (OPENSSL_malloc in rsaz_exp_x2.c) raises the
peak by ~10 KB (1.35 %). Both figures are right for their CPU; the native run is therefore
told to hide what valgrind's CPU lacks, so that both runs take the same paths.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from drivers import offer_args, run_driver
from tlsbench.driver import cpuprofile
from tlsbench.driver.drive import driver_command

pytestmark = pytest.mark.slow

ORACLE_VARIANTS = [
    "null",
    "mbedtls-3.6.6",
    "openssl-3.5.x",
    "wolfssl-5.7.2",
    "gnutls-3.8.x",
    "openssl-1.1.1w",
    "aws-lc-5.12.0",
    "boringssl-5.4.0",
    "rustls-ffi-0.15.7",
    "rustls-ffi-0.15.7:ring",
]


def massif_peak(command: list[str], out: Path, env: dict[str, str]) -> int:
    subprocess.run(
        ["valgrind", "--tool=massif", "--peak-inaccuracy=0", "--heap-admin=0", "--stacks=no",
         f"--massif-out-file={out}", *command],
        capture_output=True, check=True, timeout=600, env={**os.environ, **env},
    )  # fmt: skip
    return max(int(v) for v in re.findall(r"^mem_heap_B=(\d+)$", out.read_text(), flags=re.M))


@pytest.mark.parametrize("spec", ORACLE_VARIANTS)
def test_process_peak_agrees_with_massif(spec: str, build_of, tmp_path: Path) -> None:
    build = build_of(spec)
    args = ["--iterations", "3", "--warmup", "0", "--auth", "mutual", "--tls", "1.3",
            *offer_args(spec)]  # fmt: skip
    # The same CPU for both runs: what valgrind presents (within the active CPU profile).
    same_cpu = cpuprofile.under_valgrind_environment()
    run = run_driver(build, "handshake", *args, measure="heap", env=same_cpu)
    assert run.code == 0, run.stderr
    assert run.output is not None
    ours = run.output["heap"]["process"]["peak"]
    # massif watches the timing driver: the heap driver's accounting describes the process
    # that the timing runs measure (the accounting table lives outside the heap).
    theirs = massif_peak(
        driver_command(build, "handshake", args), tmp_path / "massif.out", same_cpu
    )
    assert abs(ours - theirs) <= 0.01 * theirs, (ours, theirs)
