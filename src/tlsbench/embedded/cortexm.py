"""Cortex-M firmware images: a TLS client and server in one image, run under QEMU.

A variant with a Cortex-M feature (cortex-m0, -m3, -m4, -m7, -m33, -m55) is cross-built with
arm-none-eabi-gcc and newlib for that core; in place of the driver programs it gets firmware
images (drivers/embedded/cortexm: a core, one adapter per library, own startup code, linker
script and semihosting), with the test credentials compiled in as DER (RSA 2048 and ECDSA
P-256 chains of one and two certificates, their CA, and a pre-shared key):

  firmware.elf   client and server; runs one TLS job on the core's QEMU board and prints
                 one JSON line: what was negotiated (read back from the library and from the
                 wire), and per side the handshake's timer ticks, heap peak, stack high-water;
  client.elf, server.elf
                 one side each, linked for their sizes (never run): what a device playing
                 that role flashes (.text + .data) and keeps in RAM (.data + .bss).

Instructions: QEMU runs the image with `-icount shift=0`, so that every instruction
advances the virtual clock by exactly one nanosecond; SysTick counts that clock and the
image calibrates instructions per tick against a loop of known length. The count is
deterministic (the entropy is a fixed test stream and nothing reads a clock), but it is a
count of instructions, not of cycles: the projection to milliseconds multiplies it by a
range of cycles per instruction for the core (CORES, justified in docs/embedded.md) at the
clock of a reference part, and is always shown as that range.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from tlsbench.builds import arches, certs
from tlsbench.core import paths
from tlsbench.core.errors import UserError

FIRMWARE = paths.DRIVERS / "embedded" / "cortexm"
ADAPTERS = {"mbedtls": "firmware_mbedtls.c", "wolfssl": "firmware_wolfssl.c"}
COMMON = ("startup.c", "semihost.c", "firmware_core.c")
LINKER_TEMPLATE = FIRMWARE / "firmware.ld.in"
IMAGE = "firmware.elf"
ROLE_IMAGES = {"client": "client.elf", "server": "server.elf"}
SIDES = ("client", "server")
TIMEOUT_SECONDS = 120.0
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
class Core:
    """A Cortex-M core, the QEMU 7.2 board its images run on, and how its instruction counts
    are projected to time (docs/embedded.md gives the sources of every figure)."""

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

    @property
    def label(self) -> str:
        return self.arch.replace("cortex-", "Cortex-").replace("-m", "-M")

    def ms(self, instructions: float, mhz: float | None = None) -> tuple[float, float]:
        """The projection of a count to milliseconds: (low, high) over the CPI range."""
        clock = mhz or self.part.mhz
        low, high = self.cpi
        return (instructions * low / (clock * 1000.0), instructions * high / (clock * 1000.0))


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
    )
}  # fmt: skip


def core_of(arch: str) -> Core:
    return CORES[arch]


def core_named(name: str) -> Core:
    """A core from `m4`, `cortex-m4` or `M4`: a usage error naming the choices otherwise."""
    wanted = name.strip().lower().removeprefix("cortex-")
    for core in CORES.values():
        if core.short == wanted:
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
CERTS = ("rsa2048", "ecdsa-p256")
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
        raise UserError(
            f"Cortex-M firmware images exist for {', '.join(sorted(ADAPTERS))}, not {library}"
        )
    generated = folder / "generated"
    generated.mkdir(parents=True, exist_ok=True)
    (generated / "certs.c").write_text(credentials_source())
    script = generated / "firmware.ld"
    script.write_text(linker_script(core_of(arch)))
    common = [cc, *flags, "-Os", "-g", "-Wall", "-ffunction-sections", "-fdata-sections"]
    common += [f"-I{d}" for d in link.get("include_dirs", [])]
    common += [f"-D{d}" for d in link.get("defines", [])]
    common += [f"-I{FIRMWARE}", *(a for h in config_headers for a in ("-include", str(h)))]
    sources = [str(FIRMWARE / name) for name in (*COMMON, ADAPTERS[library])]
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
    text = LINKER_TEMPLATE.read_text()
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
    psk = ", ".join(f"0x{b:02x}" for b in TEST_PSK)
    lines.append(f"const unsigned char fw_psk[32] = {{{psk}}};")
    lines.append(f'const char fw_psk_identity[] = "{TEST_PSK_IDENTITY}";')
    return "\n".join(lines) + "\n"


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


# ---------------------------------------------------------------------------- sizes


@dataclass(frozen=True)
class Sizes:
    """Bytes of a one-role image, per section: text (code and constants, the vector table
    included), data (initialised variables: flashed, and copied to RAM), bss (zeroed
    variables), certs (every credential the image carries: counted per job instead)."""

    text: int
    data: int
    bss: int
    certs: int

    @property
    def flash(self) -> int:
        return self.text + self.data

    @property
    def static_ram(self) -> int:
        return self.data + self.bss


def role_sizes(build: Any, role: str) -> Sizes:
    image = Path(build.program(ROLE_IMAGES[role]))
    done = subprocess.run(
        [arches.CORTEX_M_SIZE, "-A", str(image)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise UserError(f"{arches.CORTEX_M_SIZE} -A {image} failed: {done.stderr}", exit_code=1)
    sections: dict[str, int] = {}
    for line in done.stdout.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1].isdigit():
            sections[fields[0]] = int(fields[1])
    return Sizes(
        text=sections.get(".vectors", 0) + sections.get(".text", 0)
        + sections.get(".ARM.exidx", 0),
        data=sections.get(".data", 0),
        bss=sections.get(".bss", 0),
        certs=sections.get(".certs", 0),
    )  # fmt: skip


# ---------------------------------------------------------------------------- running


def qemu_command(image: Path, core: Core, job: Job) -> list[str]:
    semihosting = ",".join(["enable=on", "target=native",
                            *(f"arg={a}" for a in ["firmware", *job.args()])])  # fmt: skip
    return [
        "qemu-system-arm", "-M", core.machine, "-display", "none", "-monitor", "none",
        "-serial", "none", "-nodefaults", "-nic", "none",
        # One instruction = one virtual nanosecond; no sleeping or aligning to the host.
        "-icount", "shift=0,align=off,sleep=off",
        "-semihosting-config", semihosting, "-kernel", str(image),
    ]  # fmt: skip


class Unsupported(UserError):
    """The build lacks what the job needs (a suite, TLS 1.3, PSK): the point's status is
    `unsupported`, with the library's reason."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=3)


