"""Points that mostly wait run several at a time; a CPU-bound point never beside another.

The scheduling logic is tested without processes; a real run over the emulated network
checks that waiting points overlap, that every result says how it ran, and that an
interrupt in the middle ends every point's processes and namespaces.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tlsbench import parallel, paths
from tlsbench.store import Store


def test_what_waits_is_an_emulated_link_of_long_round_trips_or_with_loss() -> None:
    assert parallel.waits("interop", {"rtt_ms": 20})
    assert parallel.waits("interop", {"rtt_ms": 5, "loss": 3})
    assert not parallel.waits("interop", {"rtt_ms": 5})  # its handshake is mostly CPU
    assert not parallel.waits("interop", {})  # loopback: CPU-bound
    assert not parallel.waits("load", {"rtt_ms": 100})  # a load saturates a core on purpose
    assert not parallel.waits("interop", {"rtt_ms": 100}, mode="instructions")
    assert parallel.slots() >= parallel.SLOTS_PER_CORE


def test_each_round_runs_its_cpu_bound_points_first_then_its_waiting_ones() -> None:
    order = [(0, "cpu1"), (0, "wait1"), (0, "cpu2"), (0, "wait2"), (1, "wait2"), (1, "cpu1")]
    rounds = list(parallel.rounds(order, lambda item: item.startswith("wait")))
    assert rounds == [
        ([(0, "cpu1"), (0, "cpu2")], [(0, "wait1"), (0, "wait2")]),
        ([(1, "cpu1")], [(1, "wait2")]),
    ]


def test_run_together_keeps_to_its_width_and_records_in_the_calling_thread() -> None:
    running, most, lock = [0], [0], threading.Lock()
    recorded: list[tuple[int, int, bool]] = []
    caller = threading.get_ident()
    release = threading.Semaphore(0)

    def work(item: int) -> int:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        release.acquire(timeout=30)  # held until the test lets it go: overlap is certain
        with lock:
            running[0] -= 1
        return item * 10

    def letting_go() -> None:
        for _ in range(7):
            time.sleep(0.01)
            release.release()

    threading.Thread(target=letting_go).start()
    parallel.run_together(
        list(range(7)), 3, work,
        lambda item, result: recorded.append((item, result, threading.get_ident() == caller)),
        abort=lambda: None,
    )  # fmt: skip
    assert most[0] <= 3
    assert sorted(recorded) == [(i, i * 10, True) for i in range(7)]


def test_an_interrupt_aborts_the_work_in_flight_and_is_raised_again() -> None:
    aborted = threading.Event()

    def work(item: int) -> int:
        if item == 0:
            raise KeyboardInterrupt  # as Ctrl-C would surface through the result
        aborted.wait(30)  # the others run until aborted
        return item

    with pytest.raises(KeyboardInterrupt):
        parallel.run_together([0, 1, 2], 3, work, lambda i, r: None, abort=aborted.set)
    assert aborted.is_set()


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
