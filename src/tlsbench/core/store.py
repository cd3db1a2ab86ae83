"""The results store: an SQLite file or a PostgreSQL database, one schema, versioned.

Schema (version 4):

    runs(id, experiment, question, mode, repetitions, status, started_at, finished_at,
         environment JSON, experiment_text, commit_id, timeout,
         run_key, shard_count,              -- the key every shard of a sharded run names
         owner_pid, owner_host, heartbeat)  -- (before version 4; shards hold the owner now)
    shards(run_id, shard, status, machine_id, owner_pid, owner_host, heartbeat,
           started_at, finished_at)         -- PRIMARY KEY(run_id, shard); a run has >= 1
    points(id, run_id, name, variant, library, scenario, params JSON, build JSON,
           position, shard)                 -- UNIQUE(run_id, variant, name)
    results(id, point_id, repetition, status, exit_code, signal, seconds, started_at,
            output JSON, stderr_tail, machine_id, build_key)  -- UNIQUE(point_id, repetition)
    samples(result_id, series, unit, "values" JSON)
    machines(id, fingerprint, host, cpu_model, cpu_flags, kernel, commit_id, facts JSON)

A result is one driver process: status is "ok", "unsupported" (the library cannot honour
the point: exit 3), or "failed" (any other exit, a signal or a timeout). It records the
machine it ran on and the build keys of what it ran. Each result and its samples are
written in one transaction, so a crash at any moment leaves a consistent database, and
`tlsbench run --resume RUN` runs only what is missing or failed.

A run is split into shards (one, unless `run --shard K/N` asked for more); each point
belongs to one. A shard being executed has an owner (process id, host, heartbeat): a second
runner refuses it, and a shard whose owner is gone (process dead, or no heartbeat for
STALE_AFTER_S) reads as "interrupted". The run's status is its shards' together.

The engine (dialect.py) is SQLite for a file and PostgreSQL for a postgresql:// URL; the
SQL here runs on both. Migrations: one function per version step; opening a store for
writing migrates it in place (SQLite keeps the version in PRAGMA user_version).

Its size (over 600 lines) is one contract with the database: the schema, each migration
and the queries that read what a migration wrote stay side by side, so that they cannot
drift apart.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import socket
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlsbench.core.dialect import Database, Row, errors, is_postgres, open_database
from tlsbench.core.errors import UserError

SCHEMA_VERSION = 4
# A shard's owner counts as gone when its heartbeat is older than this (it beats every few s).
STALE_AFTER_S = 60.0


def _v1(db: Database) -> None:
    db.ddl(
        """
        CREATE TABLE runs (
            id {id},
            experiment TEXT NOT NULL,
            mode TEXT NOT NULL,
            repetitions INTEGER NOT NULL,
            status TEXT NOT NULL,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            environment TEXT NOT NULL,
            experiment_text TEXT NOT NULL
        );
        CREATE TABLE points (
            id {id},
            run_id INTEGER NOT NULL REFERENCES runs(id),
            name TEXT NOT NULL,
            variant TEXT NOT NULL,
            library TEXT NOT NULL,
            scenario TEXT NOT NULL,
            params TEXT NOT NULL,
            build TEXT NOT NULL,
            position INTEGER NOT NULL,
            UNIQUE (run_id, variant, name)
        );
        CREATE TABLE results (
            id {id},
            point_id INTEGER NOT NULL REFERENCES points(id),
            repetition INTEGER NOT NULL,
            status TEXT NOT NULL,
            exit_code INTEGER,
            signal INTEGER,
            seconds {real} NOT NULL,
            started_at TEXT NOT NULL,
            output TEXT,
            stderr_tail TEXT NOT NULL,
            UNIQUE (point_id, repetition)
        );
        CREATE TABLE samples (
            result_id INTEGER NOT NULL REFERENCES results(id),
            series TEXT NOT NULL,
            unit TEXT NOT NULL,
            "values" TEXT NOT NULL,
            PRIMARY KEY (result_id, series)
        );
        """,
    )


def _v2(db: Database) -> None:
    """Version 2: the question an experiment answers and the tlsbench commit of a run."""
    db.ddl(
        """
        ALTER TABLE runs ADD COLUMN question TEXT NOT NULL DEFAULT '';
        ALTER TABLE runs ADD COLUMN commit_id TEXT NOT NULL DEFAULT 'unknown';
        CREATE INDEX results_by_point ON results(point_id);
        """,
    )


def _v3(db: Database) -> None:
    """Version 3: a run's timeout (resume uses it) and its owner (the runner executing it)."""
    db.ddl(
        """
        ALTER TABLE runs ADD COLUMN timeout {real};
        ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
        ALTER TABLE runs ADD COLUMN owner_host TEXT;
        ALTER TABLE runs ADD COLUMN heartbeat TEXT;
        """,
    )


