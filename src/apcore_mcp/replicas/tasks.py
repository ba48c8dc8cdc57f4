"""Task records in Redis, so any replica answers ``tasks/get`` and ``tasks/cancel``.

One key per task, ``<prefix>task:<id>``: the record's JSON, expiring with the task's retention
(``SET NX PX``). Updates keep that expiry and never overwrite a finished record (one Lua script,
atomic on the Redis server, so a cancellation is never undone by a late progress update). A
cancellation asked on another replica than the one running the work is a second key,
``<prefix>task:<id>:cancel``, which the running replica reads when it renews its lease.
A final record is published (the task id) on ``<prefix>task-ends``, in the same script, so
the ``tasks/result`` waiters on every replica wake at once; a task's final write also puts
back a record lost before its expiry (Redis restarted empty while the task ran).

Redis away: no fallback keeps the promise that every replica sees the task, so new tasks are
refused and ``tasks/get`` answers an error until Redis is back; a WARNING says so once.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from redis.exceptions import RedisError

from apcore_mcp.replicas.link import RedisLink
from apcore_mcp.tasks.records import TaskRecord, TaskStoreFull, TaskStoreUnavailable

USER = "tasks"
ENDS_CHANNEL = "task-ends"
WATCH_POLL_SECONDS = 1.0
RETRY_SECONDS = (0.2, 0.5, 1.0, 2.0, 5.0)
MAX_TASK_ID_BYTES = 128
FALLBACK = "tasks are not started and tasks/get answers an error"

# ARGV: the record, the ms left of its retention (0: a missing record stays missing), the
# channel and the task id to publish when the new record is final (the channel empty: never).
_WRITE = """
local current = redis.call('GET', KEYS[1])
if current then
  local ok, record = pcall(cjson.decode, current)
  if ok and (record.status == 'completed' or record.status == 'failed' or record.status == 'cancelled') then
    return 0
  end
  redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
elseif tonumber(ARGV[2]) > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
else
  return 0
end
if ARGV[3] ~= '' then redis.call('PUBLISH', ARGV[3], ARGV[4]) end
return 1
"""

_MARK_CANCEL = """
local left = redis.call('PTTL', KEYS[1])
if left > 0 then redis.call('SET', KEYS[2], '1', 'PX', left) end
return left
"""


def _left_ms(record: TaskRecord) -> int:
    """What is left of a record's retention, in ms (0 or less: it has expired)."""
    return math.ceil((record.expires_at - time.time()) * 1000)


class RedisTaskStore:
    """``TaskStore`` shared by the replicas (see the module doc); a record above ``max_record_bytes`` is refused."""

    shared = True

    def __init__(self, link: RedisLink, max_record_bytes: int) -> None:
        self.link = link
        self.max_record_bytes = max_record_bytes

    def _key(self, task_id: str) -> str:
        return self.link.key("task:" + task_id)

    def _encoded(self, record: TaskRecord) -> bytes:
        data = record.dumps()
        if len(data) > self.max_record_bytes:
            raise TaskStoreFull(f"a task record of {len(data)} bytes exceeds task_max_bytes ({self.max_record_bytes})")
        return data

    async def _run(self, command: Callable[[], Awaitable[Any]]) -> Any:
        if not self.link.available():
            raise TaskStoreUnavailable("the task store (Redis) is unreachable")
        try:
            value = await command()
        except (RedisError, OSError) as exc:
            self.link.failed(USER, exc, FALLBACK)
            raise TaskStoreUnavailable("the task store (Redis) is unreachable") from exc
        self.link.succeeded(USER)
        return value

    async def create(self, record: TaskRecord) -> None:
        left_ms = max(1, _left_ms(record))
        data = self._encoded(record)
        await self._run(lambda: self.link.client.set(self._key(record.task_id), data, nx=True, px=left_ms))

    async def get(self, task_id: str) -> TaskRecord | None:
        data = await self._run(lambda: self.link.client.get(self._key(task_id)))
        return None if data is None else TaskRecord.loads(data)

    async def put(self, record: TaskRecord) -> None:
        await self._write(record, 0)

    async def finish(self, record: TaskRecord) -> None:
        await self._write(record, _left_ms(record))

    async def _write(self, record: TaskRecord, recreate_ms: int) -> None:
        data = self._encoded(record)
        channel = self.link.key(ENDS_CHANNEL) if record.terminal else ""
        key = self._key(record.task_id)
        await self._run(lambda: self.link.client.eval(_WRITE, 1, key, data, recreate_ms, channel, record.task_id))

    async def watch_ends(self, on_end: Callable[[str], None]) -> None:
        failures = 0
        while True:
            with contextlib.suppress(RedisError, OSError):  # missed ends meanwhile: the waiters' slow look covers them
                await self._watched(on_end)
            await anyio.sleep(RETRY_SECONDS[min(failures, len(RETRY_SECONDS) - 1)])
            failures += 1

    async def _watched(self, on_end: Callable[[str], None]) -> None:
        pubsub: Any = self.link.client.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(self.link.key(ENDS_CHANNEL))
            while True:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=WATCH_POLL_SECONDS)
                data = message.get("data") if message is not None else None
                if isinstance(data, bytes) and len(data) <= MAX_TASK_ID_BYTES:
                    on_end(data.decode("ascii", "replace"))
        finally:
            with contextlib.suppress(RedisError, OSError):
                await pubsub.aclose()

    async def request_cancel(self, task_id: str) -> None:
        key = self._key(task_id)
        await self._run(lambda: self.link.client.eval(_MARK_CANCEL, 2, key, key + ":cancel"))

    async def cancel_requested(self, task_id: str) -> bool:
        return bool(await self._run(lambda: self.link.client.exists(self._key(task_id) + ":cancel")))
