"""The Botan 3 line (botan-3.x): real handshakes through Botan's C++ TLS API, with what was
negotiated read back from Botan and checked by the driver; a wrong CA fails the handshake.

One build of the line (a minimized static Botan, several minutes on two cores: see
docs/libraries.md), shared by every test here through the session's `build_of`.
"""

from __future__ import annotations

import pytest

from adapter_contract import built_adapter_objects, object_violations
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


@pytest.mark.parametrize("tls", ["1.3", "1.2"])
def test_mutual_auth_reads_both_schemes_back(tls: str, build_of) -> None:
    """The client's CertificateVerify scheme too, and a client scheme apart from the
    server's (--fault client-sigalg asks for it; Botan holds the two lists apart)."""
    build = build_of(SPEC)
    run = run_driver(build, "handshake", "--tls", tls, "--auth", "mutual", "--iterations", "2",
                     "--warmup", "0")  # fmt: skip
    assert run.code == 0, run.stderr
    negotiated = run.output["negotiated"]
    sigalg = EXPECTED[(tls, "rsa2048")][2]
    assert negotiated["sigalg"] == negotiated["client_sigalg"] == sigalg
    assert negotiated["peer_verified"] == {"client": True, "server": True}


@pytest.mark.parametrize("tls", ["1.3", "1.2"])
def test_resumption_is_proven(tls: str, build_of) -> None:
    run = run_driver(build_of(SPEC), "resume", "--tls", tls, "--iterations", "5", "--warmup",
                     "1")  # fmt: skip
    assert run.code == 0, run.stderr
    assert run.output["negotiated"]["resumed"] is True
    assert len(run.output["samples"]["client_cpu_ns"]) == 5


def test_a_hello_retry_request_is_negotiated(build_of) -> None:
    """The client's one key share is secp256r1, the server's only group x25519: Botan's
    server asks again (the driver counts the round trip on the wire)."""
    run = run_driver(build_of(SPEC), "handshake", "--group", "x25519", "--key-share",
                     "secp256r1", "--iterations", "2", "--warmup", "0")  # fmt: skip
    assert run.code == 0, run.stderr
    assert run.output["negotiated"]["group"] == "x25519"


def test_records_bulk_and_aead_carry_checked_data(build_of) -> None:
    build = build_of(SPEC)
    records = run_driver(build, "records", "--iterations", "200", "--warmup", "20")
    assert records.code == 0, records.stderr
    assert len(records.output["samples"]["read_ns"]) == 200
    bulk = run_driver(build, "bulk", "--bytes", "2000000", "--iterations", "2")
    assert bulk.code == 0, bulk.stderr
    assert min(bulk.output["samples"]["sender_MBps"]) > 0
    # Botan's own AEAD API: the driver checks known answers before it times anything.
    aead = run_driver(build, "aead", "--iterations", "50", "--warmup", "5")
    assert aead.code == 0, aead.stderr
    assert {r["aead"] for r in aead.output["aead"]} == {
        "AES-128-GCM", "AES-256-GCM", "ChaCha20-Poly1305"}  # fmt: skip


def test_the_built_adapter_uses_only_the_contract(build_of) -> None:
    """The C++ adapter's object as this build compiled it: every tb_ symbol it uses is
    declared by driver.h or names.h (C++ names are mangled; the contract's are C)."""
    objects = built_adapter_objects(build_of(SPEC).drivers_folder)
    assert any(o.name.startswith("botan.cpp") for o in objects), objects
    assert not object_violations(objects)
