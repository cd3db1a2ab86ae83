"""How long the README's two commands take from a fresh clone (figures for the README and
docs/testing.md).

    python3 bench/suite_time.py run OUT [--cache DIR]   # clone, make run, make test, timed
    python3 bench/suite_time.py table OUT               # the Markdown table of a finished OUT

`run` clones this checkout's HEAD into OUT/repo (with `../shared` beside it where this
checkout has one, as CI lays it out), then runs `make run` and `make test` there one after the
other with TLSBENCH_CACHE set to --cache (default OUT/cache: empty, so every source is fetched
and every library built, as on a fresh machine; give a copy of a cache to time the warm case).
Each command's output goes to OUT/make-run.log and OUT/make-test.log, and OUT/times.json is
rewritten after each step, so a run stopped half-way keeps what it measured. The machine's
load average is read before and after each step: other work beside the suite makes a time an
upper bound. `table` reads those files back and prints each step's wall time, exit status and
load, each pytest half's counts and time, and its slowest tests (the `--durations` lines).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
STEPS = (("make run", "make-run.log"), ("make test", "make-test.log"))
# pytest's closing line, e.g. "==== 1259 passed, 49 skipped in 2706.72s (0:45:06) ===="
SUMMARY = re.compile(r"^=+ (?P<counts>[^=]*?) in (?P<seconds>[\d.]+)s\b.*=+$")
DURATION = re.compile(r"^(?P<seconds>[\d.]+)s (?:call|setup|teardown)\s+(?P<test>\S+)")


def load() -> float:
    return os.getloadavg()[0]


def run(out: Path, cache: Path | None) -> int:
    if out.exists() and any(out.iterdir()):
        print(f"suite_time: {out} is not empty; give a new folder", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    repo = out / "repo"
    subprocess.run(["git", "clone", "-q", str(HERE), str(repo)], check=True)
    shared = HERE.parent / "shared"
    if shared.is_dir():
        (out / "shared").symlink_to(shared)
    cache = cache or out / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TLSBENCH_CACHE": str(cache.resolve())}
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True,
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    times: dict = {"commit": commit, "cores": os.cpu_count(),
                   "cache_was_empty": not any(cache.iterdir()), "steps": []}  # fmt: skip
    status = 0
    for command, log in STEPS:
        print(f"suite_time: {command} (log: {out / log})", file=sys.stderr)
        step = {"command": command, "log": log, "load_before": load()}
        started = time.monotonic()
        with open(out / log, "w") as sink:
            rc = subprocess.run(command.split(), cwd=repo, env=env, stdout=sink,
                                stderr=subprocess.STDOUT).returncode  # fmt: skip
        step.update(seconds=round(time.monotonic() - started, 1), rc=rc, load_after=load())
        times["steps"].append(step)
        (out / "times.json").write_text(json.dumps(times, indent=1) + "\n")
        print(f"suite_time: {command}: {step['seconds']:.0f} s, exit {rc}", file=sys.stderr)
        status = status or rc
    print(table(out))
    return status


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {round(seconds % 60):d} s"


def halves(log: str) -> list[tuple[str, float, list[tuple[float, str]]]]:
    """Each pytest session of a log: its counts, its time and its slowest tests."""
    found, slowest = [], []
    for line in log.splitlines():
        if m := DURATION.match(line):
            slowest.append((float(m["seconds"]), m["test"]))
        elif m := SUMMARY.match(line):
            found.append((m["counts"], float(m["seconds"]), slowest[:5]))
            slowest = []
    return found


def table(out: Path) -> str:
    times_file = out / "times.json"
    if not times_file.is_file():
        print(f"suite_time: no {times_file}: run `suite_time.py run {out}` first", file=sys.stderr)
        raise SystemExit(2)
    times = json.loads(times_file.read_text())
    cold = "an empty cache" if times["cache_was_empty"] else "a cache given with --cache"
    lines = [f"From a fresh clone of {times['commit'][:12]} on {times['cores']} cores, {cold}:",
             "", "| step | wall time | exit | load before / after |",
             "| --- | ---: | ---: | --- |"]  # fmt: skip
    sessions = []
    for step in times["steps"]:
        loads = " / ".join(f"{step[k]:.1f}" if k in step else "-"
                           for k in ("load_before", "load_after"))  # fmt: skip
        lines.append(f"| `{step['command']}` | {minutes(step['seconds'])} | {step['rc']} "
                     f"| {loads} |")  # fmt: skip
        log = out / step["log"]
        if log.is_file():
            sessions += halves(log.read_text(errors="replace"))
    if sessions:
        lines += ["", "| pytest session | tests | time | slowest |", "| --- | --- | ---: | --- |"]
        for number, (counts, seconds, slowest) in enumerate(sessions, 1):
            worst = "; ".join(f"{test.split('::')[-1]} {s:.0f} s" for s, test in slowest[:3])
            lines.append(f"| {number} | {counts} | {minutes(seconds)} | {worst} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    run_verb = verbs.add_parser("run", help="clone, make run, make test, timed")
    run_verb.add_argument("out", type=Path, help="a new folder for the clone, logs and times")
    run_verb.add_argument("--cache", type=Path, help="TLSBENCH_CACHE (default: OUT/cache, empty)")
    table_verb = verbs.add_parser("table", help="the Markdown table of a finished run")
    table_verb.add_argument("out", type=Path)
    args = parser.parse_args()
    if args.verb == "run":
        if shutil.which("git") is None:
            print("suite_time: git is needed to clone the checkout", file=sys.stderr)
            return 2
        return run(args.out, args.cache)
    print(table(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
