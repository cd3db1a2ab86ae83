"""`tlsbench certs`: generate the test certificates (cached). Its arguments beside its handler."""

from __future__ import annotations

import argparse

from tlsbench.cli.common import Verb


def add_arguments(verb: Verb) -> None:
    certs = verb("certs", "Generate the test certificates (cached)", "Prints each kind's folder.")
    certs.add_argument("kinds", nargs="*", metavar="KIND", help="default: every kind")


def run(args: argparse.Namespace) -> int:
    from tlsbench.builds import certs

    kinds = args.kinds or list(certs.KINDS)
    for kind, folder in certs.ensure_all(kinds).items():
        print(f"{kind}: {folder}")
    return 0
