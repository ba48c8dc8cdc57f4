"""The task records of one process: a dict bounded in count and bytes, each record gone after its TTL."""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio

from apcore_mcp.tasks.records import TaskRecord, TaskStoreFull


class MemoryTaskStore:
    """``TaskStore`` in this process's memory (the default; replicas use ``replicas.tasks.RedisTaskStore``).

    Full (``max_count`` records or ``max_bytes`` of their JSON): expired records go first, then
    the oldest finished ones; a new task is refused only when every record left is still running.
    """

    shared = False

    def __init__(self, *, max_count: int, max_bytes: int, clock: Callable[[], float] = time.time) -> None:
        self.max_count = max_count
        self.max_bytes = max_bytes
        self._clock = clock
        self._records: dict[str, tuple[TaskRecord, int]] = {}  # insertion order: oldest first
        self._cancels: set[str] = set()
        self._bytes = 0

    @property
    def bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._records)

    async def create(self, record: TaskRecord) -> None:
        self._store(record)

    async def get(self, task_id: str) -> TaskRecord | None:
        kept = self._records.get(task_id)
        if kept is None:
            return None
        if kept[0].expires_at <= self._clock():
            self._drop(task_id)
            return None
        return TaskRecord.loads(kept[0].dumps())  # a copy: callers cannot change what is kept

    async def put(self, record: TaskRecord) -> None:
        kept = self._records.get(record.task_id)
        if kept is not None and not kept[0].terminal:  # a finished task's record is final
            self._store(record)

    async def finish(self, record: TaskRecord) -> None:
        await self.put(record)  # a record missing here has expired: it stays gone

    async def watch_ends(self, on_end: Callable[[str], None]) -> None:
        await anyio.sleep_forever()  # one process: its runner sees every end itself

    async def request_cancel(self, task_id: str) -> None:
        if task_id in self._records:
            self._cancels.add(task_id)

    async def cancel_requested(self, task_id: str) -> bool:
        return task_id in self._cancels

    def _store(self, record: TaskRecord) -> None:
        size = len(record.dumps())
        if size > self.max_bytes:
            raise TaskStoreFull(f"a task record of {size} bytes exceeds task_max_bytes ({self.max_bytes})")
        old = self._records.pop(record.task_id, None)
        if old is not None:
            self._bytes -= old[1]
        self._make_room(size)
        self._records[record.task_id] = (TaskRecord.loads(record.dumps()), size)
        self._bytes += size

    def _make_room(self, size: int) -> None:
        def full() -> bool:
            return len(self._records) + 1 > self.max_count or self._bytes + size > self.max_bytes

        if not full():
            return
        now = self._clock()
        for task_id in [t for t, (r, _) in self._records.items() if r.expires_at <= now]:
            self._drop(task_id)
        for task_id in [t for t, (r, _) in self._records.items() if r.terminal]:
            if not full():
                break
            self._drop(task_id)
        if full():
            raise TaskStoreFull("too many tasks are running; try again later")

    def _drop(self, task_id: str) -> None:
        _record, size = self._records.pop(task_id)
        self._bytes -= size
        self._cancels.discard(task_id)
