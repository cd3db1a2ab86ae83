"""Points that mostly wait run several at a time; a CPU-bound point never beside another.

The scheduling logic is tested without processes; a real run over the emulated network
checks that waiting points overlap, that every result says how it ran, and that an
interrupt in the middle ends every point's processes and namespaces.
"""

from __future__ import annotations

import threading
import time

import pytest

from tlsbench.driver import parallel


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
