"""`tlsbench list`: list lines, named variants and features. Its arguments beside its handler."""

from __future__ import annotations

import argparse
import json
import sys

from tlsbench.cli.common import Verb


def add_arguments(verb: Verb) -> None:
    lst = verb("list", "List lines, named variants and features")
    lst.add_argument("what", choices=["variants"])
    lst.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    from tlsbench.builds.variants import Catalog

    listing = Catalog().listing()
    if args.json:
        json.dump(listing, sys.stdout, indent=2)
        print()
        return 0
    print("Lines (LINE[:OPTION,...]; OPTION = feature or MACRO=VALUE):")
    print("  (and your own code: LIBRARY@PATH, LIBRARY@PATH#REV, @PATH; and your config: "
          "config=FILE, user-config=FILE, user-settings=FILE, configure=OPTION, "
          "configure-file=FILE: docs/own-code.md)")  # fmt: skip
    for name, line in listing["lines"].items():
        origin = line["upstream"] or f"machine's {line['system_package']}"
        default = "  (default)" if name in listing["defaults"] else ""
        print(f"  {name:<18} {origin}{default}")
    print("Named variants:")
    for name, spec in listing["named"].items():
        print(f"  {name:<18} = {spec}")
    print("Features:")
    for library, features in listing["features"].items():
        for name, info in features.items():
            note = f"  [unavailable: {info['unsupported']}]" if "unsupported" in info else ""
            print(f"  {library + ':' + name:<32} {info['description']}{note}")
    return 0