def _v4(db: Database) -> None:
    """Version 4: the machine of every result, and shards (a run's owner moves to its one
    shard, so that older runs read as before)."""
    db.ddl(
        """
        CREATE TABLE machines (
            id {id},
            fingerprint TEXT NOT NULL UNIQUE,
            host TEXT NOT NULL,
            cpu_model TEXT NOT NULL,
            cpu_flags TEXT NOT NULL,
            kernel TEXT NOT NULL,
            commit_id TEXT NOT NULL,
            facts TEXT NOT NULL
        );
        ALTER TABLE results ADD COLUMN machine_id INTEGER REFERENCES machines(id);
        ALTER TABLE results ADD COLUMN build_key TEXT;
        ALTER TABLE runs ADD COLUMN run_key TEXT;
        ALTER TABLE runs ADD COLUMN shard_count INTEGER NOT NULL DEFAULT 1;
        CREATE UNIQUE INDEX runs_by_key ON runs(run_key);
        ALTER TABLE points ADD COLUMN shard INTEGER NOT NULL DEFAULT 1;
        CREATE INDEX points_by_run ON points(run_id);
        CREATE TABLE shards (
            run_id INTEGER NOT NULL REFERENCES runs(id),
            shard INTEGER NOT NULL,
            status TEXT NOT NULL,
            machine_id INTEGER REFERENCES machines(id),
            owner_pid INTEGER,
            owner_host TEXT,
            heartbeat TEXT,
            started_at TEXT,
            finished_at TEXT,
            PRIMARY KEY (run_id, shard)
        );
        INSERT INTO shards (run_id, shard, status, owner_pid, owner_host, heartbeat,
                            started_at, finished_at)
            SELECT id, 1, status, owner_pid, owner_host, heartbeat, started_at, finished_at
            FROM runs;
        UPDATE runs SET owner_pid = NULL, owner_host = NULL, heartbeat = NULL
        """,
    )


MIGRATIONS: dict[int, Callable[[Database], None]] = {1: _v1, 2: _v2, 3: _v3, 4: _v4}


def now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


@dataclass
class Point:
    id: int
    run_id: int
    name: str
    variant: str
    library: str
    scenario: str
    params: dict[str, Any]
    build: dict[str, Any]
    position: int
    shard: int = 1


@dataclass(frozen=True)
class MissingShard:
    """A shard of a run that has not finished: why, and where it runs if it does."""

    shard: int
    state: str  # "running", "interrupted" or "not started"
    host: str | None

    def describe(self, count: int) -> str:
        where = f" on {self.host}" if self.host else ""
        return f"shard {self.shard}/{count} ({self.state}{where})"


# The fields that tell machines apart: a result measured on another of any of them is
# another machine's figure.
MACHINE_IDENTITY = ("host", "cpu_model", "cpu_flags", "kernel", "commit_id")
TABLES = {"runs", "points", "results", "samples"}
FINISHED = ("complete", "failed")


def not_a_database(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.DatabaseError) and "not a database" in str(exc)


