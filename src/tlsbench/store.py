"""The results store: one SQLite file, versioned with PRAGMA user_version.

Schema (version 3):

    runs(id, experiment, question, mode, repetitions, status, started_at, finished_at,
         environment JSON, experiment_text, commit_id, timeout,
         owner_pid, owner_host, heartbeat)   -- the runner executing it, while it runs
    points(id, run_id, name, variant, library, scenario, params JSON, build JSON,
           position)                      -- UNIQUE(run_id, variant, name)
    results(id, point_id, repetition, status, exit_code, signal, seconds, started_at,
            output JSON, stderr_tail)     -- UNIQUE(point_id, repetition)
    samples(result_id, series, unit, "values" JSON)

A result is one driver process: status is "ok", "unsupported" (the library cannot honour
the point: exit 3), or "failed" (any other exit, a signal or a timeout). Each result and
its samples are written in one transaction, so a crash at any moment leaves a consistent
database, and `tlsbench run --resume RUN` runs only what is missing or failed.

A run being executed has an owner (process id, host, heartbeat): a second runner refuses
it, and a run whose owner is gone (process dead, or no heartbeat for STALE_AFTER_S) reads
as "interrupted".

Migrations: one function per version step; opening a store migrates it in place.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import socket
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tlsbench.errors import UserError

SCHEMA_VERSION = 3
# A run's owner counts as gone when its heartbeat is older than this (it beats every few s).
STALE_AFTER_S = 60.0


def _script(db: sqlite3.Connection, script: str) -> None:
    """Runs statements one by one: executescript would commit the migration's transaction."""
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def _v1(db: sqlite3.Connection) -> None:
    _script(
        db,
        """
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
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
            id INTEGER PRIMARY KEY,
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
            id INTEGER PRIMARY KEY,
            point_id INTEGER NOT NULL REFERENCES points(id),
            repetition INTEGER NOT NULL,
            status TEXT NOT NULL,
            exit_code INTEGER,
            signal INTEGER,
            seconds REAL NOT NULL,
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


def _v2(db: sqlite3.Connection) -> None:
    """Version 2: the question an experiment answers and the tlsbench commit of a run."""
    _script(
        db,
        """
        ALTER TABLE runs ADD COLUMN question TEXT NOT NULL DEFAULT '';
        ALTER TABLE runs ADD COLUMN commit_id TEXT NOT NULL DEFAULT 'unknown';
        CREATE INDEX results_by_point ON results(point_id);
        """,
    )


def _v3(db: sqlite3.Connection) -> None:
    """Version 3: a run's timeout (resume uses it) and its owner (the runner executing it)."""
    _script(
        db,
        """
        ALTER TABLE runs ADD COLUMN timeout REAL;
        ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
        ALTER TABLE runs ADD COLUMN owner_host TEXT;
        ALTER TABLE runs ADD COLUMN heartbeat TEXT;
        """,
    )


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _v1, 2: _v2, 3: _v3}


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


SQLITE_HEADER = b"SQLite format 3\x00"
TABLES = {"runs", "points", "results", "samples"}


