"""Firmware variants and jobs as data (no toolchain, no build): a Cortex-M feature makes a
bare-metal variant with a test entropy source, and a job that cannot be is a usage error.
tests/long/test_cortexm.py builds and runs the images."""

from __future__ import annotations

import pytest

from tlsbench.builds import arches, firmware
from tlsbench.builds.variants import Catalog
from tlsbench.core.errors import UserError

VARIANT = "mbedtls-3.6.6:cortex-m7"


WOLFSSL_VARIANT = "wolfssl-5.7.2:cortex-m7"


TLS13 = "TLS-AES-128-GCM-SHA256"


def test_feature_is_bare_metal_with_a_test_entropy_source(catalog: Catalog) -> None:
    variant = catalog.resolve(VARIANT)
    assert variant.arch == "cortex-m7"
    assert "MBEDTLS_ENTROPY_HARDWARE_ALT" in variant.macros
    assert variant.macros["MBEDTLS_FS_IO"] == "!" and variant.macros["MBEDTLS_NET_C"] == "!"
    assert "MBEDTLS_DEBUG_C" not in variant.macros  # the library's default: debug module on
    assert catalog.resolve(VARIANT + ",no-debug").macros["MBEDTLS_DEBUG_C"] == "!"
    # Every core has its own -mcpu (and FPU where it has one).
    for arch, core in firmware.CORES.items():
        flags = arches.arch(arch).flags
        assert f"-mcpu={arch}" in flags and core.arch == arch
        assert catalog.resolve(f"mbedtls-3.6.6:{arch}").arch == arch
    assert "-mfpu=fpv4-sp-d16" in arches.arch("cortex-m4").flags
    assert "-mfloat-abi=soft" in arches.arch("cortex-m0").flags


def test_jobs_that_cannot_be_are_usage_errors() -> None:
    for wrong, message in [
        (dict(suite=TLS13, tls="1.2"), "is a TLS 1.3 suite"),
        (dict(suite=TLS13, tls="1.3", kx="rsa"), "kx rsa"),
        (dict(suite="TLS-PSK-WITH-AES-128-GCM-SHA256", kx="ecdhe"), "is a psk suite"),
        (dict(suite="TLS-ECDHE-ECDSA-WITH-AES-128-GCM-SHA256", cert="rsa2048"), "needs a"),
        (dict(suite=TLS13, record=1000), "record size 1000"),
        (dict(suite=TLS13, chain=3), "chain 3"),
        (dict(suite=TLS13, group="x448"), "group x448"),
    ]:
        with pytest.raises(UserError, match=message) as caught:
            firmware.make_job(**wrong)  # type: ignore[arg-type]
        assert caught.value.exit_code == 2


def test_wolfssl_feature_is_bare_metal_with_a_test_seed(catalog: Catalog) -> None:
    variant = catalog.resolve(WOLFSSL_VARIANT)
    assert variant.arch == "cortex-m7"
    assert "--disable-filesystem" in variant.configure
    assert "--enable-singlethreaded" in variant.configure and "--enable-psk" in variant.configure
    assert "-DWOLFSSL_USER_IO" in variant.cflags
    assert "-DCUSTOM_RAND_GENERATE_SEED=tlsbench_test_seed" in variant.cflags
    # The Cortex-M assembly: armv7m for configure (sp_cortexm.c), Thumb-1's on the M0.
    assert arches.arch("cortex-m7").host == "armv7m-none-eabi"
    assert "--with-arm-target=thumb" in catalog.resolve("wolfssl-5.7.2:cortex-m0").configure
    assert "-DWOLFSSL_SP_NO_UMAAL" in catalog.resolve("wolfssl-5.7.2:cortex-m3").cflags
