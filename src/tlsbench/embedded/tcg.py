"""QEMU TCG plugins: host programs QEMU loads (`-plugin`), built once under the cache against the
plugin API header of the pinned QEMU source (sources/tools.toml), for the qemu-system-arm of
that release. The profiler (profile_plugin.c: instructions per address) and the cycle model
(cycles_plugin.c: cycles of a core and its memory) are two of them.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

from tlsbench.builds.sources import Sources, load_pins
from tlsbench.core import paths
from tlsbench.core.errors import UserError

QEMU_PIN = "qemu-7.2"
PLUGIN_HEADER = "include/qemu/qemu-plugin.h"


def _tools_sources() -> Sources:
    return Sources(pins=load_pins(paths.TOOLS_PINS_FILE))


def plugin(source: Path, name: str, libraries: tuple[str, ...] = (),
           needs: str = "") -> Path:  # fmt: skip
    """The plugin built from `source` (linked with `libraries`, e.g. "capstone"), once per
    source, libraries and QEMU pin, as tools/qemu-NAME-KEY/NAME.so under the cache. `needs`
    names the Debian package that provides the libraries, for the message when they are
    missing."""
    pin = _tools_sources().pin(QEMU_PIN)
    _check_qemu_matches(pin.upstream)
    extra = " ".join(libraries).encode()
    key = hashlib.sha256(source.read_bytes() + pin.sha256.encode() + extra).hexdigest()[:16]
    folder = paths.cache_root() / "tools" / f"qemu-{name}-{key}"
    built = folder / f"{name}.so"
    if built.exists():
        return built
    archive = _tools_sources().archive(QEMU_PIN)  # downloaded once, hash-checked before use
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise UserError(f"no host C compiler (cc) to build the QEMU {name} plugin", exit_code=1)
    with paths.building_folder(folder, built, f".qemu-{name}-") as tmp:
        header = _extract_header(archive, tmp)
        done = subprocess.run(
            [compiler, "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror",
             f"-I{header.parent}", "-o", str(tmp / f"{name}.so"), str(source),
             *(f"-l{lib}" for lib in libraries)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            hint = f" (is {needs} installed? make deps installs it)" if needs else ""
            raise UserError(f"building the QEMU {name} plugin failed{hint}:\n{done.stderr}", 1)
    return built


def _check_qemu_matches(upstream: str) -> None:
    """A plugin loads only into the QEMU whose API it was built against: the installed
    qemu-system-arm must be the pinned release (7.2.x for the pin 7.2+dfsg)."""
    release = upstream.split("+", 1)[0]
    try:
        done = subprocess.run(["qemu-system-arm", "--version"], capture_output=True, text=True,
                              check=False)  # fmt: skip
    except OSError:
        raise UserError("qemu-system-arm is not installed (make deps installs it)") from None
    found = re.search(r"version (\d+\.\d+)", done.stdout)
    if found is None or found.group(1) != release:
        raise UserError(
            f"qemu-system-arm is {found.group(1) if found else 'of no known version'}, the "
            f"TCG plugins' QEMU source is pinned at {release} ({QEMU_PIN} in "
            f"{paths.TOOLS_PINS_FILE.name}): pin the installed QEMU's source there",
            exit_code=1,
        )


def _extract_header(archive: Path, dest: Path) -> Path:
    """The plugin API header, the one member of the QEMU archive the plugins need."""
    with tarfile.open(archive) as tar:
        for member in tar:
            if member.isfile() and member.name.endswith("/" + PLUGIN_HEADER):
                data = tar.extractfile(member)
                assert data is not None
                out = dest / "qemu-plugin.h"
                out.write_bytes(data.read())
                return out
    raise UserError(f"{archive.name} has no {PLUGIN_HEADER}", exit_code=1)
