"""Cold build time of each pinned library on this machine (figures for the README).

Builds every pinned line from an empty build cache (the verified source archives are
reused, so the network is not timed), one after another with -j = number of cores, and
prints a markdown table. Usage: .venv/bin/python bench/build_times.py
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tlsbench.builds.build import Builder
from tlsbench.builds.sources import Sources
from tlsbench.builds.variants import Catalog


def main() -> int:
    catalog = Catalog()
    real = Sources()
    lines = sorted(real.pins)
    with tempfile.TemporaryDirectory(prefix="tlsbench-bench-") as tmp:
        cache = Path(tmp)
        (cache / "archives").mkdir()
        for line in lines:
            archive = real.archive(line)
            shutil.copyfile(archive, cache / "archives" / archive.name)
        builder = Builder(cache=cache, quiet=True)
        rows = []
        for line in lines:
            variant = catalog.resolve(line)
            started = time.monotonic()
            builder.build(variant)
            rows.append((line, real.pins[line].upstream, time.monotonic() - started))
            print(f"{line}: {rows[-1][2]:.0f} s", file=sys.stderr)
    print(
        f"Cold builds on {os.cpu_count()} cores (`make -j{os.cpu_count()}`), "
        "from an empty build cache (unpacking, wolfSSL's autogen and the drivers included):\n"
    )
    print("| line | upstream | cold build (s) |")
    print("| --- | --- | ---: |")
    for line, upstream, seconds in rows:
        print(f"| {line} | {upstream} | {seconds:.0f} |")
    print(f"| total | | {sum(r[2] for r in rows):.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
