"""Tasks where a hostile or unlucky caller meets them.

- A task is its caller's: another caller's ``tasks/get``, ``tasks/cancel`` and ``tasks/update``
  answer exactly as for a task that never existed, and cancel nothing.
- Task ids cannot be enumerated: 192 random bits each, no ``tasks/list``, and a wrong id and
  another caller's id look the same.
- A caller who lost the tool's scope no longer sees its task.
- An approval-gated module run as a task is refused, even for a client that would say yes:
  a task cannot ask (no auto-confirmation in the background).
- The memory store is bounded in bytes and in count, and one caller may have half of the count
  running (with authentication, each principal, even at one address); a result too large to keep
  fails its task.
- Cancelling a finished task changes nothing; a task is gone after its TTL, and a client
  cannot ask to keep it longer than ``task_ttl``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from mcp import Client
from mcp.client import ClientRequestContext
from mcp.types import ElicitRequestParams, ElicitResult

from apcore_mcp.bridge import Bridge, BridgeService
from apcore_mcp.settings import Settings
from apcore_mcp.tasks.store import MemoryTaskStore

from tests._support.auth import api_key_entry, bearer
from tests._support.sessions import running_http
from tests._support.tasks import HANDSHAKE, Seen, TasksClient, Wire, task_executor

ALICE = "alice-key-" + "a" * 30  # holds "jobs"
ALICE_NARROW = "alice-key2-" + "n" * 30  # alice again, without "jobs"
BOB = "bob-key-" + "b" * 30  # holds "jobs"


@contextlib.asynccontextmanager
async def served(seen: Seen, **settings: Any) -> AsyncIterator[tuple[Bridge, str]]:
    bridge = Bridge.build(task_executor(seen), Settings(**settings))
    async with running_http(bridge) as url:
        yield bridge, url


async def test_another_callers_task_does_not_exist_for_them() -> None:
    seen = Seen()
    async with served(seen) as (_bridge, url):
        owner, stranger = Wire(url), Wire(url, source="127.0.0.2")
        created = (await owner.call("jobs.steps", {"steps": 6, "delay": 0.05}))["result"]
        unknown = await stranger.rpc("tasks/get", {"taskId": "x" * 32})
        for method in ("tasks/get", "tasks/cancel", "tasks/update"):
            answer = await stranger.rpc(method, {"taskId": created["taskId"]})
            assert answer["error"] == unknown["error"], method  # the same answer as for no task at all
        done = (await owner.until_done(created["taskId"]))["result"]
        assert done["status"] == "completed" and seen.finished == 1  # the stranger's cancel did nothing


async def test_task_ids_cannot_be_enumerated() -> None:
    seen = Seen()
    async with served(seen) as (_bridge, url):
        wire = Wire(url)
        ids = [(await wire.call("jobs.quick", {"text": str(n)}))["result"]["taskId"] for n in range(5)]
        assert len(set(ids)) == 5 and all(len(task_id) >= 32 for task_id in ids)
        assert len({task_id[:8] for task_id in ids}) == 5  # no shared, counting prefix
        assert (await wire.rpc("tasks/list"))["error"]["code"] == -32601
        handshake = Wire(url, era=HANDSHAKE)
        await handshake.open()
        assert (await handshake.rpc("tasks/list"))["error"]["code"] == -32601


async def test_a_caller_who_lost_the_scope_no_longer_sees_the_task() -> None:
    seen = Seen()
    keys = (
        api_key_entry(ALICE, "alice", scopes="jobs"),
        api_key_entry(ALICE_NARROW, "alice"),
        api_key_entry(BOB, "bob", scopes="jobs"),
    )
    async with served(seen, auth="api-key", auth_api_keys=keys, auth_tool_scopes=("jobs.*=jobs",)) as (_b, url):
        alice = Wire(url, headers=bearer(ALICE))
        created = (await alice.call("jobs.steps", {"steps": 2, "delay": 0.02}))["result"]
        assert (await alice.until_done(created["taskId"]))["result"]["status"] == "completed"
        for other in (Wire(url, headers=bearer(ALICE_NARROW)), Wire(url, headers=bearer(BOB))):
            assert (await other.rpc("tasks/get", {"taskId": created["taskId"]}))["error"]["code"] == -32602
        # Nor can the narrow key start one: refused as any call of the tool is.
        refused = await Wire(url, headers=bearer(ALICE_NARROW)).call("jobs.steps", {"steps": 1, "delay": 0})
        assert "taskId" not in refused.get("result", {})


async def test_callers_at_one_address_each_have_their_own_bound_of_running_tasks() -> None:
    """With authentication the bound is the principal's: alice at her limit does not lock out bob beside her."""
    keys = (api_key_entry(ALICE, "alice", scopes="jobs"), api_key_entry(BOB, "bob", scopes="jobs"))
    async with served(Seen(), auth="api-key", auth_api_keys=keys, task_max_count=2) as (_bridge, url):
        alice, bob = Wire(url, headers=bearer(ALICE)), Wire(url, headers=bearer(BOB))  # both from 127.0.0.1
        mine = (await alice.call("jobs.steps", {"steps": 100, "delay": 0.05}))["result"]
        again = await alice.call("jobs.steps", {"steps": 1, "delay": 0})
        assert "its limit of 1 running tasks" in again["error"]["message"]
        theirs = (await bob.call("jobs.steps", {"steps": 100, "delay": 0.05}))["result"]
        assert "taskId" in theirs
        await alice.rpc("tasks/cancel", {"taskId": mine["taskId"]})
        await bob.rpc("tasks/cancel", {"taskId": theirs["taskId"]})


