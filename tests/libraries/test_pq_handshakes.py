"""TLS 1.3 handshakes with post-quantum certificates on the libraries that have ML-DSA in TLS
(OpenSSL 3.5, AWS-LC, BoringSSL, wolfSSL 5.9 with its ml-dsa feature, s2n-tls, rustls with
aws-lc-rs): the scheme each side
reads back is the one asked for (the driver's check), the server's first flight is counted
on the wire, the wrong CA fails, and the lines or kinds a library cannot run are unsupported
with the reason. Two iterations a point: the figures are the experiment's."""

from __future__ import annotations

import pytest

from drivers import run_driver
from tlsbench.scenarios.tls_certificates import INITIAL_WINDOW, MSS

ML_DSA_LIBRARIES = [
    "openssl-3.5.x",
    "aws-lc-5.12.0",
    "boringssl-5.4.0",
    "wolfssl-5.9.2:ml-dsa",
    "s2n-tls-1.7.6",
    "rustls-ffi-0.15.7",
]
QUICK = ("--iterations", "2", "--warmup", "0")


def handshake(build_of, spec: str, *args: str):
    return run_driver(build_of(spec), "handshake", *QUICK, *args)


def server_flight(output: dict) -> dict:
    flights = output["wire"]["full"]["flights"]
    assert [f["from"] for f in flights[:3]] == ["client", "server", "client"], flights
    return dict(flights[1])


@pytest.mark.parametrize("spec", ML_DSA_LIBRARIES)
@pytest.mark.parametrize("auth", ["server", "mutual"])
def test_ml_dsa_handshakes_read_the_scheme_back(build_of, spec: str, auth: str) -> None:
    run = handshake(build_of, spec, "--cert", "ml-dsa-44", "--chain", "2", "--auth", auth)
    assert run.code == 0, run.stderr
    negotiated = run.output["negotiated"]
    assert negotiated["sigalg"] == "mldsa44"
    assert negotiated["peer_verified"]["client"] is True
    if auth == "mutual":
        assert negotiated["peer_verified"]["server"] is True
    flight = server_flight(run.output)
    # Two ML-DSA-44 certificates (each ~4.1 kB: a 1,312-byte key and a 2,420-byte signature)
    # and a CertificateVerify of 2,420 bytes.
    assert 10_000 < flight["bytes"] < 12_000, flight


@pytest.mark.parametrize("spec", ML_DSA_LIBRARIES)
def test_the_wrong_ca_fails_an_ml_dsa_chain(build_of, spec: str) -> None:
    run = handshake(build_of, spec, "--cert", "ml-dsa-44", "--wrong-ca")
    assert run.code == 5, run.stderr


def test_a_larger_chain_passes_the_initial_window(build_of) -> None:
    """The issue's measurement on the pinned OpenSSL 3.5: ML-DSA-65 with an intermediate
    needs more than TCP's 10 initial segments; ML-DSA-44 alone fits."""
    sizes = {}
    for cert, chain in (("ml-dsa-44", 1), ("ml-dsa-65", 2), ("ecdsa-p256", 1)):
        run = handshake(build_of, "openssl-3.5.x", "--cert", cert, "--chain", str(chain))
        assert run.code == 0, run.stderr
        sizes[cert] = server_flight(run.output)["bytes"]
    assert sizes["ecdsa-p256"] < 2_000 < sizes["ml-dsa-44"] < INITIAL_WINDOW * MSS
    assert sizes["ml-dsa-65"] > INITIAL_WINDOW * MSS


def test_mixed_chains_sign_with_the_leaf(build_of) -> None:
    for cert, scheme in (("ml-dsa-44-under-ecdsa-p256", "mldsa44"),
                         ("ecdsa-p256-under-ml-dsa-44", "ecdsa_secp256r1_sha256"),
                         ("ml-dsa-44-under-slh-dsa-sha2-128s", "mldsa44")):  # fmt: skip
        run = handshake(build_of, "openssl-3.5.x", "--cert", cert, "--chain", "3")
        assert run.code == 0, (cert, run.stderr)
        assert run.output["negotiated"]["sigalg"] == scheme


@pytest.mark.parametrize(
    ("spec", "cert", "reason"),
    [
        # Debian's OpenSSL 3.0: the same check as the openssl-3.0.x line, with no build of its own
        ("openssl-system", "ml-dsa-44", "ML-DSA in TLS came with OpenSSL 3.5"),
        ("openssl-3.5.x", "slh-dsa-sha2-128s", "no TLS code point for SLH-DSA"),
        ("aws-lc-5.12.0", "ml-dsa-44-under-slh-dsa-sha2-128s", "cannot read the trust anchor"),
        ("wolfssl-5.7.2", "ml-dsa-44", "use wolfssl-5.9.2:ml-dsa"),
        ("mbedtls-3.6.6", "ml-dsa-44", "no ML-DSA or SLH-DSA"),
        ("gnutls-3.8.x", "ml-dsa-44", "no TLS code point for it; 3.8.10 added one"),
        ("s2n-tls-1.7.6", "ml-dsa-44-under-ecdsa-p256", "the leaf's scheme alone"),
        ("s2n-tls-1.7.6", "slh-dsa-sha2-128f", "no signature scheme slhdsa_sha2_128f"),
        ("rustls-ffi-0.15.7", "ml-dsa-44-under-slh-dsa-sha2-128s", "rustls-webpki has no SLH-DSA"),
    ],
)
def test_what_a_library_cannot_do_is_unsupported_with_the_reason(
    build_of, spec: str, cert: str, reason: str
) -> None:
    run = handshake(build_of, spec, "--cert", cert)
    assert run.code == 3, run.stderr
    assert reason in run.output["error"]["message"]
