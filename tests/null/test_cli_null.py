"""The command line where it runs the null variant's driver: a usage error the driver reports, a
driver killed by a signal, a build that prints only its result."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from drivers import tlsbench
from tlsbench.core import paths


def test_an_unknown_certificate_kind_is_named_with_the_known_ones() -> None:
    proc = tlsbench("drive", "null", "handshake", "--cert", "rsa999")
    assert proc.returncode == 2
    assert "unknown --cert 'rsa999'; known: rsa1024 rsa2048" in proc.stderr
    assert "cert-dir" not in proc.stderr


def _children(pid: int) -> list[int]:
    """Every descendant of a process (the tlsbench wrapper, Python, the driver)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            for child in (task / "children").read_text().split():
                found += [int(child), *_children(int(child))]
    return found


def test_a_driver_killed_by_a_signal_is_named(build_of) -> None:
    program = str(build_of("null").program("tlsbench-driver"))
    proc = subprocess.Popen(
        [str(paths.REPO / "tlsbench"), "drive", "null", "records", "--iterations", "100000000"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    driver = None
    for _ in range(600):  # the wrapper starts Python, which starts the driver
        for pid in _children(proc.pid):
            with contextlib.suppress(OSError):
                # The records run (not the driver's `info`, which tlsbench may ask first).
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if os.readlink(f"/proc/{pid}/exe") == program and b"records" in cmdline:
                    driver = pid
        if driver is not None:
            break
        time.sleep(0.05)
    assert driver is not None, "the driver never started"
    os.kill(driver, signal.SIGSEGV)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGSEGV
    assert "killed by signal 11 (SIGSEGV)" in err
