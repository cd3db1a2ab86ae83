"""`tlsbench explain`: where one scenario's instructions and atomic operations go, per side,
by function group and function, as instruction mode counts them. Its arguments beside its
handler.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tlsbench.cli.common import Verb, whole
from tlsbench.core.errors import UserError

DEFAULT_TOP = 12
# Measured operations unless --iterations says: the counts per operation are exact, and
# callgrind runs code about 50 times slower than the CPU (the driver's own default is 100).
DEFAULT_ITERATIONS = "10"
# Seconds a driver run may take natively; under valgrind, modes.VALGRIND_SLOWDOWN times that.
TIMEOUT = 120.0
# What a scenario's measured operation is, for the text.
OPERATION = {"handshake": "handshake", "resume": "resumption", "records": "record",
             "bulk": "bulk pass", "aead": "AEAD call"}  # fmt: skip


def add_arguments(verb: Verb) -> None:
    explain = verb(
        "explain",
        "Where one scenario's instructions and atomic operations go, per side, by function "
        "group and function (callgrind, as instruction mode counts them)",
        "Runs VARIANT's driver under callgrind once per side, counting that side's measured "
        "calls only, with the fixed random stream of instruction mode: the groups sum exactly "
        "to the instruction-mode figure of the same point (`tlsbench run --mode "
        "instructions`). Options after the scenario go to the driver (`tlsbench drive null "
        "info --help` lists them; --iterations defaults to 10 here), except --top N, --json "
        "and --own-random, which are explain's. Exit 3: the point cannot be counted, with the "
        "reason.",
    )
    explain.add_argument(
        "--top",
        type=whole(1, 1000),
        help=f"functions listed per side and ranking (default {DEFAULT_TOP}); may also follow "
        "the scenario",
    )
    explain.add_argument(
        "--json", action="store_true", help="print the view as JSON; may also follow the scenario"
    )
    explain.add_argument(
        "--own-random",
        action="store_true",
        help="count with the library's own randomness, not instruction mode's fixed stream: "
        "for a library the stream cannot reach (NSS), whose counts may then differ run to run "
        "and are not an instruction-mode figure; may also follow the scenario",
    )
    explain.add_argument("variant", help="a variant, e.g. openssl-3.5.x")
    explain.add_argument("scenario", help="handshake, resume, records, bulk or aead")
    explain.add_argument("driver_args", nargs=argparse.REMAINDER, help="options for the driver")


def _own_options(driver_args: list[str]) -> tuple[list[str], int, bool, bool]:
    """--top N, --json and --own-random, wherever they are among the driver's options."""
    args, top, as_json, own_random = [], DEFAULT_TOP, False, False
    i = 0
    while i < len(driver_args):
        arg = driver_args[i]
        if arg == "--json":
            as_json = True
        elif arg == "--own-random":
            own_random = True
        elif arg == "--top" or arg.startswith("--top="):
            value = arg.split("=", 1)[1] if "=" in arg else (
                driver_args[i + 1] if i + 1 < len(driver_args) else "")  # fmt: skip
            i += 0 if "=" in arg else 1
            if not value.isdigit() or not 1 <= int(value) <= 1000:
                raise UserError(f"--top {value!r}: give a whole number of functions, 1 to 1000")
            top = int(value)
        else:
            args.append(arg)
        i += 1
    return args, top, as_json, own_random


