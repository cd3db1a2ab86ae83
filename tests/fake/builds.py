"""Builds that are the fake driver (tests/fake/driver.py): tlsbench without building anything.

`install(root)` makes every Builder hand out, for any variant, a build folder under `root`
whose two driver programs run the fake driver; the build's cache key and drivers key are
the real ones (computed from the variant, the recipe and the drivers tree, nothing built),
so that what the runner stores and checks about builds is what it would be. The driver's
declaration (`tlsbench.driver.declaration`) then comes from the fake's `info --json`, the
driver's own declaration recorded in tests/fixtures/declared.json.

In-process tests install it with the `fake_driver` fixture (tests/unit/conftest.py);
`tlsbench` as a separate process is tests/fake/run_tlsbench.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tlsbench.builds.build import Build, Builder
from tlsbench.builds.variants import Variant
from tlsbench.driver.declaration import declared

DRIVER = Path(__file__).resolve().with_name("driver.py")
LAUNCHER = DRIVER.with_name("run_tlsbench.py")
# Where fake builds go when the environment names no folder (a test session sets one).
ROOT_VARIABLE = "TLSBENCH_FAKE_BUILDS"


def fake_build(builder: Builder, variant: Variant, root: Path) -> Build:
    """The variant's build as the fake driver: its folder, manifest, probe and programs."""
    key = builder.key(variant)
    folder = root / f"{variant.line.folder_name}-{key[:16]}"
    drivers = folder / f"drivers-{builder.drivers_key(key)[:16]}"
    manifest = {
        "version": "fake", "link": {"library_files": []},
        "inputs": {"compiler": "fake"}, "build_seconds": 0.0, "source": None,
    }  # fmt: skip
    if not (drivers / "probe.json").exists():
        (drivers / "bin").mkdir(parents=True, exist_ok=True)
        (folder / "manifest.json").write_text(json.dumps(manifest))
        for name, program in (("tlsbench-driver", "time"), ("tlsbench-driver-heap", "heap")):
            script = drivers / "bin" / name
            # -I -S: no site packages, nothing from the environment: a fast start.
            script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -I -S "{DRIVER}" '
                              f'--program {program} "$@"\n')  # fmt: skip
            script.chmod(0o755)
        (drivers / "probe.json").write_text(json.dumps({"library": variant.library}))
    return Build(variant, key, folder, manifest, drivers)


def install(root: Path) -> None:
    """Every Builder of this process builds nothing and hands out fake builds in `root`."""
    root.mkdir(parents=True, exist_ok=True)

    def build(self: Builder, variant: Variant) -> Build:
        return fake_build(self, variant, root)

    def library(self: Builder, variant: Variant) -> Path:
        # A fake build has no library: a tool taken from one (the pinned openssl program
        # that makes the post-quantum certificates) is missing, and certs.py says so.
        return fake_build(self, variant, root).folder

    Builder.build = build  # type: ignore[method-assign]
    Builder.library = library  # type: ignore[method-assign]
    declared.cache_clear()


def install_from_environment() -> None:
    """install() in the folder $TLSBENCH_FAKE_BUILDS names (tests/fake/run_tlsbench.py)."""
    install(Path(os.environ[ROOT_VARIABLE]))


def run_fake(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """`tlsbench ARGS` with fake builds in $TLSBENCH_FAKE_BUILDS, to its end."""
    return subprocess.run([sys.executable, str(LAUNCHER), *args], capture_output=True,
                          text=True, check=False, **kwargs)  # fmt: skip


def start_fake(*args: str, **kwargs: Any) -> subprocess.Popen[str]:
    """`tlsbench ARGS` with fake builds, started."""
    return subprocess.Popen([sys.executable, str(LAUNCHER), *args], text=True, **kwargs)
