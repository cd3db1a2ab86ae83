"""`tlsbench host-info`: print this host's tlsbench commit and the build keys of variants, as JSON.
Its arguments beside its handler.
"""

from __future__ import annotations

import argparse
import json
import sys

from tlsbench.cli.common import Verb


def add_arguments(verb: Verb) -> None:
    host_info = verb(
        "host-info",
        "Print this host's tlsbench commit and the build keys of variants, as JSON",
        "Builds the variants (and makes the certificate kinds) that are missing first. A "
        "runner asks each host of a point with server_host / generator_hosts for it over "
        "ssh, and refuses a host whose commit or build keys differ from its own.",
    )
    host_info.add_argument("variants", nargs="*", metavar="VARIANT")
    host_info.add_argument("--cert", dest="certs", action="append", metavar="KIND",
                           help="a certificate kind the points use (repeatable)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from tlsbench.peers import remote

    json.dump(remote.host_info(args.variants, args.certs or []), sys.stdout, indent=2)
    print()
    return 0
