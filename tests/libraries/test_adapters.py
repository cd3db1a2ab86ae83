"""Every library, through its own API: real handshakes, checked negotiation, data, AEAD.

Each test drives a real build of a default variant; a run that negotiated anything other
than what it asked for fails the driver (exit 4), so exit 0 here means verified.
"""

from __future__ import annotations

import pytest

from adapter_contract import built_adapter_objects, object_violations
from drivers import held_sigalg, offer_args, run_driver

pytestmark = pytest.mark.slow

LIBRARIES = [
    "mbedtls-3.6.6",
    "mbedtls-2.28.x",
    "wolfssl-5.7.2",
    "openssl-3.5.x",
    "gnutls-3.8.x",
    "openssl-system",
    "gnutls-system",
    "openssl-1.1.1w",
    "aws-lc-5.12.0",
    "boringssl-5.4.0",
    "rustls-ffi-0.15.7",
    "bearssl-0.6",
    "s2n-tls-1.7.6",
    "nss-3.110",
    "botan-3.x",
]
# What a build cannot do, with the reason the driver must give (exit 3, never a sample).
UNSUPPORTED = {("mbedtls-2.28.x", "1.3"): "TLS 1.3", ("bearssl-0.6", "1.3"): "no TLS 1.3"}
# Builds that offer the hybrid post-quantum group X25519MLKEM768.
HYBRID_ML_KEM = ("openssl-3.5.x", "aws-lc-5.12.0", "boringssl-5.4.0", "s2n-tls-1.7.6", "nss-3.110")

SIGALG = {
    ("rsa2048", "1.3"): "rsa_pss_rsae_sha256",
    ("rsa2048", "1.2"): "rsa_pkcs1_sha256",
    ("ecdsa-p256", "1.3"): "ecdsa_secp256r1_sha256",
    ("ecdsa-p256", "1.2"): "ecdsa_secp256r1_sha256",
}


def newest_tls(spec: str) -> str:
    return "1.2" if (spec, "1.3") in UNSUPPORTED else "1.3"


def expect_supported(spec: str, tls: str, run) -> bool:
    """True when the run must have succeeded; asserts the refusal otherwise."""
    reason = UNSUPPORTED.get((spec, tls))
    if reason is None:
        assert run.code == 0, run.stderr
        return True
    assert run.code == 3, run.stderr
    assert reason in run.output["error"]["message"]
    return False


@pytest.mark.parametrize("spec", LIBRARIES)
@pytest.mark.parametrize("tls", ["1.2", "1.3"])
@pytest.mark.parametrize("cert", ["rsa2048", "ecdsa-p256"])
@pytest.mark.parametrize("auth", ["none", "server", "mutual"])
def test_handshake_negotiates_what_was_asked(spec, tls, cert, auth, build_of) -> None:
    run = run_driver(
        build_of(spec), "handshake", "--tls", tls, "--cert", cert, "--auth", auth,
        *offer_args(spec, cert, tls), "--iterations", "3", "--warmup", "1", measure="heap",
    )  # fmt: skip
    if not expect_supported(spec, tls, run):
        return
    out = run.output
    negotiated = out["negotiated"]
    assert negotiated["version"] == tls
    # TLS 1.2 ECDSA needs the certificate's curve among the (pinned) groups.
    expected_group = "secp256r1" if (cert, tls) == ("ecdsa-p256", "1.2") else "x25519"
    if offer_args(spec, cert, tls):
        expected_group = "x25519"
    assert negotiated["group"] == expected_group
    sigalg = held_sigalg(spec, cert, SIGALG[(cert, tls)])
    assert negotiated["sigalg"] == sigalg
    # The client's CertificateVerify: the same scheme under mutual auth, none otherwise.
    assert negotiated.get("client_sigalg") == (sigalg if auth == "mutual" else None)
    assert negotiated["peer_verified"] == {
        "client": auth != "none",
        "server": auth == "mutual",
    }
    assert negotiated["resumed"] is False
    assert len(out["samples"]["client_cpu_ns"]) == 3
    for side in ("client", "server", "client_warm", "server_warm"):
        heap = out["heap"][side]
        assert heap["conn_peak"] > 0 and heap["peak"] >= heap["retained"] >= heap["start"]


@pytest.mark.parametrize("spec", LIBRARIES)
@pytest.mark.parametrize("tls", ["1.2", "1.3"])
@pytest.mark.parametrize("auth", ["server", "mutual"])
def test_wrong_ca_fails_the_handshake(spec, tls, auth, build_of) -> None:
    run = run_driver(build_of(spec), "handshake", "--tls", tls, "--auth", auth, "--wrong-ca",
                     *offer_args(spec, tls=tls), "--iterations", "1")  # fmt: skip
    if UNSUPPORTED.get((spec, tls)):
        assert run.code == 3
        return
    assert run.code == 5, (run.code, run.stderr)
    assert "samples" not in run.output
    assert run.output["error"]["message"]  # the library's own words


