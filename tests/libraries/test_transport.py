"""The loopback TCP transport: the same scenarios and checks as the memory pair, over a
real socket (one process, a fresh 127.0.0.1 connection per tlsbench connection)."""

from __future__ import annotations

import pytest

from drivers import TLS_LIBRARIES, newest_tls, offer_args, run_driver

LIBRARIES = ["null", *TLS_LIBRARIES]


@pytest.mark.parametrize("spec", LIBRARIES)
def test_scenarios_run_over_tcp_with_every_check(spec: str, build_of) -> None:
    tls = newest_tls(spec)
    for scenario in ["handshake", "resume", "records", "bulk"]:
        if spec == "null" and scenario == "resume":
            continue  # the baseline has no sessions
        extra = ["--bytes", "1048576"] if scenario == "bulk" else []
        run = run_driver(build_of(spec), scenario, "--tls", tls, "--transport", "tcp",
                         *offer_args(spec, tls=tls), "--iterations", "3", "--warmup", "1",
                         *extra)  # fmt: skip
        assert run.code == 0, (spec, scenario, run.stderr)
        assert run.output is not None
        assert run.output["params"]["transport"] == "tcp"
        assert run.output["samples"], (spec, scenario)


# BoringSSL holds its TLS 1.3 tickets back until the server writes: its adapter flushes them
# at the end of the handshake, and this sees them on the socket.
@pytest.mark.parametrize(
    "spec", ["openssl-system", "gnutls-system", "wolfssl-5.7.2", "boringssl-5.4.0"]
)
def test_a_ticket_left_on_the_socket_is_seen(spec: str, build_of) -> None:
    """The no-tickets check reads the socket's receive queue (FIONREAD) over TCP."""
    run = run_driver(build_of(spec), "handshake", "--transport", "tcp", "--iterations", "2",
                     "--warmup", "0", "--fault", "server-tickets")  # fmt: skip
    assert run.code == 4, run.stderr
    assert "bytes in flight to the client" in run.stderr


def test_tcp_is_refused_where_there_is_no_connection(build_of) -> None:
    run = run_driver(build_of("null"), "aead", "--transport", "tcp")
    assert run.code == 2
    assert "--transport tcp is for handshake" in run.stderr
    run = run_driver(build_of("null"), "handshake", "--transport", "udp")
    assert run.code == 2
    assert "--transport must be memory or tcp" in run.stderr


@pytest.mark.parametrize("transport", ["memory", "tcp"])
def test_wire_figures_of_a_handshake(transport: str, build_of) -> None:
    """Round trips and the ClientHello's size, read from the records each side sent."""
    build = build_of("openssl-3.5.x")
    sizes = {}
    for group in ["x25519", "X25519MLKEM768"]:
        run = run_driver(build, "resume", "--group", group, "--transport", transport,
                         "--iterations", "2", "--warmup", "0")  # fmt: skip
        assert run.code == 0, run.stderr
        wire = run.output["wire"]
        assert wire["full"]["round_trips"] == 1 and wire["resumed"]["round_trips"] == 1
        assert wire["full"]["client"]["flights_sent"] == 2  # ClientHello, then Finished
        assert wire["full"]["server"]["records_sent"] >= 2
        # Resumption sends no certificate.
        assert wire["resumed"]["server"]["bytes_sent"] < wire["full"]["server"]["bytes_sent"]
        sizes[group] = wire["full"]["client_hello_bytes"]
    # The hybrid key share carries an ML-KEM-768 encapsulation key (1184 bytes) beside the
    # X25519 share; other extensions differ by a few bytes (seen: +1176 in all).
    assert sizes["X25519MLKEM768"] - sizes["x25519"] >= 1100, sizes
    run = run_driver(build_of("mbedtls-2.28.x"), "handshake", "--tls", "1.2", "--transport",
                     transport, "--iterations", "1", "--warmup", "0")  # fmt: skip
    assert run.code == 0, run.stderr
    assert run.output["wire"]["full"]["round_trips"] == 2  # TLS 1.2: two server flights


