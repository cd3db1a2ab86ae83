"""Target architectures a variant can be built for, and how to build and run on each.

x86_64 is the machine's own; i686 is built with `gcc -m32` (gcc-multilib) and runs natively;
armhf (32-bit ARM Linux, ARMv7-A Thumb-2, hard-float EABI, Debian's armhf baseline) is
cross-built and its programs run under qemu-user.

The armhf compiler is Debian's clang, not gcc-arm-linux-gnueabihf: on Debian 12 (amd64) that
package conflicts with gcc-multilib, which the i686 builds need, so installing either removes
the other. clang targets ARM by itself; it is called through a link named
`arm-linux-gnueabihf-clang` (clang takes its target from its name, so every build system
sees one plain compiler command), and links with binutils-arm-linux-gnueabihf against the
armhf C library and libgcc of Debian's cross packages, none of which conflicts.

cortex-m0, -m3, -m4, -m7, -m33 and -m55 are microcontroller cores (no operating system),
built with Debian's gcc-arm-none-eabi and newlib, each with its own -mcpu and, where the
core has one, its FPU and the hard-float ABI (as product builds for those parts use it; the
TLS libraries themselves do no floating point): their variants yield no driver programs but
firmware images (builds/firmware.py), run under qemu-system-arm on the core's board
(embedded/qemu.py).

rv32imc is a RISC-V microcontroller core (the ESP32-C3 class), built the same way with
Debian's gcc-riscv64-unknown-elf (`-march=rv32imc -mabi=ilp32`) and picolibc (its rv32im
multilib: the C extension only compresses encodings, so rv32im library code runs on it),
its firmware images run under qemu-system-riscv32 (qemu-system-misc) on the virt board.

Heap figures are exact under emulation (the program does the same allocations as on a real
ARM board); time is not (qemu translates the code, so its clocks measure the translator on
this machine), so no timing series of an emulated target is ever run, stored or reported.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from tlsbench.core import paths
from tlsbench.core.errors import UserError


@dataclass(frozen=True)
class Arch:
    name: str
    flags: tuple[str, ...] = ()  # compile and link flags of every program and library
    cross: str | None = None  # GNU triplet of a cross toolchain (binutils `TRIPLET-ld` ...)
    host: str | None = None  # autoconf --host
    cmake_processor: str = ""  # CMAKE_SYSTEM_PROCESSOR of a cross build
    openssl_target: str = "linux-x86_64"
    emulator: tuple[str, ...] = ()  # prefix that runs the target's programs here
    timing: bool = True  # are the driver's clocks meaningful?
    label: str = ""  # the target's name in reports (code size)
    compiler: str | None = None  # a cross compiler used as is (not the cross clang link)
    firmware: bool = False  # bare metal: a firmware image instead of the driver programs

    def tool(self, name: str, native: str) -> str:
        """A binutils tool of the target ("size" -> "arm-linux-gnueabihf-size")."""
        return f"{self.cross}-{name}" if self.cross else native

    def cc(self, native: str) -> str:
        """The C compiler command: the native one, the target's own, or the cross clang's link."""
        if self.compiler:
            _require(self)
            return self.compiler
        return str(cross_clang(self)) if self.cross else native

    def run_prefix(self) -> list[str]:
        return list(self.emulator)


ARMHF_TRIPLET = "arm-linux-gnueabihf"
# Debian installs the armhf C library (libc6-armhf-cross) under this sysroot.
ARMHF_SYSROOT = f"/usr/{ARMHF_TRIPLET}"
# Debian's armhf baseline (what its gcc-arm-linux-gnueabihf does by default); clang's own
# default for the triplet is ARM (not Thumb) code.
ARMHF_FLAGS = ("-march=armv7-a", "-mthumb", "-mfpu=vfpv3-d16", "-mfloat-abi=hard")
CLANG_NAMES = ("clang-14", "clang")  # Debian 12's clang first
CORTEX_M_TRIPLET = "arm-none-eabi"
CORTEX_M_SIZE = f"{CORTEX_M_TRIPLET}-size"
# Each core's code generation: its -mcpu, and its FPU where it has one (the single-precision
# FPUs of STM32F4 / STM32F746 / STM32L5 parts; the M55's FPU comes with -mcpu, with Helium).
# newlib's stubs for the system calls (nosys.specs) let any program link, so the libraries'
# own build systems can test the compiler unchanged.
CORTEX_M_FLAGS = {
    "cortex-m0": ("-mcpu=cortex-m0", "-mfloat-abi=soft"),
    "cortex-m3": ("-mcpu=cortex-m3", "-mfloat-abi=soft"),
    "cortex-m4": ("-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"),
    "cortex-m7": ("-mcpu=cortex-m7", "-mfpu=fpv5-sp-d16", "-mfloat-abi=hard"),
    "cortex-m33": ("-mcpu=cortex-m33", "-mfpu=fpv5-sp-d16", "-mfloat-abi=hard"),
    "cortex-m55": ("-mcpu=cortex-m55", "-mfloat-abi=hard"),
}
# The autoconf host of the Thumb-2 cores: wolfSSL's configure chooses its Cortex-M assembly
# (sp_cortexm.c) when the host's CPU is armv7m, and its ARM-mode assembly (sp_arm32.c, which
# no Cortex-M runs) for plain "arm". ARMv8-M Mainline runs the same Thumb-2 code.
CORTEX_M_HOSTS = {name: "armv7m-none-eabi" for name in CORTEX_M_FLAGS if name != "cortex-m0"}

# The RISC-V microcontroller core: gcc's riscv64 toolchain is multilib, and picolibc's specs
# give the C library (and, like nosys.specs on ARM, a program that links with no system).
# picolibc's release build: its default one is built for size, with a memcpy and memset
# that move a byte per turn (6 instructions a byte), where newlib's on ARM move words; the
# record layer's copies would be counted against the TLS library.
RISCV_TRIPLET = "riscv64-unknown-elf"
RISCV_FLAGS = {
    "rv32imc": ("-march=rv32imc", "-mabi=ilp32", "--specs=picolibc.specs",
                "--picolibc-buildtype=release"),
}  # fmt: skip
# The autoconf host: a 32-bit RISC-V with no operating system (wolfSSL then builds its
# portable C maths: it has no RV32 assembly for its single-precision code).
RISCV_HOST = "riscv32-unknown-elf"
PICOLIBC_SPECS = f"/usr/lib/picolibc/{RISCV_TRIPLET}/picolibc.specs"
# Firmware targets: the arm-none-eabi cores and the RISC-V one.
FIRMWARE_FLAGS = {**CORTEX_M_FLAGS, **RISCV_FLAGS}

ARCHES: dict[str, Arch] = {
    "x86_64": Arch("x86_64", label="x86-64"),
    "i686": Arch(
        "i686", flags=("-m32",), host="i686-pc-linux-gnu", openssl_target="linux-x86",
        label="i686",
    ),
    "armhf": Arch(
        "armhf", flags=ARMHF_FLAGS, cross=ARMHF_TRIPLET, host=ARMHF_TRIPLET,
        openssl_target="linux-armv4",
        cmake_processor="arm", emulator=("qemu-arm", "-L", ARMHF_SYSROOT), timing=False,
        label="armhf",
    ),
    **{
        name: Arch(
            name, flags=(*flags, "-mthumb", "--specs=nosys.specs"), cross=CORTEX_M_TRIPLET,
            host=CORTEX_M_HOSTS.get(name, CORTEX_M_TRIPLET), cmake_processor="arm",
            timing=False, label=name,
            compiler=f"{CORTEX_M_TRIPLET}-gcc", firmware=True,
        )
        for name, flags in CORTEX_M_FLAGS.items()
    },
    **{
        name: Arch(
            name, flags=flags, cross=RISCV_TRIPLET, host=RISCV_HOST, cmake_processor="riscv32",
            timing=False, label=name, compiler=f"{RISCV_TRIPLET}-gcc", firmware=True,
        )
        for name, flags in RISCV_FLAGS.items()
    },
}  # fmt: skip

# What each cross target needs: commands -> Debian package, files -> Debian package.
PACKAGES = {
    "armhf": {
        "clang-14": "clang-14",
        f"{ARMHF_TRIPLET}-ld": "binutils-arm-linux-gnueabihf",
        "qemu-arm": "qemu-user",
    },
    **{
        name: {
            f"{CORTEX_M_TRIPLET}-gcc": "gcc-arm-none-eabi",
            "qemu-system-arm": "qemu-system-arm",
        }
        for name in CORTEX_M_FLAGS
    },
    **{
        name: {
            f"{RISCV_TRIPLET}-gcc": "gcc-riscv64-unknown-elf",
            "qemu-system-riscv32": "qemu-system-misc",
        }
        for name in RISCV_FLAGS
    },
}
FILES = {
    "armhf": {
        f"{ARMHF_SYSROOT}/lib/crt1.o": "libc6-dev-armhf-cross",
        f"/usr/lib/gcc-cross/{ARMHF_TRIPLET}/*/crtbegin.o": "libgcc-12-dev-armhf-cross",
    },
    **{
        name: {f"/usr/lib/{CORTEX_M_TRIPLET}/newlib/libc.a": "libnewlib-arm-none-eabi"}
        for name in CORTEX_M_FLAGS
    },
    **{name: {PICOLIBC_SPECS: "picolibc-riscv64-unknown-elf"} for name in RISCV_FLAGS},
}

NO_TIMING = (
    "time is not measured on {arch}: its programs run under qemu-user emulation, whose clocks "
    "measure the translator, not an ARM core (heap figures are exact there)"
)


def arch(name: str) -> Arch:
    return ARCHES[name]


def no_timing_reason(name: str) -> str:
    return NO_TIMING.format(arch=name)


def missing_tools(name: str) -> dict[str, str]:
    """What an arch needs that is not installed: command or file -> Debian package."""
    missing = {
        tool: pkg
        for tool, pkg in PACKAGES.get(name, {}).items()
        if not (tool.startswith("clang") and _clang()) and shutil.which(tool) is None
    }
    for pattern, pkg in FILES.get(name, {}).items():
        if not list(Path("/").glob(pattern.lstrip("/"))):
            missing[pattern] = pkg
    return missing


def _clang() -> str | None:
    for name in CLANG_NAMES:
        found = shutil.which(name)
        if found:
            return os.path.realpath(found)
    return None


def _require(target: Arch) -> None:
    """Says what to install when a target's toolchain (or emulator) is missing."""
    missing = missing_tools(target.name)
    if missing:
        packages = " ".join(sorted(set(missing.values())))
        raise UserError(
            f"{target.name} builds need {', '.join(sorted(missing))}: run "
            f"`apt-get install {packages}` (or `make deps`; `./tlsbench doctor` checks it)"
        )


def cross_clang(target: Arch) -> Path:
    """A link `TRIPLET-clang` to the machine's clang, under the cache (made once)."""
    clang = _clang()
    missing = missing_tools(target.name)
    if clang is None or missing:
        packages = " ".join(sorted(set(missing.values()))) or "clang-14"
        raise UserError(
            f"{target.name} builds need {', '.join(sorted(missing)) or 'clang'}: run "
            f"`apt-get install {packages}` (or `make deps`; `./tlsbench doctor` checks it)"
        )
    folder = paths.cache_root() / "toolchains"
    link = folder / f"{target.cross}-clang"
    if not link.is_symlink() or os.readlink(link) != clang:
        folder.mkdir(parents=True, exist_ok=True)
        temporary = folder / f".{link.name}.{os.getpid()}"
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(clang)
        temporary.replace(link)  # atomic: a concurrent build sees the old or the new link
    return link


def binfmt_registered(name: str) -> bool:
    """Whether the kernel runs the arch's programs directly (binfmt_misc with qemu)."""
    target = ARCHES[name]
    if not target.emulator:
        return True
    entry = Path("/proc/sys/fs/binfmt_misc") / f"{target.emulator[0]}"
    try:
        return entry.read_text().startswith("enabled")
    except OSError:
        return False
