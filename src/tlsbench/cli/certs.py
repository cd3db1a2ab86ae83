"""`tlsbench certs`: make the test certificates (cached) and say which set they are. Its
arguments beside its handler."""

from __future__ import annotations

import argparse
import json
import sys

from tlsbench.cli.common import Verb


def add_arguments(verb: Verb) -> None:
    certs = verb(
        "certs",
        "Make the test certificates (cached) and print each kind's folder and digest",
        "The sets are derived, not random: the same bytes on every machine. Each kind's line "
        "gives its sha256 and whether it is the published set (the one the docs' figures "
        "were measured with); every run stores the digests of the kinds it used. Exit 1 when "
        "a set made here is not the published one.",
    )
    certs.add_argument("kinds", nargs="*", metavar="KIND", help="default: every kind")
    certs.add_argument("--json", action="store_true",
                       help="print {layout, kinds: {KIND: {folder, sha256, published}}} "
                       "(for scripts)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from tlsbench.builds import certs

    kinds = args.kinds or list(certs.KINDS)
    if not args.json:
        print(f"certificate set {certs.LAYOUT_VERSION} (derived: the same bytes on every machine)")
    status = 0
    made: dict[str, dict[str, object]] = {}
    for kind, folder in certs.ensure_all(kinds).items():
        sha256 = certs.digest(kind)
        verdict = certs.published(kind, sha256)
        if verdict is False:
            status = 1
        made[kind] = {"folder": str(folder), "sha256": sha256, "published": verdict}
        if not args.json:
            said = {True: "the published set", False: "NOT the published set", None: "unpublished"}
            print(f"{kind}: {folder} sha256 {sha256} ({said[verdict]})")
    if args.json:
        json.dump({"layout": certs.LAYOUT_VERSION, "kinds": made}, sys.stdout, indent=2)
        print()
    return status
