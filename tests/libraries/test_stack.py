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


def test_wolfssl_static_memory_reports_its_pool_use(build_of) -> None:
    """wolfSSL's static-memory build serves each connection from its context's pool, one
    malloc at set-up: the malloc accounting sees ~0 per connection, so the driver reports
    the pool use as wolfSSL counts it; the malloc build has no pool figures."""
    pooled = run_driver(build_of("wolfssl-5.7.2:static-memory"), "handshake", "--iterations",
                        "1", "--warmup", "0", measure="heap")  # fmt: skip
    plain = run_driver(build_of("wolfssl-5.7.2"), "handshake", "--iterations", "1",
                       "--warmup", "0", measure="heap")  # fmt: skip
    assert pooled.code == 0 and plain.code == 0, (pooled.stderr, plain.stderr)
    assert pooled.output is not None and plain.output is not None
    for side in ("client", "server"):
        pool, malloc = pooled.output["heap"][side], plain.output["heap"][side]
        assert pool["conn_peak"] < 4096, pool  # the pool was allocated with the context
        # A handshake's working set, of the order of the malloc build's (bucket sizes round
        # up), and most of it given back once the handshake is done.
        assert malloc["conn_peak"] / 2 < pool["pool_peak"] < malloc["conn_peak"] * 4, (pool, malloc)
        assert pool["pool_retained"] < pool["pool_peak"], pool
        assert "pool_peak" not in malloc, malloc
