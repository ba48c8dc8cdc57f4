"""Upstream tools through our bridge, with the SDK client in memory and over HTTP, in both protocol eras."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import httpx2
import mcp.types as types
import pytest
from apcore import Executor, Registry
from apcore.acl import ACL, ACLRule
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings

from tests._support.results import text_of
from tests._support.sessions import Inbox, running_http
from tests._support.upstreams import UPSTREAM, http_upstream, mounted, stdio_entry, upstream_children, url_entry

CANARY = "canary-5d1f0b77-never-shown"
SIDES = ["memory", "memory-modern", "http", "http-modern"]


@pytest.fixture(autouse=True)
def no_child_left() -> Iterator[None]:
    yield
    assert upstream_children() == {}


@contextlib.asynccontextmanager
async def our_client(bridge: Bridge, side: str, inbox: Inbox | None = None, **callbacks: Any) -> AsyncIterator[Client]:
    """A client of our server: in memory or over HTTP, handshake era or 2026-07-28."""
    mode = "auto" if side.endswith("modern") else "legacy"
    handler = inbox.handler if inbox is not None else None
    if side.startswith("memory"):
        async with Client(bridge.server, mode=mode, message_handler=handler, cache=None, **callbacks) as client:
            yield client
        return
    async with running_http(bridge) as url:
        async with Client(f"{url}/mcp", mode=mode, message_handler=handler, cache=None, **callbacks) as client:
            yield client


def wire(result: Any) -> dict[str, Any]:
    """A result as the peer sees it, without the stamps each hop adds for itself."""
    data = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    data.pop("resultType", None)
    meta = {k: v for k, v in data.pop("_meta", {}).items() if not k.startswith("io.modelcontextprotocol/")}
    return {**data, **({"_meta": meta} if meta else {})}


async def direct(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async with Client(StdioServerParameters(command=sys.executable, args=[str(UPSTREAM)]), cache=None) as client:
        return wire(await client.session.call_tool(tool, arguments))


UP = {"mcpServers": {"up": stdio_entry()}}


async def test_tools_are_listed_with_upstream_schemas_and_annotations() -> None:
    async with mounted(UP) as mount:
        bridge = Bridge.build(mount.executor, Settings())
        async with our_client(bridge, "memory") as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    echo, wipe, contents = tools["up.echo"], tools["up.wipe"], tools["up.contents"]
    assert echo.input_schema["properties"]["text"] == {"type": "string", "description": "What to echo"}
    assert echo.output_schema == {"type": "object", "properties": {"echo": {"type": "string"}}, "required": ["echo"]}
    assert echo.annotations is not None and echo.annotations.read_only_hint and echo.annotations.idempotent_hint
    assert echo.annotations.open_world_hint is False and echo.annotations.destructive_hint is False
    assert wipe.annotations is not None and wipe.annotations.destructive_hint and wipe.annotations.open_world_hint
    # No hints at all reads as MCP's defaults: may destroy, open world.
    assert contents.annotations is not None and contents.annotations.destructive_hint
    assert contents.output_schema is None and len(tools) == 13


@pytest.mark.parametrize("side", SIDES)
async def test_results_pass_through_unchanged(side: str) -> None:
    async with mounted(UP) as mount:
        bridge = Bridge.build(mount.executor, Settings())
        async with our_client(bridge, side) as client:
            ours = {
                name: wire(await client.session.call_tool(f"up.{name}", args))
                for name, args in (("contents", {}), ("echo", {"text": "hé"}), ("fail", {"why": "no"}))
            }
    for name, args in (("contents", {}), ("echo", {"text": "hé"}), ("fail", {"why": "no"})):
        assert ours[name] == await direct(name, args), name
    assert [item["type"] for item in ours["contents"]["content"]] == [
        "text",
        "image",
        "audio",
        "resource_link",
        "resource",
        "resource",
    ]
    assert ours["fail"]["isError"] is True and ours["echo"]["structuredContent"] == {"echo": "hé"}


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_remote_upstreams_behind_the_bridge(transport: str) -> None:
    with http_upstream(transport) as (url, _pid):
        async with mounted({"mcpServers": {"web": url_entry(url, transport=transport)}}) as mount:
            bridge = Bridge.build(mount.executor, Settings())
            async with our_client(bridge, "http") as client:
                result = await client.session.call_tool("web.echo", {"text": transport})
    assert result.structured_content == {"echo": transport} and not result.is_error


@pytest.mark.parametrize("side", SIDES)
async def test_upstream_progress_reaches_our_client(side: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with mounted(UP) as mount:
        bridge = Bridge.build(mount.executor, Settings())
        async with our_client(bridge, side) as client:
            result = await client.session.call_tool("up.progress", {"steps": 3}, progress_callback=on_progress)
    assert text_of(result) == "done 3"
    assert seen == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]


@pytest.mark.parametrize("protocol", ["legacy", "auto"])
async def test_upstream_elicitation_and_sampling_reach_our_client(protocol: str) -> None:
    asked: list[str] = []

    async def on_elicit(_ctx: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"answer": "yes"})

    async def on_sample(_ctx: Any, params: Any) -> types.CreateMessageResult:
        asked.append(params.messages[0].content.text)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="42"), model="m")

    async with mounted({"mcpServers": {"up": stdio_entry(protocol=protocol)}}) as mount:
        bridge = Bridge.build(mount.executor, Settings())
        async with our_client(bridge, "http", elicitation_callback=on_elicit, sampling_callback=on_sample) as client:
            answered = await client.session.call_tool("up.ask", {"question": "Proceed?"})
            sampled = await client.session.call_tool("up.sample", {"prompt": "6 x 7?"})
    assert (text_of(answered), text_of(sampled)) == ("accept:yes", "model said: 42")
    assert asked == ["Proceed?", "6 x 7?"]


async def test_an_upstream_question_our_client_cannot_answer_fails_closed() -> None:
    async with mounted({"mcpServers": {"up": stdio_entry(protocol="legacy")}}) as mount:
        bridge = Bridge.build(mount.executor, Settings())
        async with our_client(bridge, "memory") as client:  # declares no elicitation capability
            result = await client.session.call_tool("up.ask", {"question": "Proceed?"})
    assert result.is_error and text_of(result).startswith("client refused")


@pytest.mark.parametrize("protocol", ["legacy", "auto"])
async def test_upstream_list_changed_becomes_ours(protocol: str) -> None:
    inbox = Inbox()
    async with mounted({"mcpServers": {"up": stdio_entry(protocol=protocol)}}) as mount:
        bridge = Bridge.build(mount.executor, Settings(dynamic=True))
        async with our_client(bridge, "http", inbox) as client:
            await client.session.call_tool("up.grow", {"name": "newt"})
            await inbox.wait_for("notifications/tools/list_changed")
            names = {tool.name for tool in (await client.list_tools()).tools}
    assert "up.newt" in names


async def test_inbound_credentials_never_reach_the_upstream() -> None:
    with http_upstream("http") as (url, _pid):
        data = {"mcpServers": {"web": url_entry(url, headers={"X-Api-Key": "${KEY}"})}}
        async with mounted(data, environ={"KEY": CANARY}) as mount:
            bridge = Bridge.build(mount.executor, Settings())
            async with running_http(bridge) as base:
                inbound = httpx2.AsyncClient(headers={"Authorization": "Bearer inbound-user-token"})
                async with inbound, Client(streamable_http_client(f"{base}/mcp", http_client=inbound)) as client:
                    result = await client.session.call_tool("web.headers", {})
    headers = result.structured_content["headers"]
    assert headers["x-api-key"] == CANARY  # the config's credential, for the upstream only
    assert "authorization" not in headers and "inbound-user-token" not in str(headers)


async def test_acl_and_timeouts_apply_to_upstream_tools() -> None:
    registry = Registry()
    acl = ACL([ACLRule(callers=["*"], targets=["up.wipe"], effect="deny"), ACLRule(["*"], ["*"], "allow")])
    executor = Executor(registry, acl=acl)
    async with mounted({"mcpServers": {"up": stdio_entry(timeout=3)}}, executor=executor) as mount:
        bridge = Bridge.build(mount.executor, Settings())
        async with our_client(bridge, "memory") as client:
            denied = await client.session.call_tool("up.wipe", {})
            hung = await client.session.call_tool("up.hang", {"seconds": 30})
            bad = await client.session.call_tool("up.echo", {"text": 5})
            fine = await client.session.call_tool("up.echo", {"text": "ok"})
    assert (denied.is_error, text_of(denied)) == (True, "Access denied")
    assert (hung.is_error, text_of(hung)) == (True, "Module timed out after 3000ms")  # the module's timeout
    assert bad.is_error and "- text: 5 is not of type 'string' (type)" in text_of(bad)
    assert fine.structured_content == {"echo": "ok"}


async def test_a_broken_upstream_leaves_the_others_served() -> None:
    broken = {"command": sys.executable, "args": ["-c", "raise SystemExit(1)"], "timeout": 5}
    data = {"mcpServers": {"bad": broken, "up": stdio_entry(), "off": stdio_entry(enabled=False)}}
    async with mounted(data) as mount:
        bridge = Bridge.build(mount.executor, Settings())
        names = {record.name for record in bridge.catalog.records()}
        status = mount.runtime.status()
    assert "up.echo" in names and not any(name.startswith("bad.") for name in names)
    assert set(status["mounted"]) == {"up"} and set(status["failed"]) == {"bad", "off"}


async def test_a_canary_secret_never_reaches_logs_or_metrics(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with http_upstream("http") as (url, _pid):
        data = {
            "mcpServers": {
                "web": url_entry(url + "?token=${TOKEN}", headers={"Authorization": "Bearer ${TOKEN}"}),
                "up": stdio_entry("--tools", "1", env={"SECRET": "${TOKEN}"}),
            }
        }
        async with mounted(data, environ={"TOKEN": CANARY}) as mount:
            bridge = Bridge.build(mount.executor, Settings())
            async with running_http(bridge) as base, Client(f"{base}/mcp", mode="legacy") as client:
                assert (await client.session.call_tool("web.echo", {"text": "x"})).structured_content == {"echo": "x"}
                digest = text_of(await client.session.call_tool("up.env", {"name": "SECRET"}))
                async with httpx.AsyncClient() as http:
                    metrics = (await http.get(f"{base}/metrics")).text
    assert digest == hashlib.sha256(CANARY.encode()).hexdigest()  # expanded into the upstream's environment
    assert "web.echo" in metrics and CANARY not in metrics
    assert CANARY not in caplog.text and "token=***" in caplog.text  # the SDK's HTTP log line, masked


async def test_a_crashed_upstream_fails_its_call_and_serves_the_next_one() -> None:
    async with mounted(UP) as mount:
        bridge = Bridge.build(mount.executor, Settings())
        async with our_client(bridge, "memory") as client:
            crashed = await client.session.call_tool("up.crash", {})
            after = await client.session.call_tool("up.echo", {"text": "back"})
    assert (crashed.is_error, text_of(crashed)) == (True, "Module error: UPSTREAM_UNAVAILABLE")
    assert after.structured_content == {"echo": "back"}
