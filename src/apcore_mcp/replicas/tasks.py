"""Task records in Redis, so any replica answers ``tasks/get`` and ``tasks/cancel``.

One key per task, ``<prefix>task:<id>``: the record's JSON, expiring with the task's retention
(``SET NX PX``). Updates keep that expiry and never overwrite a finished record (one Lua script,
atomic on the Redis server, so a cancellation is never undone by a late progress update). A
cancellation asked on another replica than the one running the work is a second key,
``<prefix>task:<id>:cancel``, which the running replica reads when it renews its lease.

Redis away: no fallback keeps the promise that every replica sees the task, so new tasks are
refused and ``tasks/get`` answers an error until Redis is back; a WARNING says so once.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

from redis.exceptions import RedisError

from apcore_mcp.replicas.link import RedisLink
from apcore_mcp.tasks import TaskRecord, TaskStoreFull, TaskStoreUnavailable

USER = "tasks"
FALLBACK = "tasks are not started and tasks/get answers an error"

_PUT = """
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local ok, record = pcall(cjson.decode, current)
if ok and (record.status == 'completed' or record.status == 'failed' or record.status == 'cancelled') then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
return 1
"""

_MARK_CANCEL = """
local left = redis.call('PTTL', KEYS[1])
if left > 0 then redis.call('SET', KEYS[2], '1', 'PX', left) end
return left
"""


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
        left_ms = max(1, math.ceil((record.expires_at - time.time()) * 1000))
        data = self._encoded(record)
        await self._run(lambda: self.link.client.set(self._key(record.task_id), data, nx=True, px=left_ms))

    async def get(self, task_id: str) -> TaskRecord | None:
        data = await self._run(lambda: self.link.client.get(self._key(task_id)))
        return None if data is None else TaskRecord.loads(data)

    async def put(self, record: TaskRecord) -> None:
        data = self._encoded(record)
        await self._run(lambda: self.link.client.eval(_PUT, 1, self._key(record.task_id), data))

    async def request_cancel(self, task_id: str) -> None:
        key = self._key(task_id)
        await self._run(lambda: self.link.client.eval(_MARK_CANCEL, 2, key, key + ":cancel"))

    async def cancel_requested(self, task_id: str) -> bool:
        return bool(await self._run(lambda: self.link.client.exists(self._key(task_id) + ":cancel")))
