"""`tlsbench bisect`: the first commit between GOOD and BAD of a git tree whose figure moved past
a threshold against GOOD's. Its arguments beside its handler.
"""

from __future__ import annotations

import argparse
import json
import sys

from tlsbench.cli.common import Verb, seconds, whole


def add_arguments(verb: Verb) -> None:
    bisect = verb(
        "bisect",
        "Find the first commit between GOOD and BAD of your git tree whose figure moved past "
        "a threshold against GOOD's",
        "GOOD and BAD are LIBRARY@TREE#REV (the same tree and build options). Each commit "
        "tested is built (cached by content) and measured once in instruction mode (the "
        "counts are exact); a commit that does not build or run is skipped. Prints every "
        "step, then the culprit with its subject and its function diff against its parent. "
        "Steps are stored: an interrupted bisect resumes. Exit 0: found; 1: no commit moved "
        "past the threshold (or skipped commits hide which); 2: bad input.",
    )
    bisect.add_argument(
        "good", metavar="GOOD", help="LIBRARY@TREE#REV: a commit whose figure is right"
    )
    bisect.add_argument(
        "bad", metavar="BAD", help="LIBRARY@TREE#REV: a later commit, GOOD's descendant"
    )
    bisect.add_argument(
        "--figure",
        metavar="F",
        help="the figure: an instruction-mode point of `tlsbench ab`'s default job, both sides "
        "(POINT) or one (POINT:client, POINT:server), its instructions or, with :atomics after "
        "it, its atomic operations; default: its first handshake's instructions, both sides "
        "(an unknown name lists them)",
    )
    bisect.add_argument(
        "--threshold",
        metavar="T",
        help="how far the figure may move from GOOD's: a fraction (0.01, or 1%%; either way; "
        "default 0.01, ab's instruction threshold), or a whole count it must not exceed "
        "(20000000)",
    )
    bisect.add_argument(
        "--timeout",
        type=seconds,
        help="seconds per driver process before valgrind's slowdown (default: the ab experiment's)",
    )
    bisect.add_argument(
        "--top", type=whole(1, 100), default=10, help="functions in the culprit's diff (default 10)"
    )
    bisect.add_argument(
        "--json", action="store_true", help="print the steps and the result as JSON at the end"
    )
    bisect.add_argument("--quiet", action="store_true", help="no build progress lines")


def run(args: argparse.Namespace) -> int:
    from tlsbench.builds.build import Builder
    from tlsbench.builds.variants import Catalog
    from tlsbench.run import bisect, experiments

    catalog = Catalog()
    request = bisect.check_request(args.good, args.bad, args.figure, args.threshold, catalog)
    count = len(request.commits.commits) + 1

    def say(line: str) -> None:
        print(line, file=sys.stderr if args.json else sys.stdout, flush=True)

    if request.commits.dirty:
        say(f"note: {request.commits.repo} has uncommitted changes; bisect builds the "
            "commits as committed, not the work tree")  # fmt: skip
    ends = f"GOOD {request.commits.good.sha[:12]} to BAD {request.commits.commits[-1].sha[:12]}"
    say(f"bisect {request.figure.name} ({', '.join(request.figure.sides)} "
        f"{request.figure.measure} per operation) of {request.source.library}@{request.source.path}"
        + (f":{request.options}" if request.options else "")
        + f", {count} commits from {ends}; threshold {request.threshold.describe()}")  # fmt: skip
    timeout = (
        args.timeout
        if args.timeout is not None
        else experiments.load(bisect.FIGURES_EXPERIMENT, catalog).timeout
    )
    session = bisect.Session(request, catalog, Builder(quiet=args.quiet), timeout, say)
    say(f"steps stored in {session.state.path}")
    result = session.run(bisect.function_diff, top=args.top)
    for line in bisect.summary(result):
        say(line)
    if args.json:
        print(json.dumps(bisect.to_json(result), indent=2))
    return result.exit_status
