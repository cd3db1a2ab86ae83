"""The allocator a driver runs on: glibc's malloc (the default), or jemalloc, tcmalloc or
mimalloc preloaded into the driver's process (`drive --allocator`, the `allocator` key of the
scaling and load experiments).

Each is a Debian package (the Makefile's DEBIAN_PACKAGES) whose shared object goes into the
driver's LD_PRELOAD, through the driver's filtered environment (drive.py filters a stray
LD_PRELOAD out of every other run). The driver reads back which object its malloc comes from
(drivers/core/allocator.c, told the expected file name in TLSBENCH_ALLOCATOR) and fails the
run as a mismatch when it is not the one asked for: a preload that did not load is never a
sample of glibc labelled jemalloc.

What an allocator cannot change, and so is not run with it (docs/methodology.md): the heap
driver's figures (its malloc is its own, over glibc's, and counts the bytes asked, which no
allocator changes); and instruction counts are kept on glibc's malloc, a figure meant to
compare with every other count (callgrind itself would count a preloaded allocator: unlike
memcheck and massif, it does not replace malloc).
"""

from __future__ import annotations

import functools
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Where Debian installs x86-64 shared objects.
LIBRARY_DIRS = (Path("/usr/lib/x86_64-linux-gnu"), Path("/lib/x86_64-linux-gnu"))
ALLOCATOR_ENV = "TLSBENCH_ALLOCATOR"


@dataclass(frozen=True)
class Allocator:
    name: str
    object: str  # the file name of the shared object malloc then comes from
    package: str  # the Debian package that installs it
    preload: bool  # preloaded (False: glibc's own malloc, in libc.so.6)

    def path(self) -> Path | None:
        """The installed shared object, None when it is not installed."""
        return next((d / self.object for d in LIBRARY_DIRS if (d / self.object).exists()), None)


ALLOCATORS = {
    a.name: a
    for a in (
        Allocator("glibc", "libc.so.6", "libc6", preload=False),
        Allocator("jemalloc", "libjemalloc.so.2", "libjemalloc2", preload=True),
        Allocator("tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4", preload=True),
        Allocator("mimalloc", "libmimalloc.so.2", "libmimalloc2.0", preload=True),
    )
}
NAMES = tuple(ALLOCATORS)
# The heap driver, and what runs under valgrind: what an allocator cannot change.
HEAP_REFUSAL = (
    "the heap driver's malloc is its own (it counts the bytes each side asks for, then calls "
    "glibc's): no allocator changes those figures, so it runs on glibc's alone"
)
VALGRIND_REFUSAL = (
    "instruction mode counts a figure meant to compare with every other count (ab, bisect, "
    "the releases), so it counts one allocator's code, glibc's"
)


def refusal(name: str) -> str | None:
    """Why a driver cannot run on the allocator on this machine (None: it can)."""
    allocator = ALLOCATORS.get(name)
    if allocator is None:
        return f"unknown allocator {name!r}; choose one of {', '.join(NAMES)}"
    if allocator.preload and allocator.path() is None:
        return (f"{name} is not installed ({allocator.object} of Debian's {allocator.package}); "
                f"`make deps` installs it, or: apt-get install {allocator.package}")  # fmt: skip
    return None


def environment(name: str) -> dict[str, str]:
    """The driver's environment for the allocator: its object preloaded, and the file name
    the driver must find its malloc in. Refused (ValueError) where it is not installed."""
    why = refusal(name)
    if why:
        raise ValueError(why)
    allocator = ALLOCATORS[name]
    env = {ALLOCATOR_ENV: allocator.object}
    if allocator.preload:
        env["LD_PRELOAD"] = str(allocator.path())
    return env


def without(env: dict[str, str]) -> dict[str, str]:
    """An environment with no allocator in it (the heap driver's)."""
    return {k: v for k, v in env.items() if k not in ("LD_PRELOAD", ALLOCATOR_ENV)}


@functools.cache
def package_version(name: str) -> str:
    """`PACKAGE VERSION` of the allocator's Debian package (stored with every run on it)."""
    package = ALLOCATORS[name].package
    done = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Version}", package],
                          capture_output=True, text=True, check=False)  # fmt: skip
    return done.stdout.strip() if done.returncode == 0 else f"{package} (version unknown)"


def record(name: str) -> dict[str, str]:
    """What a run on the allocator stores beside the driver's read-back."""
    allocator = ALLOCATORS[name]
    return {"name": name, "object": str(allocator.path() or allocator.object),
            "package": package_version(name)}  # fmt: skip