async def test_approval_as_a_task_fails_closed_even_for_a_willing_client() -> None:
    seen = Seen()
    asked: list[str] = []

    async def yes(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})

    bridge = Bridge.build(task_executor(seen), Settings())
    tasks = TasksClient()
    async with (
        BridgeService(bridge),
        Client(bridge.server, extensions=[tasks], elicitation_callback=yes, cache=None) as client,
    ):
        plain = await client.call_tool("jobs.plain", {"name": "x"})
        assert plain.is_error is False
        result = await client.call_tool("jobs.gated", {})
    assert result.is_error is True and "approval" in str(result.content[0]).lower()
    assert tasks.created, "it ran as a task"
    assert seen.finished == 0 and asked == []
    # 2025-11-25 (no single-use approval state there to catch a yes given in the background).
    async with served(seen) as (_bridge, url):
        wire = Wire(url, era=HANDSHAKE)
        await wire.open()
        task = (await wire.call("jobs.gated", {}, task={}))["result"]["task"]
        refused = (await wire.rpc("tasks/result", {"taskId": task["taskId"]}))["result"]
        assert refused["isError"] is True and "approval" in refused["content"][0]["text"].lower()
    assert seen.finished == 0


async def test_the_memory_store_is_bounded_in_bytes_and_count() -> None:
    seen = Seen()
    async with served(seen, task_max_bytes=8192, task_max_count=3) as (bridge, url):
        wire = Wire(url)
        store = bridge.tasks.store
        assert isinstance(store, MemoryTaskStore)
        big = (await wire.call("jobs.big", {"size": 20_000}))["result"]
        failed = (await wire.until_done(big["taskId"]))["result"]
        assert failed["status"] == "failed" and "too large" in failed["statusMessage"]
        assert store.bytes <= 8192
        for _ in range(3):  # each fits; together they do not: the oldest finished ones make room
            kept = (await wire.call("jobs.big", {"size": 3000}))["result"]
            assert (await wire.until_done(kept["taskId"]))["result"]["status"] == "completed"
            assert store.bytes <= 8192
        # One caller may have half of task_max_count (here 1) running; three callers fill the store.
        callers = [Wire(url, source=f"127.0.0.{n}") for n in (1, 2, 3)]
        running = [(await c.call("jobs.steps", {"steps": 100, "delay": 0.05}))["result"] for c in callers]
        assert all("taskId" in task for task in running)  # the finished ones made room
        second = await callers[0].call("jobs.steps", {"steps": 1, "delay": 0})
        assert second["error"]["code"] == -32603 and "its limit of 1 running tasks" in str(second)
        full = await Wire(url, source="127.0.0.4").call("jobs.steps", {"steps": 1, "delay": 0})
        assert full["error"]["code"] == -32603 and "too many tasks" in full["error"]["message"]
        assert len(store) == 3 and store.bytes <= 8192
        for caller, task in zip(callers, running, strict=True):
            await caller.rpc("tasks/cancel", {"taskId": task["taskId"]})


async def test_cancelling_a_finished_task_changes_nothing() -> None:
    seen = Seen()
    async with served(seen) as (_bridge, url):
        wire = Wire(url)
        created = (await wire.call("jobs.quick", {"text": "done"}))["result"]
        before = (await wire.until_done(created["taskId"]))["result"]
        assert (await wire.rpc("tasks/cancel", {"taskId": created["taskId"]}))["result"]["resultType"] == "complete"
        after = (await wire.rpc("tasks/get", {"taskId": created["taskId"]}))["result"]
        assert after["status"] == "completed" and after["result"] == before["result"]
        assert after["lastUpdatedAt"] == before["lastUpdatedAt"]


async def test_a_client_cannot_keep_a_task_past_task_ttl() -> None:
    seen = Seen()
    async with served(seen, task_ttl=0.4) as (_bridge, url):
        wire = Wire(url, era=HANDSHAKE)
        await wire.open()
        created = (await wire.call("jobs.quick", {"text": "a"}, task={"ttl": 2**53}))["result"]["task"]
        assert created["ttl"] == 400
        assert (await wire.rpc("tasks/result", {"taskId": created["taskId"]}))["result"]["structuredContent"]
        await asyncio.sleep(0.5)
        assert (await wire.rpc("tasks/get", {"taskId": created["taskId"]}))["error"]["code"] == -32602
