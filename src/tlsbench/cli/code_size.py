"""`tlsbench code-size`: bytes (text/data/bss) a minimal TLS client and server link, per variant.
Its arguments beside its handler.
"""

from __future__ import annotations

import argparse
import json
import sys

from tlsbench.cli.common import Verb
from tlsbench.core.errors import UserError


def add_arguments(verb: Verb) -> None:
    size = verb(
        "code-size",
        "Bytes (text/data/bss) a minimal TLS client and server link, per variant",
        "Each role's program is linked with section garbage collection against the "
        "variant's archives (mbedTLS and wolfSSL variants).",
    )
    size.add_argument(
        "variants", nargs="*", metavar="VARIANT", help="default: the mbedTLS/wolfSSL defaults"
    )
    size.add_argument("--json", action="store_true", help="print one JSON row per role")
    size.add_argument("--quiet", action="store_true", help="no build progress lines on stderr")


def run(args: argparse.Namespace) -> int:
    from tlsbench.builds import codesize
    from tlsbench.builds.build import Builder
    from tlsbench.builds.variants import Catalog

    catalog = Catalog()
    if args.variants:
        variants = [catalog.resolve(spec) for spec in args.variants]  # all checked first
    else:
        defaults = [catalog.resolve(spec) for spec in catalog.defaults]
        variants = [v for v in defaults if codesize.supported(v.library)]
    for variant in variants:
        if not codesize.supported(variant.library):
            raise UserError(
                f"{variant.name}: code size is measured for mbedtls and wolfssl variants only"
            )
    builder = Builder(quiet=args.quiet)
    rows = []
    for variant in variants:
        build = builder.build(variant)
        rows += codesize.as_rows(build, codesize.measure(build))
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    print(f"{'variant':<28} {'target':<7} {'role':<7} {'text':>9} {'data':>8} {'bss':>8}")
    for r in rows:
        print(
            f"{r['variant']:<28} {r['target']:<7} {r['role']:<7} "
            f"{r['text']:>9} {r['data']:>8} {r['bss']:>8}"
        )
    return 0