def run(args: argparse.Namespace) -> int:
    from tlsbench.builds import needs
    from tlsbench.builds.build import Builder
    from tlsbench.builds.variants import Catalog
    from tlsbench.core.points import RunPoint
    from tlsbench.driver.declaration import declared
    from tlsbench.scenarios import by_function, modes

    known = declared().scenarios
    if args.scenario not in known:
        raise UserError(f"unknown scenario {args.scenario!r}: the driver's are {', '.join(known)}")
    driver_args, top, as_json, own_random = _own_options(list(args.driver_args))
    if not any(a == "--iterations" or a.startswith("--iterations=") for a in driver_args):
        driver_args += ["--iterations", DEFAULT_ITERATIONS]
    top = args.top or top
    as_json = as_json or args.json
    own_random = own_random or args.own_random
    if not modes.collected_sides(args.scenario):
        counted = [s for s in known if modes.collected_sides(s)]
        raise UserError(f"instruction mode does not count the {args.scenario} scenario; "
                        f"explain one of {', '.join(counted)}", 3)  # fmt: skip
    catalog = Catalog()
    variant = catalog.resolve(args.variant)
    job = needs.job_of_driver_args(driver_args)
    if job is not None:
        needs.refuse_unfit(variant, job)
    build = Builder(quiet=as_json).build(variant)
    point = RunPoint("explain", variant.name, variant.library, args.scenario, {})
    options = _option_values(driver_args)
    refused = modes.instruction_refusal(
        RunPoint("explain", variant.name, variant.library, args.scenario, options), build
    )
    if refused:
        raise UserError(f"{variant.name}: {refused}", 3)
    outcome, by_side = modes.count_costs(point, build, TIMEOUT, driver_args,
                                         deterministic=not own_random)  # fmt: skip
    if outcome.status != "ok" or outcome.output is None:
        error = (outcome.output or {}).get("error") or {}
        tail = outcome.stderr_tail.strip().splitlines()[-1:]
        text = str(error.get("message") or (tail[0] if tail else f"exit {outcome.exit_code}"))
        if error.get("stage") == "deterministic randomness":
            text += ("; --own-random counts with the library's own randomness instead (not an "
                     "instruction-mode figure: the counts may differ run to run)")  # fmt: skip
        raise UserError(f"{variant.name} {args.scenario}: {text}",
                        3 if outcome.status == "unsupported" else 1)  # fmt: skip
    output = outcome.output
    if own_random:
        output["randomness"] = {"seeded": False, "how": "the library's own (--own-random)"}
    if as_json:
        json.dump({"variant": variant.name, "scenario": args.scenario,
                   "params": output.get("params"), "negotiated": output.get("negotiated"),
                   "randomness": output.get("randomness"),
                   **{side: by_function.side_json(c, top) for side, c in by_side.items()}},
                  sys.stdout, indent=2)  # fmt: skip
        print()
        return 0
    print(_heading(variant.name, args.scenario, output))
    if own_random:
        print("(--own-random: the library's own randomness, not instruction mode's fixed "
              "stream; the counts may differ run to run)")  # fmt: skip
    for costs in by_side.values():
        print()
        print(
            "\n".join(by_function.side_text(costs, top, OPERATION.get(args.scenario, "operation")))
        )
    return 0


def _option_values(driver_args: list[str]) -> dict[str, str]:
    """The `--name value` pairs among the driver's options, as a point's options (what the
    refusals look at: aead and payload)."""
    found = {}
    for i, arg in enumerate(driver_args):
        if arg.startswith("--") and i + 1 < len(driver_args) \
                and not driver_args[i + 1].startswith("--"):  # fmt: skip
            found[arg[2:].replace("-", "_")] = driver_args[i + 1]
    return found


def _heading(variant: str, scenario: str, output: dict[str, Any]) -> str:
    negotiated = output.get("negotiated") or {}
    params = output.get("params") or {}
    what = ", ".join(str(negotiated[k]) for k in ("version", "suite", "group", "sigalg")
                     if negotiated.get(k))  # fmt: skip
    auth = params.get("auth")
    return (f"{variant} {scenario}" + (f" ({what}{f', auth {auth}' if auth else ''})" if what
                                        else "")
            + f": callgrind, {params.get('iterations')} measured after "
            f"{params.get('warmup', 0)} warm-up"
            + (", the fixed random stream of instruction mode" if params.get("deterministic")
               else ", the library's own randomness")
            + "; per operation, a function's own instructions (not its callees')")  # fmt: skip
