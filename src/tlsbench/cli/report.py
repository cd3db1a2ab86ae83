"""`tlsbench report`: tables and plots of a run (or of several runs side by side). Its arguments
beside its handler.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tlsbench.cli.common import Verb, db_option
from tlsbench.core.dialect import db_target
from tlsbench.core.errors import UserError


def add_arguments(verb: Verb) -> None:
    report = verb(
        "report",
        "Tables and plots of a run (or of several runs side by side)",
        "Markdown goes to the terminal unless --out is given; plots (PNG and SVG) go beside "
        "the --out file in plots/.",
    )
    report.add_argument(
        "runs",
        nargs="*",
        metavar="RUN",
        help="a run number or 'latest' (default); several runs (the same experiment on "
        "several machines, say) are reported side by side, each row as `variant @ machine`",
    )
    report.add_argument(
        "--format",
        default="md",
        help="md (default), csv (tidy: one figure per row, with run, variant, point, side, "
        "detail, metric, statistic, value and unit), csv-wide (every table in one file, a "
        "`table` column naming each row's), json, html (one self-contained page), or the "
        "figures for a dashboard: bmf (Bencher Metric Format), gab (github-action-benchmark, "
        "customSmallerIsBetter)",
    )
    report.add_argument("--out", metavar="FILE", help="write to FILE instead of the terminal")
    report.add_argument(
        "--summary",
        action="store_true",
        help="print the summary in plain text (one row per variant, the headline figure of "
        "each kind the run measured) instead of the whole report; with --out, the report "
        "is written there and the summary printed with where it is",
    )
    report.add_argument(
        "--partial",
        action="store_true",
        help="report a sharded run before all its shards are done (the missing ones are noted)",
    )
    db_option(report, reads_only=True)


def run(args: argparse.Namespace) -> int:
    from tlsbench.core.store import Store
    from tlsbench.report import FORMATS, NAMES, export, load_runs

    fmt = {"md": "markdown"}.get(args.format, args.format)
    if fmt not in NAMES:
        raise UserError(
            f"unknown --format {args.format}; choose md, csv, csv-wide, json, html, bmf or gab"
        )
    store = Store(db_target(args.db), readonly=True)
    runs = [store.run(r)["id"] for r in args.runs or ["latest"]]
    if not args.partial:
        for run_id in runs:
            store.check_whole(run_id, "report")
    model = load_runs(store, runs)
    out = Path(args.out) if args.out else None
    if args.summary and out is None:  # the answer alone, for a terminal
        from tlsbench.reportkit.summary import text as summary_text

        print(summary_text(model), end="")
        return 0
    text = export(model, fmt, out)
    if out is None:
        print(text)
        return 0
    if fmt not in FORMATS:  # figures for a dashboard: no plots
        print(f"wrote {out}", file=sys.stderr)
        return 0
    from tlsbench.reportkit.contents import write_plots  # matplotlib only when plots are written

    plots = write_plots(model, out.parent / "plots")
    print(f"wrote {out}" + (f" and {len(plots)} plot files in {out.parent / 'plots'}"
                            if plots else ""), file=sys.stderr)  # fmt: skip
    if args.summary:
        from tlsbench.reportkit.summary import text as summary_text

        print(summary_text(model) + f"\nfull report: {out}")
    return 0
