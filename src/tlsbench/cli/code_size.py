"""`tlsbench code-size`: bytes (text/data/bss) a minimal TLS client and server link, per variant.
Its arguments beside its handler.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tlsbench.cli.common import Verb
from tlsbench.core.errors import UserError


def add_arguments(verb: Verb) -> None:
    size = verb(
        "code-size",
        "Bytes (text/data/bss) a minimal TLS client and server link, per variant",
        "Each role's program is linked statically, with section garbage collection, against "
        "the variant's archives; a line that cannot be linked so says why.",
    )
    size.add_argument(
        "variants", nargs="*", metavar="VARIANT",
        help="default: the defaults of the TLS libraries",
    )  # fmt: skip
    size.add_argument(
        "--handshake", action="store_true",
        help="first run each variant's client against its server once over loopback "
        "(Linux targets; armhf under qemu-user)",
    )  # fmt: skip
    size.add_argument(
        "--by-archive", action="store_true",
        help="under each role, the bytes each archive brought (from the linker's map)",
    )  # fmt: skip
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
        variants = [v for v in defaults if codesize.has_tls(v.library)]
    for variant in variants:
        if not codesize.has_tls(variant.library):
            raise codesize.no_tls(variant)
    builder = Builder(quiet=args.quiet)
    rows: list[dict[str, Any]] = []
    for variant in variants:
        reason = codesize.refusal(variant)
        if reason is None:
            build = builder.build(variant)
            try:
                rows += _measure(codesize, build, args.handshake, args.by_archive)
                continue
            except codesize.NotStatic as exc:
                reason = str(exc).removeprefix(f"{variant.name}: ")
        rows.append({"variant": variant.name, "target": _label(variant.arch), "refused": reason})
    if all("refused" in r for r in rows):
        raise UserError("\n".join(f"{r['variant']}: {r['refused']}" for r in rows))
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    print(f"{'variant':<28} {'target':<7} {'role':<7} {'text':>9} {'data':>8} {'bss':>8}")
    for r in rows:
        if "refused" in r:
            print(f"{r['variant']:<28} {r['target']:<7} not measured: {r['refused']}")
            continue
        print(
            f"{r['variant']:<28} {r['target']:<7} {r['role']:<7} "
            f"{r['text']:>9} {r['data']:>8} {r['bss']:>8}"
        )
        for a in r.get("archives", []):
            print(f"  {a['origin']:<42} {a['text']:>9} {a['data']:>8} {a['bss']:>8}")
    return 0


def _measure(codesize: Any, build: Any, handshake: bool, by_archive: bool) -> list[dict[str, Any]]:
    """The variant's rows; with `by_archive`, each with what each archive brought."""
    import dataclasses
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="tlsbench-size-") as work:
        programs = codesize.link_programs(build, Path(work))
        if handshake:
            codesize.run_handshake(build, programs)
        rows: list[dict[str, Any]] = codesize.as_rows(build, codesize.sizes(build, programs))
        if by_archive:
            origins = codesize.by_archive(build, programs)
            for row in rows:
                row["archives"] = [dataclasses.asdict(o) for o in origins[row["role"]]]
    return rows


def _label(arch: str) -> str:
    from tlsbench.builds import arches

    return arches.arch(arch).label
