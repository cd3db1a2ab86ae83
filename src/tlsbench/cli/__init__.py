"""The `tlsbench` command line: one module per verb (its arguments beside its handler, in
this package), user errors without tracebacks. A verb's module imports what its handler runs
inside the handler, so that `tlsbench --help` and every verb start without loading the rest."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from types import ModuleType
from typing import Any

from tlsbench.cli import (
    ab,
    bisect,
    build,
    cache,
    calibrate,
    certs,
    code_size,
    compare,
    cortex_m,
    doctor,
    drive,
    explain,
    fit,
    host_info,
    listing,
    migrate,
    model_check,
    report,
    run,
    runs,
    sources,
)
from tlsbench.core.errors import UserError
from tlsbench.driver import cpuprofile

# The verbs, by name, in the order `tlsbench --help` lists them: each module gives
# add_arguments(verb) and run(args).
VERBS: dict[str, ModuleType] = {
    "build": build,
    "code-size": code_size,
    "cortex-m": cortex_m,
    "fit": fit,
    "calibrate": calibrate,
    "model-check": model_check,
    "drive": drive,
    "host-info": host_info,
    "certs": certs,
    "run": run,
    "compare": compare,
    "ab": ab,
    "bisect": bisect,
    "explain": explain,
    "report": report,
    "runs": runs,
    "cache": cache,
    "migrate": migrate,
    "list": listing,
    "doctor": doctor,
    "sources": sources,
}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="tlsbench",
        description="A benchmark lab for TLS libraries: builds pinned variants, runs "
        "experiments into a results store, reports and compares them. "
        "`tlsbench VERB --help` describes each verb.",
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="VERB")

    def verb(name: str, summary: str, details: str = "") -> argparse.ArgumentParser:
        return sub.add_parser(name, help=summary, description=f"{summary}. {details}".strip())

    for module in VERBS.values():
        module.add_arguments(verb)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        cpuprofile.active()  # a misspelt $TLSBENCH_CPU_PROFILE is refused before any work
        return int(VERBS[args.command].run(args))
    except UserError as exc:
        print(f"tlsbench: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("tlsbench: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("tlsbench: terminated", file=sys.stderr)
        return 143
    except BrokenPipeError:
        # The reader went away (`tlsbench report | head`): what it read was whole lines, and
        # the rest is not wanted. stdout is pointed at /dev/null so that the interpreter's
        # flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


class Terminated(Exception):
    """SIGTERM, raised in the main thread so that a run stops as on Ctrl-C: its driver is
    killed and the run is marked interrupted."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated()
