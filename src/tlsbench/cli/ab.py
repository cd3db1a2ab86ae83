"""`tlsbench ab`: build BASE and CANDIDATE, run an experiment's points for both interleaved in one
run, and give every figure a verdict. Its arguments beside its handler.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tlsbench.cli.common import Verb, db_option, seconds, stored_name, whole
from tlsbench.core.dialect import db_target, redacted
from tlsbench.core.errors import UserError


def add_arguments(verb: Verb) -> None:
    abv = verb(
        "ab",
        "Build BASE and CANDIDATE, run an experiment's points for both interleaved in one "
        "run, and give every figure a verdict",
        "BASE and CANDIDATE are any two variants: two commits (mbedtls@REPO#main, "
        "mbedtls@REPO#HEAD), two config files, two pins, a pin and a tree. Times are judged "
        "by their statistics; instructions, atomics, heap, stack, allocations, wire bytes and "
        "code size as figures that should not move (equal, or changed by how much). Prints a "
        "Markdown summary (regressions first). Exit 0: no regression of a kind in "
        "--fail-on; 1: a regression beyond its threshold, or a failed point; 2: bad input.",
    )
    abv.add_argument("base", metavar="BASE", help="the baseline variant")
    abv.add_argument("candidate", metavar="CANDIDATE", help="the variant judged against it")
    abv.add_argument(
        "experiment",
        nargs="?",
        help="an experiment (a name in experiments/ or a .toml file) whose points run for both "
        "in place of its own variants (default: ab)",
    )
    abv.add_argument(
        "--mode",
        choices=["time", "instructions"],
        default="time",
        help="time (default): clocks, heap and the rest; instructions: instruction and atomic "
        "operation counts under callgrind in place of times, each changed figure explained by "
        "the functions and groups that changed most (heap and the rest as in time mode)",
    )
    abv.add_argument(
        "--fail-on",
        default="all",
        metavar="KINDS",
        help="figure kinds whose regression exits 1, comma-separated: time, instructions, "
        "atomics, heap, stack, allocations, wire, code-size, or all (default), none (a failed "
        "point always exits 1)",
    )
    abv.add_argument(
        "--threshold",
        action="append",
        metavar="KIND=FRACTION",
        help="practical threshold of a kind, a fraction of the base's figure (repeatable); "
        "defaults: time=0.05, instructions=0.01, atomics=0.01, every other kind 0 (any change "
        "beyond the figure's run-to-run spread)",
    )
    abv.add_argument(
        "--repetitions",
        type=whole(1, 1000),
        help="driver processes per point and variant (default: the experiment's); a time or "
        "a varying figure needs 4 per side for a verdict",
    )
    abv.add_argument(
        "--only",
        action="append",
        metavar="KEY=VALUE",
        help="keep the experiment's points whose KEY is VALUE (as tlsbench run --only)",
    )
    abv.add_argument("--timeout", type=seconds, help="seconds per driver process")
    abv.add_argument("--seed", type=whole(0, 2**32 - 1), help="seed of the run order")
    abv.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    abv.add_argument(
        "--summary",
        metavar="FILE",
        help="also append the Markdown summary to FILE (e.g. $GITHUB_STEP_SUMMARY)",
    )
    abv.add_argument(
        "--run",
        metavar="RUN",
        help="judge the variants of stored run RUN (a number or 'latest') instead of running "
        "anything (e.g. with other thresholds)",
    )
    abv.add_argument("--quiet", action="store_true", help="no progress line")
    db_option(abv, reads_only=False)


def run(args: argparse.Namespace) -> int:
    from tlsbench.builds.build import Builder
    from tlsbench.builds.variants import Catalog
    from tlsbench.core.store import Store
    from tlsbench.reportkit import ab
    from tlsbench.run import experiments
    from tlsbench.run.runner import Runner, check_results_location, refuse_impossible, tls_variants

    # Everything about the request is checked before anything is built or stored.
    thresholds = ab.parse_thresholds(args.threshold or [])
    fail_on = ab.parse_kinds(args.fail_on)
    db = db_target(args.db)
    if args.run is not None:  # verdicts of a stored run: nothing runs
        store = Store(db, readonly=True)
        base, candidate = stored_name(args.base), stored_name(args.candidate)
        run_id = int(store.run(args.run)["id"])
    else:
        catalog = Catalog()
        base, candidate = catalog.resolve(args.base).name, catalog.resolve(args.candidate).name
        if base == candidate:
            raise UserError(
                f"BASE and CANDIDATE are the same variant ({base}); to measure the noise of "
                "identical code, name one commit twice by two names (e.g. #main and #HEAD)"
            )
        experiment = experiments.load(args.experiment or "ab", catalog, [base, candidate])
        points = experiments.only(experiment.points, args.only or [])
        repetitions = args.repetitions or experiment.repetitions
        check_results_location(db)
        builder = Builder(quiet=args.quiet)
        refuse_impossible(
            points, {spec: builder.build(catalog.resolve(spec)) for spec in tls_variants(points)}
        )
        store = Store(db)
        runner = Runner(store, builder=builder, quiet=args.quiet)
        runner.mode = args.mode
        timeout = args.timeout if args.timeout is not None else experiment.timeout
        run_id = runner.start(experiment, points, repetitions, timeout, seed=args.seed)
        tally = runner.execute(run_id, timeout)
        print(f"run {run_id}: {tally.ok} ok, {tally.unsupported} unsupported, "
              f"{len(tally.failed)} failed ({store.path})", file=sys.stderr)  # fmt: skip
    outcome = ab.compare_variants(store, run_id, base, candidate, thresholds, fail_on)
    summary = ab.markdown(outcome, redacted(db))
    if args.summary:
        _write_text(Path(args.summary), summary, "--summary")
    print(ab.to_json(outcome) if args.json else summary, end="")
    return outcome.exit_status


def _write_text(path: Path, text: str, flag: str) -> None:
    try:
        with path.open("a", encoding="utf-8") as out:  # a CI job summary is appended to
            out.write(text)
    except OSError as exc:
        raise UserError(f"{flag} {path}: cannot write there ({exc.strerror or exc})") from exc
