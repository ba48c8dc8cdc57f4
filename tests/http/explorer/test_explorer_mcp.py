"""The explorer's MCP endpoint (``/explorer/mcp``) with a real MCP client, both protocol eras.

The Python SDK's client talks to the endpoint as a script would (no ``Origin``): listing and
calling work when execution is on, calls are the explorer's (``CallContext.origin``), and with
execution off ``tools/call`` is refused with the documented error while listing still works.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from apcore import Registry
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.routing import Mount

from apcore_mcp.bridge import Bridge
from apcore_mcp.calls.context import call_context
from apcore_mcp.http.app import create_app
from apcore_mcp.settings import Settings

from tests._support.modules import Echo
from tests._support.sessions import running_http

ERAS = ["legacy", "auto"]  # the SDK client's modes: 2025-11-25 (sessions), 2026-07-28 (stateless requests)


class Empty(BaseModel):
    pass


class OriginOut(BaseModel):
    origin: str


class Origin:
    description = "Says which edge built the call's context"
    input_schema = Empty
    output_schema = OriginOut

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        call = call_context(context)
        return {"origin": call.origin if call is not None else "none"}


class Recorded:
    description = "Records that it ran"
    input_schema = Empty
    output_schema = OriginOut

    def __init__(self, runs: list[str]) -> None:
        self.runs = runs

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        self.runs.append("ran")
        return {"origin": "ran"}


def registry() -> Registry:
    registry = Registry()
    registry.register("demo.echo", Echo())
    registry.register("demo.origin", Origin())
    return registry


def bridge(**settings: Any) -> Bridge:
    return Bridge.build(registry(), Settings(explorer=True, **settings))


@pytest.mark.parametrize("mode", ERAS)
async def test_the_explorer_lists_and_calls_tools_over_mcp(mode: str) -> None:
    async with running_http(bridge(allow_execute=True)) as url:
        async with Client(f"{url}/explorer/mcp", mode=mode, cache=None) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == {"demo.echo", "demo.origin"}
            echoed = await client.call_tool("demo.echo", {"text": "hi", "times": 2})
            assert not echoed.is_error
            assert echoed.structured_content == {"echo": "hi hi"}
            origin = await client.call_tool("demo.origin", {})
            assert origin.structured_content == {"origin": "explorer"}
        async with Client(f"{url}/mcp", mode=mode, cache=None) as client:  # the same app, its own edge
            assert (await client.call_tool("demo.origin", {})).structured_content == {"origin": "mcp"}


@pytest.mark.parametrize("mode", ERAS)
async def test_execution_off_refuses_calls_with_the_setting_named(mode: str) -> None:
    async with running_http(bridge()) as url:
        async with Client(f"{url}/explorer/mcp", mode=mode, cache=None) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == {"demo.echo", "demo.origin"}
            with pytest.raises(MCPError) as refused:
                await client.call_tool("demo.echo", {"text": "hi"})
        assert refused.value.error.code == INVALID_REQUEST
        assert "--allow-execute" in refused.value.error.message
        assert refused.value.error.data == {
            "setting": "allow_execute",
            "flag": "--allow-execute",
            "env": "APCORE_MCP_ALLOW_EXECUTE",
        }
        # The refusal on the wire: 403 and the request's own id.
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "demo.echo", "arguments": {}}}
        headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28"}
        async with httpx.AsyncClient() as http:
            response = await http.post(f"{url}/explorer/mcp", json=call, headers=headers)
        assert response.status_code == 403
        body = response.json()
        assert (body["jsonrpc"], body["id"], body["error"]["code"]) == ("2.0", 7, INVALID_REQUEST)
        assert "Tool execution from the explorer is off" in body["error"]["message"]
        assert body["error"]["data"]["env"] == "APCORE_MCP_ALLOW_EXECUTE"


async def test_config_tells_the_page_where_and_how_to_speak_mcp() -> None:
    async with running_http(bridge(explorer_prefix="/tools-ui")) as url, httpx.AsyncClient() as http:
        config = (await http.get(f"{url}/tools-ui/config")).json()
    assert (config["mcpPath"], config["readyPath"]) == ("/tools-ui/mcp", "/ready")
    versions = config["protocolVersions"]
    assert versions[:2] == ["2026-07-28", "2025-11-25"]
    assert versions == sorted(versions, reverse=True)
    setting = config["executeSetting"]
    assert (setting["flag"], setting["env"]) == ("--allow-execute", "APCORE_MCP_ALLOW_EXECUTE")
    assert setting["risk"]
    # The keys the page already reads are still there.
    assert {"server", "allowExecute", "tokenRequired", "authRequired"} <= set(config)
    assert config["allowExecute"] is False


async def test_mounted_inside_another_app_the_page_is_told_the_mounted_paths() -> None:
    """docs/embedding.md mounts the app under a prefix: the page's MCP, /ready and redirect follow it."""
    outer = Starlette(routes=[Mount("/tools", app=create_app(bridge=bridge(allow_execute=True)))])
    transport = httpx.ASGITransport(app=outer)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        config = (await http.get("/tools/explorer/config")).json()
        redirect = await http.get("/tools/explorer")
    assert (config["mcpPath"], config["readyPath"]) == ("/tools/explorer/mcp", "/tools/ready")
    assert redirect.status_code == 308
    assert redirect.headers["location"] == "/tools/explorer/"


async def test_the_old_call_route_is_gone_and_names_the_mcp_door() -> None:
    """``POST /explorer/tools/{name}/call`` runs nothing: 410, saying where calls go now (the one door)."""
    runs: list[str] = []
    made = registry()
    made.register("demo.recorded", Recorded(runs))
    outer = Starlette(routes=[Mount("/tools", app=create_app(made, Settings(explorer=True, allow_execute=True)))])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=outer), base_url="http://127.0.0.1") as http:
        gone = await http.post("/tools/explorer/tools/demo.recorded/call", json={})
    assert gone.status_code == 410
    assert gone.json() == {
        "error": "POST /explorer/tools/{name}/call was removed: send an MCP tools/call to /tools/explorer/mcp",
        "mcp": "/tools/explorer/mcp",
    }
    assert gone.headers["Link"] == '</tools/explorer/mcp>; rel="successor-version"'
    assert runs == []
