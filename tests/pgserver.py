"""A throw-away PostgreSQL server for the tests: Debian's `postgresql` package, a cluster
made with initdb in a temporary folder, listening on a Unix socket in that folder only (no
TCP), stopped and removed at the end.

initdb and postgres refuse to run as root; as root, they run as the `postgres` system user
the Debian package creates (or `nobody`), through runuser, in a folder that user owns.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

SUPERUSER = "tlsbench"
START_TIMEOUT_S = 120


def server_bin() -> Path | None:
    """The newest installed server's bin folder (Debian: /usr/lib/postgresql/VERSION/bin)."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return found[-1].parent if found else None


def missing_reason() -> str | None:
    if server_bin() is None:
        return (
            "PostgreSQL's server is not installed (Debian package postgresql: "
            "`apt-get install postgresql`, or `make deps`)"
        )
    if os.geteuid() == 0 and _unprivileged_user() is None:
        return "running as root and neither a postgres nor a nobody user exists to run the server"
    return None


def _unprivileged_user() -> str | None:
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    return None


class Server:
    """One running cluster; `database()` makes a new empty database and returns its URL."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="tlsbench-pg-"))
        self.user = _unprivileged_user() if os.geteuid() == 0 else None
        self._counter = itertools.count(1)
        self.proc: subprocess.Popen[bytes] | None = None
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chown(self.folder, entry.pw_uid, entry.pw_gid)
        self.folder.chmod(0o755)  # the socket is reached through it

    def _as_server_user(self, command: list[str]) -> list[str]:
        return ["runuser", "-u", self.user, "--", *command] if self.user else command

    def start(self) -> None:
        bin_dir = server_bin()
        assert bin_dir is not None
        data = self.folder / "data"
        env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
        subprocess.run(
            self._as_server_user([str(bin_dir / "initdb"), "-D", str(data), "-U", SUPERUSER,
                                  "--auth=trust", "--encoding=UTF8", "--no-locale",
                                  "--no-sync"]),
            check=True, capture_output=True, env=env,
        )  # fmt: skip
        log = (self.folder / "server.log").open("wb")
        self.proc = subprocess.Popen(
            self._as_server_user([str(bin_dir / "postgres"), "-D", str(data),
                                  "-k", str(self.folder), "-c", "listen_addresses=",
                                  "-c", "max_connections=200", "-F"]),
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited: {(self.folder / 'server.log').read_text()}")
            ready = subprocess.run([str(bin_dir / "pg_isready"), "-h", str(self.folder),
                                    "-U", SUPERUSER], capture_output=True)  # fmt: skip
            if ready.returncode == 0:
                return
            time.sleep(0.2)
        raise RuntimeError("postgres did not become ready")

    def url(self, database: str) -> str:
        return f"postgresql://{SUPERUSER}@/{database}?host={self.folder}"

    def database(self) -> str:
        """A new, empty database: its URL."""
        import psycopg

        name = f"store{next(self._counter)}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
        return self.url(name)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            # SIGINT is PostgreSQL's fast shutdown: clients are disconnected, nothing waits.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def running() -> Iterator[Server]:
    server = Server()
    try:
        server.start()
        yield server
    finally:
        server.stop()
