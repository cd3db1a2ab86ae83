"""Points that mostly wait run several at a time; every other point runs alone.

A point over an emulated network (netem.py) spends its time waiting for the delay line: a
handshake at a round trip of 80 ms takes two or three round trips of waiting for about a
millisecond of CPU per side, and a lost packet costs a retransmission timeout of 200 ms to
seconds. Run one after another, the `network` grid's 219 points take about 40 minutes,
nearly all of it waiting. Running such points side by side leaves their figures alone as
long as their CPU bursts rarely have to queue for a core.

How a point is classed (`waits`):

- it waits when it is an interop point over an emulated link with a round trip of at least
  WAIT_RTT_MS, or with loss. At 20 ms a TLS 1.3 handshake waits >= 60 ms (TCP's and TLS's
  round trips) against ~1-3 ms of CPU per side: under 5 % of its time is CPU, so several
  such points together still leave a core idle most of the time. With loss, a lost packet's
  retransmission timeout (>= 200 ms) dwarfs any CPU;
- everything else is CPU-bound and runs alone: nothing else runs beside it. That includes
  an emulated link with a shorter round trip and no loss (its handshake is a large share
  CPU), load points (they saturate a core on purpose), and instruction mode (valgrind).

How many at once (`slots`): SLOTS_PER_CORE per CPU the runner may use, so that the expected
number of CPU bursts in flight stays below the number of cores (8 points at < 5 % CPU each
are < 0.4 of a core on average).

Order: the run order stays repetition by repetition (every round spans the run's time); in
each round the CPU-bound points run first, alone, in the round's shuffled order, then the
round's waiting points go through the slots in that order. A CPU-bound point is so never
started while a waiting point runs, and the slots are not drained and refilled around
every CPU-bound point. Each stored result says how it ran (`output["scheduling"]`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

WAIT_RTT_MS = 20.0
SLOTS_PER_CORE = 4

Item = TypeVar("Item")
Result = TypeVar("Result")


def waits(scenario: str, params: dict[str, Any], mode: str = "time") -> bool:
    """Whether a point mostly waits (see the module's description)."""
    if mode != "time" or scenario != "interop":
        return False
    rtt = float(params.get("rtt_ms", 0) or 0)
    loss = float(params.get("loss", 0) or 0)
    return rtt >= WAIT_RTT_MS or loss > 0


def slots() -> int:
    """How many waiting points run at once on this machine."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, cores) * SLOTS_PER_CORE


def rounds(
    order: list[tuple[int, Item]], is_waiting: Callable[[Item], bool]
) -> Iterator[tuple[list[tuple[int, Item]], list[tuple[int, Item]]]]:
    """Per repetition round, in run order: (its CPU-bound items, its waiting items)."""
    current: int | None = None
    alone: list[tuple[int, Item]] = []
    together: list[tuple[int, Item]] = []
    for repetition, item in order:
        if current is not None and repetition != current:
            yield alone, together
            alone, together = [], []
        current = repetition
        (together if is_waiting(item) else alone).append((repetition, item))
    if alone or together:
        yield alone, together


def run_together(
    items: list[Item],
    width: int,
    work: Callable[[Item], Result],
    record: Callable[[Item, Result], None],
    abort: Callable[[], None],
) -> None:
    """Runs `work` on the items, `width` at a time, in their order, each in a thread;
    `record` is called in this (the calling) thread as each finishes, so that only this
    thread writes to the store. An interrupt (Ctrl-C, SIGTERM, an error in `record`) calls
    `abort` to stop the work in flight, waits for its threads, and is raised again."""
    pending: dict[Future[Result], Item] = {}
    queue = iter(items)
    with ThreadPoolExecutor(max_workers=max(1, width), thread_name_prefix="point") as pool:
        try:

            def fill() -> None:
                while len(pending) < width:
                    item = next(queue, None)
                    if item is None:
                        return
                    pending[pool.submit(work, item)] = item

            fill()
            while pending:
                done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                for future in done:
                    item = pending.pop(future)
                    record(item, future.result())
                fill()
        except BaseException:
            abort()
            for future in pending:
                future.cancel()
            wait(list(pending))
            raise
