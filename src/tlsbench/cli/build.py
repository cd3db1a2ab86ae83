"""`tlsbench build`: build variants from their pinned sources, cached by a key of everything that
goes into them. Its arguments beside its handler.
"""

from __future__ import annotations

import argparse
import json
import sys

from tlsbench.cli.common import Verb


def add_arguments(verb: Verb) -> None:
    build = verb(
        "build",
        "Build variants from their pinned sources, cached by a key of everything that goes "
        "into them",
        "Prints each variant's version and build folder (or, with --json, its options, cache "
        "key, library files and probe output). A variant is LINE[:FEATURE,...,MACRO=VALUE]; "
        "`tlsbench list variants` lists them.",
    )
    build.add_argument(
        "variants", nargs="*", metavar="VARIANT", help="default: the defaults of variants.toml"
    )
    build.add_argument("--json", action="store_true", help="print a JSON description per variant")
    build.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def run(args: argparse.Namespace) -> int:
    from tlsbench.builds.build import Builder
    from tlsbench.builds.variants import Catalog

    catalog = Catalog()
    specs = args.variants or catalog.defaults
    variants = [catalog.resolve(spec) for spec in specs]  # all checked before any build
    builder = Builder(quiet=args.quiet)
    described = []
    for variant in variants:
        build = builder.build(variant)
        described.append(build.describe())
        for config in described[-1].get("config_files", []):  # stored whole with runs
            config["lines"] = len(config.pop("text").splitlines())
        if not args.json:
            probe = described[-1]["probe"]
            dirty = " [dirty work tree]" if (described[-1]["source"] or {}).get("dirty") \
                else ""  # fmt: skip
            print(f"{variant.name}: {probe.get('version')}{dirty} ({build.folder})")
    if args.json:
        json.dump(described, sys.stdout, indent=2)
        print()
    return 0