@pytest.mark.parametrize("spec", [s for s in LIBRARIES if s != "null"])
def test_the_library_s_own_socket_io_runs_every_scenario_with_every_check(
    spec: str, build_of
) -> None:
    """--io fd: the library reads and writes the TCP socket itself (OpenSSL's socket BIO,
    wolfSSL's EmbedSend/EmbedReceive, mbedTLS's net_sockets, GnuTLS's default push/pull);
    the checks are the same (the no-tickets one reads the socket's queue)."""
    tls = newest_tls(spec)
    if spec.startswith(("rustls-", "bearssl-", "nss-", "botan-")):
        # rustls, BearSSL, NSS (given tlsbench's transport only) and Botan do no I/O of their
        # own: refused with the reason (exit 3).
        run = run_driver(build_of(spec), "records", "--tls", tls, "--transport", "tcp", "--io",
                         "fd", *offer_args(spec, tls=tls), "--iterations", "3")  # fmt: skip
        assert run.code == 3 and "no socket I/O of its own" in run.stderr, run.stderr
        return
    for scenario in ["handshake", "resume", "records"]:
        run = run_driver(build_of(spec), scenario, "--tls", tls, "--transport", "tcp",
                         "--io", "fd", "--iterations", "3", "--warmup", "1")  # fmt: skip
        assert run.code == 0, (spec, scenario, run.stderr)
        assert run.output is not None and run.output["params"]["io"] == "fd"
        assert "wire" not in run.output  # nothing passes tlsbench's counters on this path
    if tls == "1.3":  # in TLS 1.2 a ticket travels inside the handshake (test_checks.py)
        run = run_driver(build_of(spec), "handshake", "--transport", "tcp", "--io", "fd",
                         "--iterations", "2", "--warmup", "0",
                         "--fault", "server-tickets")  # fmt: skip
        assert run.code == 4, run.stderr


def test_own_socket_io_needs_a_socket_and_a_library(build_of) -> None:
    run = run_driver(build_of("openssl-3.5.x"), "records", "--io", "fd")
    assert run.code == 2 and "--io fd needs --transport tcp" in run.stderr
    run = run_driver(build_of("null"), "records", "--transport", "tcp", "--io", "fd")
    assert run.code == 3 and "the null baseline has no socket I/O of its own" in run.stderr


@pytest.mark.parametrize("transport", ["memory", "tcp"])
def test_wolfssl_s_bio_layer_runs_every_scenario_with_every_check(transport: str,
                                                                   build_of) -> None:  # fmt: skip
    """--io bio: wolfSSL's own BIO layer (OPENSSL_EXTRA) between the library and tlsbench's
    counted callbacks: the same checks, and the same bytes on the wire as the callbacks."""
    build = build_of("wolfssl-5.7.2:opensslextra")
    for scenario in ["handshake", "resume", "records", "bulk"]:
        run = run_driver(build, scenario, "--transport", transport, "--io", "bio",
                         "--iterations", "3", "--warmup", "1", "--bytes", "65536")  # fmt: skip
        assert run.code == 0, (scenario, run.stderr)
        assert run.output["params"]["io"] == "bio"
    direct = run_driver(build, "handshake", "--transport", transport, "--iterations", "1",
                        "--warmup", "0")  # fmt: skip
    layered = run_driver(build, "handshake", "--transport", transport, "--io", "bio",
                         "--iterations", "1", "--warmup", "0")  # fmt: skip
    assert direct.code == 0 and layered.code == 0
    assert layered.output["wire"]["full"]["round_trips"] == 1
    for side in ("client", "server"):
        # Record sizes (and so bytes) are the library's own whatever the I/O path.
        assert (layered.output["wire"]["full"][side]["records_sent"]
                == direct.output["wire"]["full"][side]["records_sent"])  # fmt: skip
    run = run_driver(
        build,
        "handshake",
        "--transport",
        transport,
        "--io",
        "bio",
        "--iterations",
        "2",
        "--warmup",
        "0",
        "--fault",
        "server-tickets",
    )
    assert run.code == 4, run.stderr


def test_a_bio_layer_is_refused_where_there_is_none(build_of) -> None:
    cases = {
        "wolfssl-5.7.2": "needs a build with OPENSSL_EXTRA (variant feature opensslextra)",
        "openssl-3.5.x": "OpenSSL's callbacks path already is its BIO layer",
        "mbedtls-3.6.6": "mbedTLS has no BIO layer",
        "gnutls-3.8.x": "GnuTLS has no BIO layer",
        "null": "the null adapter has no BIO layer",
    }
    for spec, message in cases.items():
        run = run_driver(build_of(spec), "records", "--io", "bio", "--iterations", "1")
        assert run.code == 3, (spec, run.stderr)
        assert message in run.output["error"]["message"], (spec, run.output["error"])
