"""Target architectures a variant can be built for, and how to build and run on each.

x86_64 is the machine's own; i686 is built with `gcc -m32` and runs natively; armhf (32-bit
ARM Linux, hard-float EABI) is cross-built with Debian's arm-linux-gnueabihf toolchain and
its programs run under qemu-user. Heap figures are exact under emulation (the program does
the same allocations as on a real ARM board); time is not (qemu translates the code, so
its clocks measure the translator on this machine), so no timing series of an emulated
target is ever run, stored or reported.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Arch:
    name: str
    flags: tuple[str, ...] = ()  # compile and link flags of every program and library
    cross: str | None = None  # GNU triplet of a cross toolchain (its tools are `TRIPLET-gcc`)
    host: str | None = None  # autoconf --host
    cmake_processor: str = ""  # CMAKE_SYSTEM_PROCESSOR of a cross build
    openssl_target: str = "linux-x86_64"
    emulator: tuple[str, ...] = ()  # prefix that runs the target's programs here
    timing: bool = True  # are the driver's clocks meaningful?
    label: str = ""  # the target's name in reports (code size)

    def tool(self, name: str, native: str) -> str:
        """A binutils / gcc tool of the target ("gcc" -> "arm-linux-gnueabihf-gcc")."""
        return f"{self.cross}-{name}" if self.cross else native

    def cc(self, native: str) -> str:
        return self.tool("gcc", native)

    def run_prefix(self) -> list[str]:
        return list(self.emulator)


ARMHF_TRIPLET = "arm-linux-gnueabihf"
# Debian installs the armhf C library (libc6-armhf-cross) under this sysroot.
ARMHF_SYSROOT = f"/usr/{ARMHF_TRIPLET}"

ARCHES: dict[str, Arch] = {
    "x86_64": Arch("x86_64", label="x86-64"),
    "i686": Arch(
        "i686", flags=("-m32",), host="i686-pc-linux-gnu", openssl_target="linux-x86",
        label="i686",
    ),
    "armhf": Arch(
        "armhf", cross=ARMHF_TRIPLET, host=ARMHF_TRIPLET, openssl_target="linux-armv4",
        cmake_processor="arm", emulator=("qemu-arm", "-L", ARMHF_SYSROOT), timing=False,
        label="armhf",
    ),
}  # fmt: skip

# Debian packages per cross target: the compiler (with binutils and the C library) and
# the user-mode emulator that runs the programs.
PACKAGES = {"armhf": {f"{ARMHF_TRIPLET}-gcc": "gcc-arm-linux-gnueabihf", "qemu-arm": "qemu-user"}}

NO_TIMING = (
    "time is not measured on {arch}: its programs run under qemu-user emulation, whose clocks "
    "measure the translator, not an ARM core (heap figures are exact there)"
)


def arch(name: str) -> Arch:
    return ARCHES[name]


def no_timing_reason(name: str) -> str:
    return NO_TIMING.format(arch=name)


def missing_tools(name: str) -> dict[str, str]:
    """Tools an arch needs that are not on PATH: command -> Debian package."""
    return {tool: pkg for tool, pkg in PACKAGES.get(name, {}).items() if shutil.which(tool) is None}


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
