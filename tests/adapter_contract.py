"""The adapter contract, as the structure tests read it: the names an adapter may use from
the core (declared in drivers/include/tlsbench/driver.h and names.h), and the checks of an
adapter's includes and of the symbols its object files use."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tlsbench.core import paths

ADAPTERS = paths.DRIVERS / "adapters"
PROBES = paths.DRIVERS / "probe"
CORE = paths.DRIVERS / "core"
INCLUDE = paths.DRIVERS / "include"
# The headers of include/tlsbench/ written for adapters; the others there (measure.h,
# json.h, transport.h) are the core's own and say so.
CONTRACT = ("driver.h", "names.h")
# The units an adapter is built with (drivers/CMakeLists.txt): what they define, adapters use.
SHARED = ("tls_wire.c", "openssl_family.c")

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def _code(path: Path) -> str:
    return _COMMENT.sub(" ", path.read_text())


def contract_names() -> set[str]:
    """Every tb_ name the contract's headers declare (functions, objects, types)."""
    return {name for header in CONTRACT
            for name in re.findall(r"\btb_\w+", _code(INCLUDE / "tlsbench" / header))}  # fmt: skip


def adapter_sources() -> list[Path]:
    """The adapters' own source files: C, or C++ for a library whose API is C++ (Botan)."""
    return sorted([*ADAPTERS.glob("*.c"), *ADAPTERS.glob("*.cpp")])


def adapter_files() -> list[Path]:
    return sorted([*ADAPTERS.glob("*.[ch]"), *ADAPTERS.glob("*.cpp"), *PROBES.glob("*.[ch]"),
                   *PROBES.glob("*.cpp")])  # fmt: skip


def core_includes(source: Path) -> list[str]:
    """The quoted includes of `source` that reach the core: a header of drivers/core, or a
    tlsbench/ header that is not the contract's."""
    core_headers = {p.name for p in CORE.rglob("*.h")}
    found = []
    for name in _INCLUDE.findall(source.read_text()):
        target = (source.parent / name).resolve()
        in_core = target.is_relative_to(CORE.resolve()) or Path(name).name in core_headers
        if name.startswith("tlsbench/"):
            in_core = in_core or name.removeprefix("tlsbench/") not in CONTRACT
        if in_core:
            found.append(name)
    return found


def _adapter_header_names() -> set[str]:
    return {n for h in ADAPTERS.glob("*.h") for n in re.findall(r"\btb_\w+", _code(h))}


def source_violations(source: Path) -> set[str]:
    """tb_ names an adapter's source uses that neither the contract, the adapters' shared
    headers (tls_wire.h, openssl_family.h) nor the file itself define."""
    code = _code(source)
    own = set(re.findall(r"\b(tb_\w+)\s*\([^;{]*\)\s*\{", code))  # its own functions
    own |= set(re.findall(r"\b(tb_\w+)\s*(?:\[[^\]]*\])?\s*=", code))  # and objects
    used = set(re.findall(r"\btb_\w+", code))
    return used - contract_names() - _adapter_header_names() - own


def undefined_symbols(obj: Path) -> set[str]:
    listing = subprocess.run(["nm", "-P", "-u", str(obj)], check=True, capture_output=True,
                             text=True).stdout  # fmt: skip
    return {line.split()[0] for line in listing.splitlines() if line.strip()}


def defined_symbols(obj: Path) -> set[str]:
    listing = subprocess.run(["nm", "-P", "--defined-only", str(obj)], check=True,
                             capture_output=True, text=True).stdout  # fmt: skip
    return {line.split()[0] for line in listing.splitlines() if line.split()[1].isupper()}


def object_violations(objects: list[Path]) -> dict[str, set[str]]:
    """Per object of one adapter unit: the tb_ symbols it uses that the contract does not
    declare and no object of the unit defines."""
    defined = set().union(*(defined_symbols(o) for o in objects))
    allowed = contract_names() | defined
    found = {}
    for obj in objects:
        bad = {s for s in undefined_symbols(obj) if s.startswith("tb_") and s not in allowed}
        if bad:
            found[obj.name] = bad
    return found


def built_adapter_objects(drivers_folder: Path) -> list[Path]:
    """The adapter unit's objects in a build's CMake tree (drivers/CMakeLists.txt)."""
    return sorted((drivers_folder / "tree" / "CMakeFiles" / "tlsbench-adapter.dir").rglob("*.o"))