class Store:
    """The results store. `readonly=True` (runs, report, compare) never creates, migrates
    or changes anything, not even the journal mode; opening for writing migrates."""

    def __init__(self, path: Path, readonly: bool = False) -> None:
        self.path = path
        self.readonly = readonly
        self._check_path()
        try:
            if readonly:
                self.db = self._connect_readonly()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
        except (OSError, sqlite3.Error) as exc:
            raise UserError(f"cannot open the results store {path}: {exc}", 2) from exc
        self.db.row_factory = sqlite3.Row
        try:
            self._check_ours()
            self.db.execute("PRAGMA foreign_keys = ON")
            if readonly:
                self._check_readable_version()
            else:
                self.db.execute("PRAGMA journal_mode = WAL")
                self.migrate()
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise UserError(f"{path} is not a usable tlsbench results store: {exc}", 2) from exc
        except UserError:
            self.db.close()
            raise

    def _connect_readonly(self) -> sqlite3.Connection:
        """A read-only connection, also where SQLite cannot create its -shm file.

        A store is kept in WAL mode; reading one needs its -shm file, which SQLite cannot
        create in a read-only folder (a read-only mount, an archive copy). A store closed
        cleanly has no -wal file, so nothing can change it there: it is opened as immutable.
        """
        uri = self.path.resolve().as_uri()
        db = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None, timeout=30)
        try:
            db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return db
        except sqlite3.OperationalError:
            db.close()
            if os.access(self.path.parent, os.W_OK):
                raise
        wal = self.path.with_name(self.path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise UserError(
                f"{self.path} was not closed cleanly (its {wal.name} file holds results) and "
                f"its folder {self.path.parent} is read-only, so SQLite cannot read it there; "
                "copy the store with its -wal file to a writable folder and read it there"
            )
        return sqlite3.connect(
            f"{uri}?mode=ro&immutable=1", uri=True, isolation_level=None, timeout=30
        )

    def _check_path(self) -> None:
        """What can be told from the file system, before SQLite creates anything."""
        path = self.path
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
        if path.stat().st_size >= 100:  # SQLite's header; a store being created is shorter
            with path.open("rb") as f:
                if f.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
                    raise UserError(
                        f"--db {path} is not an SQLite database; choose another file "
                        "(tlsbench creates a new store where none exists)"
                    )
        if not self.readonly and not (
            os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)
        ):
            raise UserError(
                f"--db {path} is read-only (the file or its folder {path.parent}); make both "
                "writable or choose another --db. Reading (runs, report, compare) works as is."
            )

    def _check_ours(self) -> None:
        """A SQLite file written by something else is refused before anything is added."""
        tables = {
            r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if tables and not tables >= TABLES:
            raise UserError(
                f"--db {self.path} is an SQLite database but not a tlsbench results store "
                f"(its tables: {', '.join(sorted(tables))}); choose another file"
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

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def version(self) -> int:
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

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
                db.execute(f"PRAGMA user_version = {step}")

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
    ) -> int:
        with self.transaction() as db:
            cur = db.execute(
                "INSERT INTO runs (experiment, question, mode, repetitions, status, started_at,"
                " environment, experiment_text, commit_id, timeout, owner_pid, owner_host,"
                " heartbeat) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (experiment, question, mode, repetitions, "running", now(),
                 json.dumps(environment), experiment_text, commit_id, timeout,
                 os.getpid(), socket.gethostname(), now()),
            )  # fmt: skip
            assert cur.lastrowid is not None
            return cur.lastrowid

    # -- ownership --------------------------------------------------------------------------

    @staticmethod
    def owner_alive(row: sqlite3.Row) -> bool:
        """Whether the runner that owns a run still executes it."""
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

    def status_of(self, row: sqlite3.Row) -> str:
        """The stored status, except that a "running" run without a live owner is
        "interrupted"."""
        if row["status"] == "running" and not self.owner_alive(row):
            return "interrupted"
        return str(row["status"])

    def claim(self, run_id: int) -> None:
        """Makes this process the run's owner, or refuses if a live runner owns it."""
        with self.transaction() as db:
            row = db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row["owner_pid"] == os.getpid() and row["owner_host"] == socket.gethostname():
                pass
            elif row["status"] == "running" and self.owner_alive(row):
                raise UserError(
                    f"run {run_id} is being executed by process {row['owner_pid']} on "
                    f"{row['owner_host']} (last heartbeat {row['heartbeat']}); wait for it or "
                    "stop it (Ctrl-C / kill) before resuming",
                    1,
                )
            db.execute(
                "UPDATE runs SET status = 'running', finished_at = NULL, owner_pid = ?, "
                "owner_host = ?, heartbeat = ? WHERE id = ?",
                (os.getpid(), socket.gethostname(), now(), run_id),
            )

    def heartbeat(self, run_id: int) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE runs SET heartbeat = ? WHERE id = ? AND owner_pid = ? AND owner_host = ?",
                (now(), run_id, os.getpid(), socket.gethostname()),
            )

    def add_points(self, run_id: int, points: list[dict[str, Any]]) -> None:
        """Registers the run's points (name, variant, library, scenario, params, build)."""
        with self.transaction() as db:
            for position, p in enumerate(points):
                db.execute(
                    "INSERT INTO points (run_id, name, variant, library, scenario, params, "
                    "build, position) VALUES (?,?,?,?,?,?,?,?)",
                    (run_id, p["name"], p["variant"], p["library"], p["scenario"],
                     json.dumps(p["params"], sort_keys=True), json.dumps(p["build"]), position),
                )  # fmt: skip

    def finish_run(self, run_id: int, status: str) -> None:
        """Sets the final status ("complete", "failed", "interrupted") and drops the owner."""
        with self.transaction() as db:
            db.execute(
                "UPDATE runs SET status = ?, finished_at = ?, owner_pid = NULL, "
                "owner_host = NULL, heartbeat = NULL WHERE id = ?",
                (status, now(), run_id),
            )

    def run(self, run_id: int | str) -> sqlite3.Row:
        if run_id == "latest":
            row = self.db.execute("SELECT * FROM runs ORDER BY id DESC LIMIT 1").fetchone()
            if row is None:
                raise UserError(f"{self.path} holds no run yet; start one with `tlsbench run`")
            return row
        try:
            number = int(run_id)
        except ValueError:
            raise UserError(f"a run is a number or 'latest', not {run_id!r}") from None
        row = self.db.execute("SELECT * FROM runs WHERE id = ?", (number,)).fetchone()
        if row is None:
            raise UserError(f"no run {number} in {self.path}; `tlsbench runs` lists them")
        return row

    def runs(self) -> list[sqlite3.Row]:
        return list(self.db.execute("SELECT * FROM runs ORDER BY id"))

    def points(self, run_id: int) -> list[Point]:
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
            )
            for r in self.db.execute(
                "SELECT * FROM points WHERE run_id = ? ORDER BY position", (run_id,)
            )
        ]

    # -- results ----------------------------------------------------------------------------

    def done_repetitions(self, point_id: int) -> set[int]:
        """Repetitions with a final result: ok or unsupported (a failed one is run again)."""
        rows = self.db.execute(
            "SELECT repetition FROM results WHERE point_id = ? AND status IN ('ok', 'unsupported')",
            (point_id,),
        )
        return {r[0] for r in rows}

    def failed_count(self, run_id: int) -> int:
        return int(
            self.db.execute(
                "SELECT COUNT(*) FROM results r JOIN points p ON p.id = r.point_id "
                "WHERE p.run_id = ? AND r.status = 'failed'",
                (run_id,),
            ).fetchone()[0]
        )

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
            ).fetchone()
            if old is not None:
                db.execute("DELETE FROM samples WHERE result_id = ?", (old[0],))
                db.execute("DELETE FROM results WHERE id = ?", (old[0],))
            cur = db.execute(
                "INSERT INTO results (point_id, repetition, status, exit_code, signal, seconds,"
                " started_at, output, stderr_tail) VALUES (?,?,?,?,?,?,?,?,?)",
                (point_id, repetition, status, exit_code, signal, seconds, started_at,
                 json.dumps(output) if output is not None else None, stderr_tail),
            )  # fmt: skip
            for series, values in samples.items():
                db.execute(
                    'INSERT INTO samples (result_id, series, unit, "values") VALUES (?,?,?,?)',
                    (cur.lastrowid, series, units.get(series, ""), json.dumps(values)),
                )

    def results(self, point_id: int) -> list[sqlite3.Row]:
        return list(
            self.db.execute(
                "SELECT * FROM results WHERE point_id = ? ORDER BY repetition", (point_id,)
            )
        )

    def samples(self, point_id: int, series: str) -> list[float]:
        """All samples of one series of a point, across its successful repetitions."""
        values: list[float] = []
        for row in self.db.execute(
            'SELECT s."values" FROM samples s JOIN results r ON r.id = s.result_id '
            "WHERE r.point_id = ? AND s.series = ? AND r.status = 'ok' ORDER BY r.repetition",
            (point_id, series),
        ):
            values.extend(json.loads(row[0]))
        return values

    def samples_by_repetition(self, point_id: int, series: str) -> list[list[float]]:
        """The samples of one series of a point, one list per successful repetition (the
        process is the statistical unit: see tlsbench.stats)."""
        return [
            json.loads(row[0])
            for row in self.db.execute(
                'SELECT s."values" FROM samples s JOIN results r ON r.id = s.result_id '
                "WHERE r.point_id = ? AND s.series = ? AND r.status = 'ok' "
                "ORDER BY r.repetition",
                (point_id, series),
            )
        ]

    def samples_by_result(self, point_id: int) -> dict[int, dict[str, list[float]]]:
        """The samples of a point's successful repetitions: result id -> series -> values."""
        found: dict[int, dict[str, list[float]]] = {}
        for result_id, series, values in self.db.execute(
            'SELECT r.id, s.series, s."values" FROM samples s JOIN results r '
            "ON r.id = s.result_id WHERE r.point_id = ? AND r.status = 'ok'",
            (point_id,),
        ):
            found.setdefault(result_id, {})[series] = json.loads(values)
        return found

    def series_names(self, point_id: int) -> list[str]:
        rows = self.db.execute(
            "SELECT DISTINCT s.series FROM samples s JOIN results r ON r.id = s.result_id "
            "WHERE r.point_id = ? ORDER BY s.series",
            (point_id,),
        )
        return [r[0] for r in rows]

    def check_consistent(self) -> list[str]:
        """Problems a crash could have left (none, by construction); used by the tests."""
        problems = [f"integrity: {r[0]}" for r in self.db.execute("PRAGMA integrity_check")]
        problems = [p for p in problems if p != "integrity: ok"]
        orphans = self.db.execute(
            "SELECT COUNT(*) FROM samples WHERE result_id NOT IN (SELECT id FROM results)"
        ).fetchone()[0]
        if orphans:
            problems.append(f"{orphans} sample rows without a result")
        empty_ok = self.db.execute(
            "SELECT COUNT(*) FROM results r WHERE r.status = 'ok' AND r.output IS NULL"
        ).fetchone()[0]
        if empty_ok:
            problems.append(f"{empty_ok} ok results without output")
        return problems
