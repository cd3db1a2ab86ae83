"""The SQLite store: migrations from older schemas, atomic results."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tlsbench import paths
from tlsbench.errors import UserError
from tlsbench.store import MIGRATIONS, SCHEMA_VERSION, Store

FIXTURES = Path(__file__).parent / "fixtures"


def test_a_version_1_store_is_migrated_in_place_keeping_its_data(tmp_path: Path) -> None:
    db_path = tmp_path / "old.db"
    with sqlite3.connect(db_path) as db:
        db.executescript((FIXTURES / "store-v1.sql").read_text())
    store = Store(db_path)
    assert store.version() == SCHEMA_VERSION == 3
    run = store.run(1)
    assert run["experiment"] == "tiny" and run["question"] == "" and run["commit_id"] == "unknown"
    assert run["timeout"] is None and run["owner_pid"] is None
    [point] = store.points(1)
    assert point.params == {"scenario": "handshake", "tls": "1.3"}
    assert store.samples(point.id, "client_cpu_ns") == [1000.0, 1100.0, 900.0]
    assert store.check_consistent() == []
    store.close()
    assert Store(db_path).version() == 3  # a second open finds nothing to do


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


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(paths.REPO / "tlsbench"), *args], capture_output=True, text=True, check=False
    )


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("verb", [["runs"], ["report"], ["compare", "1", "2"]])
def test_read_only_verbs_never_create_a_store_or_its_folder(
    tmp_path: Path, verb: list[str]
) -> None:
    db = tmp_path / "absent" / "tlsbench.db"
    proc = _cli(*verb, "--db", str(db))
    assert proc.returncode == 2, proc.stderr
    assert "no results store at" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "absent").exists()


def test_read_only_verbs_neither_migrate_nor_switch_the_journal_mode(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    raw = sqlite3.connect(db)
    MIGRATIONS[1](raw)
    raw.execute("PRAGMA user_version = 1")
    raw.commit()
    raw.close()
    before = db.read_bytes()
    proc = _cli("runs", "--db", str(db))
    assert proc.returncode == 2
    assert "older than this tlsbench" in proc.stderr and "tlsbench migrate" in proc.stderr
    assert db.read_bytes() == before
    assert _listing(tmp_path) == ["old.db"]  # no -wal / -shm beside it
    assert _cli("migrate", "--db", str(db)).returncode == 0
    assert _cli("runs", "--db", str(db)).returncode == 0


@contextlib.contextmanager
def _read_only_view(folder: Path) -> Iterator[Path]:
    """`folder` as a read-only folder: by permissions for a normal user; for root, whom
    permissions do not stop, as a read-only bind mount (skipped where mounting is denied)."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield folder
        finally:
            folder.chmod(0o755)
        return
    view = folder.with_name(folder.name + "-ro")
    view.mkdir()
    mounted = subprocess.run(["mount", "--bind", str(folder), str(view)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"root cannot bind-mount here: {mounted.stderr.decode().strip()}")
    try:
        remount = ["mount", "-o", "remount,ro,bind", str(view)]
        assert subprocess.run(remount, capture_output=True).returncode == 0
        yield view
    finally:
        subprocess.run(["umount", str(view)], check=True)


def test_a_store_in_a_read_only_folder_can_be_read_but_not_written(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    store = Store(folder / "tlsbench.db")
    store.new_run("e", "q", "time", 1, {}, "", "c")
    store.finish_run(1, "complete")
    store.close()
    # As tlsbench leaves it: WAL mode, closed cleanly (no -wal file), and no -shm file that
    # SQLite could use, as in a copy or on a read-only mount.
    (folder / "tlsbench.db-shm").unlink(missing_ok=True)
    assert _listing(folder) == ["tlsbench.db"]
    with _read_only_view(folder) as ro:
        db = str(ro / "tlsbench.db")
        listed = _cli("runs", "--db", db)
        assert listed.returncode == 0, listed.stderr
        assert "complete" in listed.stdout
        assert _cli("report", "--db", db).returncode == 0
        for verb in (["migrate"], ["run", "quick", "--only", "variant=null"]):
            proc = _cli(*verb, "--db", db)
            assert proc.returncode == 2, (verb, proc.stderr)
            assert "choose another --db" in proc.stderr and "Traceback" not in proc.stderr
    assert _listing(folder) == ["tlsbench.db"]


@pytest.mark.parametrize("kind", ["text", "foreign", "directory"])
def test_a_db_that_is_not_a_store_is_refused_and_left_alone(tmp_path: Path, kind: str) -> None:
    db = tmp_path / "x.db"
    if kind == "text":
        db.write_text("these are my notes\n" * 20)
    elif kind == "foreign":
        raw = sqlite3.connect(db)
        raw.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        raw.commit()
        raw.close()
    else:
        db.mkdir()
    before = _listing(tmp_path)
    content = db.read_bytes() if db.is_file() else None
    for verb in (["runs"], ["report"], ["run", "quick", "--only", "variant=null"]):
        proc = _cli(*verb, "--db", str(db))
        assert proc.returncode == 2, (verb, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert {"text": "not an SQLite database", "foreign": "not a tlsbench results store",
                "directory": "is a directory"}[kind] in proc.stderr  # fmt: skip
        assert _listing(tmp_path) == before
        if content is not None:
            assert db.read_bytes() == content


def test_two_processes_creating_the_same_store_both_succeed(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    code = (
        "import sys; from pathlib import Path; from tlsbench.store import Store; "
        "s = Store(Path(sys.argv[1])); s.new_run('e', 'q', 'time', 1, {}, '', 'c'); s.close()"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(db)], stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    errors = [p.communicate()[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errors
    store = Store(db)
    assert len(store.runs()) == 4
    assert store.check_consistent() == []
