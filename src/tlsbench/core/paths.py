"""Where the project's files and the cache live, and which commit of the project they are."""

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# The repository root: src/tlsbench/core/paths.py -> four levels up.
REPO = Path(__file__).resolve().parents[3]
DRIVERS = REPO / "drivers"
PINS_FILE = REPO / "sources" / "pins.toml"
# Source archives of tools tlsbench builds pieces from (no library lines): QEMU's plugin API.
TOOLS_PINS_FILE = REPO / "sources" / "tools.toml"
PIN_MOVES_LOG = REPO / "sources" / "pin-moves.log"
APT_SOURCES_LIST = REPO / "sources" / "debian-src.list"
VARIANTS_FILE = REPO / "variants.toml"


def cache_root() -> Path:
    """The cache of sources, builds and certificates: $TLSBENCH_CACHE or ~/.cache/tlsbench."""
    configured = os.environ.get("TLSBENCH_CACHE")
    if configured:
        return Path(configured).expanduser().resolve()
    return Path.home() / ".cache" / "tlsbench"


@contextmanager
def building_folder(folder: Path, built: Path, prefix: str) -> Iterator[Path]:
    """A fresh folder beside `folder` to build in. When the block ends without an error it
    becomes `folder`, so that no reader ever sees half a build; where another process put a
    complete one there first (`built` exists), ours is dropped. Removed in every case."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=folder.parent))
    try:
        yield tmp
        try:
            tmp.rename(folder)
        except OSError:
            if not built.exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def commit_id() -> str:
    """The project's commit (with -dirty for uncommitted changes): stored with every run."""
    proc = subprocess.run(
        ["git", "-C", str(REPO), "describe", "--always", "--dirty", "--abbrev=12"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return proc.stdout.strip() or "unknown"
