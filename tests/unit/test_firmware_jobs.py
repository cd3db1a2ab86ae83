"""Firmware variants and jobs as data (no toolchain, no build): a Cortex-M feature makes a
bare-metal variant with a test entropy source, and a job that cannot be is a usage error.
tests/long/test_cortexm.py builds and runs the images."""

from __future__ import annotations

from pathlib import Path

import pytest

from tlsbench.builds import arches, firmware
from tlsbench.builds.variants import Catalog
from tlsbench.core.errors import UserError
from tlsbench.embedded import qemu

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
    # Every core has its own -mcpu (and FPU where it has one); the RISC-V one its -march.
    for arch, core in firmware.CORES.items():
        flags = arches.arch(arch).flags
        option = "-mcpu" if core.family is firmware.ARM else "-march"
        assert f"{option}={arch}" in flags and core.arch == arch
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


def test_rv32imc_is_a_risc_v_core_with_its_own_toolchain_board_and_uncalibrated_range(
    catalog: Catalog,
) -> None:
    """The RISC-V core: named as fit's --core takes it, built with the riscv64 toolchain for
    RV32IMC (soft-float ABI) and picolibc, run on qemu-system-riscv32's virt board from the
    start of its RAM, projected with a range that says it is uncalibrated."""
    core = firmware.core_named("rv32imc")
    assert core is firmware.core_named("RV32IMC") and core.family is firmware.RISCV
    target = arches.arch("rv32imc")
    assert target.firmware and target.compiler == "riscv64-unknown-elf-gcc"
    assert {"-march=rv32imc", "-mabi=ilp32", "--specs=picolibc.specs"} <= set(target.flags)
    assert arches.PACKAGES["rv32imc"]["qemu-system-riscv32"] == "qemu-system-misc"
    command = qemu.qemu_command(Path("image.elf"), core, ["mode=ops"])
    assert command[:3] == ["qemu-system-riscv32", "-bios", "none"]
    assert command[command.index("-M") + 1] == "virt" and "shift=0" in " ".join(command)
    script = firmware.linker_script(core)
    assert "ORIGIN = 0x80000000" in script and "@" not in script.split("*/", 1)[1]
    assert "KEEP(*(.init))" in script  # the reset vector jumps to the start of RAM
    (low, high), label = core.cpi_range()
    assert (low, high) == core.cpi and low < high and "uncalibrated" in label
    assert core.part.mhz == 160.0 and core.part.ram == 400 * 1024
    # The ARM cores keep their board, emulator and script.
    m4 = firmware.core_of("cortex-m4")
    assert qemu.qemu_command(Path("x"), m4, [])[0] == "qemu-system-arm"
    assert "VECTORS" in firmware.linker_script(m4) and m4.label == "Cortex-M4"
    # wolfSSL's portable C maths on RISC-V: no --enable-sp-asm (its Cortex-M features have).
    wolfssl = catalog.resolve("wolfssl-5.7.2:rv32imc")
    assert "--enable-sp" in wolfssl.configure and "--enable-sp-asm" not in wolfssl.configure
    assert "--enable-sp-asm" in catalog.resolve(WOLFSSL_VARIANT).configure
    mbedtls = catalog.resolve("mbedtls-3.6.6:rv32imc,small")
    assert mbedtls.arch == "rv32imc" and "MBEDTLS_ENTROPY_HARDWARE_ALT" in mbedtls.macros
