"""Where the project's files and the cache live."""

import os
from pathlib import Path

# The repository root: src/tlsbench/core/paths.py -> four levels up.
REPO = Path(__file__).resolve().parents[3]
DRIVERS = REPO / "drivers"
PINS_FILE = REPO / "sources" / "pins.toml"
PIN_MOVES_LOG = REPO / "sources" / "pin-moves.log"
APT_SOURCES_LIST = REPO / "sources" / "debian-src.list"
VARIANTS_FILE = REPO / "variants.toml"


def cache_root() -> Path:
    """The cache of sources, builds and certificates: $TLSBENCH_CACHE or ~/.cache/tlsbench."""
    configured = os.environ.get("TLSBENCH_CACHE")
    if configured:
        return Path(configured).expanduser().resolve()
    return Path.home() / ".cache" / "tlsbench"
