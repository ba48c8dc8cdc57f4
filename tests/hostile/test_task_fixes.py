"""Tasks against odd input and many waiters (2025-11-25, in memory).

- A requested ``task.ttl`` that is not a positive integer (``true``, ``0``, ``-5``, ``1.5``, a
  string) is refused with -32602 naming it; ``true`` is not 1 ms.
- Many clients waiting on ``tasks/result`` of one task do not poll the store: each looks once,
  sleeps until the task ends, and all of them get its result.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from apcore_mcp.bridge import Bridge
from apcore_mcp.mcp import tasks as mcp_tasks
from apcore_mcp.settings import Settings

from tests._support.sessions import running_http
from tests._support.tasks import HANDSHAKE, CountingStore, Seen, Wire, gate_executor, task_executor

WAITERS = 20


async def test_a_ttl_that_is_not_a_positive_integer_is_refused() -> None:
    async with running_http(Bridge.build(task_executor(Seen()), Settings())) as url:
        wire = Wire(url, era=HANDSHAKE)
        await wire.open()
        for ttl in (True, False, 0, -5, 1.5, "1000", {"ms": 1}):
            answer = await wire.call("jobs.quick", {"text": "x"}, task={"ttl": ttl})
            assert answer.get("error", {}).get("code") == -32602, (ttl, answer)
            assert "positive integer" in answer["error"]["message"]
        kept = (await wire.call("jobs.quick", {"text": "x"}, task={"ttl": 5000}))["result"]["task"]
        assert kept["ttl"] == 5000
        unasked = (await wire.call("jobs.quick", {"text": "x"}, task={}))["result"]["task"]
        assert unasked["ttl"] == 3_600_000  # no request: the task_ttl setting


async def test_many_result_waiters_sleep_until_the_end_and_all_get_the_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(mcp_tasks, "RESULT_LOOK_SECONDS", 3600.0)  # only the task's end wakes them
    gate = asyncio.Event()
    bridge = Bridge.build(gate_executor(gate), Settings())
    runner = bridge.tasks
    async with running_http(bridge) as url:
        wire = Wire(url, era=HANDSHAKE)
        await wire.open()
        task_id = (await wire.call("jobs.gate", {}, task={}))["result"]["task"]["taskId"]
        counting = CountingStore(runner.store)
        with runner.using(counting):
            waiting = [asyncio.create_task(wire.rpc("tasks/result", {"taskId": task_id})) for _ in range(WAITERS)]
            answers = await _all_woken(waiting, counting, gate)
    for answer in answers:
        assert answer["result"]["structuredContent"] == {"opened": True}
        assert answer["result"]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}


async def _all_woken(waiting: list[asyncio.Task[Any]], counting: CountingStore, gate: asyncio.Event) -> list[Any]:
    """Once every waiter looked at the task, a second of waiting adds no look; then the task ends."""
    async with asyncio.timeout(20):
        while counting.reads < len(waiting):
            await asyncio.sleep(0.02)
        await asyncio.sleep(1.0)
        assert counting.reads < 2 * len(waiting), f"{counting.reads} store reads by {len(waiting)} waiters"
        gate.set()
        return list(await asyncio.gather(*waiting))
