"""Pruning the cache: what no current variant, pin or driver source uses any more.

Kept: the library build of every variant that `variants.toml` names (defaults and named
variants) or that a shipped experiment uses, and in each kept build only the drivers of
the current driver sources; the unpacked tree and archive of every pinned source. Removed:
everything else under builds/, src/ and archives/, including what interrupted builds and
unpacks left behind (`*.tmp-PID` folders of processes that are gone) and old failure logs.
Certificates of the current layout and apt's private indexes are kept; sets of older layouts
go.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from tlsbench.builds import arches, certs
from tlsbench.builds.build import Builder
from tlsbench.builds.sources import load_pins
from tlsbench.builds.variants import Catalog, Variant
from tlsbench.core import paths
from tlsbench.core.errors import UserError
from tlsbench.run import experiments


@dataclass(frozen=True)
class Stale:
    path: Path
    reason: str
    bytes: int


def _size(path: Path) -> int:
    if path.is_file() or path.is_symlink():
        return path.lstat().st_size
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() or p.is_symlink())


def _pid_alive(name: str) -> bool:
    found = re.search(r"\.tmp-(\d+)$", name)
    if not found:
        return False
    try:
        os.kill(int(found.group(1)), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def current_variants(catalog: Catalog) -> list[Variant]:
    specs = [*catalog.defaults, *catalog.named]
    for path in sorted(experiments.EXPERIMENTS_DIR.glob("*.toml")):
        specs += [p.variant for p in experiments.load(str(path), catalog).points]
    return [catalog.resolve(spec) for spec in dict.fromkeys(specs)]


def plan(builder: Builder, catalog: Catalog) -> list[Stale]:
    """What prune would remove, with the reason for each."""
    stale: list[Stale] = []
    keep_builds: dict[str, str] = {}  # folder name -> key
    for variant in current_variants(catalog):
        try:
            key = builder.key(variant)
        except UserError:
            if arches.arch(variant.arch).cross is None:
                raise
            continue  # no cross toolchain here (armhf): nothing on this machine can build it
        keep_builds[builder.folder(variant, key).name] = key
    if builder.builds.exists():
        for entry in sorted(builder.builds.iterdir()):
            name = entry.name
            if name.startswith(".") and name.endswith(".lock"):
                continue
            if ".tmp-" in name:
                if not _pid_alive(name):
                    stale.append(Stale(entry, "left by an interrupted build", _size(entry)))
                continue
            if name.endswith(".failed.log"):
                stale.append(Stale(entry, "log of a failed build", _size(entry)))
                continue
            if name not in keep_builds:
                stale.append(Stale(entry, "no current variant builds this", _size(entry)))
                continue
            current = f"drivers-{builder.drivers_key(keep_builds[name])[:16]}"
            for sub in sorted(entry.glob("drivers-*")):
                if sub.name != current and not (".tmp-" in sub.name and _pid_alive(sub.name)):
                    stale.append(Stale(sub, "drivers of older driver sources", _size(sub)))
    pins = builder.sources.pins
    keep_src = {f"{line}-{pin.sha256[:12]}" for line, pin in pins.items()}
    unpacked = builder.sources.unpacked
    if unpacked.exists():
        for entry in sorted(unpacked.iterdir()):
            if entry.name.startswith(".") and entry.name.endswith(".lock"):
                continue  # an unpacker's lock: tiny, and may be held right now
            if entry.name not in keep_src and not _pid_alive(entry.name):
                stale.append(Stale(entry, "not a pinned source", _size(entry)))
    keep_archives = {pin.file for pin in pins.values()}
    # Tools' archives (QEMU's, for the profiler plugin's header) are pinned too.
    keep_archives |= {pin.file for pin in load_pins(paths.TOOLS_PINS_FILE).values()}
    archives = builder.sources.archives
    if archives.exists():
        for entry in sorted(archives.iterdir()):
            if entry.name not in keep_archives:
                stale.append(Stale(entry, "not a pinned archive", _size(entry)))
    # Certificate sets of older layouts (v1: random keys, one machine's own): nothing reads
    # them any more, and no run can be made with them again.
    cert_root = builder.cache / "certs"
    if cert_root.exists():
        for entry in sorted(cert_root.iterdir()):
            if entry.is_dir() and entry.name != certs.LAYOUT_VERSION:
                stale.append(Stale(entry, "certificates of an older layout", _size(entry)))
    return stale


def remove(stale: list[Stale]) -> None:
    for item in stale:
        if item.path.is_dir() and not item.path.is_symlink():
            shutil.rmtree(item.path, ignore_errors=True)
        else:
            item.path.unlink(missing_ok=True)
