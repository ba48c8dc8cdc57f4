"""Task records in the workers' store, so any worker answers ``tasks/get``, ``tasks/result`` and ``tasks/cancel``.

One row per task: its record's JSON, kept until the task's retention ends (``created_at +
ttl_ms``, wall clock, as the record says). A finished record is final (an update over it does
nothing, so a late progress report never undoes a cancellation). A cancellation asked on a worker
that does not run the task sets the row's ``cancel`` mark, which the running worker reads when it
renews its lease. Each final write appends the task id to ``task_ends``, which every worker polls
(``watch_ends``) to wake its ``tasks/result`` waiters; at most ``MAX_ENDS`` ends, each kept
``ENDS_KEPT_SECONDS``. A store that fails (locked past its busy timeout, a broken file) raises
``TaskStoreUnavailable``, as the Redis one does.

Bounded as the in-process store is: ``max_count`` records and ``max_bytes`` of their JSON; when
full, expired records go first, then the oldest finished ones, and a new task is refused only when
every record left is still running.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterator

import anyio

from apcore_mcp.replicas.machine.store import MachineStore
from apcore_mcp.tasks.records import TaskRecord, TaskStoreFull, TaskStoreUnavailable

ENDS_POLL_SECONDS = 0.2
ENDS_KEPT_SECONDS = 60.0
"""How long an end stays in ``task_ends`` (a waiter that missed it looks at the record again anyway)."""
MAX_ENDS = 10_000
ENDS_PER_POLL = 1_000


class MachineTaskStore:
    """``TaskStore`` shared by the workers of one machine (see the module doc)."""

    shared = True

    def __init__(
        self, store: MachineStore, *, max_count: int, max_bytes: int, clock: Callable[[], float] = time.time
    ) -> None:
        self.store = store
        self.max_count = max_count
        self.max_bytes = max_bytes
        self._clock = clock

    def _encoded(self, record: TaskRecord) -> bytes:
        data = record.dumps()
        if len(data) > self.max_bytes:
            raise TaskStoreFull(f"a task record of {len(data)} bytes exceeds task_max_bytes ({self.max_bytes})")
        return data

    async def create(self, record: TaskRecord) -> None:
        data = self._encoded(record)
        with _unavailable(), self.store.writing() as db:
            self._make_room(len(data))
            db.execute(
                "INSERT OR IGNORE INTO tasks (id, record, size, expires, final) VALUES (?, ?, ?, ?, ?)",
                (record.task_id, data, len(data), record.expires_at, int(record.terminal)),
            )

    def _make_room(self, size: int, replacing: str = "") -> None:
        """Room for a record of ``size`` bytes (in place of ``replacing``'s), or ``TaskStoreFull``."""
        db = self.store.connection

        def full() -> bool:
            count, used = db.execute(
                "SELECT count(*), coalesce(sum(size), 0) FROM tasks WHERE id != ?", (replacing,)
            ).fetchone()
            return bool(count + 1 > self.max_count or used + size > self.max_bytes)

        if not full():
            return
        db.execute("DELETE FROM tasks WHERE expires <= ?", (self._clock(),))
        finished = [
            row[0]
            for row in db.execute("SELECT id FROM tasks WHERE final = 1 AND id != ? ORDER BY rowid", (replacing,))
        ]
        for task_id in finished:
            if not full():
                break
            db.execute("DELETE FROM tasks WHERE id = ?", (task_id,))
        if full():
            raise TaskStoreFull("too many tasks are running; try again later")

    async def get(self, task_id: str) -> TaskRecord | None:
        with _unavailable():
            data = self.store.one("SELECT record FROM tasks WHERE id = ? AND expires > ?", (task_id, self._clock()))
        return None if data is None else TaskRecord.loads(data)

    async def put(self, record: TaskRecord) -> None:
        self._write(record, recreate=False)

    async def finish(self, record: TaskRecord) -> None:
        self._write(record, recreate=True)

    def _write(self, record: TaskRecord, *, recreate: bool) -> None:
        data = self._encoded(record)
        with _unavailable(), self.store.writing() as db:
            final = self.store.one(
                "SELECT final FROM tasks WHERE id = ? AND expires > ?", (record.task_id, self._clock())
            )
            if final == 1:
                return  # a finished task's record is final
            if final is None:
                if not recreate or record.expires_at <= self._clock():
                    return  # expired (or never here): it stays gone
                db.execute("DELETE FROM tasks WHERE id = ?", (record.task_id,))
                self._make_room(len(data))
                db.execute(
                    "INSERT INTO tasks (id, record, size, expires, final) VALUES (?, ?, ?, ?, ?)",
                    (record.task_id, data, len(data), record.expires_at, int(record.terminal)),
                )
            else:
                self._make_room(len(data), replacing=record.task_id)
                db.execute(
                    "UPDATE tasks SET record = ?, size = ?, final = ? WHERE id = ?",
                    (data, len(data), int(record.terminal), record.task_id),
                )
            if record.terminal:
                now = self._clock()
                db.execute("INSERT INTO task_ends (id, at) VALUES (?, ?)", (record.task_id, now))
                db.execute(
                    "DELETE FROM task_ends WHERE at < ? OR seq <= last_insert_rowid() - ?",
                    (now - ENDS_KEPT_SECONDS, MAX_ENDS),
                )

    async def watch_ends(self, on_end: Callable[[str], None]) -> None:
        seen: int | None = None
        while True:
            # A failed look is retried at the next poll (the waiters also look again now and then).
            with contextlib.suppress(sqlite3.Error):
                if seen is None:
                    seen = int(self.store.one("SELECT coalesce(max(seq), 0) FROM task_ends"))
                seen = self._ends_after(seen, on_end)
            await anyio.sleep(ENDS_POLL_SECONDS)

    def _ends_after(self, seen: int, on_end: Callable[[str], None]) -> int:
        """Call ``on_end`` for the ends after ``seq`` ``seen`` (at most ``ENDS_PER_POLL``); the last seen."""
        rows = self.store.connection.execute(
            "SELECT seq, id FROM task_ends WHERE seq > ? ORDER BY seq LIMIT ?", (seen, ENDS_PER_POLL)
        ).fetchall()
        for seq, task_id in rows:
            seen = int(seq)
            on_end(str(task_id))
        return seen

    async def request_cancel(self, task_id: str) -> None:
        with _unavailable(), self.store.writing() as db:
            db.execute("UPDATE tasks SET cancel = 1 WHERE id = ? AND expires > ?", (task_id, self._clock()))

    async def cancel_requested(self, task_id: str) -> bool:
        with _unavailable():
            return bool(self.store.one("SELECT cancel FROM tasks WHERE id = ?", (task_id,)))


@contextlib.contextmanager
def _unavailable() -> Iterator[None]:
    """A failing store (locked past its busy timeout, a broken file) as ``TaskStoreUnavailable``."""
    try:
        yield
    except sqlite3.Error as exc:
        raise TaskStoreUnavailable(f"the workers' task store failed: {exc}") from exc