def run(
    image: Path,
    job: Job | str,
    group: str | None = None,
    timeout: float = TIMEOUT_SECONDS,
    core: Core | None = None,
) -> dict[str, Any]:
    """Runs the image once (killing QEMU after `timeout` seconds), checks what was
    negotiated against the job, and returns its figures. A suite name in place of a job is
    a TLS 1.2 certificate job with that suite, passed to the image unchecked (and `group`
    the client's only group); the core is the one the image was built for by default."""
    if isinstance(job, str):
        job = _suite_job(job, group)
    core = core or _core_of_image(image)
    command = qemu_command(image, core, job)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise UserError(
            f"the firmware image did not finish within {timeout:.0f} s (QEMU was stopped)",
            exit_code=1,
        ) from None
    # Semihosting output reaches QEMU's stderr or stdout depending on its version.
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("{")]
    try:
        result = dict(json.loads(lines[-1]))
    except (IndexError, json.JSONDecodeError):
        raise UserError(
            f"the firmware image printed no JSON (exit status {done.returncode}):\n"
            f"{done.stdout[-1000:]}{done.stderr[-1000:]}",
            exit_code=1,
        ) from None
    if result.get("unsupported"):
        raise Unsupported(f"{job.describe()}: {result['error']}")
    if "error" in result or done.returncode != 0:
        raise UserError(f"the firmware image failed: {result.get('error', result)}", exit_code=1)
    check_negotiated(result, job)
    return with_projection(result, core)


def _suite_job(suite: str, group: str | None) -> Job:
    known = SUITES.get(suite.replace("_", "-"))
    kx = known.kx if known and known.kx else "ecdhe"
    no_group = kx in ("rsa", "psk")
    return Job(suite.replace("_", "-"), "1.2", kx, None if no_group else group,
               known.cert if known and known.cert else "rsa2048")  # fmt: skip


