"""`tlsbench cache`: prune the build cache. Its arguments beside its handler."""

from __future__ import annotations

import argparse
import sys

from tlsbench.cli.common import Verb


def add_arguments(verb: Verb) -> None:
    cache = verb(
        "cache",
        "Prune the build cache",
        "Removes library builds no current variant uses (defaults, named variants, shipped "
        "experiments), drivers of older driver sources, unpacked trees and archives that are "
        "no longer pinned, and what interrupted builds left. Certificates are kept.",
    )
    cache.add_argument("action", choices=["prune"])
    cache.add_argument("--dry-run", action="store_true", help="list what would go, remove nothing")


def run(args: argparse.Namespace) -> int:
    from tlsbench.builds.build import Builder
    from tlsbench.builds.variants import Catalog
    from tlsbench.run import cache

    builder = Builder(quiet=True)
    stale = cache.plan(builder, Catalog())
    for item in stale:
        print(f"{item.bytes / 2**20:9.1f} MiB  {item.path}  ({item.reason})")
    total = sum(item.bytes for item in stale) / 2**20
    if args.dry_run:
        print(f"would remove {len(stale)} entries, {total:.1f} MiB (dry run)", file=sys.stderr)
        return 0
    cache.remove(stale)
    print(f"removed {len(stale)} entries, {total:.1f} MiB from {builder.cache}", file=sys.stderr)
    return 0
