"""Stack high-water per side, measured by the heap driver (drivers/core/stack.c)."""

from __future__ import annotations

import pytest

from drivers import PINNED, run_driver


@pytest.mark.parametrize("spec", PINNED)
def test_stack_high_water_per_side(spec: str, build_of) -> None:
    """The heap driver paints the stack below each call of the measured connection and
    reports how deep each side went; the timing driver measures no heap and no stack."""
    build = build_of(spec)
    run = run_driver(build, "handshake", "--auth", "mutual", "--iterations", "1", "--warmup",
                     "0", measure="heap")  # fmt: skip
    assert run.code == 0, run.stderr
    assert run.output is not None
    for side in ("client", "server"):
        stack = run.output["heap"][side]["stack"]
        # More than the unpainted margin (a TLS handshake signs or verifies), far less than
        # the painted depth.
        assert 1024 < stack < 256 * 1024, (side, stack)
    timed = run_driver(build, "handshake", "--iterations", "1", "--warmup", "0")
    assert timed.output is not None and timed.output["heap"] is None
