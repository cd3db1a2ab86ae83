"""Shards: one experiment split over runners into one PostgreSQL store, concurrently; a shard
killed with SIGKILL resumes and loses nothing; reports wait for every shard."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from fake.builds import run_fake as tlsbench
from fake.builds import start_fake
from tlsbench.core.errors import UserError
from tlsbench.core.store import Store
from tlsbench.report import load_run

# The fake driver (tests/fake/): every build of these tests is a fake one.
pytestmark = pytest.mark.usefixtures("fake_driver")

# Cheap points (the fake driver, tests/fake/): seconds for the whole run.
EXPERIMENT = """
question = "Do two shards fill one run as one runner does?"
repetitions = 2
timeout = 120

[defaults]
scenario = "records"
iterations = {iterations}
warmup = 1

[matrix]
variant = ["null"]
payload = [16, 32, 64, 128, 256, 512, 1024]
"""


def start(*args: str) -> subprocess.Popen[str]:
    return start_fake(*args, stderr=subprocess.PIPE, start_new_session=True)


def point_set(store: Store, run_id: int) -> dict[tuple[str, str], list[tuple[int, str]]]:
    """Every point of a run with its stored (repetition, status) pairs."""
    return {
        (p.variant, p.name): [(r["repetition"], r["status"]) for r in store.results(p.id)]
        for p in store.points(run_id)
    }


def test_two_shards_at_once_fill_one_run_as_one_runner_does(tmp_path: Path, pg_url: str) -> None:
    experiment = tmp_path / "split.toml"
    experiment.write_text(EXPERIMENT.format(iterations=300))
    whole = tlsbench("run", str(experiment), "--db", pg_url, "--quiet", "--seed", "5")
    assert whole.returncode == 0, whole.stderr
    # --shard needs the key that names the run, and a dry run lists a shard's points.
    assert "--shard needs --run-key" in tlsbench("run", str(experiment), "--shard", "1/2",
                                                 "--db", pg_url).stderr  # fmt: skip
    listed = tlsbench("run", str(experiment), "--shard", "2/2", "--dry-run")
    assert listed.returncode == 0 and "3 points (shard 2/2 of 7)" in listed.stderr
    # One shard alone: the run is not whole, and report and compare say which shard is missing.
    first = tlsbench("run", str(experiment), "--shard", "1/2", "--run-key", "ci-1", "--db",
                     pg_url, "--quiet")  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert "still missing shard 2/2 (not started)" in first.stderr
    for verb in (["report", "2"], ["compare", "1", "2"]):
        refused = tlsbench(*verb, "--db", pg_url)
        assert refused.returncode == 1, refused.stderr
        assert "shard 2/2 (not started)" in refused.stderr and "Traceback" not in refused.stderr
    assert tlsbench("report", "2", "--partial", "--db", pg_url).returncode == 0
    assert "1/2 shards done; missing shard 2/2" in tlsbench("runs", "--db", pg_url).stdout
    # Two shards of a new run at once, into the same store.
    runners = [start("run", str(experiment), "--shard", f"{k}/2", "--run-key", "ci-2", "--db",
                     pg_url, "--quiet") for k in (1, 2)]  # fmt: skip
    errors = [r.communicate(timeout=600)[1] for r in runners]
    assert [r.returncode for r in runners] == [0, 0], errors
    store = Store(pg_url, readonly=True)
    whole_run, sharded = store.run(1), store.run(3)
    assert sharded["shard_count"] == 2 and store.status_of(sharded) == "complete"
    assert point_set(store, whole_run["id"]) == point_set(store, sharded["id"])
    assert all(reps == [(0, "ok"), (1, "ok")] for reps in point_set(store, 3).values())
    assert [s["machine_id"] for s in store.shards(3)] == [1, 1]  # one machine here
    assert store.check_consistent() == []
    # The report of the sharded run has the unsharded run's points and figures' rows.
    rows = [{(r.variant, r.point, r.op) for r in load_run(store, run).latency} for run in (1, 3)]
    assert rows[0] == rows[1] and len(rows[0]) == 14
    compared = tlsbench("compare", "1", "3", "--db", pg_url)
    assert compared.returncode == 0, compared.stderr
    # Joining with other settings is refused before anything runs.
    other = tlsbench("run", str(experiment), "--shard", "1/3", "--run-key", "ci-2", "--db",
                     pg_url)  # fmt: skip
    assert other.returncode == 2 and "shard count (2 there, 3 here)" in other.stderr


def test_a_shard_killed_with_sigkill_resumes_and_loses_nothing(tmp_path: Path, pg_url: str) -> None:
    experiment = tmp_path / "long.toml"
    experiment.write_text(EXPERIMENT.format(iterations=60000))
    command = ["run", str(experiment), "--run-key", "ci-kill", "--db", pg_url, "--quiet"]
    victim = start(*command, "--shard", "1/2")
    other = start(*command, "--shard", "2/2")
    deadline = time.monotonic() + 300
    stored = 0
    while time.monotonic() < deadline and stored < 2:
        time.sleep(0.1)
        try:
            store = Store(pg_url, readonly=True)
        except UserError:  # not made yet
            continue
        stored = sum(
            len(store.results(p.id)) for p in store.points(1, 1)
        ) if store.runs() else 0  # fmt: skip
        store.close()
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    assert stored >= 2
    # The other shard goes on, unaffected, and finishes.
    _, err = other.communicate(timeout=600)
    assert other.returncode == 0, err
    store = Store(pg_url, readonly=True)
    assert store.check_consistent() == []
    kept = {key: reps for key, reps in point_set(store, 1).items() if reps}
    assert [m.describe(2) for m in store.missing_shards(1)] == ["shard 1/2 (interrupted)"]
    store.close()
    # The same command again resumes the killed shard: what it had stored stays as it was.
    again = tlsbench(*command, "--shard", "1/2")
    assert again.returncode == 0, again.stderr
    store = Store(pg_url, readonly=True)
    assert store.status_of(store.run(1)) == "complete"
    after = point_set(store, 1)
    assert all(reps == [(0, "ok"), (1, "ok")] for reps in after.values()), after
    for key, reps in kept.items():
        assert after[key][: len(reps)] == reps
    for point in store.points(1):
        assert len(store.samples(point.id, "write_ns")) == 2 * 60000
    assert store.check_consistent() == []
