"""The runner end to end: a tiny real experiment, failures kept, kill -9 and resume."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tlsbench import paths
from tlsbench.store import Store

pytestmark = pytest.mark.slow

TINY = """
question = "Does a tiny experiment run end to end?"
repetitions = 2
timeout = 120

[defaults]
iterations = 5
warmup = 1

[per_scenario.records]
iterations = 200

[matrix]
variant = ["null", "mbedtls-3.6.6"]
scenario = ["handshake", "records"]

[[include]]
variant = "mbedtls-2.28.x"
scenario = "handshake"
tls = "1.3"
"""


def tlsbench(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(paths.REPO / "tlsbench"), *args], capture_output=True,
                          text=True, check=False, **kwargs)  # fmt: skip


def test_tiny_experiment_end_to_end(tmp_path: Path, build_of) -> None:
    for spec in ("null", "mbedtls-3.6.6", "mbedtls-2.28.x"):
        build_of(spec)
    experiment = tmp_path / "tiny.toml"
    experiment.write_text(TINY)
    db = tmp_path / "r.db"
    proc = tlsbench("run", str(experiment), "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    assert "5/5" not in proc.stderr and "10/10" in proc.stderr  # progress counts every result
    store = Store(db)
    run = store.run("latest")
    assert run["status"] == "complete" and run["question"].startswith("Does a tiny")
    points = store.points(run["id"])
    assert len(points) == 5
    statuses = {}
    for point in points:
        results = store.results(point.id)
        assert [r["repetition"] for r in results] == [0, 1]
        statuses[(point.variant, point.name)] = {r["status"] for r in results}
    # mbedTLS 2.28 cannot do TLS 1.3: stored as unsupported, with the reason, not as a sample.
    assert statuses[("mbedtls-2.28.x", "handshake_1.3")] == {"unsupported"}
    assert statuses[("mbedtls-3.6.6", "records")] == {"ok"}
    records = next(p for p in points if p.name == "records" and p.variant == "null")
    assert len(store.samples(records.id, "write_ns")) == 400
    assert store.check_consistent() == []


def test_kill_9_then_resume_gives_a_complete_consistent_store(tmp_path: Path, build_of) -> None:
    build_of("null")
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
    runner = subprocess.Popen([str(paths.REPO / "tlsbench"), "run", str(experiment), "--db",
                               str(db), "--quiet"], start_new_session=True)  # fmt: skip
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


def test_an_unwritable_results_location_is_refused_before_running(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    proc = tlsbench("run", "quick", "--db", str(blocked / "r.db"))
    assert proc.returncode == 1
    assert "cannot write results to" in proc.stderr
    assert "building" not in proc.stderr


def test_instruction_mode_counts_are_identical_run_to_run(tmp_path: Path, build_of) -> None:
    build_of("mbedtls-3.6.6")
    experiment = tmp_path / "instr.toml"
    experiment.write_text("""
question = "Are instruction counts identical run to run?"
repetitions = 2

[defaults]
scenario = "records"
iterations = 30
warmup = 3

[matrix]
variant = ["mbedtls-3.6.6"]
""")
    db = tmp_path / "r.db"
    proc = tlsbench("run", str(experiment), "--db", str(db), "--mode", "instructions")
    assert proc.returncode == 0, proc.stderr
    store = Store(db)
    [point] = store.points(store.run("latest")["id"])
    for series in ("client_instructions", "server_instructions"):
        counts = store.samples(point.id, series)
        assert len(counts) == 2 and counts[0] == counts[1] > 1000, (series, counts)
    report = tlsbench("report", "latest", "--db", str(db))
    assert report.returncode == 0, report.stderr
    assert "## Instructions (deterministic mode)" in report.stdout
    assert "| mbedtls-3.6.6 | records | client |" in report.stdout


def test_a_hung_driver_is_killed_recorded_and_the_run_goes_on(tmp_path: Path, build_of) -> None:
    build_of("null")
    experiment = tmp_path / "hang.toml"
    experiment.write_text("""
question = "Is a driver that does not finish in time recorded as a failure?"
repetitions = 1
timeout = 1

[defaults]
scenario = "records"
warmup = 0

[[include]]
variant = "null"
iterations = 1000000000

[[include]]
variant = "null"
payload = 64
iterations = 100
""")
    db = tmp_path / "r.db"
    proc = tlsbench("run", str(experiment), "--db", str(db))
    assert proc.returncode == 1  # a point failed
    assert "FAILED records @ null rep 1: signal 9" in proc.stderr
    store = Store(db)
    run = store.run("latest")
    assert run["status"] == "failed"
    by_name = {p.name: store.results(p.id)[0] for p in store.points(run["id"])}
    hung = by_name["records"]
    assert hung["status"] == "failed" and hung["signal"] == 9
    assert "timeout" in hung["stderr_tail"]
    assert by_name["records_64B"]["status"] == "ok"  # the run went on
