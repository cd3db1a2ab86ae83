"""`tlsbench run`: run an experiment into the results store. Its arguments beside its handler."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any

from tlsbench.cli.common import Verb, db_option, seconds, whole
from tlsbench.core.dialect import db_target
from tlsbench.core.errors import UserError


def add_arguments(verb: Verb) -> None:
    run = verb(
        "run",
        "Run an experiment into the results store",
        "Builds what it needs, runs every point in separate driver processes with a progress "
        "line, and stores each result as it finishes. Exit 1 when a point failed, 2 for bad "
        "input (nothing stored), 130/143 when interrupted (the run is marked interrupted; "
        "--resume finishes it).",
    )
    run.add_argument(
        "experiment",
        nargs="?",
        help="a name in experiments/ or a path to a .toml file (default: quick)",
    )
    db_option(run, reads_only=False)
    run.add_argument(
        "--resume",
        metavar="RUN",
        help="run what run RUN (a number or 'latest') is missing or failed, under its stored "
        "settings",
    )
    run.add_argument(
        "--only",
        action="append",
        metavar="KEY=VALUE",
        help="keep the points whose KEY (variant, library, scenario, name or an option) is "
        "VALUE; repeatable, all must match",
    )
    run.add_argument("--dry-run", action="store_true", help="list the points, run nothing")
    run.add_argument(
        "--repetitions",
        type=whole(1, 1000),
        help="driver processes per point (default: the experiment's `repetitions`, else 5)",
    )
    run.add_argument(
        "--timeout",
        type=seconds,
        help="seconds per driver process (default: the experiment's `timeout`, else 300)",
    )
    run.add_argument(
        "--mode",
        choices=["time", "instructions"],
        help="time: the driver's clocks; instructions: instructions and atomic operations of "
        "the measured calls counted under callgrind, identical run to run, with each side's "
        "cost by function (default: the experiment's `mode`, else time)",
    )
    run.add_argument(
        "--seed",
        type=whole(0, 2**32 - 1),
        help="seed of the run order: each repetition runs the points in an order shuffled by "
        "it (default: a random seed; stored in the run, shown in its environment)",
    )
    run.add_argument(
        "--shard",
        metavar="K/N",
        help="run only shard K of N: a deterministic share of the points, so that N machines "
        "(a CI matrix) fill one run in a shared store; needs --run-key (with --resume: the "
        "shard to resume)",
    )
    run.add_argument(
        "--run-key",
        metavar="KEY",
        help="the name every shard of a run gives (e.g. the CI pipeline's id): the first "
        "makes the run, the others join it; run again with the same key, a shard resumes",
    )
    run.add_argument(
        "--serial",
        action="store_true",
        help="run every point alone; by default points that mostly wait (an emulated link of "
        "RTT >= 20 ms or with loss) run several at a time, 4 per CPU, each other point alone "
        "(docs/store-and-shards.md)",
    )
    run.add_argument("--quiet", action="store_true", help="no progress line")


def run(args: argparse.Namespace) -> int:
    from tlsbench.builds.build import Builder
    from tlsbench.builds.variants import Catalog
    from tlsbench.core.store import Store
    from tlsbench.run import experiments, shards
    from tlsbench.run.runner import (
        Runner,
        check_results_location,
        interleaved,
        refuse_impossible,
        tls_variants,
    )

    target = db_target(args.db)
    shard = shards.parse(args.shard) if args.shard is not None else None
    if args.resume is not None:
        given = [
            flag
            for flag, present in (
                (f"the experiment {args.experiment!r}", args.experiment is not None),
                ("--only", bool(args.only)),
                ("--repetitions", args.repetitions is not None),
                ("--mode", args.mode is not None),
                ("--timeout", args.timeout is not None),
                ("--seed", args.seed is not None),
                ("--dry-run", args.dry_run),
                ("--run-key", args.run_key is not None),
            )
            if present
        ]
        if given:
            raise UserError(
                f"--resume {args.resume} runs what the run is missing under its stored "
                f"settings (experiment, points, repetitions, mode, timeout); drop "
                f"{', '.join(given)}, or start a new run"
            )
        store = Store(target)
        run = store.run(args.resume)
        count = int(run["shard_count"] or 1)
        if shard is None and count > 1:
            raise UserError(
                f"run {run['id']} is split into {count} shards: resume one with "
                f"--shard K/{count} (`tlsbench runs` shows which are missing)"
            )
        if shard is not None and shard.count != count:
            raise UserError(
                f"run {run['id']} is split into {count} shards, not {shard.count}: "
                f"give --shard K/{count}"
            )
        index = shard.index if shard else 1
        runner = Runner(store, quiet=args.quiet)
        runner.parallel_waiting = not args.serial
        runner.check_same_builds(run["id"])
        tally = runner.execute(run["id"], stored_timeout(run), index)
        return _summarize_run(run["id"], tally, store, index if count > 1 else None)
    run_key = shards.check_run_key(args.run_key) if args.run_key is not None else None
    # Everything about the request is checked before the store is touched.
    experiment = experiments.load(args.experiment or "quick")
    points = experiments.only(experiment.points, args.only or [])
    repetitions = args.repetitions or experiment.repetitions
    if args.dry_run:
        listed = points
        if shard is not None:  # dealt from the order the run stores its points in
            stored = interleaved(points)
            listed = [stored[i] for i in shards.select(list(range(len(stored))), shard)]
        for point in listed:
            print(f"{point.name:<60} {point.variant}")
        part = f" (shard {shard} of {len(points)})" if shard else ""
        print(f"{len(listed)} points{part} x {repetitions} repetitions", file=sys.stderr)
        return 0
    if shard is not None and run_key is None:
        raise UserError(
            "--shard needs --run-key KEY, the same in every shard of the run (e.g. the CI "
            "pipeline's id): the shards find their one run in the store by it"
        )
    check_results_location(target)
    # What a variant's build declares it can never run is refused before the store is
    # touched (the builds are needed for the run anyway, and cached).
    builder = Builder(quiet=args.quiet)
    catalog = Catalog()
    refuse_impossible(
        points, {spec: builder.build(catalog.resolve(spec)) for spec in tls_variants(points)}
    )
    store = Store(target)
    runner = Runner(store, builder=builder, quiet=args.quiet)
    runner.mode = args.mode or experiment.mode
    runner.parallel_waiting = not args.serial
    timeout = args.timeout if args.timeout is not None else experiment.timeout
    run_id = runner.start(experiment, points, repetitions, timeout, seed=args.seed,
                          shard=shard, run_key=run_key)  # fmt: skip
    # A joined run's timeout is the one its first shard stored.
    timeout = stored_timeout(store.run(run_id))
    index = shard.index if shard else 1
    tally = runner.execute(run_id, timeout, index)
    return _summarize_run(run_id, tally, store, index if shard else None)


def stored_timeout(run: Any) -> float:
    """The run's own timeout; runs stored before it was kept use their experiment's."""
    if run["timeout"] is not None:
        return float(run["timeout"])
    import tomllib

    with contextlib.suppress(tomllib.TOMLDecodeError):
        value = tomllib.loads(run["experiment_text"]).get("timeout")
        if isinstance(value, int | float) and value > 0:
            return float(value)
    return 300.0


def _summarize_run(run_id: int, tally: Any, store: Any, shard: int | None = None) -> int:
    part = f" shard {shard}" if shard is not None else ""
    print(
        f"run {run_id}{part}: {tally.ok} ok, {tally.unsupported} unsupported, "
        f"{len(tally.failed)} failed ({store.path})",
        file=sys.stderr,
    )
    for failure in tally.failed:
        print(f"  FAILED {failure}", file=sys.stderr)
    if shard is not None:
        missing = store.missing_shards(run_id)
        count = int(store.run(run_id)["shard_count"])
        if missing:
            print(f"run {run_id}: still missing {', '.join(m.describe(count) for m in missing)}",
                  file=sys.stderr)  # fmt: skip
    return 1 if store.failed_count(run_id, shard) else 0
