"""One driver process as the runner starts it: its command, its filtered environment, its
CPU, its timeout, and what came of it (an Outcome).

A driver runs in its own session so that a timeout or an interrupt kills its whole process
group; it is pinned to one CPU where the machine allows; it sees the runner's environment
without the switches that change what a library or the allocator does (a point asks for its
own, accel = "off" for one), plus the CPU profile's (cpuprofile.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from tlsbench.builds.build import Build
from tlsbench.builds.recipes.runtime import at_run_time
from tlsbench.core.points import RunPoint
from tlsbench.driver import allocators
from tlsbench.driver.drive import driver_command, driver_environment

STDERR_TAIL_LINES = 20


@dataclass
class Outcome:
    status: str  # ok | unsupported | failed
    exit_code: int | None
    signal: int | None
    seconds: float
    output: dict[str, Any] | None
    stderr_tail: str


def unsupported(reason: str) -> Outcome:
    """What a point cannot be, said before anything runs (exit 3, as a driver says it)."""
    return Outcome("unsupported", 3, None, 0.0, {"error": {"message": reason}}, reason)


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def accel_env(point: RunPoint, build: Build) -> tuple[dict[str, str], str | None]:
    """Environment for accel=off, or the reason the library cannot run without it (the
    library's recipe knows its switches: recipes/runtime.py)."""
    if point.options.get("accel") != "off":
        return {}, None
    return at_run_time(point.library).accel_off(build.variant.name, build.variant.features)


def allocator_env(point: RunPoint, measure: str) -> tuple[dict[str, str], str | None]:
    """The environment of a point's `allocator` (its object preloaded, the name the driver
    reads back), or why not; none for the heap driver, which keeps its own accounting over
    glibc's malloc whatever the point's allocator (allocators.py)."""
    name = point.options.get("allocator")
    if name is None or measure == "heap":
        return {}, None
    refused = allocators.refusal(str(name))
    return ({}, refused) if refused else (allocators.environment(str(name)), None)


def pinning_cpu() -> int | None:
    """The CPU drivers are pinned to: the last one this process may use, as CPU 0 takes most
    interrupts; None where there is only one or the machine does not allow pinning."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    return allowed[-1] if len(allowed) > 1 else None


PINNED_CPU = pinning_cpu()


def pin() -> None:
    """In the child before exec: one CPU, so that the scheduler does not move the driver
    between cores in the middle of a timed region."""
    if PINNED_CPU is not None:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {PINNED_CPU})


def run_driver(
    point: RunPoint,
    build: Build,
    timeout: float,
    prefix: list[str] | None = None,
    extra_env: dict[str, str] | None = None,
    measure: str = "time",
    extra_args: list[str] | None = None,
    pinned: bool = True,
) -> Outcome:
    """One driver process of a point: its JSON output and how it ended. `pinned`: on the
    one CPU drivers run on (False: on any, for threads and processes that need the cores)."""
    env, refused = accel_env(point, build)
    if refused:
        return unsupported(refused)
    alloc_env, refused = allocator_env(point, measure)
    if refused:
        return unsupported(refused)
    env = {**env, **alloc_env}
    args = [*point.driver_args(), *(extra_args or []), "--json"]
    command = driver_command(build, point.scenario, args, measure)
    command = [*(prefix or []), *command]
    env = {**env, **(extra_env or {})}
    started = time.monotonic()
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=driver_environment(env),
        start_new_session=True,  # a timeout kills the whole process group
        preexec_fn=pin if PINNED_CPU is not None and pinned else None,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\ntlsbench: killed after the {timeout:.0f} s timeout"
    except BaseException:
        # Interrupted (SIGINT, SIGTERM): the driver runs in its own session, so nothing
        # else would stop it; it must not outlive the runner.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    seconds = time.monotonic() - started
    tail = "\n".join(err.strip().splitlines()[-STDERR_TAIL_LINES:])
    code = proc.returncode
    sig = -code if code < 0 else None
    output = None
    try:
        output = json.loads(out) if out.strip() else None
    except json.JSONDecodeError:
        tail += "\ntlsbench: the driver's output is not valid JSON"
        return Outcome("failed", code if sig is None else None, sig, seconds, None, tail)
    if output is not None and env:
        output["run_env"] = env
    if output is not None and alloc_env:  # beside the driver's read-back, the package
        output["allocator"] = {**(output.get("allocator") or {}),
                               **allocators.record(str(point.options["allocator"]))}  # fmt: skip
    if code == 0 and output is not None:
        return Outcome("ok", 0, None, seconds, output, tail)
    status = "unsupported" if code == 3 else "failed"
    return Outcome(status, code if sig is None else None, sig, seconds, output, tail)
