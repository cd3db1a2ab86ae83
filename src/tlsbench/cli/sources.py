"""`tlsbench sources`: pinned library sources: list, fetch, repin. Its arguments beside its
handler.
"""

from __future__ import annotations

import argparse

from tlsbench.cli.common import Verb
from tlsbench.core.errors import UserError


def add_arguments(verb: Verb) -> None:
    sources = verb(
        "sources",
        "Pinned library sources: list, fetch, repin",
        "fetch downloads, hashes in full and unpacks; repin moves a line to another upstream "
        "version Debian offers and records the move in sources/pin-moves.log.",
    )
    sources.add_argument("action", choices=["list", "fetch", "repin"])
    sources.add_argument("line", nargs="?", help="a pinned line, e.g. openssl-3.5.x (default: all)")
    sources.add_argument("version", nargs="?", help="repin: the upstream version to move to")
    sources.add_argument("--offered", action="store_true", help="list: versions Debian offers")


def run(args: argparse.Namespace) -> int:
    from tlsbench.builds.sources import Sources

    sources = Sources()
    if args.action == "repin":
        if not args.line or not args.version:
            raise UserError("usage: tlsbench sources repin LINE VERSION")
        old = sources.pin(args.line)
        new = sources.repin(args.line, args.version)
        print(f"{args.line}: {old.upstream} -> {new.upstream} ({new.file}, sha256 {new.sha256})")
        print("recorded in sources/pin-moves.log; commit sources/ to keep the move")
        return 0
    lines = [args.line] if args.line else sorted(sources.pins)
    for line in lines:
        if args.action == "fetch":
            path = sources.source_dir(line)
        else:  # list
            pin = sources.pin(line)
            wants_offered = args.offered and pin.kind == "debian"
            offered = sources.apt.offered_versions(pin.package) if wants_offered else []
            extra = f"  offered: {', '.join(offered)}" if offered else ""
            print(f"{line:<16} {pin.package} {pin.upstream}  {pin.file}  {pin.sha256}{extra}")
            continue
        print(f"{line}: {path}")
    return 0
