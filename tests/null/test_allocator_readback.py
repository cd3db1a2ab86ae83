"""The allocator a driver runs on, on the real null driver: each of glibc's malloc, jemalloc,
tcmalloc and mimalloc preloaded and read back by the driver (drivers/core/allocator.c), the
read-back firing on a preload that did not load and on the heap driver, whose malloc is its
own; a point's allocator reaching the timing driver and never the heap driver."""

from __future__ import annotations

import pytest

from drivers import run_driver as run_program
from tlsbench.core.points import RunPoint
from tlsbench.driver import allocators
from tlsbench.driver.process import run_driver

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def null(build_of):
    return build_of("null")


def point(**options) -> RunPoint:
    return RunPoint("handshake", "null", "null", "handshake", {"iterations": 5, **options})


@pytest.mark.parametrize("name", allocators.NAMES)
def test_the_driver_runs_on_the_allocator_asked_for(null, name: str) -> None:
    outcome = run_driver(point(allocator=name), null, 60)
    assert outcome.status == "ok", outcome.stderr_tail
    assert outcome.output is not None
    said = outcome.output["allocator"]
    allocator = allocators.ALLOCATORS[name]
    # The driver's read-back: the object its malloc comes from.
    assert said["expected"] == allocator.object
    assert said["malloc"].endswith("/" + allocator.object), said
    # What is stored beside it: the package and its version, the environment it ran in.
    assert said["package"].startswith(allocator.package + " ")
    run_env = outcome.output["run_env"]
    assert run_env[allocators.ALLOCATOR_ENV] == allocator.object
    assert ("LD_PRELOAD" in run_env) == allocator.preload


def test_a_preload_that_did_not_load_is_a_mismatch(null) -> None:
    env = {allocators.ALLOCATOR_ENV: "libjemalloc.so.2", "LD_PRELOAD": ""}
    run = run_program(null, "handshake", "--iterations", "2", env=env)
    assert run.code == 4, run.stderr
    assert run.output is not None
    assert run.output["error"]["stage"] == "allocator"
    assert "not libjemalloc.so.2 as the run asked" in run.output["error"]["message"]
    assert run.output["allocator"]["malloc"].endswith("/libc.so.6")


def test_the_heap_drivers_malloc_is_its_own(null) -> None:
    """Told to expect glibc's, the heap driver finds its own wrappers: a mismatch."""
    run = run_program(null, "handshake", "--iterations", "2", measure="heap",
                      env={allocators.ALLOCATOR_ENV: "libc.so.6"})  # fmt: skip
    assert run.code == 4, run.stderr
    assert run.output is not None
    assert run.output["allocator"]["malloc"].endswith("/tlsbench-driver-heap")


def test_a_points_allocator_never_reaches_the_heap_driver(null) -> None:
    outcome = run_driver(point(allocator="jemalloc"), null, 60, measure="heap")
    assert outcome.status == "ok", outcome.stderr_tail
    assert outcome.output is not None
    assert "allocator" not in outcome.output and "run_env" not in outcome.output
    assert outcome.output["heap"]["client"]["peak"] >= 0
