"""The workers' store: one SQLite database in a directory only this user can enter.

Every worker of a supervisor opens the same file (``private_directory(supervisor_key)``); SQLite's
own locking makes each write transaction atomic across the processes (``BEGIN IMMEDIATE`` takes
the write lock first, so a read-then-write cannot interleave with another worker's). WAL lets
readers run beside a writer. ``synchronous=OFF``: the state lives as long as the workers do (a
power cut ends them too), so nothing is worth an fsync per call.

Calls are synchronous, on the event loop: a statement on a local file takes microseconds, and a
writer waits for another's lock at most ``BUSY_TIMEOUT_MS`` (transactions here are a few
statements long). Each process opens its own connection; a connection is never shared across
processes or threads.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from apcore_mcp._hosts import supervisor_gone

DATABASE = "state.sqlite3"
BUSY_TIMEOUT_MS = 5000
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS firsts (name TEXT PRIMARY KEY)",
    "CREATE TABLE IF NOT EXISTS buckets (key TEXT PRIMARY KEY, tokens REAL NOT NULL, at REAL NOT NULL,"
    " expires REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS approvals (digest BLOB PRIMARY KEY, expires REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS tasks (id TEXT PRIMARY KEY, record BLOB NOT NULL, size INTEGER NOT NULL,"
    " expires REAL NOT NULL, final INTEGER NOT NULL DEFAULT 0, cancel INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS task_ends (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, at REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS metrics (pid INTEGER PRIMARY KEY, at REAL NOT NULL, text BLOB NOT NULL)",
)


class MachineStore:
    """One process's connection to the workers' database."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self.connection = connection
        self.path = path

    @classmethod
    def open(cls, directory: Path) -> MachineStore:
        """Open (creating, readable by this user only) the database in ``directory``."""
        path = directory / DATABASE
        connection = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            # Private by its directory (0700); the mode says so too. Never open and close a file
            # descriptor of the database here: closing one drops every SQLite lock this process
            # holds on it (POSIX locks are per process), and the other workers then see another file.
            os.chmod(path, 0o600)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=OFF")
            store = cls(connection, path)
            with store.writing():  # N workers starting at once: one creates, the others find
                for statement in SCHEMA:
                    connection.execute(statement)
        except BaseException:
            connection.close()
            raise
        return store

    @contextlib.contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, atomic across the workers (rolled back if the block raises)."""
        self.connection.execute("BEGIN IMMEDIATE")
        try:
            yield self.connection
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise
        self.connection.execute("COMMIT")

    def one(self, sql: str, parameters: tuple[Any, ...] = ()) -> Any:
        """The first column of the first row ``sql`` reads (``None`` when there is none)."""
        row = self.connection.execute(sql, parameters).fetchone()
        return None if row is None else row[0]

    def shared_secret(self, name: str, make: Callable[[], str]) -> str:
        """The value of ``name``: the one the first process to ask made with ``make()``."""
        with self.writing() as db:
            db.execute("INSERT OR IGNORE INTO secrets (name, value) VALUES (?, ?)", (name, make()))
            return str(self.one("SELECT value FROM secrets WHERE name = ?", (name,)))

    def first(self, name: str) -> bool:
        """Whether this is the first call naming ``name`` of all the workers (once per store)."""
        with self.writing() as db:
            return db.execute("INSERT OR IGNORE INTO firsts (name) VALUES (?)", (name,)).rowcount == 1

    def close(self) -> None:
        self.connection.close()


def private_directory(key: str) -> Path:
    """``<runtime dir>/apcore-mcp-<uid>/<key>``, created with mode 0700.

    The runtime directory is ``$XDG_RUNTIME_DIR`` (a tmpfs of this user) when it exists, else the
    temporary directory. The directories of supervisors that have ended go on the way. Both levels
    must belong to this user and be closed to everyone else, or ``PermissionError`` says which is
    not: another user could otherwise read the secrets or plant a database.
    """
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) if runtime and Path(runtime).is_dir() else Path(tempfile.gettempdir())
    root = _private(base / f"apcore-mcp-{os.getuid()}")
    for stale in [path for path in root.iterdir() if path.name != key and supervisor_gone(path.name)]:
        shutil.rmtree(stale, ignore_errors=True)  # a supervisor that ended without removing it (uvicorn's)
    return _private(root / key)


def _private(path: Path) -> Path:
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise PermissionError(f"{path} is not a directory of this user: the workers' state cannot be kept there")
    if info.st_mode & 0o077:
        raise PermissionError(f"{path} is open to other users (mode {stat.S_IMODE(info.st_mode):o}); it must be 0700")
    return path