@pytest.mark.parametrize("spec", LIBRARIES)
@pytest.mark.parametrize("tls", ["1.2", "1.3"])
def test_resumption_is_proven(spec, tls, build_of) -> None:
    run = run_driver(build_of(spec), "resume", "--tls", tls, *offer_args(spec, tls=tls),
                     "--iterations", "5", "--warmup", "1")  # fmt: skip
    if not expect_supported(spec, tls, run):
        return
    assert run.output["negotiated"]["resumed"] is True
    assert len(run.output["samples"]["client_cpu_ns"]) == 5


@pytest.mark.parametrize("spec", LIBRARIES)
def test_records_and_bulk_carry_checked_data(spec, build_of) -> None:
    build = build_of(spec)
    tls = newest_tls(spec)
    held = offer_args(spec, tls=tls)
    records = run_driver(build, "records", "--tls", tls, *held, "--iterations", "300",
                         "--warmup", "20")  # fmt: skip
    assert records.code == 0, records.stderr
    assert len(records.output["samples"]["read_ns"]) == 300
    bulk = run_driver(build, "bulk", "--tls", tls, *held, "--bytes", "2000000",
                      "--iterations", "2")  # fmt: skip
    assert bulk.code == 0, bulk.stderr
    assert min(bulk.output["samples"]["sender_MBps"]) > 0


@pytest.mark.parametrize("spec", LIBRARIES)
def test_aead_known_answers_then_figures(spec, build_of) -> None:
    run = run_driver(build_of(spec), "aead", "--iterations", "50", "--warmup", "5")
    if spec.startswith(("rustls-", "s2n-")):
        # rustls-ffi and s2n-tls expose no AEAD API (s2n's records use AWS-LC's): refused
        # with the reason, never a figure.
        assert run.code == 3, (run.code, run.stderr)
        assert "no AEAD API" in run.output["error"]["message"]
        return
    assert run.code == 0, run.stderr
    rows = run.output["aead"]
    assert {(r["aead"], r["payload"]) for r in rows} == {
        (a, p)
        for a in ("AES-128-GCM", "AES-256-GCM", "ChaCha20-Poly1305")
        for p in (16, 256, 1350, 16384)
    }
    assert all(r["tsc_cycles_per_byte"] > 0 for r in rows)


@pytest.mark.parametrize("spec", LIBRARIES)
def test_the_built_adapter_uses_only_the_contract(spec, build_of) -> None:
    """The adapter unit's objects as this build compiled them (include/ only): every tb_
    symbol they use is declared by driver.h or names.h, or defined by the unit itself."""
    objects = built_adapter_objects(build_of(spec).drivers_folder)
    assert objects, f"no adapter objects in {spec}'s build tree"
    assert not object_violations(objects)


@pytest.mark.parametrize("spec", LIBRARIES)
def test_info_lists_the_build(spec, build_of) -> None:
    run = run_driver(build_of(spec), "info")
    assert run.code == 0, run.stderr
    info = run.output["info"]
    assert info["version"]
    assert "TLS_AES_128_GCM_SHA256" in info["suites"] or (spec, "1.3") in UNSUPPORTED
    if (spec, "1.3") in UNSUPPORTED:
        assert info["versions"] == ["1.2"], info["versions"]


@pytest.mark.parametrize("spec", LIBRARIES)
def test_a_suite_the_build_does_not_have_is_refused(spec, build_of) -> None:
    # A real IANA suite that no pinned build enables: that library's "unsupported".
    run = run_driver(build_of(spec), "handshake", "--tls", "1.2", "--suite",
                     "TLS_ECJPAKE_WITH_AES_128_CCM_8", "--iterations", "1")  # fmt: skip
    assert run.code in (3, 4), run.stderr
    assert "samples" not in run.output
    # A name that is no suite at all: a usage error, the same for every library.
    typo = run_driver(build_of(spec), "handshake", "--tls", "1.2", "--suite",
                      "TLS_NOT_A_REAL_SUITE", "--iterations", "1")  # fmt: skip
    assert typo.code == 2 and "unknown --suite 'TLS_NOT_A_REAL_SUITE'" in typo.stderr


