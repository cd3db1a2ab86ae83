"""Code size of what a TLS client and a TLS server link, per built variant.

For each role a minimal program (drivers/embedded/size_<library>.c: context, certificate,
handshake, one record each way) is compiled and linked against the variant's own archives
with -ffunction-sections -fdata-sections and --gc-sections, so only code the role can reach
is counted, then measured with `size` (Berkeley format: text, data, bss).

The library archives are linked exactly as the variant built them: section garbage
collection then drops whole unreferenced sections of those archives (per function where the
build itself used -ffunction-sections, per object file otherwise).
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tlsbench.builds import arches
from tlsbench.builds.build import COMPILER, Build
from tlsbench.core import paths
from tlsbench.core.errors import UserError

ROLES = ("client", "server")
SOURCES = {"mbedtls": "size_mbedtls.c", "wolfssl": "size_wolfssl.c"}
SIZE_TOOL = "size"


@dataclass(frozen=True)
class RoleSize:
    """Bytes of one role's minimal program, as `size` reports them."""

    role: str
    text: int
    data: int
    bss: int

    @property
    def total(self) -> int:
        return self.text + self.data + self.bss


def supported(library: str) -> bool:
    return library in SOURCES


def measure(build: Build) -> list[RoleSize]:
    """text/data/bss of the client and the server program linked against `build`."""
    library = build.variant.library
    if library not in SOURCES:
        raise UserError(
            f"code size is measured for {', '.join(sorted(SOURCES))}, not {library}: "
            "choose a variant of one of those"
        )
    link = build.manifest["link"]
    target = arches.arch(build.variant.arch)  # armhf: the cross compiler and its `size`
    source = paths.DRIVERS / "embedded" / SOURCES[library]
    sizes = []
    with tempfile.TemporaryDirectory(prefix="tlsbench-size-") as work:
        for role in ROLES:
            program = Path(work) / role
            _link(source, program, link, server=(role == "server"), cc=target.cc(COMPILER))
            sizes.append(_size(role, program, target.tool("size", SIZE_TOOL)))
    return sizes


def _link(source: Path, program: Path, link: dict[str, Any], server: bool, cc: str) -> None:
    command = [cc, "-Os", *link.get("c_flags", [])]
    command += ["-ffunction-sections", "-fdata-sections", "-Wl,--gc-sections"]
    command += [f"-I{d}" for d in link.get("include_dirs", [])]
    command += [f"-D{d}" for d in link.get("defines", [])]
    if server:
        command.append("-DTLSBENCH_SERVER")
    command += [str(source), "-o", str(program), *link.get("link_flags", [])]
    command += link.get("libraries", [])
    # The target's flags come with both the compile and the link flags; gcc refuses a specs
    # file given twice (the Cortex-M targets: newlib's nosys.specs).
    command = [
        a for i, a in enumerate(command) if not a.startswith("--specs=") or a not in command[:i]
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise UserError(
            f"linking the code-size program {source.name} failed:\n{done.stderr[-2000:]}",
            exit_code=1,
        )


def _size(role: str, program: Path, tool: str) -> RoleSize:
    done = subprocess.run(
        [tool, "--format=berkeley", str(program)],
        capture_output=True,
        text=True,
        check=True,
    )
    # Two lines: a header, then "text data bss dec hex filename".
    fields = done.stdout.splitlines()[1].split()
    return RoleSize(role=role, text=int(fields[0]), data=int(fields[1]), bss=int(fields[2]))


def as_rows(build: Build, sizes: list[RoleSize]) -> list[dict[str, Any]]:
    """One row per role, with the variant's name and target (x86-64, i686, armhf, cortex-m4 ...)."""
    target = arches.arch(build.variant.arch).label
    return [
        {"variant": build.variant.name, "target": target, **asdict(s), "total": s.total}
        for s in sizes
    ]
