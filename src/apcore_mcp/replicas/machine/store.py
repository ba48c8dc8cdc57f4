"""The workers' store: one SQLite database in a directory only this user can enter.

Every worker of a supervisor opens the same file (``private_directory(supervisor_key)``); SQLite's
own locking makes each write transaction atomic across the processes (``BEGIN IMMEDIATE`` takes
the write lock first, so a read-then-write cannot interleave with another worker's). WAL lets
readers run beside a writer. ``synchronous=OFF``: the state lives as long as the workers do (a
power cut ends them too), so nothing is worth an fsync per call; a crash of one worker loses
nothing either (the WAL is in the kernel's page cache, which the others read).

Calls are synchronous, on the event loop, measured on this two-core machine: a write transaction
takes 9-17 us and a read 2-4 us on the loop, against 45-180 us through ``anyio.to_thread`` (the
thread hop costs ten times the work); two processes writing at once, 9 us median, 21 us p99, a
few ms at worst (SQLite's busy handler sleeping), and never more than ``BUSY_TIMEOUT_MS``.

A connection belongs to the process that opened it: a process forked from one holding a store
opens its own on first use (SQLite forbids using a connection across ``fork``) and never closes
the inherited one (closing its file descriptor would drop this process's POSIX locks).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from apcore_mcp._hosts import supervisor_gone

DATABASE = "state.sqlite3"
BUSY_TIMEOUT_MS = 5000
WAL_LIMIT_BYTES = 4 << 20
"""What the write-ahead log is truncated to after a checkpoint: the file stays small."""
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS firsts (name TEXT PRIMARY KEY)",
    "CREATE TABLE IF NOT EXISTS buckets (key TEXT PRIMARY KEY, tokens REAL NOT NULL, at REAL NOT NULL,"
    " expires REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS buckets_expires ON buckets (expires)",
    "CREATE TABLE IF NOT EXISTS approvals (digest BLOB PRIMARY KEY, expires REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS approvals_expires ON approvals (expires)",
    "CREATE TABLE IF NOT EXISTS tasks (id TEXT PRIMARY KEY, record BLOB NOT NULL, size INTEGER NOT NULL,"
    " expires REAL NOT NULL, final INTEGER NOT NULL DEFAULT 0, cancel INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS task_ends (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, at REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS person_approvals (id TEXT PRIMARY KEY, tool TEXT NOT NULL, digest TEXT NOT NULL,"
    " asked_by TEXT NOT NULL, arguments TEXT NOT NULL, expires_at REAL NOT NULL, claimed INTEGER NOT NULL,"
    " decision TEXT, decided_by TEXT NOT NULL, how TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS person_approvals_asked_by ON person_approvals (asked_by)",
    "CREATE TABLE IF NOT EXISTS metrics (pid INTEGER PRIMARY KEY, at REAL NOT NULL, text BLOB NOT NULL)",
)

_inherited: list[sqlite3.Connection] = []
"""Connections a forked process got from its parent: kept, never used, never closed (see the module doc)."""


class MachineStore:
    """One process's connection to the workers' database, opened in the process that uses it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = None
        self._pid = 0

    @classmethod
    def open(cls, directory: Path) -> MachineStore:
        """Open (creating, readable by this user only) the database in ``directory``.

        Raises:
            sqlite3.Error: it cannot be opened (a bad file, or locked past ``BUSY_TIMEOUT_MS``).
        """
        store = cls(directory / DATABASE)
        store.connection  # noqa: B018 - opened now, so that a bad directory fails at start
        return store

    @property
    def connection(self) -> sqlite3.Connection:
        """This process's connection (opened on first use in each process)."""
        if self._connection is None or self._pid != os.getpid():
            if self._connection is not None:
                _inherited.append(self._connection)
            self._connection, self._pid = _connect(self.path), os.getpid()
        return self._connection

    @contextlib.contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, atomic across the workers (rolled back if the block raises)."""
        db = self.connection
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def one(self, sql: str, parameters: tuple[Any, ...] = ()) -> Any:
        """The first column of the first row ``sql`` reads (``None`` when there is none)."""
        row = self.connection.execute(sql, parameters).fetchone()
        return None if row is None else row[0]

    def shared_secret(self, name: str, make: Callable[[], str]) -> str:
        """The value of ``name``: the one the first process to ask made with ``make()`` (never log it)."""
        with self.writing() as db:
            db.execute("INSERT OR IGNORE INTO secrets (name, value) VALUES (?, ?)", (name, make()))
            return str(self.one("SELECT value FROM secrets WHERE name = ?", (name,)))

    def first(self, name: str) -> bool:
        """Whether this is the first call naming ``name`` of all the workers (once per store)."""
        with self.writing() as db:
            return db.execute("INSERT OR IGNORE INTO firsts (name) VALUES (?)", (name,)).rowcount == 1

    def close(self) -> None:
        """Close this process's connection (one inherited from a parent process is left alone)."""
        if self._connection is not None and self._pid == os.getpid():
            self._connection.close()
        self._connection = None


def _connect(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        # Private by its directory (0700); the mode says so too (the WAL files take the same).
        # Never open and close a file descriptor of the database here: closing one drops every
        # SQLite lock this process holds on it (POSIX locks are per process), and the other
        # workers then see another file.
        os.chmod(path, 0o600)
        _to_wal(connection)
        connection.execute("PRAGMA synchronous=OFF")
        connection.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
        connection.execute("BEGIN IMMEDIATE")  # N workers starting at once: one creates, the others find
        for statement in SCHEMA:
            connection.execute(statement)
        connection.execute("COMMIT")
    except BaseException:
        connection.close()
        raise
    return connection


def _to_wal(connection: sqlite3.Connection) -> None:
    """Switch a new database to WAL, waiting out the other workers doing the same.

    Two connections converting one new file at once deadlock on its locks, and SQLite answers
    one of them "locked" at once instead of calling the busy handler: retried here, bounded.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.005)


def private_directory(key: str) -> Path:
    """``<runtime dir>/apcore-mcp-<uid>/<key>``, created with mode 0700.

    The runtime directory is ``$XDG_RUNTIME_DIR`` (a tmpfs of this user) when it exists, else the
    temporary directory. The directories of supervisors that have ended go on the way. Both levels
    must belong to this user and be closed to everyone else, or ``PermissionError`` says which is
    not: another user could otherwise read the secrets or plant a database.
    """
    root = _private(runtime_root())
    for stale in [path for path in root.iterdir() if path.name != key and supervisor_gone(path.name)]:
        shutil.rmtree(stale, ignore_errors=True)  # a supervisor that ended without removing it (uvicorn's)
    return _private(root / key)


def runtime_root() -> Path:
    """Where this user's workers keep their directories (``private_directory`` checks and makes it)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) if runtime and Path(runtime).is_dir() else Path(tempfile.gettempdir())
    return base / f"apcore-mcp-{os.getuid()}"


def _private(path: Path) -> Path:
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise PermissionError(f"{path} is not a directory of this user: the workers' state cannot be kept there")
    if info.st_mode & 0o077:
        raise PermissionError(f"{path} is open to other users (mode {stat.S_IMODE(info.st_mode):o}); it must be 0700")
    return path
