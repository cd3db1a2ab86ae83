"""The Botan 3 line (botan-3.x): real handshakes through Botan's C++ TLS API, with what was
negotiated read back from Botan and checked by the driver; a wrong CA fails the handshake.

One build of the line (a minimized static Botan, several minutes on two cores: see
docs/libraries.md), shared by every test here through the session's `build_of`. What every
library is put through (auth modes, resumption, records, bulk, AEAD, the built adapter's
symbols) is tests/libraries/test_adapters.py's, where botan-3.x is one of the libraries;
this file holds what is Botan's own.
"""

from __future__ import annotations

import pytest

from drivers import run_driver
from tlsbench.builds.sources import load_pins

pytestmark = pytest.mark.slow

SPEC = "botan-3.x"
# What each run asks for (the driver's defaults for the certificate and version) and must
# read back: TLS 1.2 ECDSA needs the certificate's curve among the groups (RFC 8422).
EXPECTED = {
    ("1.3", "rsa2048"): ("TLS_AES_128_GCM_SHA256", "x25519", "rsa_pss_rsae_sha256"),
    ("1.3", "ecdsa-p256"): ("TLS_AES_128_GCM_SHA256", "x25519", "ecdsa_secp256r1_sha256"),
    ("1.2", "rsa2048"): ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "x25519", "rsa_pkcs1_sha256"),
    ("1.2", "ecdsa-p256"): (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "secp256r1",
        "ecdsa_secp256r1_sha256",
    ),
}


@pytest.mark.parametrize(("tls", "cert"), list(EXPECTED))
def test_a_handshake_negotiates_what_was_asked(tls: str, cert: str, build_of) -> None:
    suite, group, sigalg = EXPECTED[(tls, cert)]
    run = run_driver(build_of(SPEC), "handshake", "--tls", tls, "--cert", cert, "--auth",
                     "server", "--iterations", "3", "--warmup", "1", measure="heap")  # fmt: skip
    assert run.code == 0, run.stderr
    out = run.output
    assert out is not None
    # The pinned release was built and Botan says so at run time.
    assert load_pins()[SPEC].library_version in out["version"], out["version"]
    negotiated = out["negotiated"]
    assert (negotiated["version"], negotiated["suite"]) == (tls, suite)
    assert (negotiated["group"], negotiated["sigalg"]) == (group, sigalg)
    assert negotiated["peer_verified"] == {"client": True, "server": False}
    assert negotiated["resumed"] is False
    # Botan allocates through malloc (operator new, calloc for secrets): the heap driver sees
    # each side's connection.
    for side in ("client", "server"):
        heap = out["heap"][side]
        assert heap["conn_peak"] > 0 and heap["peak"] >= heap["retained"] >= heap["start"]


def test_a_wrong_ca_fails_the_handshake(build_of) -> None:
    run = run_driver(build_of(SPEC), "handshake", "--auth", "server", "--wrong-ca",
                     "--iterations", "1", "--warmup", "0")  # fmt: skip
    assert run.code == 5, (run.code, run.stderr)
    assert run.output is not None and "samples" not in run.output
    assert run.output["error"]["message"]  # Botan's own words


def test_what_the_build_lacks_is_refused_with_the_reason(build_of) -> None:
    """TLS 1.2 CBC suites and ML-KEM are not in the minimized build: unsupported (exit 3),
    never a sample."""
    build = build_of(SPEC)
    cbc = run_driver(build, "handshake", "--tls", "1.2", "--suite",
                     "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "--iterations", "1")  # fmt: skip
    assert cbc.code == 3, (cbc.code, cbc.stderr)
    assert "tls_cbc" in cbc.output["error"]["message"]
    pq = run_driver(build, "handshake", "--group", "X25519MLKEM768", "--iterations", "1")
    assert pq.code == 3, (pq.code, pq.stderr)


def test_a_hello_retry_request_is_negotiated(build_of) -> None:
    """The client's one key share is secp256r1, the server's only group x25519: Botan's
    server asks again (the driver counts the round trip on the wire)."""
    run = run_driver(build_of(SPEC), "handshake", "--group", "x25519", "--key-share",
                     "secp256r1", "--iterations", "2", "--warmup", "0")  # fmt: skip
    assert run.code == 0, run.stderr
    assert run.output["negotiated"]["group"] == "x25519"


@pytest.mark.parametrize("tls", ["1.3", "1.2"])
def test_the_client_scheme_is_read_back_not_assumed(tls: str, build_of) -> None:
    """--fault client-sigalg makes the client sign with another scheme than the run expects:
    the scheme read back from Botan's sign and verify callbacks is that other one, and the
    driver's check fails the run (exit 4) on both sides."""
    run = run_driver(build_of(SPEC), "handshake", "--tls", tls, "--auth", "mutual", "--fault",
                     "client-sigalg", "--iterations", "1", "--warmup", "0")  # fmt: skip
    assert run.code == 4, (run.code, run.stderr)
    assert "client signature scheme" in run.output["error"]["message"]


def test_a_record_size_is_rfc_8449_s_limit_in_tls13_and_refused_in_tls12(build_of) -> None:
    """--record-size is Botan's record_size_limit on both sides (TLS 1.3): the server's
    encrypted flight (certificate, CertificateVerify, Finished) goes out in more records than
    without, and data flows under it; Botan's TLS 1.2 has no such knob: unsupported (exit 3)."""
    build = build_of(SPEC)
    records = {}
    for size in ([], ["--record-size", "512"]):
        run = run_driver(build, "handshake", *size, "--iterations", "1", "--warmup", "0")
        assert run.code == 0, run.stderr
        records[bool(size)] = run.output["wire"]["full"]["server"]["records_sent"]
    assert records[True] > records[False], records
    bulk = run_driver(build, "bulk", "--record-size", "512", "--bytes", "65536",
                      "--iterations", "1")  # fmt: skip
    assert bulk.code == 0, bulk.stderr
    tls12 = run_driver(build, "handshake", "--tls", "1.2", "--record-size", "512",
                       "--iterations", "1")  # fmt: skip
    assert tls12.code == 3, (tls12.code, tls12.stderr)
    assert "no max_fragment_length" in tls12.output["error"]["message"]
