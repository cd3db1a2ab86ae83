"""Firmware images (Cortex-M and RISC-V): a TLS client and server in one image, run under QEMU.

A variant with a Cortex-M feature (cortex-m0, -m3, -m4, -m7, -m33, -m55) is cross-built with
arm-none-eabi-gcc and newlib for that core, one with the rv32imc feature with
riscv64-unknown-elf-gcc and picolibc; in place of the driver programs it gets firmware
images (drivers/embedded/cortexm: a core, one adapter per library, semihosting, and the
Cortex-M startup code and linker script; drivers/embedded/riscv: RISC-V's startup code and
linker script: an architecture's Family), with the test credentials compiled in as DER (RSA
2048, ECDSA P-256 and ML-DSA-44 chains of one and two certificates, their CA, and a
pre-shared key):

  firmware.elf   client and server; runs one TLS job on the core's QEMU board and prints
                 one JSON line: what was negotiated (read back from the library and from the
                 wire), and per side the handshake's timer ticks, heap peak, stack high-water;
  client.elf, server.elf
                 one side each, linked for their sizes (never run): what a device playing
                 that role flashes (.text + .data) and keeps in RAM (.data + .bss).

Instructions: QEMU runs the image with `-icount shift=0`, so that every instruction
advances the virtual clock by exactly one nanosecond; SysTick (RISC-V: minstret) counts that
clock and the image calibrates instructions per tick against a loop of known length. The count is
deterministic (the entropy is a fixed test stream and nothing reads a clock), but it is a
count of instructions, not of cycles: the projection to milliseconds multiplies it by a
range of cycles per instruction for the core (CORES, justified in docs/embedded.md) at the
clock of a reference part, and is always shown as that range.

This module is what the build needs of it: the cores, the suites and jobs an image runs, the
images' build commands and linker script, the compiled-in credentials and the probe. Running
the images is src/tlsbench/embedded/. Its size (over 600 lines) is that one vocabulary (cores,
suites, jobs, operations, credentials), which the build, the runner and `fit` share.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from tlsbench.builds import certs
from tlsbench.core import paths
from tlsbench.core.errors import UserError

FIRMWARE = paths.DRIVERS / "embedded" / "cortexm"
ADAPTERS = {
    "mbedtls": "firmware_mbedtls.c",
    "wolfssl": "firmware_wolfssl.c",
    "bearssl": "firmware_bearssl.c",
}
COMMON = ("semihost.c", "firmware_core.c")  # every architecture's, in FIRMWARE
IMAGE = "firmware.elf"
ROLE_IMAGES = {"client": "client.elf", "server": "server.elf"}
SIDES = ("client", "server")
TIMEOUT_SECONDS = 120.0
# The projection's calibration against real boards, written by `tlsbench calibrate --write`
# (src/tlsbench/embedded/calibrate.py) from wolfSSL's published STM32 benchmarks.
CALIBRATION_FILE = Path(__file__).with_name("calibration.json")
KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True)
class Part:
    """A microcontroller with this core: its clock sets the projection to milliseconds, its
    RAM and flash the budget a report checks a configuration against."""

    name: str
    mhz: float
    ram: int  # bytes
    flash: int  # bytes


@dataclass(frozen=True)
class Family:
    """An instruction-set architecture's part of an image: its startup code and linker script
    (the rest of the sources are every family's), the QEMU system emulator that runs it, and
    the sections its size tool reports as code."""

    name: str  # "arm", "riscv"
    folder: Path  # startup.c and firmware.ld.in
    qemu: tuple[str, ...]  # the emulator and the arguments every board of the family needs
    text_sections: tuple[str, ...]  # what counts as code and constants (with .text)

    @property
    def startup(self) -> Path:
        return self.folder / "startup.c"

    @property
    def linker_template(self) -> Path:
        return self.folder / "firmware.ld.in"


ARM = Family("arm", FIRMWARE, ("qemu-system-arm",), (".vectors", ".text", ".ARM.exidx"))
# QEMU's virt board with -bios none jumps from its reset vector to the start of RAM, where
# the image's .init lies (no firmware of QEMU's runs first).
RISCV = Family("riscv", paths.DRIVERS / "embedded" / "riscv",
               ("qemu-system-riscv32", "-bios", "none"), (".init", ".text"))  # fmt: skip


@dataclass(frozen=True)
class Core:
    """A microcontroller core, the QEMU 7.2 board its images run on, and how its instruction
    counts are projected to time (docs/embedded.md gives the sources of every figure)."""

    arch: str  # the variant's target (arches.py): cortex-m4
    short: str  # `tlsbench fit --core m4`
    machine: str  # QEMU board
    cpi: tuple[float, float]  # cycles per instruction, low and high
    part: Part
    # Where the board's CPU reads its vector table, and the memory the rest of the image
    # lives in (code, data, heap, stack): by default the MPS2 boards' 4 MiB of SSRAM at 0.
    vectors: int = 0x0
    ram_origin: int = 0x400
    ram_length: int = 4 * MIB - 0x400
    board_note: str = ""
    family: Family = ARM
    # Where the manual CPI range comes from, in projections' labels.
    cpi_source: str = "reference manual cycle counts, CoreMark ratios"
    name: str = ""  # how reports name it; default: Cortex-M4 from cortex-m4

    @property
    def label(self) -> str:
        return self.name or self.arch.replace("cortex-", "Cortex-").replace("-m", "-M")

    @property
    def calibrated_cpi(self) -> dict[str, Calibration]:
        """The CPI ranges calibrated on real boards for this core, per operation kind
        (public, symmetric): empty where no board of this core was measured."""
        return {kind: Calibration(kind, (float(c["cpi"][0]), float(c["cpi"][1])),
                                  tuple(c["parts"]), tuple(c["operations"]))
                for kind, c in _calibrations().get(self.arch, {}).items()}  # fmt: skip

    def cpi_range(self, kind: str | None = None) -> tuple[tuple[float, float], str]:
        """The CPI range a projection uses, and its calibration's name: the boards' range
        for an operation `kind`, or for a handshake (None) the span of every kind's range;
        the manual's range where this core has no board calibration."""
        calibrated = self.calibrated_cpi
        if kind in calibrated:
            return calibrated[kind].cpi, calibrated[kind].label()
        if kind is None and calibrated:
            lows, highs = zip(*(c.cpi for c in calibrated.values()), strict=True)
            label = "; ".join(c.label() for c in calibrated.values())
            return (min(lows), max(highs)), label
        low, high = self.cpi
        return self.cpi, (f"manual CPI {low:g}..{high:g} ({self.cpi_source}): no board "
                          "calibration for this core")  # fmt: skip

    def ms(self, instructions: float, mhz: float | None = None, kind: str | None = None
           ) -> tuple[float, float]:  # fmt: skip
        """The projection of a count to milliseconds: (low, high) over the CPI range
        (`cpi_range`: calibrated on boards where this core has been)."""
        clock = mhz or self.part.mhz
        low, high = self.cpi_range(kind)[0]
        return (instructions * low / (clock * 1000.0), instructions * high / (clock * 1000.0))


@dataclass(frozen=True)
class Calibration:
    """A core's CPI range for one kind of operation, calibrated on real boards: the board's
    cycles (ms x MHz) over tlsbench's instructions for the same operation (calibration.json)."""

    kind: str  # "public" or "symmetric" (OPERATION_KINDS)
    cpi: tuple[float, float]
    parts: tuple[str, ...]  # "STM32F437 (160 MHz, wolfSSL 4.4.1)"
    operations: tuple[str, ...]

    def label(self) -> str:
        low, high = self.cpi
        return (f"calibrated CPI {low:g}..{high:g} ({self.kind}) on "
                f"{', '.join(p.split(' (')[0] for p in self.parts)}: "
                "wolfSSL's STM32 benchmarks")  # fmt: skip


@cache
def _calibrations() -> dict[str, dict[str, Any]]:
    """calibration.json's ranges per core and kind ({} before the first calibration)."""
    if not CALIBRATION_FILE.exists():
        return {}
    data = json.loads(CALIBRATION_FILE.read_text())
    return {core: dict(c["calibrated"]) for core, c in data["cores"].items()}


# The AN505's CPU starts in the secure state: its vector table and RAM at the secure alias
# of SSRAM1 (0x10000000); the AN547's at its secure ITCM, the rest in its 2 MiB of secure
# SRAM.
CORES: dict[str, Core] = {
    core.arch: core
    for core in (
        Core(
            "cortex-m0", "m0", "mps2-an385", cpi=(1.0, 1.6),
            part=Part("nRF51822 (BBC micro:bit v1)", 16.0, 16 * KIB, 256 * KIB),
            board_note="ARMv6-M code on QEMU's Cortex-M3 model with unaligned accesses "
            "trapped (QEMU 7.2's only Cortex-M0 board, microbit, has 16 KiB of RAM: too "
            "little for both peers and the harness)",
        ),
        Core("cortex-m3", "m3", "mps2-an385", cpi=(1.0, 1.9),
             part=Part("STM32F103RB", 72.0, 20 * KIB, 128 * KIB)),
        Core("cortex-m4", "m4", "mps2-an386", cpi=(1.0, 1.5),
             part=Part("STM32F401RC", 84.0, 64 * KIB, 256 * KIB)),
        Core("cortex-m7", "m7", "mps2-an500", cpi=(0.7, 1.0),
             part=Part("STM32F746NG", 216.0, 320 * KIB, 1024 * KIB)),
        Core("cortex-m33", "m33", "mps2-an505", cpi=(0.85, 1.3),
             part=Part("STM32L552ZE", 110.0, 256 * KIB, 512 * KIB),
             vectors=0x10000000, ram_origin=0x10000400),
        Core("cortex-m55", "m55", "mps3-an547", cpi=(0.8, 1.2),
             part=Part("a 160 MHz M55 part (Alif Ensemble's high-efficiency core)", 160.0,
                       256 * KIB, 1024 * KIB),
             vectors=0x10000000, ram_origin=0x11000000, ram_length=2 * MIB),
        # The ESP32-C3 class: RV32IMC on QEMU's virt board (RAM at 0x80000000). No board of
        # this core has been measured against tlsbench's counts: its range is uncalibrated.
        Core("rv32imc", "rv32imc", "virt", cpi=(1.0, 2.0),
             part=Part("ESP32-C3", 160.0, 400 * KIB, 4 * MIB),
             ram_origin=0x80000000, family=RISCV, name="RV32IMC",
             cpi_source="uncalibrated: the pipeline's floor of 1, and the M4's 1.5 times the "
             "M4's CoreMark/MHz over the ESP32-C3's, 3.40 / 2.55"),
    )
}  # fmt: skip


def core_of(arch: str) -> Core:
    return CORES[arch]


def core_named(name: str) -> Core:
    """A core from `m4`, `cortex-m4` or `M4`: a usage error naming the choices otherwise."""
    wanted = name.strip().lower().removeprefix("cortex-")
    for core in CORES.values():
        if wanted in (core.short, core.arch):
            return core
    raise UserError(
        f"--core {name}: not a core tlsbench builds firmware for; choose one of "
        f"{', '.join(c.short for c in CORES.values())}"
    )


def supported(library: str) -> bool:
    return library in ADAPTERS


# ---------------------------------------------------------------------------- suites and jobs


@dataclass(frozen=True)
class Suite:
    name: str  # IANA, dashes: TLS-ECDHE-RSA-WITH-AES-128-GCM-SHA256
    code: int  # its code point (checked on the wire)
    tls: str  # "1.2" or "1.3"
    kx: str | None  # TLS 1.2: the key exchange it names; TLS 1.3: None (any)
    cert: str | None  # TLS 1.2: the certificate kind it needs (rsa2048, ecdsa-p256), or None


def _suite(name: str, code: int) -> Suite:
    if not name.startswith("TLS-") or "-WITH-" not in name:
        return Suite(name, code, "1.3", None, None)
    kx = name.removeprefix("TLS-").split("-WITH-")[0]
    return Suite(
        name, code, "1.2",
        {"RSA": "rsa", "ECDHE-RSA": "ecdhe", "ECDHE-ECDSA": "ecdhe", "PSK": "psk",
         "ECDHE-PSK": "psk_dhe"}[kx],
        {"RSA": "rsa2048", "ECDHE-RSA": "rsa2048", "ECDHE-ECDSA": "ecdsa-p256"}.get(kx),
    )  # fmt: skip


# The seed question's TLS 1.2 suites: RSA key exchange and ECDHE-RSA, AES-128/256, CBC/GCM.
DEFAULT_SUITES = (
    "TLS-RSA-WITH-AES-128-CBC-SHA256",
    "TLS-RSA-WITH-AES-256-CBC-SHA256",
    "TLS-RSA-WITH-AES-128-GCM-SHA256",
    "TLS-RSA-WITH-AES-256-GCM-SHA384",
    "TLS-ECDHE-RSA-WITH-AES-128-CBC-SHA256",
    "TLS-ECDHE-RSA-WITH-AES-256-CBC-SHA384",
    "TLS-ECDHE-RSA-WITH-AES-128-GCM-SHA256",
    "TLS-ECDHE-RSA-WITH-AES-256-GCM-SHA384",
)
# Every suite a firmware image can be asked for, with its code point (RFC 8446, 5246, 5289,
# 5487, 5489, 6655, 7905).
SUITES: dict[str, Suite] = {
    s.name: s
    for s in (
        _suite("TLS-AES-128-GCM-SHA256", 0x1301),
        _suite("TLS-AES-256-GCM-SHA384", 0x1302),
        _suite("TLS-CHACHA20-POLY1305-SHA256", 0x1303),
        _suite("TLS-AES-128-CCM-SHA256", 0x1304),
        _suite("TLS-RSA-WITH-AES-128-CBC-SHA256", 0x003C),
        _suite("TLS-RSA-WITH-AES-256-CBC-SHA256", 0x003D),
        _suite("TLS-RSA-WITH-AES-128-GCM-SHA256", 0x009C),
        _suite("TLS-RSA-WITH-AES-256-GCM-SHA384", 0x009D),
        _suite("TLS-ECDHE-RSA-WITH-AES-128-CBC-SHA256", 0xC027),
        _suite("TLS-ECDHE-RSA-WITH-AES-256-CBC-SHA384", 0xC028),
        _suite("TLS-ECDHE-RSA-WITH-AES-128-GCM-SHA256", 0xC02F),
        _suite("TLS-ECDHE-RSA-WITH-AES-256-GCM-SHA384", 0xC030),
        _suite("TLS-ECDHE-RSA-WITH-CHACHA20-POLY1305-SHA256", 0xCCA8),
        _suite("TLS-ECDHE-ECDSA-WITH-AES-128-CBC-SHA256", 0xC023),
        _suite("TLS-ECDHE-ECDSA-WITH-AES-128-GCM-SHA256", 0xC02B),
        _suite("TLS-ECDHE-ECDSA-WITH-AES-256-GCM-SHA384", 0xC02C),
        _suite("TLS-ECDHE-ECDSA-WITH-CHACHA20-POLY1305-SHA256", 0xCCA9),
        _suite("TLS-PSK-WITH-AES-128-CBC-SHA256", 0x00AE),
        _suite("TLS-PSK-WITH-AES-128-GCM-SHA256", 0x00A8),
        _suite("TLS-PSK-WITH-AES-256-GCM-SHA384", 0x00A9),
        _suite("TLS-PSK-WITH-AES-128-CCM", 0xC0A4),
        _suite("TLS-PSK-WITH-AES-128-CCM-8", 0xC0A8),
        _suite("TLS-ECDHE-PSK-WITH-AES-128-CBC-SHA256", 0xC037),
        _suite("TLS-ECDHE-PSK-WITH-CHACHA20-POLY1305-SHA256", 0xCCAC),
    )
}
KNOWN_SUITES = tuple(SUITES)
KX = ("ecdhe", "rsa", "psk", "psk_dhe")
CERTS = ("rsa2048", "ecdsa-p256", "ml-dsa-44")
# The kinds whose leaf signs in TLS 1.3 only (certs.tls13_only): ML-DSA.
TLS13_CERTS = tuple(c for c in CERTS if certs.tls13_only(c))
GROUPS = ("x25519", "secp256r1", "secp384r1")
RECORD_SIZES = (512, 1024, 2048, 4096, 16384)  # 16384: no max_fragment_length asked
CHAINS = (1, 2)


def default_suites(tls: str | None, kx: str | None, cert: str | None) -> list[str]:
    """What `tlsbench cortex-m` runs when no suite is named: the seed question's TLS 1.2
    suites, or one suite that fits the version, key exchange and certificate asked."""
    if tls == "1.3":
        return ["TLS-AES-128-GCM-SHA256"]
    if kx == "psk":
        return ["TLS-PSK-WITH-AES-128-GCM-SHA256"]
    if kx == "psk_dhe":
        return ["TLS-ECDHE-PSK-WITH-AES-128-CBC-SHA256"]
    if cert == "ecdsa-p256":
        return ["TLS-ECDHE-ECDSA-WITH-AES-128-GCM-SHA256"]
    return list(DEFAULT_SUITES)


def check_suite(suite: str) -> str:
    """A suite as the image spells it (IANA name with dashes), or a usage error naming the
    valid spellings: checked before anything is built or run."""
    spelled = suite.strip().upper().replace("_", "-")
    if spelled not in SUITES:
        raise UserError(
            f"--suite {suite}: not a cipher suite the firmware images know. Spell it as its "
            f"IANA name, with dashes or underscores (TLS-ECDHE-RSA-WITH-AES-128-GCM-SHA256 or "
            f"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); known: {', '.join(KNOWN_SUITES)}"
        )
    return spelled


@dataclass(frozen=True)
class Job:
    """What one run of an image does: a full handshake, the client verifying the server's
    chain (certificate key exchanges) or both holding the pre-shared key (PSK ones)."""

    suite: str
    tls: str = "1.2"
    kx: str = "ecdhe"
    group: str | None = None
    cert: str = "rsa2048"
    chain: int = 1
    record: int = 16384

    @property
    def psk(self) -> bool:
        return self.kx in ("psk", "psk_dhe")

    def args(self) -> list[str]:
        """The image's arguments (KEY=VALUE, firmware_core.c)."""
        args = [f"tls={self.tls}", f"suite={self.suite}", f"kx={self.kx}"]
        args += [f"group={self.group}"] if self.group else []
        if not self.psk:
            args += [f"cert={self.cert}", f"chain={self.chain}"]
        args += [f"record={self.record}"] if self.record < 16384 else []
        return args

    def key(self) -> str:
        """A file name for the job's cached result."""
        return "_".join(a.split("=", 1)[1] for a in self.args()).lower().replace("-", "")

    def describe(self) -> str:
        what = f"TLS {self.tls} {self.suite}"
        auth = "PSK" if self.kx == "psk" else ("PSK+ECDHE" if self.kx == "psk_dhe" else
                                                 f"{self.cert} chain {self.chain}")  # fmt: skip
        group = f", {self.group}" if self.group and self.kx != "psk" else ""
        record = f", records {self.record}" if self.record < 16384 else ""
        return f"{what} ({auth}{group}{record})"


def make_job(
    suite: str,
    tls: str | None = None,
    kx: str | None = None,
    group: str | None = None,
    cert: str | None = None,
    chain: int | None = None,
    record: int | None = None,
) -> Job:
    """A job from its parts, every usage error said before anything runs: the TLS version
    and key exchange follow from a TLS 1.2 suite and must agree with what is asked."""
    name = check_suite(suite)
    found = SUITES[name]
    version = tls or found.tls
    if version != found.tls:
        raise UserError(f"{name} is a TLS {found.tls} suite, not a TLS {version} one")
    exchange = kx or found.kx or "ecdhe"
    if exchange not in KX or (exchange == "rsa" and version == "1.3"):
        choices = ("ecdhe", "psk", "psk_dhe") if version == "1.3" else KX
        raise UserError(f"kx {exchange}: with TLS {version}, choose one of {', '.join(choices)}")
    if found.kx is not None and exchange != found.kx:
        raise UserError(f"{name} is a {found.kx} suite: kx {exchange} does not apply to it")
    kind = cert or found.cert or "rsa2048"
    if kind not in CERTS:
        raise UserError(f"cert {kind}: the images carry {', '.join(CERTS)}")
    if kind in TLS13_CERTS and version != "1.3" and exchange not in ("psk", "psk_dhe"):
        raise UserError(f"cert {kind}: its leaf signs in TLS 1.3 only (choose a TLS 1.3 suite)")
    if found.cert is not None and kind != found.cert:
        raise UserError(f"{name} needs a {found.cert} certificate, not {kind}")
    if group is not None and group not in GROUPS:
        raise UserError(f"group {group}: choose one of {', '.join(GROUPS)}")
    if chain is not None and chain not in CHAINS:
        raise UserError(f"chain {chain}: the images carry chains of 1 and 2 certificates")
    if record is not None and record not in RECORD_SIZES:
        raise UserError(
            f"record size {record}: choose one of {', '.join(map(str, RECORD_SIZES))} "
            "(max_fragment_length's sizes; 16384 asks for none)"
        )
    no_group = exchange == "psk" or exchange == "rsa"
    return Job(name, version, exchange, None if no_group else group, kind, chain or 1,
               record or 16384)  # fmt: skip


# ---------------------------------------------------------------------------- operations


@dataclass(frozen=True)
class Operation:
    """One operation of a library's own crypto API that an image runs in `mode=ops` (fw_ops
    in the adapters, in this order): `kind` public (public-key arithmetic) or symmetric
    (ciphers, hashes and key derivation); `per` what one operation processes."""

    name: str  # the image's name for it: p256_sign
    label: str
    kind: str  # "public" or "symmetric"
    per: str = "operation"  # or "KiB": 1024 bytes of payload (FW_OP_BYTES)


OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        Operation("p256_keygen", "P-256 key generation", "public"),
        Operation("p256_ecdh", "P-256 ECDH shared secret", "public"),
        Operation("p256_sign", "ECDSA P-256 sign", "public"),
        Operation("p256_verify", "ECDSA P-256 verify", "public"),
        Operation("x25519_keygen", "X25519 key generation", "public"),
        Operation("x25519_shared", "X25519 shared secret", "public"),
        Operation("rsa2048_public", "RSA-2048 public (encrypt)", "public"),
        Operation("rsa2048_private", "RSA-2048 private (decrypt)", "public"),
        Operation("aes128gcm_kib", "AES-128-GCM encrypt", "symmetric", "KiB"),
        Operation("chacha20poly1305_kib", "ChaCha20-Poly1305 encrypt", "symmetric", "KiB"),
        Operation("sha256_kib", "SHA-256", "symmetric", "KiB"),
        Operation("hkdf_sha256", "HKDF-SHA256 (extract + expand, 32 bytes)", "symmetric"),
        # ML-DSA-44 (FIPS 204): 1 KiB signed with the compiled-in server key; the root's
        # signature over the compiled-in leaf verified, as a client verifies the chain.
        Operation("mldsa44_sign", "ML-DSA-44 sign (1 KiB message)", "public"),
        Operation("mldsa44_verify", "ML-DSA-44 verify (a certificate's signature)", "public"),
    )
}
# The operations only a build with ML-DSA has (wolfSSL 5.9's ml-dsa features): every other
# build's images say they are unsupported, with the reason.
ML_DSA_OPERATIONS = ("mldsa44_sign", "mldsa44_verify")
OPERATION_KINDS = {"public": "public-key arithmetic", "symmetric": "symmetric ciphers and hashes"}
# Calls per measured batch: the timer's tick (tens of instructions) is divided by it.
OPERATION_BATCH = 4


