"""kill -9 at random moments of `tlsbench run` and of `tlsbench run --resume`.

Each trial starts a small real experiment (the null baseline's records, 5 points x 4
repetitions), kills the runner's whole process group with SIGKILL after a random delay,
checks the store, resumes and kills the resume at a random moment too, then resumes to
the end. After every kill and at the end: PRAGMA integrity_check is ok, no result is
duplicated, no sample row is orphaned, the run reads as interrupted (not running) once its
runner is dead, and every result stored before a kill is still there unchanged (a resume
re-runs only what is missing); at the end every (point, repetition) has exactly one ok
result with all its samples and the run is complete. Prints a summary. Usage:

    .venv/bin/python bench/kill9_resume.py [TRIALS] [SEED]     # default 20 trials
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tlsbench.core import paths
from tlsbench.core.store import Store

POINTS, REPETITIONS, ITERATIONS = 5, 4, 3000
EXPERIMENT = f"""
question = "Does a run killed at any moment resume to a complete, consistent store?"
repetitions = {REPETITIONS}
timeout = 60

[defaults]
scenario = "records"
iterations = {ITERATIONS}
warmup = 10

[matrix]
variant = ["null"]
payload = [32, 64, 128, 256, 512]
"""


def start(args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(paths.REPO / "tlsbench"), *args, "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # the kill takes the runner and its driver together
    )


def kill_after(proc: subprocess.Popen[bytes], delay: float) -> bool:
    """SIGKILL the process group after `delay` s; False when it had already finished."""
    try:
        proc.wait(timeout=delay)
        return False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return True


def stored_results(db: Path) -> set[tuple]:
    """The final results stored so far (ok or unsupported): a resume must keep every one."""
    if not db.exists():
        return set()
    with sqlite3.connect(db) as conn:
        return set(
            conn.execute(
                "SELECT id, point_id, repetition, status, started_at, output FROM results "
                "WHERE status IN ('ok', 'unsupported')"
            )
        )


def check(db: Path, complete: bool, kept: set[tuple]) -> list[str]:
    """Problems of the store after a kill (or at the end, `complete`); `kept` are results
    stored before an earlier kill, which must all still be there unchanged."""
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        if not conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]:
            return []  # killed before the store had its tables: nothing was stored
    store = Store(db, readonly=True)  # as `tlsbench runs` sees it
    problems = store.check_consistent()
    lost = kept - stored_results(db)
    if lost:
        problems.append(f"{len(lost)} results stored before a kill were lost or changed")
    for run in store.runs():
        if not complete and store.status_of(run) not in ("interrupted", "complete", "failed"):
            problems.append(f"run {run['id']} reads {store.status_of(run)} after the kill")
    dupes = store.execute(
        "SELECT COUNT(*) FROM (SELECT point_id, repetition FROM results "
        "GROUP BY point_id, repetition HAVING COUNT(*) > 1) AS d"
    )[0][0]
    if dupes:
        problems.append(f"{dupes} duplicated results")
    if complete:
        for run in store.runs():
            for point in store.points(run["id"]):
                results = store.results(point.id)
                if [r["repetition"] for r in results] != list(range(REPETITIONS)):
                    problems.append(
                        f"{point.name}: repetitions {[r['repetition'] for r in results]}"
                    )
                if any(r["status"] != "ok" for r in results):
                    problems.append(f"{point.name}: not all ok")
                if len(store.samples(point.id, "write_ns")) != REPETITIONS * ITERATIONS:
                    problems.append(f"{point.name}: samples missing")
            if run["status"] != "complete":
                problems.append(f"run {run['id']} is {run['status']}")
    store.close()
    return problems


def _has_run(db: Path) -> bool:
    if not db.exists():
        return False
    with sqlite3.connect(db) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        return "runs" in tables and bool(conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


def main() -> int:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 9)
    killed = {"run": 0, "resume": 0}
    stored_at_kill: list[int] = []
    failures = []
    kept_total = 0  # results stored before a kill, each checked to be there at the end
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tlsbench-kill9-") as tmp:
        experiment = Path(tmp) / "kill9.toml"
        experiment.write_text(EXPERIMENT)
        for trial in range(trials):
            db = Path(tmp) / f"t{trial}.db"
            if kill_after(start(["run", str(experiment), "--db", str(db)]), rng.uniform(0.3, 4)):
                killed["run"] += 1
            if db.exists():
                with sqlite3.connect(db) as conn:
                    stored_at_kill.append(
                        conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]
                    )
            kept = stored_results(db)
            problems = check(db, complete=False, kept=kept)
            if not kept and not _has_run(db):
                # Killed before the run was registered: nothing to resume, start again.
                subprocess.run([str(paths.REPO / "tlsbench"), "run", str(experiment), "--db",
                                str(db), "--quiet"], check=False, capture_output=True)  # fmt: skip
            elif kill_after(start(["run", "--resume", "latest", "--db", str(db)]),
                            rng.uniform(0.2, 2)):  # fmt: skip
                killed["resume"] += 1
                problems += check(db, complete=False, kept=kept)
                kept |= stored_results(db)
            final = subprocess.run(
                [str(paths.REPO / "tlsbench"), "run", "--resume", "latest", "--db", str(db),
                 "--quiet"], capture_output=True, text=True, check=False,
            )  # fmt: skip
            if final.returncode != 0:
                problems.append(f"final resume exit {final.returncode}: {final.stderr[-300:]}")
            problems += check(db, complete=True, kept=kept)
            kept_total += len(kept)
            if problems:
                failures.append((trial, problems))
            print(f"trial {trial + 1}/{trials}: {problems or 'ok'}", flush=True)
    print(
        f"\n{trials} trials in {time.monotonic() - started:.0f} s: runs killed {killed['run']}, "
        f"resumes killed {killed['resume']}, results stored at a run kill: "
        f"min {min(stored_at_kill, default=0)} max {max(stored_at_kill, default=0)} of "
        f"{POINTS * REPETITIONS}; {kept_total} results stored before a kill all kept; "
        f"trials with a problem: {len(failures)}"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
