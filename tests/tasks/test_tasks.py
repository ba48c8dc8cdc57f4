"""Long-running modules as MCP tasks, in both protocol eras, against real clients.

2026-07-28 (the ``io.modelcontextprotocol/tasks`` extension): the SDK's ``mcp.Client`` with a
tasks extension (``tests._support.tasks.TasksClient``) in memory and over uvicorn, and the wire
by hand for the shapes. 2025-11-25 (core tasks): the wire by hand, with a session.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from apcore_mcp.bridge import Bridge, BridgeService
from apcore_mcp.settings import Settings
from apcore_mcp.tasks.records import TASKS_EXTENSION

from tests._support.sessions import running_http
from tests._support.tasks import HANDSHAKE, Seen, TasksClient, Wire, task_executor, task_request


@contextlib.asynccontextmanager
async def served(seen: Seen, **settings: Any) -> AsyncIterator[tuple[Bridge, str]]:
    bridge = Bridge.build(task_executor(seen), Settings(**settings))
    async with running_http(bridge) as url:
        yield bridge, url


@pytest.mark.parametrize("where", ["memory", "http"])
async def test_the_sdk_client_gets_a_task_and_its_result(where: str) -> None:
    seen = Seen()
    tasks = TasksClient()
    bridge = Bridge.build(task_executor(seen), Settings())
    async with contextlib.AsyncExitStack() as stack:
        if where == "memory":
            await stack.enter_async_context(BridgeService(bridge))
            target: Any = bridge.server
        else:
            target = f"{await stack.enter_async_context(running_http(bridge))}/mcp"
        client = await stack.enter_async_context(Client(target, extensions=[tasks], cache=None))
        assert TASKS_EXTENSION in (client.server_capabilities.extensions or {})
        result = await client.call_tool("jobs.steps", {"steps": 3, "delay": 0.05})
        assert result.is_error is False
        assert result.structured_content == {"done": 3}
        created = tasks.created[0]
        assert created["resultType"] == "task" and created["status"] == "working"
        assert {"taskId", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"} <= created.keys()
        assert "task" not in created and "ttl" not in created and "requestState" not in created
        # Progress went into the record while the work ran.
        assert any(state.get("statusMessage", "").startswith(("1/3", "2/3", "3/3")) for state in tasks.polled), (
            tasks.polled
        )
        # A tool without task support is an ordinary call, a tool error a completed task with isError.
        plain = await client.call_tool("jobs.plain", {"name": "Ada"})
        assert plain.structured_content == {"greeting": "Hello, Ada!"}
        failed = await client.call_tool("jobs.fails", {})
        assert failed.is_error is True
        assert tasks.polled[-1]["status"] == "completed" and tasks.polled[-1]["result"]["isError"] is True
        # tasks/get through the same session afterwards; an unknown id is -32602.
        again = await task_request(client.session, "tasks/get", created["taskId"])
        assert again["status"] == "completed" and again["result"]["structuredContent"] == {"done": 3}
        with pytest.raises(MCPError) as unknown:
            await task_request(client.session, "tasks/get", "no-such-task")
        assert unknown.value.error.code == -32602
    assert seen.finished == 1  # jobs.steps ran once


async def test_the_2026_wire_shapes_and_gating() -> None:
    seen = Seen()
    async with served(seen) as (_bridge, url):
        wire, bare = Wire(url), Wire(url, tasks=False)
        discover = await wire.rpc("server/discover")
        capabilities = discover["result"]["capabilities"]
        assert TASKS_EXTENSION in capabilities["extensions"] and "tasks" not in capabilities
        created = (await wire.call("jobs.quick", {"text": "hi"}))["result"]
        assert created["resultType"] == "task" and isinstance(created["ttlMs"], int)
        done = (await wire.until_done(created["taskId"]))["result"]
        assert done["status"] == "completed" and done["result"]["structuredContent"] == {"text": "HI"}
        assert "io.modelcontextprotocol/related-task" not in done["result"].get("_meta", {})
        # Without the extension: the tasks methods and a required tool answer -32021, naming it.
        refused = await bare.rpc("tasks/get", {"taskId": created["taskId"]})
        assert refused["error"]["code"] == -32021
        assert TASKS_EXTENSION in refused["error"]["data"]["requiredCapabilities"]["extensions"]
        assert (await bare.call("jobs.quick", {"text": "hi"}))["error"]["code"] == -32021
        # An optional one runs as a plain call; a legacy `task` param promotes nothing.
        plain = (await bare.call("jobs.steps", {"steps": 1, "delay": 0}))["result"]
        assert plain["resultType"] == "complete" and plain["structuredContent"] == {"done": 1}
        legacy = (await wire.call("jobs.plain", {"name": "Ada"}, task={"ttl": 1000}))["result"]
        assert legacy["resultType"] == "complete" and "taskId" not in legacy
        # Mcp-Name must carry the task id (SEP-2663 routing headers).
        mismatch = await wire.rpc("tasks/get", {"taskId": created["taskId"]}, name="another-task")
        assert mismatch["error"]["code"] == -32020
        # tasks/result and tasks/list are gone in 2026-07-28; tasks/update acks.
        assert (await wire.rpc("tasks/result", {"taskId": created["taskId"]}))["error"]["code"] == -32601
        assert (await wire.rpc("tasks/list"))["error"]["code"] == -32601
        assert (await wire.rpc("tasks/update", {"taskId": created["taskId"], "inputResponses": {}}))["result"][
            "resultType"
        ] == "complete"


@pytest.mark.parametrize("era", ["2026-07-28", HANDSHAKE])
async def test_cancel_stops_the_module_and_the_task_reads_cancelled(era: str) -> None:
    seen = Seen()
    async with served(seen) as (bridge, url):
        wire = Wire(url, era=era)
        if era == HANDSHAKE:
            await wire.open()
        task = {"task": {"ttl": 60_000}} if era == HANDSHAKE else {}
        answer = (await wire.call("jobs.steps", {"steps": 400, "delay": 0.05}, **task))["result"]
        task_id = answer["task"]["taskId"] if era == HANDSHAKE else answer["taskId"]
        async with asyncio.timeout(10):
            await seen.started.wait()
        cancelled = (await wire.rpc("tasks/cancel", {"taskId": task_id}))["result"]
        if era == HANDSHAKE:
            assert cancelled["status"] == "cancelled" and cancelled["taskId"] == task_id
        else:
            assert cancelled == {"resultType": "complete", "_meta": cancelled["_meta"]}
        state = (await wire.rpc("tasks/get", {"taskId": task_id}))["result"]
        assert state["status"] == "cancelled" and "result" not in state and "error" not in state
        async with asyncio.timeout(10):
            while not seen.cancelled or bridge.router.in_flight:
                await asyncio.sleep(0.01)
        assert seen.cancelled == [True]  # the module unwound with its cancel token set
        assert seen.finished == 0
        again = await wire.rpc("tasks/cancel", {"taskId": task_id})
        if era == HANDSHAKE:  # 2025-11-25: a task in a terminal status cannot be cancelled
            assert again["error"]["code"] == -32602
            assert "error" in await wire.rpc("tasks/result", {"taskId": task_id})
        else:  # 2026-07-28: the same empty ack
            assert again["result"]["resultType"] == "complete"
        assert (await wire.rpc("tasks/get", {"taskId": task_id}))["result"]["status"] == "cancelled"


async def test_the_2025_11_25_wire() -> None:
    seen = Seen()
    async with served(seen) as (_bridge, url):
        wire = Wire(url, era=HANDSHAKE)
        capabilities = await wire.open()
        assert capabilities["tasks"] == {"cancel": {}, "requests": {"tools": {"call": {}}}}
        tools = {tool["name"]: tool for tool in (await wire.rpc("tools/list"))["result"]["tools"]}
        assert tools["jobs.steps"]["execution"] == {"taskSupport": "optional"}
        assert tools["jobs.quick"]["execution"] == {"taskSupport": "required"}
        assert "execution" not in tools["jobs.plain"]
        created = (await wire.call("jobs.steps", {"steps": 2, "delay": 0.02}, task={"ttl": 5000}))["result"]
        task = created["task"]
        assert task["status"] == "working" and task["ttl"] == 5000 and "pollInterval" in task and "ttlMs" not in task
        result = (await wire.rpc("tasks/result", {"taskId": task["taskId"]}))["result"]  # waits for the end
        assert result["structuredContent"] == {"done": 2}
        assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
        state = (await wire.rpc("tasks/get", {"taskId": task["taskId"]}))["result"]
        assert state["status"] == "completed" and "result" not in state
        # A required tool called plainly, and a plain tool called as a task: -32601.
        assert (await wire.call("jobs.quick", {"text": "x"}))["error"]["code"] == -32601
        assert (await wire.call("jobs.plain", {"name": "x"}, task={}))["error"]["code"] == -32601
        assert (await wire.call("jobs.steps", {"steps": 1, "delay": 0}))["result"]["structuredContent"] == {"done": 1}
        assert (await wire.rpc("tasks/update", {"taskId": task["taskId"]}))["error"]["code"] == -32601


async def test_results_are_kept_for_the_ttl_then_gone() -> None:
    seen = Seen()
    async with served(seen, task_ttl=0.4) as (_bridge, url):
        wire = Wire(url)
        created = (await wire.call("jobs.quick", {"text": "a"}))["result"]
        assert created["ttlMs"] == 400
        assert (await wire.until_done(created["taskId"]))["result"]["status"] == "completed"
        await asyncio.sleep(0.5)
        assert (await wire.rpc("tasks/get", {"taskId": created["taskId"]}))["error"]["code"] == -32602


async def test_an_approval_gated_module_as_a_task_fails_closed() -> None:
    seen = Seen()
    async with served(seen) as (_bridge, url):
        wire = Wire(url)
        created = (await wire.call("jobs.gated", {}))["result"]
        done = (await wire.until_done(created["taskId"]))["result"]
        assert done["status"] == "completed" and done["result"]["isError"] is True
        assert "approval" in done["result"]["content"][0]["text"].lower()
        assert seen.finished == 0  # it never ran