# ---------------------------------------------------------------------------- building


def build_commands(
    cc: str,
    arch: str,
    flags: list[str],
    link: dict[str, Any],
    library: str,
    folder: Path,
    config_headers: tuple[Path, ...] = (),
) -> list[list[str]]:
    """The compile-and-link commands of a variant's images in `folder` (the credentials
    header and the board's linker script are written beside them): firmware.elf, then the
    one-role images. `config_headers` are force-included into the image's own sources: the
    hook for a user's configuration file, which the library build itself must also see."""
    if library not in ADAPTERS:
        raise UserError(f"firmware images exist for {', '.join(sorted(ADAPTERS))}, not {library}")
    core = core_of(arch)
    generated = folder / "generated"
    generated.mkdir(parents=True, exist_ok=True)
    (generated / "certs.c").write_text(credentials_source())
    script = generated / "firmware.ld"
    script.write_text(linker_script(core))
    common = [cc, *flags, "-Os", "-g", "-Wall", "-ffunction-sections", "-fdata-sections"]
    common += [f"-I{d}" for d in link.get("include_dirs", [])]
    common += [f"-D{d}" for d in link.get("defines", [])]
    common += [f"-I{FIRMWARE}", *(a for h in config_headers for a in ("-include", str(h)))]
    sources = [str(core.family.startup)]
    sources += [str(FIRMWARE / name) for name in (*COMMON, ADAPTERS[library])]
    sources.append(str(generated / "certs.c"))
    tail = ["-T", str(script), "-nostartfiles", "-Wl,--gc-sections"]
    tail += ["-Wl,--wrap=malloc,--wrap=free,--wrap=calloc,--wrap=realloc"]
    tail += link.get("libraries", [])
    commands = [[*common, *sources, *tail, "-o", str(folder / IMAGE)]]
    for number, (role, image) in enumerate(ROLE_IMAGES.items()):
        role_flag = f"-DTLSBENCH_ROLE={number}"  # FW_CLIENT, FW_SERVER (firmware.h)
        assert role == SIDES[number]
        commands.append([*common, role_flag, *sources, *tail, "-o", str(folder / image)])
    # gcc refuses a specs file given twice (the target's flags come with compile and link).
    return [[a for i, a in enumerate(c) if not a.startswith("--specs=") or a not in c[:i]]
            for c in commands]  # fmt: skip


