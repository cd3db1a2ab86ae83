"""`tlsbench runs`: list the runs in the store. Its arguments beside its handler."""

from __future__ import annotations

import argparse

from tlsbench.cli.common import Verb, db_option
from tlsbench.core.dialect import db_target


def add_arguments(verb: Verb) -> None:
    runs = verb(
        "runs",
        "List the runs in the store",
        "A run whose runner is gone shows as interrupted.",
    )
    db_option(runs, reads_only=True)


def run(args: argparse.Namespace) -> int:
    from tlsbench.core.store import Store

    store = Store(db_target(args.db), readonly=True)
    for run in store.runs():
        count = int(run["shard_count"] or 1)
        shards = ""
        if count > 1:
            missing = store.missing_shards(run["id"])
            shards = f", {count - len(missing)}/{count} shards done"
            if missing:
                shards += "; missing " + ", ".join(m.describe(count) for m in missing)
        key = f" [{run['run_key']}]" if run["run_key"] else ""
        print(
            f"{run['id']:>4}  {run['started_at']}  {store.status_of(run):<11} {run['experiment']}"
            f"{key}  ({run['repetitions']} repetitions{shards})"
        )
    return 0