def _core_of_image(image: Path) -> Core:
    """The core an image was built for, as its build recorded it (probe.json)."""
    try:
        recorded = json.loads((image.parent.parent / "probe.json").read_text())
        return core_of(str(recorded["core"]))
    except (OSError, ValueError, KeyError) as exc:
        raise UserError(f"{image}: no record of the core it was built for ({exc})") from None


def check_negotiated(result: dict[str, Any], job: Job) -> None:
    """What both libraries read back, and what the server's plaintext said on the wire,
    must be what the job asked: a mismatch is an error, never a sample."""
    version = {"1.2": "TLSv1.2", "1.3": "TLSv1.3"}[job.tls]
    wire = result["wire"]

    def refuse(what: str) -> None:
        raise UserError(f"{job.describe()}: {what}", exit_code=1)

    for side in SIDES:
        if result[side]["version"] != version:
            refuse(f"the {side} negotiated {result[side]['version']}")
        if result[side]["suite"] != job.suite:
            refuse(f"the {side} negotiated {result[side]['suite']}")
    if wire["version"] != {"1.2": 0x0303, "1.3": 0x0304}[job.tls]:
        refuse(f"the ServerHello says version 0x{wire['version']:04x}")
    if wire["suite"] != SUITES[job.suite].code:
        refuse(f"the ServerHello says suite 0x{wire['suite']:04x}")
    if wire["hello_retry"]:
        refuse("the server answered with a HelloRetryRequest (an extra round trip)")
    if job.tls == "1.3" and wire["psk"] != job.psk:
        refuse("the server " + ("did not take" if job.psk else "took") + " a pre-shared key")
    exchanges_keys = job.kx in ("ecdhe", "psk_dhe")
    if exchanges_keys and wire["group"] in ("none", "unknown"):
        refuse(f"no (EC)DHE group on the wire ({wire['group']})")
    if not exchanges_keys and wire["group"] != "none":
        refuse(f"a {job.kx} key exchange, but the wire has group {wire['group']}")
    if job.group and exchanges_keys and wire["group"] != job.group:
        refuse(f"asked for group {job.group}, the server chose {wire['group']}")
    verified = result["client"]["verified"]
    if not job.psk and verified != 1:
        refuse("the client did not verify the server's chain")
    if job.record < 16384 and result["client"]["record"] > job.record:
        refuse(f"max_fragment_length {job.record} asked, the client sends up to "
               f"{result['client']['record']} bytes")  # fmt: skip


def with_projection(result: dict[str, Any], core: Core) -> dict[str, Any]:
    """Adds instructions per side (from timer ticks and the image's own calibration) and
    their projection to milliseconds on the core's reference part (a range)."""
    per_kticks = int(result["instructions_per_1000_ticks"])
    if per_kticks <= 0:
        raise UserError("the image's timer calibration failed", exit_code=1)
    for side in (*SIDES, "global"):
        figures = result[side]
        for phase in ("handshake", "setup"):
            ticks = figures[f"{phase}_timer_ticks"]
            figures[f"{phase}_instructions"] = ticks * per_kticks // 1000
        figures["projected_ms"] = list(core.ms(figures["handshake_instructions"]))
    result["core"] = core.arch
    result["machine"] = core.machine
    result["projection"] = projection(core)
    return result


def projection(core: Core) -> dict[str, Any]:
    return {"part": core.part.name, "clock_mhz": core.part.mhz, "cpi": list(core.cpi)}


def describe_projection(core: Core) -> str:
    low, high = core.cpi
    return (f"instructions x CPI {low:g}..{high:g} / {core.part.mhz:g} MHz "
            f"({core.part.name})")  # fmt: skip


def measure(image: Path, core: Core, job: Job, runs: int) -> dict[str, Any]:
    """`runs` runs of one job; the counts and figures must agree to the instruction."""
    results = [run(image, job, core=core) for _ in range(runs)]
    first = results[0]
    for other in results[1:]:
        for side in (*SIDES, "global"):
            if other[side] != first[side]:
                raise UserError(
                    f"{job.describe()}: two runs of the image differ ({side}: "
                    f"{first[side]} vs {other[side]}); the count is not deterministic",
                    exit_code=1,
                )
    first["runs"] = runs
    return first


