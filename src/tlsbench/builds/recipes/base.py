"""What every build recipe shares: the build context, logged commands, link facts."""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tlsbench.builds import arches
from tlsbench.builds.variants import Variant
from tlsbench.core import progress
from tlsbench.core.errors import BuildError

LOG_TAIL_LINES = 30


def tool_version(argv: list[str]) -> str:
    """First line a tool prints about its version ("missing" when not installed); asked once
    per process (every build key asks for the compiler's and cmake's)."""
    return _tool_version(tuple(argv))


@functools.cache
def _tool_version(argv: tuple[str, ...]) -> str:
    if shutil.which(argv[0]) is None:
        return "missing"
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    text = out.stdout or out.stderr
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[0] if lines else "unknown"


@dataclass
class LinkInfo:
    """How a program links against one built variant (fed to the drivers' CMake)."""

    include_dirs: list[str] = field(default_factory=list)
    libraries: list[str] = field(default_factory=list)  # archive paths or -l flags, in order
    defines: list[str] = field(default_factory=list)  # NAME or NAME=VALUE
    c_flags: list[str] = field(default_factory=list)
    link_flags: list[str] = field(default_factory=list)
    library_files: list[str] = field(default_factory=list)  # the library's own files


@dataclass
class BaseBuild:
    """A build another build is built over (s2n-tls over AWS-LC): its installed prefix and
    how to link it."""

    prefix: Path
    link: LinkInfo


class BuildLog:
    """Appends every command and its output to one log; a failure shows the tail."""

    def __init__(self, path: Path, label: str, quiet: bool = False) -> None:
        self.path = path
        self.label = label
        self.quiet = quiet
        self.started = time.monotonic()

    def step(self, what: str) -> None:
        """What the build does now: a status line (a CI log gets one every few seconds)."""
        if not self.quiet:
            elapsed = time.monotonic() - self.started
            progress.status(f"  [{self.label}] {what} ({elapsed:.0f}s)")

    def note(self, text: str) -> None:
        with self.path.open("a") as log:
            log.write(text + "\n")

    def tail(self, lines: int = LOG_TAIL_LINES) -> str:
        content = self.path.read_text(errors="replace").splitlines()
        return "\n".join(content[-lines:])

    def fail(self, what: str) -> BuildError:
        return BuildError(
            f"{self.label}: {what}\n--- last {LOG_TAIL_LINES} lines of {self.path} ---\n"
            f"{self.tail()}\n--- full log: {self.path}"
        )


@dataclass
class BuildContext:
    variant: Variant
    source: Path | None  # unpacked upstream tree; None for a system line
    work: Path  # the (temporary) cache entry
    jobs: int
    log: BuildLog
    cc: str = "gcc"
    # A folder put first on PATH for every command (the compiler stand-in that records the
    # flags, build.py), so that a compiler named without a path is found there.
    tool_path: str = ""
    # The log the compiler stand-in appends each command line to (build.py): a recipe that
    # compiles with another compiler (Botan's g++) records it there too. None: none is kept.
    compile_log: Path | None = None
    # What a recipe found out about the build, kept in its manifest (`build_facts`), e.g.
    # the generated files an mbedTLS tree from git lacked.
    facts: dict[str, Any] = field(default_factory=dict)
    # The builds of the lines the recipe names in `builds_on`, by line (build.py).
    builds_on: dict[str, BaseBuild] = field(default_factory=dict)
    # The unpacked trees of the pins the line's pin takes along (`with`), by line.
    companions: dict[str, Path] = field(default_factory=dict)

    @property
    def prefix(self) -> Path:
        return self.work / "prefix"

    @property
    def tree(self) -> Path:
        """The out-of-tree build folder (deleted once the library is installed)."""
        return self.work / "tree"

    @property
    def m32(self) -> list[str]:
        """Compile and link flags of the target arch (-m32 for i686)."""
        return list(arches.arch(self.variant.arch).flags)

    @property
    def target(self) -> arches.Arch:
        return arches.arch(self.variant.arch)

    def run(self, argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
        self.log.note(f"\n$ (cd {cwd} && {shlex.join(argv)})")
        full_env = {**os.environ, "LC_ALL": "C", **(env or {})}
        if self.tool_path:
            full_env["PATH"] = f"{self.tool_path}:{full_env.get('PATH', '')}"
        with self.log.path.open("a") as out:
            proc = subprocess.run(
                argv,
                cwd=cwd,
                env=full_env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        if proc.returncode != 0:
            raise self.log.fail(f"`{argv[0]}` failed with exit status {proc.returncode}")

    def check_configure_accepted(self) -> None:
        """autoconf only warns about options it does not know; tlsbench refuses them."""
        for line in self.log.path.read_text(errors="replace").splitlines():
            if "WARNING: unrecognized options:" in line:
                raise self.log.fail(
                    f"configure does not know option(s) {line.split('options:', 1)[-1].strip()}; "
                    "the build would silently differ from the variant"
                )


class Recipe(Protocol):
    """One per library: builds a variant into ctx.prefix and says how to link it."""

    library: str

    def key_inputs(self, variant: Variant) -> dict[str, str]:
        """Extra facts that change the build output (tool versions), for the cache key."""
        ...

    def build(self, ctx: BuildContext) -> LinkInfo: ...
