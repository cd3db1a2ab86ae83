"""`tlsbench doctor`: tools the builds need, the real programs the interop and load scenarios
run, and machine facts that could skew figures."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlsbench.cli.common import Verb
from tlsbench.core.machine import cpu_facts, measurement_warnings

# command -> Debian package that provides it
TOOLS = {
    "gcc": "gcc",
    "make": "make",
    "cmake": "cmake",
    "ninja": "ninja-build",
    "autoconf": "autoconf",
    "automake": "automake",
    "libtoolize": "libtool",
    "perl": "perl",
    "pkg-config": "pkgconf",
    "valgrind": "valgrind",
    "apt-get": "apt",
}
DEV_PACKAGES = [
    "nettle-dev", "libgmp-dev", "libtasn1-6-dev", "libunistring-dev",  # GnuTLS from source
    "libssl-dev", "libgnutls28-dev",  # the `system` variants
]  # fmt: skip

# Where a program is looked for beyond PATH: nginx lives in /usr/sbin, which an unprivileged
# user's PATH may lack (the runners look there too).
SBIN = "/usr/sbin"


@dataclass
class PeerProgram:
    """A real program that the interop or load scenario runs at the other end."""

    executable: str
    package: str  # the Debian package that provides it
    uses: list[str]  # scenario and the name an experiment gives it: "interop openssl-s_server"
    version: str | None = None  # None: not installed
    # How it tells its version, given where it is (not shown).
    version_command: Callable[[str], list[str]] = field(
        default=lambda where: [where, "--version"], repr=False
    )


def peer_programs(path: str | None = None) -> list[PeerProgram]:
    """The real programs of the interop and load scenarios, from their registry (programs.py:
    a program added there is listed here), each with its version when installed. `path`: the
    directories to search (default PATH, then /usr/sbin)."""
    from tlsbench.builds.recipes.base import tool_version
    from tlsbench.peers import programs

    search = path if path is not None else os.pathsep.join([os.environ.get("PATH", ""), SBIN])
    found: dict[str, PeerProgram] = {}
    for scenario in ("interop", "load"):
        for program in programs.PROGRAMS:
            if scenario not in program.uses or not program.package:
                continue  # a program tlsbench builds itself is no machine's tool
            made = PeerProgram(program.executable, program.package, [])
            peer = found.setdefault(program.executable, made)
            peer.uses.append(f"{scenario} {program.name}")
            peer.version_command = program.version_command
    for peer in found.values():
        where = shutil.which(peer.executable, path=search)
        if where is not None:
            peer.version = tool_version(peer.version_command(where))
    return sorted(found.values(), key=lambda p: p.executable)


@dataclass
class Report:
    missing: dict[str, str] = field(default_factory=dict)  # what -> Debian package
    tools: dict[str, str] = field(default_factory=dict)
    programs: list[PeerProgram] = field(default_factory=list)  # interop and load peers
    cpu: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def install_command(self) -> str | None:
        packages = sorted(set(self.missing.values()))
        return f"apt-get install -y {' '.join(packages)}" if packages else None


def _m32_works() -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "t.c"
        src.write_text("#include <stdio.h>\nint main(void) { return 0; }\n")
        proc = subprocess.run(
            ["gcc", "-m32", str(src), "-o", str(Path(tmp) / "t")],
            capture_output=True, check=False,
        )  # fmt: skip
        return proc.returncode == 0


def collect(program_path: str | None = None) -> Report:
    """What is installed and what the machine is; `program_path`: where to look for the
    real peer programs (default PATH, then /usr/sbin)."""
    from tlsbench.builds import arches
    from tlsbench.builds.recipes.base import tool_version
    from tlsbench.builds.recipes.system import debian_version

    report = Report()
    for tool, package in TOOLS.items():
        if shutil.which(tool) is None:
            report.missing[tool] = package
        else:
            report.tools[tool] = tool_version([tool, "--version"])
    for package in DEV_PACKAGES:
        version = debian_version(package)
        if version is None:
            report.missing[package] = package
        else:
            report.tools[package] = version
    if "gcc" in report.tools and not _m32_works():
        report.missing["i686 multilib (gcc -m32)"] = "gcc-multilib"
    for arch_name in arches.PACKAGES:
        for tool, package in arches.missing_tools(arch_name).items():
            report.missing[f"{tool} ({arch_name})"] = package
        for tool in arches.PACKAGES[arch_name]:
            if shutil.which(tool) is not None:
                report.tools[tool] = tool_version([tool, "--version"])
    if arches.binfmt_registered("armhf"):
        report.notes.append("armhf programs also run directly (binfmt_misc registers qemu-arm)")
    else:
        report.notes.append(
            "armhf programs run as `qemu-arm -L /usr/arm-linux-gnueabihf PROGRAM` "
            "(no binfmt_misc registration here; tlsbench always calls qemu-arm itself)"
        )
    # rustls-ffi needs a current cargo (rustup's): not a Debian package here.
    if shutil.which("cargo") is None:
        report.notes.append(
            "no cargo on PATH: the rustls lines need rustup's cargo (~/.cargo/bin, which "
            "`make` adds to PATH); Debian 12's cargo cannot read crates.io's index"
        )
    else:
        report.tools["cargo"] = tool_version(["cargo", "--version"])
    report.programs = peer_programs(program_path)
    for program in report.programs:
        if program.version is None:
            report.missing[program.executable] = program.package
    report.cpu = cpu_facts()
    report.warnings = measurement_warnings(report.cpu)
    return report


def profile_and_network() -> dict[str, Any]:
    """The CPU profile in force and whether emulated networks can run: facts both forms
    print (the text's `profile` and `network` lines), read once."""
    from tlsbench.driver import cpuprofile
    from tlsbench.peers import netem

    profile = cpuprofile.active()
    reason = netem.check_possible()
    return {
        "cpu_profile": {"name": profile.name, "summary": profile.summary,
                        "environment": cpuprofile.active_environment()},
        "network": {"what": "RTT and loss", "method": netem.METHOD,
                    "available": reason is None, "reason": reason},
    }  # fmt: skip


def run_doctor(as_json: bool = False, program_path: str | None = None) -> int:
    report = collect(program_path)
    extra = profile_and_network()
    if as_json:
        data = {**report.__dict__, "programs": [{"executable": p.executable, "package": p.package,
                                      "uses": p.uses, "version": p.version}
                                     for p in report.programs], **extra}  # fmt: skip
        print(json.dumps({**data, "install": report.install_command()}, indent=2))
        return 1 if report.missing else 0
    programs = {p.executable for p in report.programs}
    for name, version in report.tools.items():
        print(f"ok       {name:<18} {version}")
    for name, package in report.missing.items():
        if name not in programs:
            print(f"MISSING  {name:<18} (Debian package {package})")
    print("\nReal programs the interop and load scenarios run at the other end:")
    for program in report.programs:
        uses = ", ".join(program.uses)
        if program.version is None:
            print(f"MISSING  {program.executable:<18} (Debian package {program.package}; "
                  f"for {uses})")  # fmt: skip
        else:
            print(f"ok       {program.executable:<18} {program.version} (for {uses})")
    cpu = report.cpu
    print(f"\nCPU      {cpu['model']} ({cpu['cores']} logical cores)")
    flags = " ".join(f"{f}{'+' if on else '-'}" for f, on in cpu["crypto_flags"].items())
    print(f"crypto   {flags}")
    print(f"TSC      {'invariant' if cpu['invariant_tsc'] else 'NOT invariant'}")
    profile = extra["cpu_profile"]
    switches = " ".join(f"{k}={v}" for k, v in profile["environment"].items())
    print(f"profile  {profile['name']}: {profile['summary']}" +
          (f" ({switches})" if switches else ""))  # fmt: skip
    unknown = "unknown (not exposed)"
    turbo = unknown if cpu["turbo"] is None else ("on" if cpu["turbo"] else "off")
    print(f"governor {cpu['governor'] or unknown}; turbo {turbo}")
    print(
        f"virtual  {cpu['virtualization'] or 'no'}; ASLR {cpu['aslr'] or unknown}; "
        f"kernel {cpu['kernel']}"
    )
    for note in report.notes:
        print(f"note     {note}")
    network = extra["network"]
    print(f"network  {network['what']}: {network['method']}: "
          f"{'available' if network['available'] else network['reason']}")  # fmt: skip
    if report.warnings:
        print("\nCould skew measurements:")
        for warning in report.warnings:
            print(f"  - {warning}")
    command = report.install_command()
    if command:
        print(f"\nInstall what is missing with:\n  {command}")
        return 1
    print("\nAll tools present.")
    return 0


def add_arguments(verb: Verb) -> None:
    doctor = verb(
        "doctor",
        "Check tools and what could skew measurements",
        "Prints what is missing with the command that installs it; exit 1 when something is.",
    )
    doctor.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    return run_doctor(as_json=args.json)
