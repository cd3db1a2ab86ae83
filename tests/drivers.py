"""Helpers to run a variant's driver from the tests."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from typing import Any

from tlsbench.build import Build
from tlsbench.drive import driver_command


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
