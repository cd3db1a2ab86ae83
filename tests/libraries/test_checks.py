"""Every check seen to fire, on every library: a check never seen failing is not a check.

The driver's test hook `--fault NAME` makes the library, through its own API, negotiate or
send something other than what the checks expect (tickets switched on at the server, the
other suite, group, signature scheme or version on both sides, no client verification,
no session offered, the other signature scheme for the client's CertificateVerify only, the
key share the server wants sent at once where a HelloRetryRequest was asked for; or the
server taking the client's first share, with the core's round-trip check skipped, so that
the adapters that read the retry back from the library are seen failing on their own).
Each must end the run with exit 4 and a message that names the field, the value asked for
and the value the library reports.
"""

from __future__ import annotations

import pytest

from drivers import TLS12_ONLY, TLS_LIBRARIES, held_sigalg, newest_tls, offer_args, run_driver

LIBRARIES = TLS_LIBRARIES

# fault -> (scenario, extra options, what the message must say)
FAULTS = {
    "server-tickets": ("handshake", [], "bytes in flight to the client"),
    "suite": ("handshake", [], "negotiated suite"),
    "group": ("handshake", [], "negotiated group 'secp384r1', the run asked for 'x25519'"),
    "sigalg": ("handshake", [], "negotiated signature scheme"),
    "version": ("handshake", [], "negotiated version"),
    "verify": (
        "handshake",
        ["--auth", "mutual"],
        "server negotiated peer verification 'not verified', the run asked for 'verified'",
    ),
    "resume": (
        "resume",
        [],
        "negotiated resumption 'full handshake', the run asked for 'resumed'",
    ),
    "client-sigalg": ("handshake", ["--auth", "mutual"], "negotiated client signature scheme"),
    # The client offers secp256r1 with its key share at once: no HelloRetryRequest.
    "key-share": (
        "handshake",
        ["--group", "secp256r1", "--key-share", "x25519"],
        "client negotiated round trips '1', the run asked for '2 (a HelloRetryRequest)'",
    ),
}
# The scheme each version signs with by default (RSA certificate), both signers alike.
DEFAULT_SIGALG = {"1.3": "rsa_pss_rsae_sha256", "1.2": "rsa_pkcs1_sha256"}
SIGALG_SWAP = {"1.3": "rsa_pss_rsae_sha384", "1.2": "rsa_pkcs1_sha384"}
# One signature algorithm list serves both signers in these libraries (mbedTLS sig_algs /
# sig_hashes, wolfSSL's Suites.hashSigAlgo, GnuTLS's priority string): the client's
# CertificateVerify cannot be moved alone, so they must refuse the fault (exit 3), never
# ignore it. Their read-back of the client's scheme is checked by the control below.
# NSS has one list too, but signs with the first scheme of its own list that the peer
# offered: its adapter holds a client scheme apart by order (drivers/adapters/nss.c), and
# reads the client's CertificateVerify off the wire (TLS 1.3: its records opened with the
# client's handshake traffic secret), so its check is seen firing here.
ONE_SIGALG_LIST = ("mbedtls-", "wolfssl-", "gnutls-", "bearssl-", "s2n-")
# rustls-ffi has no API to choose groups or signature schemes (drivers/adapters/rustls.c):
# a fault that moves either (or the version, whose swap moves the scheme) asks for what the
# library cannot be held to, which it must refuse (exit 3) with that reason, never run.
# BearSSL offers signature_algorithms for every hash its handshake holds, the suite's PRF
# hash among them (drivers/adapters/bearssl.c): a scheme whose hash is not the suite's, as
# both swaps make (rsa_pkcs1_sha256 <-> sha384, and AES_128_GCM_SHA256 <-> AES_256_GCM_SHA384
# under rsa_pkcs1_sha256), cannot be offered alone, and is refused.
CANNOT_CHOOSE = {
    "rustls-": {"group", "sigalg", "version", "client-sigalg", "key-share"},
    "bearssl-": {"sigalg", "suite"},
}
SUITE_SWAP = {
    "1.3": ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384"),
    "1.2": ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize("spec", LIBRARIES)
def test_each_check_fires(spec: str, fault: str, build_of) -> None:
    tls = newest_tls(spec)
    if spec == "mbedtls-2.28.x" and fault == "server-tickets":
        pytest.skip("TLS 1.2 sends a ticket inside the handshake, and only when the client "
                    "asks for one, which it does not")  # fmt: skip
    if spec.startswith("bearssl-") and fault == "server-tickets":
        pytest.skip("BearSSL has no session tickets: its server resumes from a session cache, "
                    "which sends nothing after the handshake")  # fmt: skip
    if spec in TLS12_ONLY and fault in ("version", "key-share"):
        pytest.skip(f"{spec} has no TLS 1.3 (to switch to, or to retry a hello in)")
    scenario, extra, message = FAULTS[fault]
    refused = next((f for k, f in CANNOT_CHOOSE.items() if spec.startswith(k)), set())
    # The scheme swaps pair rsa_pss_rsae_sha256 with sha384: those runs keep the default.
    held = [] if fault in refused else offer_args(spec, tls=tls)
    run = run_driver(build_of(spec), scenario, "--tls", tls, *extra, *held, "--iterations", "2",
                     "--warmup", "0", "--fault", fault)  # fmt: skip
    if fault in refused:
        assert run.code == 3, (run.code, run.stderr)
        assert "has no API to choose" in run.stderr, run.stderr
        assert run.output is not None and "samples" not in run.output
        return
    if fault == "client-sigalg" and spec.startswith(ONE_SIGALG_LIST):
        assert run.code == 3, (run.code, run.stderr)
        assert "cannot pin the client's signature scheme" in run.stderr, run.stderr
        assert run.output is not None and "samples" not in run.output
        return
    assert run.code == 4, (run.code, run.stderr)
    assert message in run.stderr, run.stderr
    if fault == "suite":
        asked, other = SUITE_SWAP[tls]
        assert f"negotiated suite '{other}', the run asked for '{asked}'" in run.stderr
    if fault == "client-sigalg":
        asked, other = DEFAULT_SIGALG[tls], SIGALG_SWAP[tls]
        assert (f"client negotiated client signature scheme '{other}', the run asked for "
                f"'{asked}'") in run.stderr  # fmt: skip
    assert run.output is not None and "samples" not in run.output


@pytest.mark.parametrize("tls", ["1.2", "1.3"])
def test_nss_reads_the_client_scheme_it_sent_in_both_versions(tls: str, build_of) -> None:
    """NSS does not report the client's CertificateVerify scheme: its adapter reads it off the
    wire, plaintext in TLS 1.2, in TLS 1.3 from the client's records opened with the client's
    handshake traffic secret (NSS's secret callback, NSS's AEAD). --fault client-sigalg makes
    the client sign with the other scheme, which its read-back names: exit 4. (Without the
    fault both sides read back the scheme asked: test_adapters.py's mutual handshakes.)"""
    asked, other = DEFAULT_SIGALG[tls], SIGALG_SWAP[tls]
    run = run_driver(build_of("nss-3.110"), "handshake", "--tls", tls, "--auth", "mutual",
                     "--iterations", "1", "--warmup", "0", "--fault", "client-sigalg")  # fmt: skip
    assert run.code == 4, (run.code, run.stderr)
    assert (f"client negotiated client signature scheme '{other}', the run asked for "
            f"'{asked}'") in run.stderr  # fmt: skip
    assert run.output is not None and "samples" not in run.output


# The suite fault's same-hash pairs (drivers/core/session.c): the first pairs of its table
# differ in hash, which BearSSL refuses, so on BearSSL the suite check is seen firing here.
# A library without the partner refuses the swap as unsupported (exit 3), never runs it
# (s2n-tls: no CBC suite runs here, drivers/adapters/s2n.c; Botan: its build has no tls_cbc).
SAME_HASH_SWAP = {
    "rsa2048": ("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
                "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"),
    "ecdsa-p256": ("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
                   "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256"),
}  # fmt: skip
NO_CBC_SHA256 = {"rustls-": {"rsa2048", "ecdsa-p256"}, "boringssl-": {"rsa2048", "ecdsa-p256"},
                 "aws-lc-": {"ecdsa-p256"}, "s2n-": {"rsa2048", "ecdsa-p256"},
                 "botan-": {"rsa2048", "ecdsa-p256"}}  # fmt: skip


@pytest.mark.parametrize("cert", sorted(SAME_HASH_SWAP))
@pytest.mark.parametrize("spec", LIBRARIES)
def test_the_suite_check_fires_with_a_same_hash_pair(spec: str, cert: str, build_of) -> None:
    asked, other = SAME_HASH_SWAP[cert]
    run = run_driver(build_of(spec), "handshake", "--tls", "1.2", "--cert", cert, "--suite",
                     asked, *offer_args(spec, cert=cert, tls="1.2"), "--iterations", "2",
                     "--warmup", "0", "--fault", "suite")  # fmt: skip
    assert run.output is not None and "samples" not in run.output
    if cert in next((v for k, v in NO_CBC_SHA256.items() if spec.startswith(k)), set()):
        assert run.code == 3, (run.code, run.stderr)
        assert f"no TLS 1.2 suite '{other}'" in run.stderr or f"no suite '{other}'" in run.stderr
        return
    assert run.code == 4, (run.code, run.stderr)
    assert run.output["error"]["stage"].startswith("negotiated parameters"), run.output["error"]
    assert f"negotiated suite '{other}', the run asked for '{asked}'" in run.stderr, run.stderr


# Adapters that read a HelloRetryRequest back from the library besides the core's count of
# round trips (mbedTLS 2.28 has no TLS 1.3).
HRR_READBACK = ["mbedtls-3.6.6", "wolfssl-5.7.2"]


@pytest.mark.parametrize("spec", HRR_READBACK)
def test_the_library_hello_retry_readback_fires_alone(spec: str, build_of) -> None:
    """--fault key-share-readback: the server takes the client's first share (no retry),
    the core's round-trip check is skipped, so the adapter's readback is what fails."""
    run = run_driver(build_of(spec), "handshake", "--group", "secp256r1", "--key-share",
                     "x25519", "--iterations", "1", "--warmup", "0", "--fault",
                     "key-share-readback")  # fmt: skip
    assert run.code == 5, (run.code, run.stderr)
    assert run.output is not None and "samples" not in run.output
    assert run.output["error"]["stage"] == "negotiated (client)", run.output["error"]
    assert "the server did not send a HelloRetryRequest" in run.output["error"]["message"]
    assert "round trips" not in run.stderr, run.stderr


def test_the_client_signature_check_fires_on_the_null_baseline(build_of) -> None:
    """The null adapter echoes each side's configuration: the core's check alone."""
    run = run_driver(build_of("null"), "handshake", "--auth", "mutual", "--fault",
                     "client-sigalg", "--iterations", "1")  # fmt: skip
    assert run.code == 4, run.stderr
    assert ("negotiated client signature scheme 'rsa_pss_rsae_sha384', the run asked for "
            "'rsa_pss_rsae_sha256'") in run.stderr  # fmt: skip


@pytest.mark.parametrize(
    "args, message",
    [
        (["--auth", "server", "--wrong-ca"], "verifies no certificate"),
        (["--suite", "TLS_AES_256_GCM_SHA384"], "has no cipher suites"),
        (["--group", "ffdhe2048"], "has no key exchange"),
    ],
)
def test_the_null_baseline_refuses_what_it_cannot_do(args: list[str], message: str,
                                                      build_of) -> None:  # fmt: skip
    run = run_driver(build_of("null"), "handshake", *args, "--iterations", "1")
    assert run.code == 3, run.stderr
    assert message in run.output["error"]["message"]


def test_without_a_fault_every_library_passes_the_same_checks(build_of) -> None:
    """The control: the same runs without --fault complete (exit 0)."""
    for spec in LIBRARIES:
        tls = newest_tls(spec)
        for scenario, extra, _ in FAULTS.values():
            if "--key-share" in extra and (tls == "1.2" or spec.startswith("rustls-")):
                continue  # a HelloRetryRequest is TLS 1.3's; rustls-ffi cannot pick groups
            run = run_driver(build_of(spec), scenario, "--tls", tls, *extra,
                             *offer_args(spec, tls=tls), "--iterations", "2", "--warmup",
                             "0")  # fmt: skip
            assert run.code == 0, (spec, scenario, run.stderr)
            negotiated = run.output["negotiated"]
            if "mutual" in extra:
                # Both sides read the client's scheme back and agree with the request.
                want = held_sigalg(spec, "rsa2048", DEFAULT_SIGALG[tls])
                assert negotiated["client_sigalg"] == want, (spec, negotiated)
            else:
                assert "client_sigalg" not in negotiated, (spec, negotiated)
            if "--key-share" in extra:
                # The retry happened and the server's group was negotiated after it.
                assert run.output["wire"]["full"]["round_trips"] == 2, (spec, run.output)
                assert negotiated["group"] == "secp256r1", (spec, negotiated)
