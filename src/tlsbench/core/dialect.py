"""The two database engines the results store runs on, behind one small interface.

`--db` is an SQLite file (one machine) or a PostgreSQL URL (`postgresql://...`, many
machines writing one store). The store (store.py) writes its SQL once, with `?` parameters
and the types both engines know; this module holds the few things that differ:

- connecting, read-only included: SQLite opens the file with mode=ro; PostgreSQL sets the
  session's transactions READ ONLY, so that the server itself refuses any write;
- the write transaction: SQLite's BEGIN IMMEDIATE takes the database's one write lock;
  PostgreSQL takes a transaction-scoped advisory lock on the store, so that writers are
  serialised the same way on both engines (a write is a handful of rows: one result and its
  samples, a heartbeat; waiting for another writer costs milliseconds), and check-then-write
  steps (claiming a run, joining a sharded run, migrating) need no engine-specific locking;
- the schema version: PRAGMA user_version, or a one-row table tlsbench_schema;
- the auto-numbered id column and the double-precision type, written {id} and {real} in the
  migrations' DDL.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from tlsbench.core.errors import UserError

# The environment variable that names the store when --db is not given.
DB_ENV = "TLSBENCH_DB"
DEFAULT_DB = "results/tlsbench.db"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
# The advisory lock every PostgreSQL write transaction takes (any constant; "tlsb").
PG_WRITE_LOCK = 0x746C7362


class Row(Protocol):
    """A result row: by column name or position (sqlite3.Row, PgRow)."""

    def __getitem__(self, key: Any) -> Any: ...

    def keys(self) -> list[str]: ...

    def __iter__(self) -> Iterator[Any]: ...


def is_postgres(target: str) -> bool:
    return target.startswith(POSTGRES_SCHEMES)


def db_target(given: str | None) -> str:
    """What --db names: the option, else $TLSBENCH_DB, else the default SQLite file."""
    return given or os.environ.get(DB_ENV) or DEFAULT_DB


def redacted(url: str) -> str:
    """A PostgreSQL URL as messages show it: never with its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit((parts.scheme, user + host, parts.path, parts.query, parts.fragment))


class Database(Protocol):
    """One connection to a store, in autocommit mode: a write is an explicit transaction."""

    engine: str  # "sqlite" or "postgresql"
    location: str  # for messages (a path, or a URL without its password)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    def insert(self, sql: str, params: Sequence[Any]) -> int: ...

    def begin_write(self) -> None: ...

    def commit(self) -> None: ...

    def rollback(self) -> None: ...

    def version(self) -> int: ...

    def set_version(self, version: int) -> None: ...

    def tables(self) -> set[str]: ...

    def ddl(self, script: str) -> None: ...

    def integrity_problems(self) -> list[str]: ...

    def close(self) -> None: ...


# -- SQLite ---------------------------------------------------------------------------------


class SqliteDatabase:
    engine = "sqlite"

    def __init__(self, path: Path, readonly: bool) -> None:
        self.path = path
        self.location = str(path)
        if readonly:
            self.db = self._connect_readonly()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
        self.db.row_factory = sqlite3.Row

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

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self.db.execute(sql, tuple(params)).fetchall()

    def insert(self, sql: str, params: Sequence[Any]) -> int:
        row = self.db.execute(f"{sql} RETURNING id", tuple(params)).fetchone()
        return int(row[0])

    def begin_write(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.db.execute("COMMIT")

    def rollback(self) -> None:
        self.db.execute("ROLLBACK")

    def version(self) -> int:
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    def set_version(self, version: int) -> None:
        self.db.execute(f"PRAGMA user_version = {int(version)}")

    def tables(self) -> set[str]:
        rows = self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {r[0] for r in rows}

    def ddl(self, script: str) -> None:
        """Runs statements one by one (executescript would commit the migration's
        transaction)."""
        script = script.replace("{id}", "INTEGER PRIMARY KEY").replace("{real}", "REAL")
        for statement in script.split(";"):
            if statement.strip():
                self.db.execute(statement)

    def integrity_problems(self) -> list[str]:
        found = [f"integrity: {r[0]}" for r in self.db.execute("PRAGMA integrity_check")]
        return [p for p in found if p != "integrity: ok"]

    def close(self) -> None:
        self.db.close()


# -- PostgreSQL -----------------------------------------------------------------------------


class PgRow(tuple[Any, ...]):
    """A row readable by column name or position, as sqlite3.Row is."""

    names: tuple[str, ...] = ()

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self.names.index(key))
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self.names)


