"""A call of a drifted upstream tool names the drift, but only to a caller who could see the tool.

A real stdio upstream is pinned, then changes a tool's description. With ``auth_filter_tools``,
a caller without the tool's scope calling it gets, byte for byte (the name replaced), the answer
of a tool that does not exist; a caller holding the scope is told the tool is held and an
operator must approve it; a toolset endpoint whose selection leaves the upstream out answers it
as absent even to that caller. The anonymous caller is told only of a public tool's drift (``auth_public_tools``). Both protocol
eras, through the SDK's client over uvicorn.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from apcore import Executor, Registry
from mcp.shared.exceptions import MCPError

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings

from tests._support.auth import api_key_entry, endpoint_client
from tests._support.hostile import wait_until
from tests._support.modules import Echo
from tests._support.pins import ARGS, call_answer, drifted
from tests._support.sessions import running_http

pytestmark = pytest.mark.asyncio(loop_scope="module")

ALICE = "alice-key-" + "a" * 30  # no scopes: every up.* tool is hidden from her
CAROL = "carol-key-" + "c" * 30  # holds "up"
NAME = "<tool>"
MODES = ["legacy", "auto"]  # 2025-11-25, 2026-07-28


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def url(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    tmp = tmp_path_factory.mktemp("pins-calls")
    toolsets = {
        "team": {"servers": ["up"]},
        "local": {"servers": [], "modules": True},
        "find": {"servers": ["up"], "toolMode": "search"},
    }
    settings = Settings(
        mcp_config=str(tmp / "mcp.json"),
        auth="api-key",
        auth_api_keys=(api_key_entry(ALICE, "alice"), api_key_entry(CAROL, "carol", scopes="up")),
        auth_tool_scopes=("up.*=up",),
        auth_public_tools=("up.look",),  # the anonymous caller may see this one
        auth_filter_tools=True,
    )
    await drifted(tmp, settings, toolsets)
    registry = Registry()
    registry.register("demo.echo", Echo())
    bridge = Bridge.build(Executor(registry), settings)
    async with running_http(bridge) as base:
        await wait_until(lambda: bridge.catalog.get("up.steady") is not None, "the upstream's tools mounted")
        yield base


async def called(url: str, key: str, mode: str, name: str) -> str:
    """The whole answer the caller sees, with ``name`` replaced."""
    async with endpoint_client(url, key, mode) as client:
        try:
            answer: dict[str, Any] = (await client.call_tool(name, ARGS)).model_dump(mode="json", by_alias=True)
        except MCPError as error:
            answer = {"code": error.code, "message": error.message, "data": error.error.data}
    return json.dumps(answer, sort_keys=True).replace(name, NAME)


@pytest.mark.parametrize("mode", MODES)
async def test_a_caller_without_the_scope_gets_the_absent_answer(url: str, mode: str) -> None:
    absent = await called(f"{url}/mcp", ALICE, mode, "up.gone")
    held = await called(f"{url}/mcp", ALICE, mode, "up.look")
    assert NAME in absent and held == absent
    assert "held" not in held and "pins" not in held


@pytest.mark.parametrize("path", ["/mcp", "/toolsets/team/mcp"])
@pytest.mark.parametrize("mode", MODES)
async def test_a_caller_with_the_scope_is_told_the_tool_drifted(url: str, mode: str, path: str) -> None:
    held = json.loads(await called(f"{url}{path}", CAROL, mode, "up.look"))
    assert held["isError"] is True
    text = held["content"][0]["text"]
    assert text == f"Tool {NAME} is held: its definition changed since it was pinned; " + (
        "an operator must approve it (apcore-mcp pins approve)"
    )
    assert "Ignore previous" not in json.dumps(held)


@pytest.mark.parametrize("mode", MODES)
async def test_a_toolset_without_the_upstream_answers_its_drift_as_absent(url: str, mode: str) -> None:
    absent = await called(f"{url}/toolsets/local/mcp", CAROL, mode, "up.gone")
    held = await called(f"{url}/toolsets/local/mcp", CAROL, mode, "up.look")
    assert NAME in absent and held == absent


async def invoked(url: str, key: str, mode: str, name: str) -> str:
    """What ``invoke_tool`` of search mode answers for ``name``, with ``name`` replaced."""
    async with endpoint_client(url, key, mode) as client:
        result = await client.call_tool("invoke_tool", {"name": name, "arguments": ARGS})
    return json.dumps(result.model_dump(mode="json", by_alias=True), sort_keys=True).replace(name, NAME)


@pytest.mark.parametrize("mode", MODES)
async def test_invoke_tool_names_the_drift_by_the_same_rule(url: str, mode: str) -> None:
    find = f"{url}/toolsets/find/mcp"
    assert await invoked(find, ALICE, mode, "up.look") == await invoked(find, ALICE, mode, "up.gone")
    told = json.loads(await invoked(find, CAROL, mode, "up.look"))
    assert told["isError"] is True and told["content"][0]["text"].startswith(f"Tool {NAME} is held: ")


@pytest.mark.parametrize("mode", MODES)
async def test_the_anonymous_caller_is_told_only_of_a_public_tools_drift(url: str, mode: str) -> None:
    public = await call_answer(f"{url}/mcp", None, mode, "up.look")
    assert "Tool up.look is held: its definition changed since it was pinned" in public
