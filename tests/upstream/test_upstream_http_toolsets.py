"""One MCP endpoint per toolset over real HTTP, and reloads: from the file, by toolset switch, with list_changed."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from apcore import Executor, Registry
from mcp import Client
from starlette.applications import Starlette

from apcore_mcp.http.toolsets import ToolsetEndpoints
from apcore_mcp.run.serving import bind_socket
from apcore_mcp.settings import Settings
from apcore_mcp.upstream.config.parse import parse_config
from apcore_mcp.upstream.mount import mount_upstreams, reload_upstreams, served_toolsets, watch_config
from apcore_mcp.upstream.toolsets import UpstreamRuntime

from tests._support.sessions import Inbox
from tests._support.upstreams import gone, pid_of, stdio_entry, upstream_children

SERVERS = {"a": stdio_entry(), "b": stdio_entry(), "c": stdio_entry("--tools", "2")}


@pytest.fixture(autouse=True)
def no_child_left() -> Iterator[None]:
    yield
    assert upstream_children() == {}


def document(toolsets: dict[str, Any]) -> dict[str, Any]:
    return {"mcpServers": SERVERS, "toolsets": toolsets}


@contextlib.asynccontextmanager
async def serving(endpoints: ToolsetEndpoints, config: Any) -> AsyncIterator[str]:
    """The toolset endpoints in a Starlette app on uvicorn, 127.0.0.1, a free port; yields the base URL."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with endpoints.run(config):
            yield

    sock = bind_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(Starlette(routes=endpoints.routes, lifespan=lifespan), log_level="warning"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(10):
            while not server.started:
                await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task
        sock.close()


async def tool_names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


async def test_each_toolset_has_its_endpoint_and_a_reload_switches_them(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    toolsets = {"left": {"servers": ["a"], "modules": False}, "finder": {"servers": "all", "toolMode": "search"}}
    path.write_text(json.dumps(document(toolsets)))
    settings = Settings(mcp_config=str(path), toolset="left")
    executor = Executor(Registry())
    async with mount_upstreams(executor.registry, settings, {}) as runtime:
        assert isinstance(runtime, UpstreamRuntime)
        assert set(runtime.sources) == {"a", "b", "c"}  # "finder" uses every server
        endpoints = ToolsetEndpoints(executor, settings)
        inbox = Inbox()
        async with serving(endpoints, runtime.config) as base:
            async with httpx.AsyncClient() as http:
                assert (await http.post(f"{base}/toolsets/nope/mcp", json={})).status_code == 404
                moved = await http.post(f"{base}/scopes/left/mcp?x=1", json={})  # the deprecated path
                assert (moved.status_code, moved.headers["location"]) == (308, "../../toolsets/left/mcp?x=1")
            async with (
                Client(f"{base}/toolsets/left/mcp", mode="legacy", message_handler=inbox.handler) as left,
                Client(f"{base}/toolsets/finder/mcp", mode="legacy") as finder,
            ):
                assert await tool_names(left) == set(executor.registry.list(prefix="a."))
                assert await tool_names(finder) == {"search_tools", "describe_tool", "invoke_tool"}
                async with Client(f"{base}/scopes/left/mcp", mode="legacy") as old:  # follows the redirect
                    assert await tool_names(old) == await tool_names(left)
                found = await finder.session.call_tool("search_tools", {"query": "gen_001"})
                assert found.structured_content["tools"][0]["name"] == "c.gen_001"
                c_pid = await pid_of(executor, "c.pid")

                # The file changes: "left" also takes b, "finder" goes, so c is used by no toolset.
                new_toolsets = {"left": {"servers": ["a", "b"], "modules": False}}
                path.write_text(json.dumps(document(new_toolsets)))
                inbox.clear()
                await endpoints.update(parse_config(document(new_toolsets), {}))
                switch = await reload_upstreams(runtime, settings, {})
                assert switch is not None and switch.stopped == ["c"] and sorted(switch.kept) == ["a", "b"]
                endpoints.refresh()
                await inbox.wait_for("notifications/tools/list_changed")
                assert await tool_names(left) == set(executor.registry.list(prefix="a.")) | set(
                    executor.registry.list(prefix="b.")
                )
                assert gone(c_pid) and endpoints.names == ["left"]

            # A file that no longer parses changes nothing.
            path.write_text("{")
            assert await reload_upstreams(runtime, settings, {}) is None
            assert sorted(runtime.sources) == ["a", "b"]


async def test_served_toolsets_put_the_main_toolset_first() -> None:
    config = parse_config(document({"x": {"servers": ["a"]}, "y": {"servers": ["b"]}}), {})
    assert served_toolsets(config, None) == ["default", "x", "y"]
    assert served_toolsets(config, "y") == ["y", "x"]


async def test_watch_config_calls_back_when_the_content_changes(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text("{}")
    changed = asyncio.Event()

    async def on_change() -> None:
        changed.set()

    watcher = asyncio.create_task(watch_config(path, on_change, interval=0.05))
    await asyncio.sleep(0)  # one turn of the loop: the watcher reads the file before its first wait
    try:
        path.write_text('{"mcpServers": {}}')
        async with asyncio.timeout(5):
            await changed.wait()
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


async def test_mount_upstreams_without_a_config_or_with_upstreams_off(tmp_path: Path) -> None:
    async with mount_upstreams(Registry(), Settings(), {}) as nothing:
        assert nothing is None
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(document({})))
    async with mount_upstreams(Registry(), Settings(mcp_config=str(path), upstreams=False), {}) as runtime:
        assert runtime is not None and runtime.sources == {} and upstream_children() == {}
