"""The runner end to end on real libraries: a tiny experiment whose points a library cannot all
honour, time and heap from separate drivers, and instruction counts identical run to run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drivers import tlsbench
from tlsbench.core.store import Store

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
    # Time and heap come from separate processes: the timing driver (no accounting in the
    # allocation path) and the heap driver, whose heap figures and allocation counts only
    # are kept, and each result says which program produced what.
    handshake = next(p for p in points if p.name == "handshake" and p.variant == "mbedtls-3.6.6")
    for result in store.results(handshake.id):
        output = json.loads(result["output"])
        assert output["measure"]["time"] == "tlsbench-driver"
        assert output["measure"]["heap"] == "tlsbench-driver-heap"
        assert output["heap"]["client"]["peak"] > 0
    assert len(store.samples(records.id, "write_allocs")) == 400
    assert store.check_consistent() == []


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