def _pg_rows(cursor: Any) -> Any:
    """A psycopg row factory making PgRows."""
    names = tuple(c.name for c in cursor.description or ())
    kind = type("Row", (PgRow,), {"names": names})
    return lambda values: kind(values)


class PostgresDatabase:
    engine = "postgresql"

    def __init__(self, url: str, readonly: bool) -> None:
        import psycopg

        self.location = redacted(url)
        self._psycopg = psycopg
        try:
            self.db = psycopg.connect(url, autocommit=True, row_factory=_pg_rows,
                                      connect_timeout=30)  # fmt: skip
        except psycopg.Error as exc:
            raise UserError(
                f"cannot connect to the results store {self.location}: "
                f"{str(exc).strip() or type(exc).__name__}; check the URL, that the server "
                "runs and that the user may connect",
                1,
            ) from exc
        if readonly:
            # The server refuses every write of this session, whatever a bug might try.
            self.db.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")

    @staticmethod
    def _sql(sql: str) -> str:
        """The store's SQL with psycopg's parameter markers (no literal ? or % in it)."""
        return sql.replace("%", "%%").replace("?", "%s")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        cur = self.db.execute(self._sql(sql), tuple(params))
        return cur.fetchall() if cur.description else []

    def insert(self, sql: str, params: Sequence[Any]) -> int:
        cur = self.db.execute(self._sql(f"{sql} RETURNING id"), tuple(params))
        row = cur.fetchone()
        assert row is not None
        return int(row[0])

    def begin_write(self) -> None:
        self.db.execute("BEGIN")
        self.db.execute(f"SELECT pg_advisory_xact_lock({PG_WRITE_LOCK})")

    def commit(self) -> None:
        self.db.execute("COMMIT")

    def rollback(self) -> None:
        self.db.execute("ROLLBACK")

    def version(self) -> int:
        if "tlsbench_schema" not in self._all_tables():
            return 0
        row = self.db.execute("SELECT version FROM tlsbench_schema").fetchone()
        return int(row[0]) if row else 0

    def set_version(self, version: int) -> None:
        self.db.execute("CREATE TABLE IF NOT EXISTS tlsbench_schema (version INTEGER NOT NULL)")
        self.db.execute("DELETE FROM tlsbench_schema")
        self.db.execute("INSERT INTO tlsbench_schema (version) VALUES (%s)", (int(version),))

    def _all_tables(self) -> set[str]:
        rows = self.db.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
        ).fetchall()
        return {r[0] for r in rows}

    def tables(self) -> set[str]:
        return self._all_tables() - {"tlsbench_schema"}

    def ddl(self, script: str) -> None:
        script = script.replace(
            "{id}", "INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
        ).replace("{real}", "DOUBLE PRECISION")
        for statement in script.split(";"):
            if statement.strip():
                self.db.execute(statement)

    def integrity_problems(self) -> list[str]:
        return []  # the server keeps its pages consistent; the store checks its own rows

    def close(self) -> None:
        self.db.close()


def errors() -> tuple[type[Exception], ...]:
    """The exceptions either engine raises for a database problem."""
    import psycopg

    return (sqlite3.Error, psycopg.Error)


def open_database(target: str, readonly: bool) -> Database:
    """The store's database: a PostgreSQL URL or an SQLite file (checked beforehand by the
    store, which knows what to say about a wrong file)."""
    if is_postgres(target):
        return PostgresDatabase(target, readonly)
    return SqliteDatabase(Path(target), readonly)
