"""Helpers to run a variant's driver from the tests."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from typing import Any

from tlsbench.build import Build
from tlsbench.drive import driver_command

# The variants of every TLS library line, pinned and system (the null baseline apart).
TLS_LIBRARIES = [
    "mbedtls-3.6.6",
    "mbedtls-2.28.x",
    "wolfssl-5.7.2",
    "openssl-3.5.x",
    "openssl-system",
    "openssl-1.1.1w",
    "gnutls-3.8.x",
    "gnutls-system",
    "aws-lc-5.12.0",
    "boringssl-5.4.0",
]
# One pinned variant per library.
PINNED = ["mbedtls-3.6.6", "wolfssl-5.7.2", "openssl-3.5.x", "gnutls-3.8.x"]


@dataclass
class DriverRun:
    code: int
    output: dict[str, Any] | None
    stderr: str


def run_driver(
    build: Build,
    scenario: str,
    *args: str,
    timeout: float = 300,
    env: dict[str, str] | None = None,
    measure: str = "time",
) -> DriverRun:
    proc = subprocess.run(
        [*driver_command(build, scenario, [*args, "--json"], measure)],
        capture_output=True, text=True, timeout=timeout, check=False,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    output = json.loads(proc.stdout) if proc.stdout.strip() else None
    return DriverRun(proc.returncode, output, proc.stderr)