def linker_script(core: Core) -> str:
    values = {
        "@VECTORS@": f"0x{core.vectors:08X}",
        "@RAM_ORIGIN@": f"0x{core.ram_origin:08X}",
        "@RAM_LENGTH@": f"0x{core.ram_length:X}",
    }
    text = core.family.linker_template.read_text()
    for key, value in values.items():
        text = text.replace(key, value)
    return text


# The pre-shared key of the PSK jobs (a test value, never secret) and its identity.
TEST_PSK = bytes(range(0x10, 0x30))
TEST_PSK_IDENTITY = "tlsbench-device"


def credentials_source() -> str:
    """The test credentials as C (DER, in the image's .certs section), from the same
    certificate sets the native drivers use."""
    lines = [
        "/* Generated by tlsbench: test credentials (never secret, never for use). */",
        '#include "firmware.h"',
    ]
    entries = []
    for index, kind in enumerate(CERTS):
        folder = certs.cert_dir(kind)
        chain1 = _der_certs(folder / "server-chain1.pem")
        chain2 = _der_certs(folder / "server-chain2.pem")
        parts = {
            "ca": _der_certs(folder / "ca.pem")[0],
            "leaf1": chain1[0],
            # The chain of two as one buffer, leaf first: wolfSSL loads it whole.
            "chain2": chain2[0] + chain2[1],
            "key": _der_key(folder / "server.key"),
        }
        for name, data in parts.items():
            lines.append(f"static FW_CERTS_SECTION const unsigned char c{index}_{name}[] = {{")
            lines += [
                "  " + ", ".join(f"0x{b:02x}" for b in data[i : i + 16]) + ","
                for i in range(0, len(data), 16)
            ]
            lines.append("};")
        entries.append(
            f"  {{c{index}_ca, c{index}_leaf1, c{index}_chain2, c{index}_chain2 + "
            f"{len(chain2[0])}, c{index}_key, sizeof c{index}_ca, sizeof c{index}_leaf1, "
            f"{len(chain2[0])}, {len(chain2[1])}, sizeof c{index}_key}}, /* {kind} */"
        )
    lines.append("const fw_credentials fw_certs[FW_CERTS] = {")
    lines += entries
    lines.append("};")
    lines += _signed_source("ml-dsa-44", "fw_ml_dsa_44_signed")
    psk = ", ".join(f"0x{b:02x}" for b in TEST_PSK)
    lines.append(f"const unsigned char fw_psk[32] = {{{psk}}};")
    lines.append(f'const char fw_psk_identity[] = "{TEST_PSK_IDENTITY}";')
    return "\n".join(lines) + "\n"


