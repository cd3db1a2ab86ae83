"""`tlsbench migrate`: bring a results store written by an older tlsbench up to date. Its arguments
beside its handler.
"""

from __future__ import annotations

import argparse

from tlsbench.cli.common import Verb, db_option
from tlsbench.core.dialect import db_target


def add_arguments(verb: Verb) -> None:
    migrate = verb(
        "migrate",
        "Bring a results store written by an older tlsbench up to date",
        "Reading verbs (runs, report, compare) never migrate; writing ones (run) migrate "
        "on their own.",
    )
    db_option(migrate, reads_only=False)


def run(args: argparse.Namespace) -> int:
    from tlsbench.core.store import SCHEMA_VERSION, Store

    store = Store(db_target(args.db))  # opening for writing migrates
    print(f"{store.path}: schema version {SCHEMA_VERSION}")
    store.close()
    return 0
