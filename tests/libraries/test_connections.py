"""The connections scenario: N connections held open in one process, memory per connection
(heap per side from the heap driver, resident set from the timing driver), and the
libraries' buffer-release options (--release-buffers, mbedTLS's variable-buffers build)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_heap_oracle import massif_peak

from drivers import offer_args, run_driver
from tlsbench.driver import cpuprofile
from tlsbench.driver.drive import driver_command

pytestmark = pytest.mark.slow

HEAP_SERIES = [f"{side}_{what}_per_connection" for side in ("client", "server")
               for what in ("heap", "usable", "peak")]  # fmt: skip
RSS_SERIES = ["rss_per_connection", "rss_peak_per_connection"]
# A record buffer of 16 KiB: what a library that keeps none between records stays under,
# per side, and what releasing one saves at least.
RECORD_BUFFER = 16384


@pytest.fixture(scope="module")
def null(build_of):
    return build_of("null")


def held(build, n: int, *args: str, measure: str = "heap") -> dict:
    run = run_driver(build, "connections", "--connections", str(n), *args, measure=measure)
    assert run.code == 0, run.stderr
    assert run.output is not None
    return run.output


def one(output: dict, series: str) -> float:
    values = output["samples"][series]
    assert len(values) == 1, "one figure per process"
    return values[0]


def test_null_per_connection_figures_are_the_totals_over_n(null) -> None:
    out = held(null, 50, measure="heap")
    assert out["params"]["connections"] == 50 and out["params"]["payload"] == 1024
    assert set(out["samples"]) == set(HEAP_SERIES)
    totals = out["connections"]
    assert totals["open"] == 50 and totals["rss"] is None
    for side in ("client", "server"):
        t = totals[side]
        assert one(out, f"{side}_heap_per_connection") == (t["after"] - t["before"]) / 50
        assert one(out, f"{side}_usable_per_connection") == (
            t["after_usable"] - t["before_usable"]) / 50  # fmt: skip
        assert one(out, f"{side}_peak_per_connection") == (t["peak"] - t["before"]) / 50
        assert t["blocks"] == 50  # the null adapter's connection is one block
        assert t["peak"] >= t["after"] > t["before"]
    # The first connection is measured as the handshake scenario measures a cold one.
    assert out["heap"]["client"]["conn_retained"] > 0
    timed = held(null, 50, measure="time")
    assert timed["heap"] is None and set(timed["samples"]) <= set(RSS_SERIES)
    rss = timed["connections"]["rss"]
    assert one(timed, "rss_per_connection") == (rss["after"] - rss["before"]) / 50
    if rss["peak"] is not None:  # a kernel that lets a process reset its RSS peak
        assert one(timed, "rss_peak_per_connection") == (rss["peak"] - rss["before"]) / 50
        assert rss["peak"] >= rss["after"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--connections", "0"], "--connections takes a whole number from 1 to 10000, not '0'"),
        (["--connections", "10001"], "--connections takes a whole number from 1 to 10000"),
        (["--connections", "many"], "--connections takes a whole number"),
        (["--iterations", "3"], "--iterations and --warmup do not apply"),
        (["--warmup", "1"], "--iterations and --warmup do not apply"),
        (["--transport", "tcp"], "--transport tcp is for"),
        (["--role", "client"], "--role"),
    ],
)  # fmt: skip
def test_wrong_options_are_usage_errors(null, args: list[str], message: str) -> None:
    proc = subprocess.run(
        [*driver_command(null, "connections", args)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("spec", ["openssl-3.5.x", "mbedtls-3.6.6", "gnutls-3.8.x",
                                  "rustls-ffi-0.15.7"])  # fmt: skip
def test_held_connections_cost_in_proportion_to_their_number(spec: str, build_of) -> None:
    """Real handshakes, each checked: the heap the sides hold grows with N, about N times a
    per-connection figure that does not depend on N (lazy set-up on the first connection
    aside), and the resident set grows too."""
    build = build_of(spec)
    few, many = held(build, 4, *offer_args(spec)), held(build, 40, *offer_args(spec))
    for out in (few, many):
        assert out["negotiated"]["version"] == "1.3" and out["exit"] == 0
    for side in ("client", "server"):
        grown = [o["connections"][side]["after"] - o["connections"][side]["before"]
                 for o in (few, many)]  # fmt: skip
        assert grown[1] > 5 * grown[0] > 0, (side, grown)
        per = [one(o, f"{side}_heap_per_connection") for o in (few, many)]
        assert 0 < per[1] <= per[0] * 1.05, (side, per)  # the first one pays the lazy set-up
        assert abs(per[1] - per[0]) < 0.25 * per[0], (side, per)
        for out in (few, many):
            assert one(out, f"{side}_usable_per_connection") >= one(
                out, f"{side}_heap_per_connection")  # fmt: skip
            assert one(out, f"{side}_peak_per_connection") >= one(
                out, f"{side}_heap_per_connection")  # fmt: skip
    timed = held(build, 40, *offer_args(spec), measure="time")
    rss = timed["connections"]["rss"]
    assert rss["after"] > rss["before"] and one(timed, "rss_per_connection") > 0


@pytest.mark.parametrize("spec", ["openssl-3.5.x", "openssl-1.1.1w"])
def test_release_buffers_lowers_what_an_open_openssl_connection_keeps(spec: str, build_of) -> None:
    build = build_of(spec)
    kept, released = held(build, 10), held(build, 10, "--release-buffers")
    assert "release_buffers" not in kept["params"] and released["params"]["release_buffers"]
    for side in ("client", "server"):
        drop = one(kept, f"{side}_heap_per_connection") - one(
            released, f"{side}_heap_per_connection")  # fmt: skip
        assert drop >= RECORD_BUFFER, (side, drop)


@pytest.mark.parametrize("spec", ["wolfssl-5.7.2", "gnutls-3.8.x", "aws-lc-5.12.0",
                                  "boringssl-5.4.0"])  # fmt: skip
def test_libraries_that_always_release_keep_no_record_buffer(spec: str, build_of) -> None:
    """--release-buffers sets nothing in these: an open connection already holds less than
    one record buffer per side."""
    out = held(build_of(spec), 10, "--release-buffers")
    for side in ("client", "server"):
        assert 0 < one(out, f"{side}_heap_per_connection") < RECORD_BUFFER


@pytest.mark.parametrize("spec, reason", [
    ("mbedtls-3.6.6", "MBEDTLS_SSL_VARIABLE_BUFFER_LENGTH"),
    ("rustls-ffi-0.15.7", "no option to free it"),
    ("bearssl-0.6", "it allocates nothing"),
    ("nss-3.110", "no option frees them"),
    ("null", "record buffer is part of its connection"),
])  # fmt: skip
def test_release_buffers_is_unsupported_where_the_library_cannot(spec, reason, build_of) -> None:
    run = run_driver(build_of(spec), "connections", "--connections", "2", "--release-buffers")
    assert run.code == 3, run.stderr
    assert run.output is not None and reason in run.output["error"]["message"]
    assert "samples" not in run.output


def test_mbedtls_variable_buffers_shrink_to_the_negotiated_fragment_length(build_of) -> None:
    """The build option acts after the handshake, on a negotiated max_fragment_length: with
    one (TLS 1.2, 4096) an open connection keeps much less; without one, the same."""
    mfl = ["--tls", "1.2", "--record-size", "4096"]
    default, variable = build_of("mbedtls-3.6.6"), build_of("mbedtls-3.6.6:variable-buffers")
    kept, shrunk = held(default, 10, *mfl), held(variable, 10, *mfl)
    for side in ("client", "server"):
        drop = one(kept, f"{side}_heap_per_connection") - one(shrunk, f"{side}_heap_per_connection")
        assert drop >= RECORD_BUFFER, (side, drop)
    same = [one(held(b, 10, "--tls", "1.2"), "client_heap_per_connection")
            for b in (default, variable)]  # fmt: skip
    assert abs(same[0] - same[1]) < 256, same


def test_process_peak_of_held_connections_agrees_with_massif(build_of, tmp_path: Path) -> None:
    """An independent instrument: valgrind's massif sees the same heap peak (requested
    bytes) as the heap driver for the same command, within 1 %."""
    build = build_of("openssl-3.5.x")
    same_cpu = cpuprofile.under_valgrind_environment()
    args = ["--connections", "30"]
    run = run_driver(build, "connections", *args, measure="heap", env=same_cpu)
    assert run.code == 0 and run.output is not None, run.stderr
    ours = run.output["heap"]["process"]["peak"]
    theirs = massif_peak(driver_command(build, "connections", args), tmp_path / "m.out", same_cpu)
    assert abs(ours - theirs) <= 0.01 * theirs, (ours, theirs)
