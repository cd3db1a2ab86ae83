"""The runner's process-heavy orchestration, with the fake driver (tests/fake/): a run killed with
SIGKILL resumes and loses nothing, and several runners write one store at once. Long by
their dozens of processes, not by any build."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from fake.builds import run_fake as tlsbench
from fake.builds import start_fake
from tlsbench.core.store import Store

# The fake driver (tests/fake/): every build of these tests is a fake one.
pytestmark = pytest.mark.usefixtures("fake_driver")


def test_kill_9_then_resume_gives_a_complete_consistent_store(tmp_path: Path) -> None:
    experiment = tmp_path / "long.toml"
    experiment.write_text("""
question = "Does a killed run resume?"
repetitions = 4

[defaults]
scenario = "records"
iterations = 20000
warmup = 10

[matrix]
variant = ["null"]
payload = [64, 128, 256, 512, 1024]
""")
    db = tmp_path / "r.db"
    runner = start_fake("run", str(experiment), "--db", str(db), "--quiet",
                        start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 120
    stored = 0
    while time.monotonic() < deadline and stored < 3:
        time.sleep(0.05)
        try:
            with sqlite3.connect(db, timeout=1) as conn:
                stored = conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        except sqlite3.Error:
            continue
    os.killpg(runner.pid, signal.SIGKILL)
    runner.wait()
    assert stored >= 3
    store = Store(db)
    assert store.check_consistent() == []
    run = store.run("latest")
    assert run["status"] == "running"
    done = sum(len(store.results(p.id)) for p in store.points(run["id"]))
    assert 3 <= done < 20
    proc = tlsbench("run", "--resume", str(run["id"]), "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    store = Store(db)
    assert store.run(run["id"])["status"] == "complete"
    for point in store.points(run["id"]):
        assert [r["repetition"] for r in store.results(point.id)] == [0, 1, 2, 3]
        assert len(store.samples(point.id, "write_ns")) == 4 * 20000
    assert store.check_consistent() == []


def test_three_runs_writing_one_store_at_once_all_complete(tmp_path: Path) -> None:
    experiment = tmp_path / "small.toml"
    experiment.write_text(
        'question = "Do concurrent runs share one store?"\nrepetitions = 2\ntimeout = 60\n'
        '[defaults]\nscenario = "records"\niterations = 500\nwarmup = 5\n'
        '[matrix]\nvariant = ["null"]\npayload = [32, 64, 128]\n'
    )
    db = tmp_path / "results" / "shared.db"  # created by whichever runner comes first
    runners = [
        start_fake(
            "run",
            str(experiment),
            "--db",
            str(db),
            "--quiet",
            stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]
    errors = [runner.communicate(timeout=300)[1] for runner in runners]
    assert [runner.returncode for runner in runners] == [0, 0, 0], errors
    store = Store(db, readonly=True)
    assert store.check_consistent() == []
    runs = store.runs()
    assert [store.status_of(run) for run in runs] == ["complete"] * 3
    for run in runs:
        for point in store.points(run["id"]):
            assert [r["repetition"] for r in store.results(point.id)] == [0, 1]