class Store:
    """The results store at `target` (an SQLite file or a PostgreSQL URL). `readonly=True`
    (runs, report, compare) never creates, migrates or changes anything (SQLite: not even
    the journal mode; PostgreSQL: a read-only session); opening for writing migrates."""

    def __init__(self, target: str | Path, readonly: bool = False) -> None:
        self.target = str(target)
        self.readonly = readonly
        self.postgres = is_postgres(self.target)
        self.path: str | Path = self.target if self.postgres else Path(self.target)
        if not self.postgres:
            self._check_path(Path(self.target))
        try:
            self.db: Database = open_database(self.target, readonly)
        except (OSError, sqlite3.Error) as exc:
            if not_a_database(exc):
                raise self._not_sqlite() from exc
            raise UserError(f"cannot open the results store {self.target}: {exc}", 2) from exc
        self.path = self.db.location  # a PostgreSQL URL without its password
        try:
            self._check_ours()
            if self.db.engine == "sqlite":
                self.db.execute("PRAGMA foreign_keys = ON")
            if readonly:
                self._check_readable_version()
            else:
                if self.db.engine == "sqlite":
                    self.db.execute("PRAGMA journal_mode = WAL")
                self.migrate()
        except errors() as exc:
            self.db.close()
            if not_a_database(exc):
                raise self._not_sqlite() from exc
            raise UserError(
                f"{self.path} is not a usable tlsbench results store: {exc}", 2
            ) from exc
        except UserError:
            self.db.close()
            raise

    def _not_sqlite(self) -> UserError:
        # SQLite tells this itself. The file is never opened here by hand: closing any
        # descriptor of it would drop this process's POSIX locks on it, those of a run
        # writing it through another Store (the heartbeat's) too, and another process's
        # reader would then checkpoint and delete the write-ahead log under the run.
        return UserError(
            f"--db {self.target} is not an SQLite database; choose another file "
            "(tlsbench creates a new store where none exists)"
        )

    def _check_path(self, path: Path) -> None:
        """What can be told from the file system, before SQLite creates anything."""
        if path.is_dir():
            raise UserError(
                f"--db {path} is a directory; give a file name, e.g. {path}/tlsbench.db"
            )
        if not path.exists():
            if self.readonly:
                raise UserError(
                    f"no results store at {path}; run an experiment first (tlsbench run)"
                )
            return
        if not self.readonly and not (
            os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)
        ):
            raise UserError(
                f"--db {path} is read-only (the file or its folder {path.parent}); make both "
                "writable or choose another --db. Reading (runs, report, compare) works as is."
            )

    def _check_ours(self) -> None:
        """A database written by something else is refused before anything is added."""
        tables = self.db.tables()
        kind = "an SQLite database" if self.db.engine == "sqlite" else "a PostgreSQL database"
        if tables and not tables >= TABLES:
            raise UserError(
                f"--db {self.path} is {kind} but not a tlsbench results store "
                f"(its tables: {', '.join(sorted(tables))}); choose another "
                + ("file" if self.db.engine == "sqlite" else "database")
            )
        if self.readonly and not tables:
            raise UserError(f"{self.path} holds no results yet; run an experiment first")

    def _check_readable_version(self) -> None:
        version = self.version()
        if version != SCHEMA_VERSION:
            newer = version > SCHEMA_VERSION
            raise UserError(
                f"{self.path} has schema version {version}, "
                + (
                    f"newer than this tlsbench ({SCHEMA_VERSION}); update tlsbench"
                    if newer
                    else f"older than this tlsbench ({SCHEMA_VERSION}); migrate it once with "
                    f"`tlsbench migrate --db {self.path}`"
                )
            )

    def close(self) -> None:
        self.db.close()

    def execute(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[Row]:
        """A read (or, inside transaction(), a write) in SQL both engines run."""
        return self.db.execute(sql, params)

    def one(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> Row | None:
        rows = self.db.execute(sql, params)
        return rows[0] if rows else None

    @contextmanager
    def transaction(self) -> Iterator[Database]:
        """A write transaction, serialised with every other writer of the store."""
        self.db.begin_write()
        try:
            yield self.db
        except BaseException:
            self.db.rollback()
            raise
        self.db.commit()

    def version(self) -> int:
        return self.db.version()

    def migrate(self) -> None:
        version = self.version()
        if version > SCHEMA_VERSION:
            raise UserError(
                f"{self.path} has schema version {version}, newer than this tlsbench "
                f"({SCHEMA_VERSION}); update tlsbench or use another --db",
                1,
            )
        for step in range(version + 1, SCHEMA_VERSION + 1):
            with self.transaction() as db:
                # Another process may have migrated while this one waited for the lock.
                if self.version() >= step:
                    continue
                MIGRATIONS[step](db)
                db.set_version(step)

    # -- machines ---------------------------------------------------------------------------

    def machine(self, facts: dict[str, Any]) -> int:
        """The id of the machine these facts describe (host, cpu_model, cpu_flags, kernel,
        commit_id, and any others), added on its first result."""
        identity = {k: str(facts[k]) for k in MACHINE_IDENTITY}
        fingerprint = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
        with self.transaction() as db:
            found = db.execute("SELECT id FROM machines WHERE fingerprint = ?", (fingerprint,))
            if found:
                return int(found[0][0])
            return db.insert(
                "INSERT INTO machines (fingerprint, host, cpu_model, cpu_flags, kernel, "
                "commit_id, facts) VALUES (?,?,?,?,?,?,?)",
                (fingerprint, *(identity[k] for k in MACHINE_IDENTITY),
                 json.dumps(facts, sort_keys=True)),
            )  # fmt: skip

    def machines_of_run(self, run_id: int) -> list[Row]:
        """The machines that ran a run's results, with how many results each ran."""
        return self.execute(
            "SELECT m.id, m.host, m.cpu_model, m.cpu_flags, m.kernel, m.commit_id, m.facts, "
            "COUNT(r.id) AS results FROM machines m JOIN results r ON r.machine_id = m.id "
            "JOIN points p ON p.id = r.point_id WHERE p.run_id = ? "
            "GROUP BY m.id, m.host, m.cpu_model, m.cpu_flags, m.kernel, m.commit_id, m.facts "
            "ORDER BY m.id",
            (run_id,),
        )

    def machine_row(self, machine_id: int) -> Row | None:
        return self.one("SELECT * FROM machines WHERE id = ?", (machine_id,))

    # -- runs -------------------------------------------------------------------------------

    def new_run(
        self,
        experiment: str,
        question: str,
        mode: str,
        repetitions: int,
        environment: dict[str, Any],
        experiment_text: str,
        commit_id: str,
        timeout: float | None = None,
        run_key: str | None = None,
        shard_count: int = 1,
        db: Database | None = None,
    ) -> int:
        """A new run with its shards (not started yet; `claim` starts one)."""
        if db is None:
            with self.transaction() as tx:
                return self.new_run(experiment, question, mode, repetitions, environment,
                                    experiment_text, commit_id, timeout, run_key, shard_count,
                                    tx)  # fmt: skip
        run_id = db.insert(
            "INSERT INTO runs (experiment, question, mode, repetitions, status, started_at,"
            " environment, experiment_text, commit_id, timeout, run_key, shard_count)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (experiment, question, mode, repetitions, "running", now(),
             json.dumps(environment), experiment_text, commit_id, timeout, run_key,
             shard_count),
        )  # fmt: skip
        for shard in range(1, shard_count + 1):
            db.execute(
                "INSERT INTO shards (run_id, shard, status) VALUES (?,?,?)",
                (run_id, shard, "pending"),
            )
        return run_id

    def add_points(
        self, run_id: int, points: list[dict[str, Any]], db: Database | None = None
    ) -> None:
        """Registers the run's points (name, variant, library, scenario, params, build, and
        the shard that runs it: 1 unless given)."""
        if db is None:
            with self.transaction() as tx:
                self.add_points(run_id, points, tx)
            return
        for position, p in enumerate(points):
            db.execute(
                "INSERT INTO points (run_id, name, variant, library, scenario, params, "
                "build, position, shard) VALUES (?,?,?,?,?,?,?,?,?)",
                (run_id, p["name"], p["variant"], p["library"], p["scenario"],
                 json.dumps(p["params"], sort_keys=True), json.dumps(p["build"]), position,
                 int(p.get("shard", 1))),
            )  # fmt: skip

    def start_or_join(
        self,
        run_key: str | None,
        settings: dict[str, Any],
        points: list[dict[str, Any]],
        environment: dict[str, Any],
    ) -> tuple[int, bool]:
        """The run every shard of a sharded run names by `run_key`: made by the first shard
        to come, with every shard's points; the others join it after checking that they
        would run the same (experiment text, mode, repetitions, shard count, tlsbench
        commit, points). Without a key, a new run. Returns (run id, joined an existing run)."""
        with self.transaction() as db:
            found = []
            if run_key is not None:
                found = db.execute("SELECT * FROM runs WHERE run_key = ?", (run_key,))
            if not found:
                run_id = self.new_run(
                    settings["experiment"], settings["question"], settings["mode"],
                    settings["repetitions"], environment, settings["experiment_text"],
                    settings["commit_id"], settings["timeout"], run_key,
                    settings["shard_count"], db,
                )  # fmt: skip
                self.add_points(run_id, points, db)
                return run_id, False
            run = found[0]
            differs = [
                f"{name} ({run[column]!r} there, {settings[column]!r} here)"
                for name, column in (
                    ("experiment", "experiment"),
                    ("mode", "mode"),
                    ("repetitions", "repetitions"),
                    ("shard count", "shard_count"),
                    ("tlsbench commit", "commit_id"),
                )
                if run[column] != settings[column]
            ]
            if run["experiment_text"] != settings["experiment_text"]:
                differs.append("the experiment's text")
            stored = [
                (r["name"], r["variant"], json.loads(r["params"]), r["shard"])
                for r in db.execute(
                    "SELECT * FROM points WHERE run_id = ? ORDER BY position", (run["id"],)
                )
            ]
            wanted = [(p["name"], p["variant"], json.loads(json.dumps(p["params"])),
                       int(p.get("shard", 1))) for p in points]  # fmt: skip
            if not differs and stored != wanted:
                differs.append("the points (another --only?)")
            if differs:
                raise UserError(
                    f"--run-key {run_key} names run {run['id']}, which differs from this "
                    f"shard in: {'; '.join(differs)}. Every shard of a run must be started "
                    "with the same experiment, options and tlsbench commit; use another "
                    "--run-key for another run"
                )
            return int(run["id"]), True

    # -- ownership --------------------------------------------------------------------------

    @staticmethod
    def owner_alive(row: Row) -> bool:
        """Whether the runner that owns a shard (or, before version 4, a run) still runs."""
        if row["owner_pid"] is None or row["heartbeat"] is None:
            return False
        age = (
            _dt.datetime.now(_dt.UTC) - _dt.datetime.fromisoformat(row["heartbeat"])
        ).total_seconds()
        if age > STALE_AFTER_S:
            return False
        if row["owner_host"] != socket.gethostname():
            return True  # another machine: the heartbeat is all there is to go by
        try:
            os.kill(int(row["owner_pid"]), 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def shards(self, run_id: int) -> list[Row]:
        return self.execute("SELECT * FROM shards WHERE run_id = ? ORDER BY shard", (run_id,))

    def _shard_state(self, row: Row) -> str:
        if row["status"] == "running":
            return "running" if self.owner_alive(row) else "interrupted"
        return "not started" if row["status"] == "pending" else str(row["status"])

    def status_of(self, row: Row) -> str:
        """The run's status from its shards': "running" while one runs, "complete" or
        "failed" once all have finished, "interrupted" otherwise."""
        states = [self._shard_state(s) for s in self.shards(int(row["id"]))]
        if not states:  # cannot happen for a migrated store; read the run's own word
            return str(row["status"])
        if "running" in states:
            return "running"
        if len(set(states)) == 1 and states[0] != "not started":
            return states[0]  # as the shards' runners left it
        if all(s in FINISHED for s in states):
            return "failed"
        return "interrupted"

    def missing_shards(self, run_id: int) -> list[MissingShard]:
        """The shards of a run that have not finished (running, interrupted, not started)."""
        missing = []
        for row in self.shards(run_id):
            state = self._shard_state(row)
            if state not in FINISHED:
                host = row["owner_host"] if state == "running" else None
                missing.append(MissingShard(int(row["shard"]), state, host))
        return missing

    def check_whole(self, run_id: int, what: str) -> None:
        """Refuses to read a sharded run before every shard is done, naming the missing."""
        run = self.run(run_id)
        count = int(run["shard_count"] or 1)
        if count <= 1:
            return
        missing = self.missing_shards(run_id)
        if missing:
            raise UserError(
                f"run {run_id} is not whole yet: {', '.join(m.describe(count) for m in missing)}"
                f" of {count} shards not done. {what} reads it once every shard has finished "
                "(run or resume the missing ones: `tlsbench run EXPERIMENT --shard K/N "
                "--run-key KEY`), or give --partial to read what is there",
                1,
            )

    def _set_run_status(self, db: Database, run_id: int) -> None:
        """Keeps runs.status the shards' together (for readers of the table itself)."""
        rows = db.execute("SELECT status FROM shards WHERE run_id = ?", (run_id,))
        states = {r[0] for r in rows}
        if states <= {"complete"}:
            status, finished = "complete", now()
        elif states <= set(FINISHED):
            status, finished = "failed", now()
        elif "running" in states:
            status, finished = "running", None
        else:
            status, finished = "interrupted", None
        db.execute("UPDATE runs SET status = ?, finished_at = ? WHERE id = ?",
                   (status, finished, run_id))  # fmt: skip

    def claim(self, run_id: int, shard: int = 1, machine_id: int | None = None) -> None:
        """Makes this process the shard's owner, or refuses if a live runner owns it."""
        me = (os.getpid(), socket.gethostname())
        with self.transaction() as db:
            found = db.execute(
                "SELECT * FROM shards WHERE run_id = ? AND shard = ?", (run_id, shard)
            )
            if not found:
                raise UserError(f"run {run_id} has no shard {shard}")
            row = found[0]
            if (row["owner_pid"], row["owner_host"]) == me:
                pass
            elif row["status"] == "running" and self.owner_alive(row):
                which = f"shard {shard} of run {run_id}" if shard > 1 or self._sharded(
                    db, run_id) else f"run {run_id}"  # fmt: skip
                raise UserError(
                    f"{which} is being executed by process {row['owner_pid']} on "
                    f"{row['owner_host']} (last heartbeat {row['heartbeat']}); wait for it or "
                    "stop it (Ctrl-C / kill) before resuming",
                    1,
                )
            db.execute(
                "UPDATE shards SET status = 'running', finished_at = NULL, owner_pid = ?, "
                "owner_host = ?, heartbeat = ?, machine_id = ?, "
                "started_at = COALESCE(started_at, ?) WHERE run_id = ? AND shard = ?",
                (*me, now(), machine_id, now(), run_id, shard),
            )
            self._set_run_status(db, run_id)

    @staticmethod
    def _sharded(db: Database, run_id: int) -> bool:
        rows = db.execute("SELECT shard_count FROM runs WHERE id = ?", (run_id,))
        return bool(rows) and int(rows[0][0] or 1) > 1

    def heartbeat(self, run_id: int, shard: int = 1) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE shards SET heartbeat = ? WHERE run_id = ? AND shard = ? "
                "AND owner_pid = ? AND owner_host = ?",
                (now(), run_id, shard, os.getpid(), socket.gethostname()),
            )

    def finish_run(self, run_id: int, status: str, shard: int = 1) -> None:
        """Sets a shard's final status ("complete", "failed", "interrupted") and drops its
        owner; the run's status follows its shards'."""
        with self.transaction() as db:
            db.execute(
                "UPDATE shards SET status = ?, finished_at = ?, owner_pid = NULL, "
                "owner_host = NULL, heartbeat = NULL WHERE run_id = ? AND shard = ?",
                (status, now(), run_id, shard),
            )
            self._set_run_status(db, run_id)

    def run(self, run_id: int | str) -> Row:
        if run_id == "latest":
            row = self.one("SELECT * FROM runs ORDER BY id DESC LIMIT 1")
            if row is None:
                raise UserError(f"{self.path} holds no run yet; start one with `tlsbench run`")
            return row
        try:
            number = int(run_id)
        except ValueError:
            raise UserError(f"a run is a number or 'latest', not {run_id!r}") from None
        row = self.one("SELECT * FROM runs WHERE id = ?", (number,))
        if row is None:
            raise UserError(f"no run {number} in {self.path}; `tlsbench runs` lists them")
        return row

    def runs(self) -> list[Row]:
        return self.execute("SELECT * FROM runs ORDER BY id")

    def points(self, run_id: int, shard: int | None = None) -> list[Point]:
        """A run's points in their stored order; `shard`: only that shard's."""
        where, params = "run_id = ?", [run_id]
        if shard is not None:
            where, params = "run_id = ? AND shard = ?", [run_id, shard]
        return [
            Point(
                id=r["id"],
                run_id=r["run_id"],
                name=r["name"],
                variant=r["variant"],
                library=r["library"],
                scenario=r["scenario"],
                params=json.loads(r["params"]),
                build=json.loads(r["build"]),
                position=r["position"],
                shard=r["shard"],
            )
            for r in self.execute(f"SELECT * FROM points WHERE {where} ORDER BY position", params)
        ]

    # -- results ----------------------------------------------------------------------------

    def done_repetitions(self, point_id: int) -> set[int]:
        """Repetitions with a final result: ok or unsupported (a failed one is run again)."""
        rows = self.execute(
            "SELECT repetition FROM results WHERE point_id = ? AND status IN ('ok', 'unsupported')",
            (point_id,),
        )
        return {r[0] for r in rows}

    def done_by_point(self, run_id: int) -> dict[int, set[int]]:
        """done_repetitions of every point of a run, in one query."""
        found: dict[int, set[int]] = {}
        for point_id, repetition in self.execute(
            "SELECT r.point_id, r.repetition FROM results r JOIN points p ON p.id = r.point_id "
            "WHERE p.run_id = ? AND r.status IN ('ok', 'unsupported')",
            (run_id,),
        ):
            found.setdefault(point_id, set()).add(repetition)
        return found

    def failed_count(self, run_id: int, shard: int | None = None) -> int:
        sql = ("SELECT COUNT(*) FROM results r JOIN points p ON p.id = r.point_id "
               "WHERE p.run_id = ? AND r.status = 'failed'")  # fmt: skip
        params: list[Any] = [run_id]
        if shard is not None:
            sql += " AND p.shard = ?"
            params.append(shard)
        row = self.one(sql, params)
        return int(row[0]) if row else 0

    def add_result(
        self,
        point_id: int,
        repetition: int,
        status: str,
        exit_code: int | None,
        signal: int | None,
        seconds: float,
        started_at: str,
        output: dict[str, Any] | None,
        stderr_tail: str,
        machine_id: int | None = None,
        build_key: str | None = None,
    ) -> None:
        """One driver process: the result row and its samples in one transaction."""
        samples = (output or {}).pop("samples", None) or {}
        units = {k: v.get("unit", "") for k, v in (output or {}).get("summary", {}).items()}
        with self.transaction() as db:
            # A failed repetition run again replaces its earlier failure, in this transaction.
            old = db.execute(
                "SELECT id FROM results WHERE point_id = ? AND repetition = ? "
                "AND status = 'failed'",
                (point_id, repetition),
            )
            if old:
                db.execute("DELETE FROM samples WHERE result_id = ?", (old[0][0],))
                db.execute("DELETE FROM results WHERE id = ?", (old[0][0],))
            result_id = db.insert(
                "INSERT INTO results (point_id, repetition, status, exit_code, signal, seconds,"
                " started_at, output, stderr_tail, machine_id, build_key)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (point_id, repetition, status, exit_code, signal, seconds, started_at,
                 json.dumps(output) if output is not None else None, stderr_tail, machine_id,
                 build_key),
            )  # fmt: skip
            for series, values in samples.items():
                db.execute(
                    'INSERT INTO samples (result_id, series, unit, "values") VALUES (?,?,?,?)',
                    (result_id, series, units.get(series, ""), json.dumps(values)),
                )

    def results(self, point_id: int) -> list[Row]:
        return self.execute(
            "SELECT * FROM results WHERE point_id = ? ORDER BY repetition", (point_id,)
        )

    def samples(self, point_id: int, series: str) -> list[float]:
        """All samples of one series of a point, across its successful repetitions."""
        values: list[float] = []
        for values_json in self.samples_by_repetition(point_id, series):
            values.extend(values_json)
        return values

    def samples_by_repetition(self, point_id: int, series: str) -> list[list[float]]:
        """The samples of one series of a point, one list per successful repetition (the
        process is the statistical unit: see tlsbench.core.stats)."""
        return [
            json.loads(row[0])
            for row in self.execute(
                'SELECT s."values" FROM samples s JOIN results r ON r.id = s.result_id '
                "WHERE r.point_id = ? AND s.series = ? AND r.status = 'ok' "
                "ORDER BY r.repetition",
                (point_id, series),
            )
        ]

    def samples_by_result(self, point_id: int) -> dict[int, dict[str, list[float]]]:
        """The samples of a point's successful repetitions: result id -> series -> values."""
        found: dict[int, dict[str, list[float]]] = {}
        for result_id, series, values in self.execute(
            'SELECT r.id, s.series, s."values" FROM samples s JOIN results r '
            "ON r.id = s.result_id WHERE r.point_id = ? AND r.status = 'ok'",
            (point_id,),
        ):
            found.setdefault(result_id, {})[series] = json.loads(values)
        return found

    def series_names(self, point_id: int) -> list[str]:
        rows = self.execute(
            "SELECT DISTINCT s.series FROM samples s JOIN results r ON r.id = s.result_id "
            "WHERE r.point_id = ? ORDER BY s.series",
            (point_id,),
        )
        return [r[0] for r in rows]

    def check_consistent(self) -> list[str]:
        """Problems a crash could have left (none, by construction); used by the tests."""
        problems = self.db.integrity_problems()
        checks = (
            ("SELECT COUNT(*) FROM samples WHERE result_id NOT IN (SELECT id FROM results)",
             "sample rows without a result"),
            ("SELECT COUNT(*) FROM results r WHERE r.status = 'ok' AND r.output IS NULL",
             "ok results without output"),
            ("SELECT COUNT(*) FROM results WHERE point_id NOT IN (SELECT id FROM points)",
             "results without a point"),
            ("SELECT COUNT(*) FROM runs r WHERE NOT EXISTS "
             "(SELECT 1 FROM shards s WHERE s.run_id = r.id)", "runs without a shard"),
        )  # fmt: skip
        for sql, what in checks:
            row = self.one(sql)
            if row and row[0]:
                problems.append(f"{row[0]} {what}")
        return problems