def _signed_source(kind: str, name: str) -> list[str]:
    """A signature to verify (fw_signed): the root's raw public key, the leaf's TBSCertificate
    and the root's signature over it, from the kind's set."""
    folder = certs.cert_dir(kind)
    root = x509.load_pem_x509_certificate((folder / "ca.pem").read_bytes())
    leaf = x509.load_pem_x509_certificates((folder / "server-chain1.pem").read_bytes())[0]
    parts = {
        "pub": root.public_key().public_bytes(serialization.Encoding.Raw,
                                              serialization.PublicFormat.Raw),
        "msg": leaf.tbs_certificate_bytes,
        "sig": leaf.signature,
    }  # fmt: skip
    lines = []
    for part, data in parts.items():
        lines.append(f"static FW_CERTS_SECTION const unsigned char {name}_{part}[] = {{")
        lines += ["  " + ", ".join(f"0x{b:02x}" for b in data[i : i + 16]) + ","
                  for i in range(0, len(data), 16)]  # fmt: skip
        lines.append("};")
    lines.append(f"const fw_signed {name} = {{{name}_pub, {name}_msg, {name}_sig, "
                 f"sizeof {name}_pub, sizeof {name}_msg, sizeof {name}_sig}};")  # fmt: skip
    return lines


def credential_bytes(job: Job, role: str) -> int:
    """What of the compiled-in credentials a device playing `role` in `job` needs to carry
    (DER bytes): its part of the flash figure."""
    if job.psk:
        return len(TEST_PSK) + len(TEST_PSK_IDENTITY) + 1
    folder = certs.cert_dir(job.cert)
    if role == "client":
        return len(_der_certs(folder / "ca.pem")[0])
    chain = _der_certs(folder / f"server-chain{job.chain}.pem")
    return sum(len(c) for c in chain) + len(_der_key(folder / "server.key"))


def _der_certs(path: Path) -> list[bytes]:
    return [
        c.public_bytes(serialization.Encoding.DER)
        for c in x509.load_pem_x509_certificates(path.read_bytes())
    ]


def _der_key(path: Path) -> bytes:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    return key.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def probe(arch: str, library: str, version: str) -> dict[str, Any]:
    """What a firmware variant's build records in place of a driver's probe."""
    core = core_of(arch)
    return {
        "library": library,
        "version": version,
        "firmware": IMAGE,
        "role_images": dict(ROLE_IMAGES),
        "machine": core.machine,
        "core": core.arch,
    }
