"""The SQLite store: migrations from older schemas, atomic results."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tlsbench.errors import UserError
from tlsbench.store import SCHEMA_VERSION, Store

FIXTURES = Path(__file__).parent / "fixtures"


def test_a_version_1_store_is_migrated_in_place_keeping_its_data(tmp_path: Path) -> None:
    db_path = tmp_path / "old.db"
    with sqlite3.connect(db_path) as db:
        db.executescript((FIXTURES / "store-v1.sql").read_text())
    store = Store(db_path)
    assert store.version() == SCHEMA_VERSION == 2
    run = store.run(1)
    assert run["experiment"] == "tiny" and run["question"] == "" and run["commit_id"] == "unknown"
    [point] = store.points(1)
    assert point.params == {"scenario": "handshake", "tls": "1.3"}
    assert store.samples(point.id, "client_cpu_ns") == [1000.0, 1100.0, 900.0]
    assert store.check_consistent() == []
    store.close()
    assert Store(db_path).version() == 2  # a second open finds nothing to do


def test_a_newer_store_is_refused(tmp_path: Path) -> None:
    db_path = tmp_path / "new.db"
    with sqlite3.connect(db_path) as db:
        db.execute("PRAGMA user_version = 99")
    with pytest.raises(UserError, match="schema version 99, newer"):
        Store(db_path)


def test_results_and_samples_are_written_together(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run_id = store.new_run("e", "q?", "time", 2, {}, "text", "abc")
    store.add_points(run_id, [{"name": "p", "variant": "null", "library": "null",
                               "scenario": "records", "params": {}, "build": {}}])  # fmt: skip
    [point] = store.points(run_id)
    output = {"summary": {"write_ns": {"unit": "ns"}}, "samples": {"write_ns": [1.0, 2.0]}}
    store.add_result(point.id, 0, "ok", 0, None, 0.1, "t", output, "")
    with pytest.raises(sqlite3.IntegrityError):  # a repetition is stored once
        store.add_result(point.id, 0, "ok", 0, None, 0.1, "t", {"samples": {"x": [1]}}, "")
    assert store.samples(point.id, "write_ns") == [1.0, 2.0]
    assert store.done_repetitions(point.id) == {0}
    assert store.check_consistent() == []


def test_unknown_run_is_a_clear_error(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    with pytest.raises(UserError, match="holds no run yet"):
        store.run("latest")
    with pytest.raises(UserError, match="no run 7"):
        store.run(7)
