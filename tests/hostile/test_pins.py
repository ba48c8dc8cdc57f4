"""A drifted upstream tool (a rug pull) is served on no route, and no call of it reaches the upstream.

A real stdio upstream is pinned, then changes a tool's description. One server then mounts it with
the explorer, a toolset endpoint and a search-mode toolset: the drifted tool is absent from every
list and search (``/mcp`` in both eras, legacy SSE, the explorer's door, the toolset, search mode's
``search_tools``/``describe_tool``, ``/openai/tools``), and every way of calling it (the same routes,
``invoke_tool``, a task in both eras) answers an error and never reaches the upstream, whose every
call is written to a file. The tool beside it is served and called as before. The operator's
``/admin/tools`` names the drift with both hashes; the open ``/ready`` and ``/metrics`` count it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from apcore import Executor, Registry
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.shared.exceptions import MCPError

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings

from tests._support.hostile import metric
from tests._support.pins import ARGS, PINNED, PULLED, Drift, drifted
from tests._support.tasks import HANDSHAKE, MODERN, Wire

pytestmark = pytest.mark.asyncio(loop_scope="module")


class Served:
    def __init__(self, base: str, drift: Drift) -> None:
        self.base, self.drift = base, drift

    def reached(self) -> list[str]:
        return self.drift.reached()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    from tests._support.hostile import wait_until
    from tests._support.sessions import running_http

    tmp = tmp_path_factory.mktemp("pins")
    toolsets = {"team": {"servers": ["up"]}, "find": {"servers": ["up"], "toolMode": "search"}}
    settings = Settings(mcp_config=str(tmp / "mcp.json"), explorer=True, allow_execute=True, admin_routes=True)
    drift = await drifted(tmp, settings, toolsets)
    bridge = Bridge.build(Executor(Registry()), settings)
    async with running_http(bridge) as base:
        await wait_until(lambda: bridge.catalog.get("up.steady") is not None, "the upstream's tools mounted")
        yield Served(base, drift)


def dumped(value: Any) -> str:
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json", by_alias=True)
    return json.dumps(value, sort_keys=True)


@contextlib.asynccontextmanager
async def client(url: str, mode: str) -> AsyncIterator[Client]:
    async with Client(url, mode=mode, cache=None) as connected:
        yield connected


async def listed_and_called(url: str, mode: str, name: str) -> tuple[list[str], str]:
    async with client(url, mode) as connected:
        names = [tool.name for tool in (await connected.list_tools()).tools]
        try:
            answer = dumped(await connected.call_tool(name, ARGS))
        except MCPError as error:
            answer = f"error {error.code} {error.message}"
    return names, answer


async def over_sse(base: str, name: str) -> tuple[list[str], str]:
    async with sse_client(f"{base}/sse") as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        names = [tool.name for tool in (await session.list_tools()).tools]
        try:
            answer = dumped(await session.call_tool(name, ARGS))
        except MCPError as error:
            answer = f"error {error.code} {error.message}"
    return names, answer


async def as_task(base: str, era: str, name: str) -> tuple[list[str], str]:
    wire = Wire(base, era=era)
    if era == HANDSHAKE:
        await wire.open()
        return [], dumped(await wire.call(name, ARGS, task={"ttl": 60_000}))
    return [], dumped(await wire.call(name, ARGS))


ROUTES = [
    "mcp-legacy",
    "mcp-auto",
    "sse",
    "explorer-legacy",
    "explorer-auto",
    "toolset",
    "task-handshake",
    "task-modern",
]


@pytest.mark.parametrize("route", ROUTES)
async def test_a_drifted_tool_is_absent_and_never_reaches_the_upstream(served: Served, route: str) -> None:
    base = served.base
    routes = {
        "mcp-legacy": lambda name: listed_and_called(f"{base}/mcp", "legacy", name),
        "mcp-auto": lambda name: listed_and_called(f"{base}/mcp", "auto", name),
        "sse": lambda name: over_sse(base, name),
        "explorer-legacy": lambda name: listed_and_called(f"{base}/explorer/mcp", "legacy", name),
        "explorer-auto": lambda name: listed_and_called(f"{base}/explorer/mcp", "auto", name),
        "toolset": lambda name: listed_and_called(f"{base}/toolsets/team/mcp", "auto", name),
        "task-handshake": lambda name: as_task(base, HANDSHAKE, name),
        "task-modern": lambda name: as_task(base, MODERN, name),
    }
    names, answer = await routes[route]("up.look")
    assert "up.look" not in names and "Ignore previous" not in dumped(names)
    assert '"isError": false' not in answer and '"resultType": "task"' not in answer and "ran look" not in answer
    assert "look" not in served.reached()
    names, answer = await routes[route]("up.steady")  # the rest of the upstream keeps working
    assert route.startswith("task") or "up.steady" in names
    assert "ran steady" in answer or "Tool up.steady does not run as a task" in answer  # known, unlike up.look


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_search_mode_neither_finds_describes_nor_invokes_a_drifted_tool(served: Served, mode: str) -> None:
    async with client(f"{served.base}/toolsets/find/mcp", mode) as connected:
        found = await connected.call_tool("search_tools", {"query": "look thing instructions", "limit": 10})
        described = await connected.call_tool("describe_tool", {"names": ["up.look", "up.steady"]})
        refused = await connected.call_tool("invoke_tool", {"name": "up.look", "arguments": ARGS})
        ran = await connected.call_tool("invoke_tool", {"name": "up.steady", "arguments": ARGS})
    assert "up.look" not in dumped(found) and "Ignore previous" not in dumped(found)
    assert described.structured_content is not None and described.structured_content["not_found"] == ["up.look"]
    assert refused.is_error and not ran.is_error
    assert "look" not in served.reached() and "steady" in served.reached()


async def test_no_document_lists_a_drifted_tool_and_the_operator_sees_both_hashes(served: Served) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        exported = {fmt: await http.get(f"{served.base}/openai/tools?format={fmt}") for fmt in ("chat", "responses")}
        ready = await http.get(f"{served.base}/ready")
        admin = await http.get(f"{served.base}/admin/tools")
        exposition = await http.get(f"{served.base}/metrics")
    for response in exported.values():
        assert response.status_code == 200 and PINNED["steady"] in response.text
        assert "look" not in response.text and "Ignore previous" not in response.text
    assert ready.json()["upstreams"]["drifted_tools"] == 1 and "look" not in ready.text
    assert metric(exposition.text, "apcore_mcp_upstream_tools_held") == 1
    drift = [entry for entry in admin.json()["hidden"] if entry.get("tool") == "look"]
    assert len(drift) == 1 and drift[0]["upstream"] == "up"
    reason = drift[0]["reasons"][0]
    assert reason["kind"] == "drift" and reason["state"] == "changed"
    assert len(reason["pinned"]) == len(reason["current"]) == 64 and reason["pinned"] != reason["current"]


async def test_an_approval_written_elsewhere_reaches_a_running_server(tmp_path: Path) -> None:
    """``pins approve`` on another machine, the file synced here: served within the poll, no restart."""
    from apcore_mcp.upstream.pins.canonical import digest

    from tests._support.hostile import wait_until
    from tests._support.sessions import running_http

    settings = Settings(mcp_config=str(tmp_path / "mcp.json"))
    await drifted(tmp_path, settings)
    bridge = Bridge.build(Executor(Registry()), settings)
    async with running_http(bridge):
        await wait_until(lambda: bridge.catalog.get("up.steady") is not None, "the upstream's tools mounted")
        assert bridge.catalog.get("up.look") is None
        pins_file = tmp_path / "mcp.pins.json"
        pins = json.loads(pins_file.read_text())
        entry = pins["servers"]["up"]["look"]
        entry["definition"]["description"] = PULLED["look"]
        entry["sha256"] = digest(entry["definition"])
        pins_file.write_text(json.dumps(pins))
        await wait_until(lambda: bridge.catalog.get("up.look") is not None, "the approved tool served")
