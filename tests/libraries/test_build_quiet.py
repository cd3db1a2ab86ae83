"""tlsbench build --quiet in an empty cache: the null variant and its drivers really built, and
nothing printed but the result."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tlsbench.core import paths


def test_build_quiet_prints_nothing_but_the_result_even_when_it_builds(tmp_path: Path) -> None:
    cache = tmp_path / "cache"  # empty: the null variant and its drivers are really built
    proc = subprocess.run(
        [str(paths.REPO / "tlsbench"), "build", "null", "--quiet"],
        capture_output=True,
        text=True,
        env={**os.environ, "TLSBENCH_CACHE": str(cache)},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert list(cache.glob("builds/null-*/manifest.json")), "nothing was built"
    assert proc.stderr == ""
    assert proc.stdout.startswith("null: ") and len(proc.stdout.splitlines()) == 1
