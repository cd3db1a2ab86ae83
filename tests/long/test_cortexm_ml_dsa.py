"""ML-DSA-44 on a Cortex-M4 (wolfSSL 5.9's ML-DSA with its small-memory code, the ml-dsa-small
firmware feature): a TLS 1.3 client verifies an ML-DSA-44 chain the image's server signs,
measured per side; `--ops` counts ML-DSA-44 sign and verify; the verify-only build
(ml-dsa-verify) verifies but cannot run the two-sided handshake; the lines without ML-DSA
say so; TLS 1.2 with an ML-DSA certificate is refused before anything runs."""

from __future__ import annotations

import pytest

from tlsbench.builds import arches, firmware
from tlsbench.core.errors import UserError
from tlsbench.embedded import qemu

ML_DSA = "wolfssl-5.9.2:cortex-m4,ml-dsa-small"
VERIFY_ONLY = "wolfssl-5.9.2:cortex-m4,ml-dsa-verify"
TLS13 = "TLS-AES-128-GCM-SHA256"
M4 = firmware.core_of("cortex-m4")

pytestmark = pytest.mark.skipif(
    bool(arches.missing_tools("cortex-m4")),
    reason=f"missing {arches.missing_tools('cortex-m4')} (make deps installs them)",
)


@pytest.fixture(scope="module")
def image(build_of):
    return qemu.image_of(build_of(ML_DSA))


def job(cert: str = "ml-dsa-44", chain: int = 1) -> firmware.Job:
    return firmware.make_job(TLS13, tls="1.3", cert=cert, group="x25519", chain=chain)


def test_a_client_verifies_an_ml_dsa_44_chain(image) -> None:
    result = qemu.run(image, job(), timeout=120)
    assert result["client"]["suite"] == TLS13 and result["wire"]["group"] == "x25519"
    assert result["client"]["verified"] == 1
    for side in firmware.SIDES:
        figures = result[side]
        assert figures["heap_peak"] > 0 and 0 < figures["stack_high_water"] < 64 * 1024
    # A client verifies two ML-DSA-44 signatures (the leaf's and the CertificateVerify): more
    # work than an ECDSA P-256 client's two verifications, and far more heap (the small code
    # still holds a 29 KiB working buffer while it verifies).
    ecdsa = qemu.run(image, job("ecdsa-p256"), timeout=120)
    assert result["client"]["heap_peak"] > ecdsa["client"]["heap_peak"] + 20 * 1024
    again = qemu.run(image, job(), timeout=120)
    assert again["client"] == result["client"] and again["server"] == result["server"]


def test_the_intermediate_costs_the_client_one_more_verification(image) -> None:
    one = qemu.run(image, job(chain=1), timeout=120)["client"]["handshake_instructions"]
    two = qemu.run(image, job(chain=2), timeout=120)["client"]["handshake_instructions"]
    ops = {op["name"]: op for op in qemu.measure_ops(image, M4, runs=1)["ops"]}
    verify = ops["mldsa44_verify"]["instructions"]
    # The second certificate is one more ML-DSA-44 verification (and its parsing).
    assert verify < two - one < 2 * verify


def test_ops_count_ml_dsa_44_sign_and_verify(image) -> None:
    ops = {op["name"]: op for op in qemu.measure_ops(image, M4, runs=2)["ops"]}
    sign, verify = ops["mldsa44_sign"], ops["mldsa44_verify"]
    assert 1_000_000 < verify["instructions"] < sign["instructions"]
    assert verify["heap_peak"] > 0 and sign["heap_peak"] > verify["heap_peak"]


def test_a_verify_only_build_verifies_and_says_why_it_cannot_sign(build_of) -> None:
    image = qemu.image_of(build_of(VERIFY_ONLY))
    ops = {op["name"]: op for op in qemu.run_ops(image, M4)["ops"]}
    assert ops["mldsa44_verify"]["instructions"] > 1_000_000
    assert "verify-only" in ops["mldsa44_sign"]["unsupported"]
    with pytest.raises(qemu.Unsupported, match="cannot run the image's server"):
        qemu.run(image, job(), timeout=120)


def test_a_line_without_ml_dsa_says_so(build_of) -> None:
    image = qemu.image_of(build_of("mbedtls-3.6.6:cortex-m4"))
    with pytest.raises(qemu.Unsupported, match="mbedTLS has no ML-DSA"):
        qemu.run(image, job(), timeout=120)


def test_tls12_with_an_ml_dsa_certificate_is_a_usage_error() -> None:
    with pytest.raises(UserError, match=r"signs in TLS 1\.3 only"):
        firmware.make_job("TLS-ECDHE-ECDSA-WITH-AES-128-GCM-SHA256", cert="ml-dsa-44")
