"""Points over an emulated network really run side by side, and an interrupt leaves no
process and no network namespace behind (root: namespaces and TUN)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tlsbench.core import paths
from tlsbench.core.store import Store


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces and TUN need root")
def test_waiting_points_overlap_and_an_interrupt_leaves_nothing_running(
    tmp_path: Path, build_of
) -> None:
    build_of("openssl-3.5.x")
    experiment = tmp_path / "waits.toml"
    experiment.write_text(HEADER.format(iterations=4))
    db = tmp_path / "r.db"
    command = [str(paths.REPO / "tlsbench"), "run", str(experiment), "--db", str(db), "--quiet"]
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    seen: list[int] = []
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(proc, seen, stop))
    watcher.start()
    _, err = proc.communicate(timeout=600)
    stop.set()
    watcher.join()
    assert proc.returncode == 0, err
    assert max(seen) >= 2, "no two emulated networks ever existed at once"
    store = Store(db, readonly=True)
    for point in store.points(1):
        [result] = store.results(point.id)
        output = json.loads(result["output"])
        assert result["status"] == "ok"
        # The waiting ones say how they ran; the 5 ms one ran alone, as before.
        assert ("scheduling" in output) == (point.params["rtt_ms"] >= 40), point.name
    # SIGTERM in the middle of the waiting points: every side and namespace ends with it.
    experiment.write_text(HEADER.format(iterations=397))  # 397: a count no other run uses
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(_namespaces(proc.pid)) < 2:
        time.sleep(0.05)
    assert len(_namespaces(proc.pid)) >= 2, "the waiting points never started together"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert _namespaces(proc.pid) == []
    assert _drivers_running("397") == []  # no side outlived the runner
    store = Store(db, readonly=True)
    assert store.status_of(store.run(2)) == "interrupted"
    assert store.check_consistent() == []


HEADER = """
question = "Do points that wait run together?"
repetitions = 1
timeout = 120

[defaults]
scenario = "interop"
iterations = {iterations}
warmup = 1
variant = "openssl-3.5.x"
peer = "openssl-3.5.x"

[[matrix]]
rtt_ms = [40, 60, 80, 100]

[[include]]
rtt_ms = 5
"""


def _namespaces(owner: int) -> list[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in listed.splitlines()
            if line.startswith(f"tlsbench-c-{owner}-")]  # fmt: skip


def _drivers_running(iterations: str) -> list[int]:
    """Driver processes run with this iteration count."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                args = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            words = [a.decode(errors="replace") for a in args]
            if any("tlsbench-driver" in w for w in words) and iterations in words:
                found.append(int(proc.name))
    return found


def _watch(proc: subprocess.Popen, seen: list[int], stop: threading.Event) -> None:
    while not stop.is_set() and proc.poll() is None:
        seen.append(len(_namespaces(proc.pid)))
        time.sleep(0.05)
