"""`tlsbench compare`: compare run B against run A, per point and series. Its arguments beside its
handler.
"""

from __future__ import annotations

import argparse

from tlsbench.cli.common import Verb, db_option, stored_name
from tlsbench.core.dialect import db_target
from tlsbench.core.errors import UserError


def add_arguments(verb: Verb) -> None:
    cmp = verb(
        "compare",
        "Compare run B against run A, per point and series",
        "Prints the ratio B/A with its 95 % confidence interval and a verdict from the "
        "per-repetition figures, with warnings where the runs are not comparable.",
    )
    cmp.add_argument("a", metavar="A", help="the baseline run: a number or 'latest'")
    cmp.add_argument("b", metavar="B", help="the run compared with it: a number or 'latest'")
    cmp.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="practical threshold as a fraction: smaller changes are 'no difference' even when "
        "significant (default 0.05; instruction counts 0.01)",
    )
    cmp.add_argument("--json", action="store_true", help="one JSON object per point and series")
    cmp.add_argument(
        "--pool-machines",
        action="store_true",
        help="pool a point's repetitions measured on different machines (refused otherwise), "
        "with a warning on each such row",
    )
    cmp.add_argument(
        "--partial",
        action="store_true",
        help="compare a sharded run before all its shards are done (what is there)",
    )
    cmp.add_argument(
        "--variants",
        nargs=2,
        metavar=("BASE", "CANDIDATE"),
        help="pair the points of variant BASE in A with the same points of variant CANDIDATE "
        "in B (A and B may be one run, e.g. tlsbench ab's); default: the same variant, or, "
        "when each run holds one variant, those two",
    )
    cmp.add_argument(
        "--normalise",
        action="store_true",
        help="divide each repetition's time figures by its calibration workload time (relative "
        "to A's median) before comparing, instead of reporting 'machine drift'",
    )
    db_option(cmp, reads_only=True)


def run(args: argparse.Namespace) -> int:
    from tlsbench.core.stats import DEFAULT_THRESHOLD
    from tlsbench.core.store import Store
    from tlsbench.reportkit.compare import (
        check_same_credentials,
        compare_runs,
        run_warnings,
        table,
        to_json,
    )

    if args.threshold is not None and not 0 <= args.threshold < 1:
        raise UserError(
            f"--threshold {args.threshold}: give a fraction from 0 to below 1 (0.05 = 5 %)"
        )
    store = Store(db_target(args.db), readonly=True)
    run_a, run_b = store.run(args.a)["id"], store.run(args.b)["id"]
    if not args.partial:
        for run_id in dict.fromkeys((run_a, run_b)):
            store.check_whole(run_id, "compare")
    check_same_credentials(store, run_a, run_b)
    variants = None
    if args.variants:
        variants = (stored_name(args.variants[0]), stored_name(args.variants[1]))
    rows = compare_runs(store, run_a, run_b, threshold=args.threshold, normalise=args.normalise,
                        pool_machines=args.pool_machines, variants=variants)  # fmt: skip
    threshold = DEFAULT_THRESHOLD if args.threshold is None else args.threshold
    notes = run_warnings(store, run_a, run_b)
    render = to_json if args.json else table
    print(render(rows, run_a, run_b, threshold, notes, args.normalise),
          end="\n" if not args.json else "")  # fmt: skip
    return 0