def check_variant(variant: Any) -> None:
    """Refuses, before anything is built, a variant that yields no firmware image."""
    if not arches.arch(variant.arch).firmware:
        raise UserError(
            f"{variant.name} is no firmware variant: add a Cortex-M feature "
            f"({variant.line.name}:cortex-m4; cores: {', '.join(CORES)})"
        )
    if variant.library not in ADAPTERS:
        raise UserError(
            f"Cortex-M firmware images exist for {', '.join(sorted(ADAPTERS))}, "
            f"not {variant.library}"
        )


def image_of(build: Any) -> Path:
    """The firmware image of a built Cortex-M variant."""
    check_variant(build.variant)
    return Path(build.program(IMAGE))


# ---------------------------------------------------------------------------- cached runs


@dataclass
class Measured:
    """One job on one build, every figure the fit and the reports need, per role."""

    variant: str
    core: str
    job: Job
    result: dict[str, Any] = field(repr=False)
    sizes: dict[str, Sizes] = field(repr=False)
    credentials: dict[str, int] = field(repr=False)  # DER bytes the role carries for the job

    def ram(self, role: str) -> dict[str, int]:
        """RAM a device playing `role` needs: heap peak (with what the library's global
        set-up keeps), stack high-water, .data and .bss of its one-role image."""
        side, world = self.result[role], self.result["global"]
        heap = max(world["heap_peak"], world["heap_live"] + side["heap_peak"])
        stack = max(world["stack_high_water"], side["stack_high_water"])
        size = self.sizes[role]
        parts = {"heap": heap, "stack": stack, "data": size.data, "bss": size.bss}
        return {**parts, "total": sum(parts.values())}

    def flash(self, role: str) -> dict[str, int]:
        """Flash of its one-role image: .text and .data, and the job's own credentials."""
        size = self.sizes[role]
        parts = {"text": size.text, "data": size.data, "credentials": self.credentials[role]}
        return {**parts, "total": sum(parts.values())}

    def instructions(self, role: str) -> int:
        return int(self.result[role]["handshake_instructions"])

    def ms(self, role: str, mhz: float | None = None) -> tuple[float, float]:
        return core_of(self.core).ms(self.instructions(role), mhz)

    @classmethod
    def from_output(cls, variant: str, output: dict[str, Any]) -> Measured:
        """The figures of a stored experiment point (point_output)."""
        result = output["firmware"]
        return cls(
            variant, result["core"], job_of(output["params"]), result,
            {role: Sizes(**output["sizes"][role]) for role in SIDES},
            {role: int(output["credentials"][role]) for role in SIDES},
        )  # fmt: skip


def measured(build: Any, job: Job, timeout: float = TIMEOUT_SECONDS) -> Measured:
    """A job's figures on a build: run twice (the counts must agree) the first time, then
    read back from beside the image (the drivers folder is keyed by everything that went
    into the image, so a cached result belongs to exactly this build). Raises Unsupported
    or UserError as `run` does; a failed handshake is remembered too, so that it is not run
    again."""
    core = core_of(build.variant.arch)
    cache = Path(build.drivers_folder) / "results" / f"{job.key()}.json"
    result: dict[str, Any] | None = None
    if cache.exists():
        try:
            result = dict(json.loads(cache.read_text()))
        except (OSError, json.JSONDecodeError):
            result = None
    if result is None:
        try:
            result = measure(image_of(build), core, job, runs=2)
        except Unsupported as exc:
            result = {"unsupported": str(exc)}
        except UserError as exc:
            if "did not finish within" in str(exc):
                raise  # the machine's speed, not the job's: never remembered
            result = {"failed": str(exc)}
        cache.parent.mkdir(parents=True, exist_ok=True)
        temporary = cache.with_name(f".{cache.name}.{os.getpid()}")
        temporary.write_text(json.dumps(result, indent=1) + "\n")
        temporary.replace(cache)
    if "unsupported" in result:
        raise Unsupported(result["unsupported"])
    if "failed" in result:
        raise UserError(result["failed"], exit_code=1)
    sizes = {role: role_sizes(build, role) for role in SIDES}
    credentials = {role: credential_bytes(job, role) for role in SIDES}
    return Measured(build.variant.name, core.arch, job, result, sizes, credentials)


# ---------------------------------------------------------------------------- experiment points

