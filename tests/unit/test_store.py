"""The results store on SQLite and PostgreSQL: migrations from older schemas, atomic results,
read-only readers, machines, shards and concurrent writers."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from drivers import tlsbench
from tlsbench.core import paths
from tlsbench.core.dialect import SqliteDatabase, errors
from tlsbench.core.errors import UserError
from tlsbench.core.store import MIGRATIONS, SCHEMA_VERSION, Store

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_a_version_1_store_is_migrated_in_place_keeping_its_data(tmp_path: Path) -> None:
    db_path = tmp_path / "old.db"
    with sqlite3.connect(db_path) as db:
        db.executescript((FIXTURES / "store-v1.sql").read_text())
    store = Store(db_path)
    assert store.version() == SCHEMA_VERSION == 4
    run = store.run(1)
    assert run["experiment"] == "tiny" and run["question"] == "" and run["commit_id"] == "unknown"
    assert run["timeout"] is None and run["owner_pid"] is None
    [point] = store.points(1)
    assert point.params == {"scenario": "handshake", "tls": "1.3"}
    assert store.samples(point.id, "client_cpu_ns") == [1000.0, 1100.0, 900.0]
    assert store.check_consistent() == []
    store.close()
    assert Store(db_path).version() == 4  # a second open finds nothing to do


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


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("verb", [["runs"], ["report"], ["compare", "1", "2"]])
def test_read_only_verbs_never_create_a_store_or_its_folder(
    tmp_path: Path, verb: list[str]
) -> None:
    db = tmp_path / "absent" / "tlsbench.db"
    proc = tlsbench(*verb, "--db", str(db))
    assert proc.returncode == 2, proc.stderr
    assert "no results store at" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "absent").exists()


def test_read_only_verbs_neither_migrate_nor_switch_the_journal_mode(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    raw = SqliteDatabase(db, readonly=False)
    raw.begin_write()
    MIGRATIONS[1](raw)
    raw.set_version(1)
    raw.commit()
    raw.close()
    before = db.read_bytes()
    proc = tlsbench("runs", "--db", str(db))
    assert proc.returncode == 2
    assert "older than this tlsbench" in proc.stderr and "tlsbench migrate" in proc.stderr
    assert db.read_bytes() == before
    assert _listing(tmp_path) == ["old.db"]  # no -wal / -shm beside it
    assert tlsbench("migrate", "--db", str(db)).returncode == 0
    assert tlsbench("runs", "--db", str(db)).returncode == 0


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
        listed = tlsbench("runs", "--db", db)
        assert listed.returncode == 0, listed.stderr
        assert "complete" in listed.stdout
        assert tlsbench("report", "--db", db).returncode == 0
        for verb in (["migrate"], ["run", "quick", "--only", "variant=null"]):
            proc = tlsbench(*verb, "--db", db)
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
        proc = tlsbench(*verb, "--db", str(db))
        assert proc.returncode == 2, (verb, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert {"text": "not an SQLite database", "foreign": "not a tlsbench results store",
                "directory": "is a directory"}[kind] in proc.stderr  # fmt: skip
        assert _listing(tmp_path) == before
        if content is not None:
            assert db.read_bytes() == content


def test_a_second_store_in_the_process_keeps_the_first_ones_locks(tmp_path: Path) -> None:
    # The runner's heartbeat opens the store again while the run writes to it. Were the
    # file read by anything but SQLite (closing a descriptor drops every POSIX lock of the
    # process on the file), another process's reader would find the store unlocked on
    # closing, checkpoint it and delete the -wal file the run goes on writing to.
    db = tmp_path / "r.db"
    writer = Store(db)
    writer.new_run("e", "q", "time", 1, {}, "", "c")
    Store(db).close()
    Store(db, readonly=True).close()
    reader = (
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
        "c.execute('SELECT 1 FROM runs'); c.close()"
    )
    subprocess.run([sys.executable, "-c", reader, str(db)], check=True)
    assert (tmp_path / "r.db-wal").exists(), "the writer's locks were dropped"
    writer.new_run("e", "q", "time", 1, {}, "", "c")
    writer.close()
    assert len(Store(db, readonly=True).runs()) == 2


def test_processes_creating_the_same_store_at_once_all_succeed(target: str) -> None:
    db = target  # a new SQLite file or an empty PostgreSQL database: each migrates it
    code = (
        "import sys; from tlsbench.core.store import Store; "
        "s = Store(sys.argv[1]); s.new_run('e', 'q', 'time', 1, {}, '', 'c'); s.close()"
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


def test_a_version_3_store_moves_each_run_owner_to_its_shard(tmp_path: Path) -> None:
    db_path = tmp_path / "v3.db"
    with sqlite3.connect(db_path) as db:
        db.executescript((FIXTURES / "store-v3.sql").read_text())
    store = Store(db_path)
    assert store.version() == 4
    complete, killed = store.runs()
    assert store.status_of(complete) == "complete" and store.status_of(killed) == "interrupted"
    assert [s["shard"] for s in store.shards(killed["id"])] == [1]
    assert store.missing_shards(killed["id"])[0].state == "interrupted"
    [point] = store.points(complete["id"])
    assert point.shard == 1
    assert [r["machine_id"] for r in store.results(point.id)] == [None, None]
    assert store.samples(point.id, "write_ns") == [100.0, 110.0, 101.0, 110.0]
    assert store.check_consistent() == []
    # Resuming the killed run claims its shard as before.
    store.claim(killed["id"])
    assert store.status_of(store.run(killed["id"])) == "running"


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store location on each engine: a new SQLite file, or a new PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "store.db")
    return str(request.getfixturevalue("pg_url"))


FACTS = {"host": "h1", "cpu_model": "CPU A", "cpu_flags": "aes", "kernel": "6.1",
         "commit_id": "c1", "cores": 2}  # fmt: skip


def _one_point_run(store: Store, shard_count: int = 1, points: int = 1) -> tuple[int, list]:
    run_id = store.new_run("e", "q?", "time", 2, {}, "text", "abc", shard_count=shard_count)
    store.add_points(run_id, [{"name": f"p{i}", "variant": "null", "library": "null",
                               "scenario": "records", "params": {"payload": i}, "build": {},
                               "shard": i % shard_count + 1}
                              for i in range(points)])  # fmt: skip
    return run_id, store.points(run_id)


def test_both_engines_store_results_machines_and_shards_alike(target: str) -> None:
    store = Store(target)
    assert store.version() == SCHEMA_VERSION
    run_id, [point] = _one_point_run(store)
    machine = store.machine(FACTS)
    assert store.machine(dict(FACTS, cores=64)) == machine  # not an identity fact
    other = store.machine(dict(FACTS, host="h2"))
    assert other != machine
    output = {"summary": {"write_ns": {"unit": "ns"}}, "samples": {"write_ns": [1.5, 2.5]}}
    store.claim(run_id, 1, machine)
    store.add_result(point.id, 0, "failed", 1, None, 0.1, "t", None, "boom", machine, "null=k/d")
    store.add_result(point.id, 0, "ok", 0, None, 0.1, "t", output, "", machine, "null=k/d")
    with pytest.raises(errors()):  # a repetition is stored once
        store.add_result(point.id, 0, "ok", 0, None, 0.1, "t", {"samples": {"x": [1]}}, "")
    assert store.samples(point.id, "write_ns") == [1.5, 2.5]
    assert store.samples_by_result(point.id) == {
        store.results(point.id)[0]["id"]: {"write_ns": [1.5, 2.5]}
    }
    [result] = store.results(point.id)  # the failure was replaced
    assert (result["machine_id"], result["build_key"]) == (machine, "null=k/d")
    [row] = store.machines_of_run(run_id)
    assert (row["host"], row["cpu_model"], row["results"]) == ("h1", "CPU A", 1)
    assert store.status_of(store.run(run_id)) == "running"
    store.finish_run(run_id, "complete")
    assert store.status_of(store.run(run_id)) == "complete"
    assert store.check_consistent() == []
    store.close()


def test_a_read_only_store_refuses_writes_on_both_engines(target: str) -> None:
    Store(target).close()
    reader = Store(target, readonly=True)
    with pytest.raises(errors()):
        reader.execute("DELETE FROM runs")
    with pytest.raises(errors()):
        reader.machine(FACTS)


def test_shards_join_one_run_and_say_which_are_missing(target: str) -> None:
    store = Store(target)
    settings = {"experiment": "e", "question": "q", "mode": "time", "repetitions": 1,
                "experiment_text": "t", "commit_id": "c", "timeout": 30.0,
                "shard_count": 3}  # fmt: skip
    points = [{"name": f"p{i}", "variant": "null", "library": "null", "scenario": "records",
               "params": {"payload": i}, "build": {}, "shard": i % 3 + 1}
              for i in range(5)]  # fmt: skip
    run_id, joined = store.start_or_join("ci-42", settings, points, {})
    assert not joined
    assert store.start_or_join("ci-42", settings, points, {}) == (run_id, True)
    assert [len(store.points(run_id, k)) for k in (1, 2, 3)] == [2, 2, 1]
    for wrong in ({**settings, "repetitions": 3}, {**settings, "commit_id": "d"}):
        with pytest.raises(UserError, match="differs from this shard"):
            store.start_or_join("ci-42", wrong, points, {})
    with pytest.raises(UserError, match="the points"):
        store.start_or_join("ci-42", settings, points[:4], {})
    store.claim(run_id, 2)
    store.finish_run(run_id, "complete", 2)
    store.claim(run_id, 3)
    missing = store.missing_shards(run_id)
    assert [(m.shard, m.state) for m in missing] == [(1, "not started"), (3, "running")]
    with pytest.raises(UserError, match=r"shard 1/3 \(not started\), shard 3/3 \(running on"):
        store.check_whole(run_id, "report")
    assert store.status_of(store.run(run_id)) == "running"
    store.finish_run(run_id, "interrupted", 3)
    assert store.status_of(store.run(run_id)) == "interrupted"
    for shard in (1, 3):
        store.claim(run_id, shard)
        store.finish_run(run_id, "complete", shard)
    store.check_whole(run_id, "report")
    assert store.status_of(store.run(run_id)) == "complete"


def test_a_shard_owned_by_a_live_runner_is_refused(target: str) -> None:
    store = Store(target)
    run_id, _ = _one_point_run(store)
    store.claim(run_id)
    # Another runner of this machine, alive (the test's parent process), owns the shard.
    with store.transaction() as db:
        db.execute("UPDATE shards SET owner_pid = ? WHERE run_id = ?", (os.getppid(), run_id))
    with pytest.raises(UserError, match="is being executed by process"):
        store.claim(run_id)


WRITER = """
import os, sys, time
from tlsbench.core.store import Store
store = Store(sys.argv[1])
point, first, count = (int(a) for a in sys.argv[2:5])
for repetition in range(first, first + count):
    output = {"summary": {"v": {"unit": "ns"}}, "samples": {"v": [float(repetition)] * 50}}
    store.add_result(point, repetition, "ok", 0, None, 0.0, "t", output, "")