@pytest.mark.parametrize(
    "suite",
    [f"TLS_{kx}_WITH_AES_{bits}_CBC_SHA" for kx in ("ECDHE_RSA", "ECDHE_ECDSA", "RSA")
     for bits in (128, 256)],
)  # fmt: skip
def test_bearssl_runs_the_suites_whose_record_mac_is_sha1(suite, build_of) -> None:
    """The *_CBC_SHA suites MAC their records with HMAC-SHA-1, which BearSSL's engine takes
    from its hashes: with SHA-1 taken out (only the PRF hash kept) the driver crashed (SIGSEGV)
    at the first record. The scheme chosen is still the PRF hash's."""
    cert = "ecdsa-p256" if "_ECDSA_" in suite else "rsa2048"
    run = run_driver(build_of("bearssl-0.6"), "handshake", "--tls", "1.2", "--cert", cert,
                     "--suite", suite, "--iterations", "2", "--warmup", "0")  # fmt: skip
    assert run.code == 0, (run.code, run.stderr)
    negotiated = run.output["negotiated"]
    assert negotiated["suite"] == suite
    if not suite.startswith("TLS_RSA_"):
        assert negotiated["sigalg"].endswith("_sha256"), negotiated


@pytest.mark.parametrize("spec", LIBRARIES)
def test_hybrid_ml_kem_is_negotiated_or_refused(spec, build_of) -> None:
    run = run_driver(build_of(spec), "handshake", "--group", "X25519MLKEM768", "--iterations",
                     "1")  # fmt: skip
    if spec in HYBRID_ML_KEM:
        assert run.code == 0, run.stderr
        assert run.output["negotiated"]["group"] == "X25519MLKEM768"
    else:
        assert run.code == 3, (run.code, run.stderr)


def _gcm_cycles_per_byte(build, env: dict[str, str] | None = None) -> tuple[float, str | None]:
    run = run_driver(build, "aead", "--aead", "AES-128-GCM", "--payload", "16384",
                     "--iterations", "300", "--warmup", "30", env=env)  # fmt: skip
    assert run.code == 0, run.stderr
    [row] = run.output["aead"]
    return row["tsc_cycles_per_byte"], run.output.get("cpu_paths")


@pytest.mark.parametrize(
    "spec", ["openssl-3.5.x", "gnutls-3.8.x", "aws-lc-5.12.0", "boringssl-5.4.0"]
)
def test_accel_off_really_switches_the_cpu_crypto_off(spec, build_of) -> None:
    """The run-time switch the runner uses for accel = "off" (generous bound: on this
    machine the generic code is 10-100x slower than AES-NI + PCLMULQDQ)."""
    from tlsbench.builds.recipes.runtime import at_run_time

    build = build_of(spec)
    on, paths_on = _gcm_cycles_per_byte(build)
    off, paths_off = _gcm_cycles_per_byte(build, at_run_time(build.variant.library).accel_off_env)
    assert off > 3 * on, (spec, on, off)
    if spec.startswith(("openssl", "aws-lc", "boringssl")):
        assert paths_on is not None and "AES-NI on, PCLMULQDQ on" in paths_on
        assert paths_off is not None and "AES-NI off, PCLMULQDQ off" in paths_off


@pytest.mark.parametrize(
    ("spec", "provider", "group"),
    [("rustls-ffi-0.15.7", "aws-lc-rs", "x25519"), ("rustls-ffi-0.15.7:ring", "ring", "x25519"),
     ("rustls-ffi-0.15.7:pq", "aws-lc-rs", "X25519MLKEM768")],
)  # fmt: skip
def test_rustls_says_its_provider_and_is_held_to_its_key_share(spec, provider, group,
                                                               build_of) -> None:  # fmt: skip
    """rustls-ffi cannot choose groups: each build negotiates the one it sends a key share
    for, says so in its probe, manifest and info, and refuses every other group (exit 3)."""
    import json

    build = build_of(spec)
    probe = json.loads((build.drivers_folder / "probe.json").read_text())
    assert probe["crypto_provider"] == provider
    assert probe["version"].endswith(f"/rustls/0.23.46/{provider}")
    assert probe["prefer_post_quantum"] == (group == "X25519MLKEM768")
    assert build.manifest["inputs"]["tools"]["crypto_provider"] == provider
    info = run_driver(build, "info")
    assert info.output["info"]["groups"] == [group]
    assert f"crypto_provider={provider}" in info.output["info"]["build_options"]
    run = run_driver(build, "handshake", "--group", group, *offer_args(spec), "--iterations",
                     "2", "--warmup", "0")  # fmt: skip
    assert run.code == 0, run.stderr
    assert run.output["negotiated"]["group"] == group
    other = "x25519" if group != "x25519" else "secp256r1"
    refused = run_driver(build, "handshake", "--group", other, *offer_args(spec),
                         "--iterations", "1")  # fmt: skip
    assert refused.code == 3 and "no API to choose key-exchange groups" in refused.stderr
