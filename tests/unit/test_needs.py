"""What a job needs of a configuration (needs.py), on configurations given as macro tables:
each missing piece named with the smallest change, nothing asked of what the job does not
use. tests/long/test_real_config_files.py reads the libraries' own files through their
headers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tlsbench.builds import firmware, needs
from tlsbench.builds.variants import Catalog

# What mbedTLS 3.6's default configuration defines for these jobs (a subset).
MBEDTLS_TLS12_ECDSA = {name: "" for name in (
    "MBEDTLS_SSL_TLS_C", "MBEDTLS_SSL_CLI_C", "MBEDTLS_SSL_SRV_C", "MBEDTLS_CTR_DRBG_C",
    "MBEDTLS_ENTROPY_C", "MBEDTLS_SSL_PROTO_TLS1_2", "MBEDTLS_KEY_EXCHANGE_ECDHE_ECDSA_ENABLED",
    "MBEDTLS_AES_C", "MBEDTLS_GCM_C", "MBEDTLS_SHA256_C", "MBEDTLS_X509_CRT_PARSE_C",
    "MBEDTLS_ECDSA_C", "MBEDTLS_ECP_DP_SECP256R1_ENABLED")}  # fmt: skip
ECDSA12 = firmware.make_job("TLS-ECDHE-ECDSA-WITH-AES-128-GCM-SHA256", group="secp256r1")
PSK12 = firmware.make_job("TLS-PSK-WITH-AES-128-CCM-8")


@pytest.fixture
def mbedtls(catalog: Catalog, tmp_path: Path):
    (tmp_path / "c.h").write_text("#define MBEDTLS_SSL_TLS_C\n")
    return catalog.resolve(f"mbedtls-3.6.6:config={tmp_path / 'c.h'}")


def test_a_configuration_with_all_the_job_needs_misses_nothing(mbedtls) -> None:
    assert needs.missing(mbedtls, ECDSA12, MBEDTLS_TLS12_ECDSA) == []


def test_each_missing_piece_is_named_with_its_change(mbedtls) -> None:
    without = {k: v for k, v in MBEDTLS_TLS12_ECDSA.items()
               if k not in ("MBEDTLS_ECDSA_C", "MBEDTLS_GCM_C")}  # fmt: skip
    found = {(n.what, n.change) for n in needs.missing(mbedtls, ECDSA12, without)}
    assert found == {("ECDSA (the server's P-256 certificate)", "#define MBEDTLS_ECDSA_C"),
                     ("AES-GCM (the suite's cipher)", "#define MBEDTLS_GCM_C")}  # fmt: skip


def test_the_files_suite_list_must_hold_the_jobs_suite(mbedtls) -> None:
    listed = {
        **MBEDTLS_TLS12_ECDSA,
        "MBEDTLS_SSL_CIPHERSUITES": "MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    }
    (need,) = needs.missing(mbedtls, ECDSA12, listed)
    assert need.change == ("add MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 to "
                           "MBEDTLS_SSL_CIPHERSUITES")  # fmt: skip
    listed["MBEDTLS_SSL_CIPHERSUITES"] += ", MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
    assert needs.missing(mbedtls, ECDSA12, listed) == []


def test_a_psk_job_needs_room_for_its_key_and_no_certificates(mbedtls) -> None:
    psk = {name: "" for name in ("MBEDTLS_SSL_TLS_C", "MBEDTLS_SSL_CLI_C", "MBEDTLS_SSL_SRV_C",
           "MBEDTLS_CTR_DRBG_C", "MBEDTLS_ENTROPY_C", "MBEDTLS_SSL_PROTO_TLS1_2",
           "MBEDTLS_KEY_EXCHANGE_PSK_ENABLED", "MBEDTLS_AES_C", "MBEDTLS_CCM_C",
           "MBEDTLS_SHA256_C")}  # fmt: skip
    assert needs.missing(mbedtls, PSK12, psk) == []  # MBEDTLS_PSK_MAX_LEN's default is 32
    (need,) = needs.missing(mbedtls, PSK12, {**psk, "MBEDTLS_PSK_MAX_LEN": "16"})
    assert need.change == "#define MBEDTLS_PSK_MAX_LEN 32"


def test_wolfssl_with_curve25519_needs_its_small_code(catalog: Catalog, tmp_path: Path) -> None:
    (tmp_path / "user_settings.h").write_text("#define HAVE_ECC\n")
    variant = catalog.resolve(
        f"wolfssl-5.7.2:cortex-m4,user-settings={tmp_path / 'user_settings.h'}"
    )
    macros = {"HAVE_ECC": "", "HAVE_AESGCM": "", "HAVE_CURVE25519": ""}
    found = [n.change for n in needs.missing(variant, ECDSA12, macros)]
    assert found == ["#define CURVED25519_SMALL"]
    assert needs.missing(variant, ECDSA12, {**macros, "CURVE25519_SMALL": ""}) == []


def test_the_job_of_the_drivers_options() -> None:
    job = needs.job_of_driver_args(["--tls", "1.2", "--suite=TLS_PSK_WITH_AES_128_CCM_8"])
    assert job is not None and (job.suite, job.kx) == ("TLS-PSK-WITH-AES-128-CCM-8", "psk")
    assert needs.job_of_driver_args(["--iterations", "3"]) is None  # no suite: no check