if len(sys.argv) > 5:  # hold a write transaction open with a result in it until killed
    with store.transaction() as db:
        db.execute("INSERT INTO results (point_id, repetition, status, seconds, started_at, "
                   "output, stderr_tail) VALUES (?, 99999, 'ok', 0, 't', '{}', '')", (point,))
        print("inside", flush=True)
        time.sleep(600)
"""


def test_writers_at_once_lose_nothing_and_a_killed_one_leaves_the_store_consistent(
    target: str,
) -> None:
    store = Store(target)
    _, points = _one_point_run(store, points=4)
    code = [sys.executable, "-c", WRITER, target]
    writers = [subprocess.Popen([*code, str(p.id), "0", "40"], stderr=subprocess.PIPE,
                                text=True) for p in points[:3]]  # fmt: skip
    # The fourth writes some results, then dies by SIGKILL inside a write transaction.
    victim = subprocess.Popen([*code, str(points[3].id), "0", "5", "hold"], text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert victim.stdout is not None
    assert victim.stdout.readline().strip() == "inside", victim.stderr.read()
    victim.kill()
    victim.wait()
    errors_ = [w.communicate(timeout=300)[1] for w in writers]
    assert [w.returncode for w in writers] == [0, 0, 0], errors_
    # The killed writer's lock went with it: this process still writes.
    store.add_result(points[3].id, 5, "ok", 0, None, 0.0, "t", {"samples": {"v": [1.0]}}, "")
    reader = Store(target, readonly=True)
    for point in points[:3]:
        assert sorted(reader.done_repetitions(point.id)) == list(range(40))
        assert len(reader.samples(point.id, "v")) == 40 * 50
    assert sorted(reader.done_repetitions(points[3].id)) == list(range(6))  # not 99999
    assert reader.check_consistent() == []


def test_postgres_read_only_verbs_create_nothing_and_bad_urls_are_clear(pg_url: str) -> None:
    import psycopg

    for verb in (["runs"], ["report"], ["compare", "1", "2"]):
        proc = tlsbench(*verb, "--db", pg_url)
        assert proc.returncode == 2, proc.stderr
        assert "holds no results yet" in proc.stderr and "Traceback" not in proc.stderr
    with psycopg.connect(pg_url) as conn:
        tables = conn.execute("SELECT COUNT(*) FROM information_schema.tables "
                              "WHERE table_schema = 'public'").fetchone()  # fmt: skip
        assert tables == (0,)
        conn.execute("CREATE TABLE customers (id INTEGER)")
    for verb in (["runs"], ["migrate"]):
        proc = tlsbench(*verb, "--db", pg_url)
        assert proc.returncode == 2 and "not a tlsbench results store" in proc.stderr
    # A server that is not there: what is wrong, exit 1, the password never shown.
    absent = pg_url.replace("tlsbench@", "tlsbench:secret@").replace("?host=", "?host=/nowhere")
    proc = tlsbench("runs", "--db", absent)
    assert proc.returncode == 1 and "cannot connect to the results store" in proc.stderr
    assert "secret" not in proc.stderr and "Traceback" not in proc.stderr


def test_the_store_can_be_named_by_the_environment(pg_url: str, tmp_path: Path) -> None:
    Store(pg_url).close()
    env = {**os.environ, "TLSBENCH_DB": pg_url}
    proc = subprocess.run([str(paths.REPO / "tlsbench"), "migrate"], capture_output=True,
                          text=True, env=env, check=False)  # fmt: skip
    assert proc.returncode == 0 and "postgresql://" in proc.stdout, proc.stderr