# Options a firmware point can set (experiments.py) besides the variant and scenario.
POINT_KEYS = ("tls", "suite", "kx", "group", "cert", "chain", "auth", "record_size")


def unsupported_reason(scenario: str, options: dict[str, Any]) -> str | None:
    """Why an experiment point cannot run on the firmware image, or None."""
    if scenario != "handshake":
        return f"the Cortex-M firmware image runs handshakes only, not {scenario}"
    if "suite" not in options:
        return "the Cortex-M firmware image needs a suite"
    if str(options.get("auth", "server")) != "server":
        return f"the Cortex-M firmware image runs auth = server only (asked: {options['auth']})"
    for key in options:
        if key not in (*POINT_KEYS, "iterations", "warmup"):
            return f"the Cortex-M firmware image has no {key} option"
    return None


def job_of(options: dict[str, Any]) -> Job:
    """The job of an experiment point (its suite in the experiment's IANA spelling)."""
    chain = options.get("chain")
    record = options.get("record_size")
    return make_job(
        str(options["suite"]),
        tls=str(options["tls"]) if "tls" in options else None,
        kx=str(options["kx"]) if "kx" in options else None,
        group=str(options["group"]) if "group" in options else None,
        cert=str(options["cert"]) if "cert" in options else None,
        chain=int(chain) if chain is not None else None,
        record=int(record) if record is not None else None,
    )


def run_point(
    scenario: str, options: dict[str, Any], build: Any, timeout: float
) -> tuple[str, dict[str, Any], str]:
    """One repetition of an experiment point on a firmware build: (status, output, message)
    with status ok, unsupported (the point or the build cannot do the job) or failed."""
    reason = unsupported_reason(scenario, options)
    try:
        job = job_of(options) if reason is None else None
    except UserError as exc:
        reason = str(exc)
    if reason is not None or job is None:
        message = reason or "no job"
        return "unsupported", {"error": {"message": message}}, message
    try:
        result = run(image_of(build), job, timeout=timeout, core=core_of(build.variant.arch))
        sizes = {role: role_sizes(build, role) for role in SIDES}
    except Unsupported as exc:
        return "unsupported", {"error": {"message": str(exc)}}, str(exc)
    except UserError as exc:
        return "failed", {"error": {"message": str(exc)}}, str(exc)
    return "ok", point_output(result, options, sizes, job), ""


def point_output(result: dict[str, Any], options: dict[str, Any], sizes: dict[str, Sizes],
                 job: Job) -> dict[str, Any]:  # fmt: skip
    """One firmware run as a stored result: an instruction series per side, heap figures in
    the drivers' shape (a side's heap starts empty: only its own calls are charged), what
    was negotiated, and the one-role images' sizes."""
    samples: dict[str, list[float]] = {}
    summary: dict[str, dict[str, str]] = {}
    heap: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        f = result[side]
        samples[f"{side}_instructions"] = [f["handshake_instructions"]]
        summary[f"{side}_instructions"] = {"unit": "instructions"}
        heap[side] = {
            "start": 0, "peak": f["heap_peak"], "retained": f["heap_live"],
            "peak_minus_start": f["heap_peak"], "retained_minus_start": f["heap_live"],
            "conn_peak": f["heap_peak"], "conn_retained": f["heap_live"],
            "handshake_allocs": f["allocations"], "stack": f["stack_high_water"],
        }  # fmt: skip
    core = core_of(result["core"])
    return {
        "params": options,
        "negotiated": {
            "version": job.tls,
            "suite": job.suite.replace("-", "_"),
            "group": result["wire"]["group"],
            "kx": job.kx,
        },
        "library_version": result["library_version"],
        "samples": samples,
        "summary": summary,
        "heap": heap,
        "measure": {
            "time": None,
            "instructions": f"qemu-system-arm -M {core.machine} -icount shift=0 (virtual clock)",
            "projection": describe_projection(core),
            "heap": "firmware image (wrapped malloc per side)",
            "time_not_measured": "the image runs under system emulation: instructions are "
            "counted and projected to a clock, not timed",
        },
        "firmware": result,
        "sizes": {role: asdict(s) for role, s in sizes.items()},
        "credentials": {role: credential_bytes(job, role) for role in SIDES},
    }
