"""``--mcp-config`` served for real: the CLI mounts an upstream (a subprocess of its own), lists and
calls its tools over Streamable HTTP and stdio, serves a toolset at ``/toolsets/<name>/mcp``, reports
upstreams in ``/ready``, and reloads on SIGHUP keeping unchanged servers running."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from apcore_mcp.testing import RunningServer, apcore_server, start_server

from tests._support.node import run_ts_client
from tests._support.results import text_of
from tests._support.upstreams import eventually, stdio_entry, upstream_children

EXTENSIONS = Path(__file__).resolve().parents[2] / "examples" / "extensions"


def write_config(path: Path, servers: dict[str, Any], toolsets: dict[str, Any] | None = None) -> Path:
    path.write_text(json.dumps({"mcpServers": servers, "toolsets": toolsets or {}}))
    return path


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[RunningServer, Path]]:
    config = write_config(
        tmp_path / "mcp.json",
        {"notes": stdio_entry()},
        {"only_notes": {"servers": ["notes"], "modules": False}},
    )
    server = start_server(apcore_server(EXTENSIONS, "--mcp-config", str(config)), "streamable-http", tmp_path)
    try:
        yield server, config
    finally:
        server.stop()


async def test_upstream_tools_are_listed_and_called(served: tuple[RunningServer, Path]) -> None:
    server, _config = served
    for era in ("legacy", "modern"):
        async with server.client(era=era) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            result = await client.call_tool("notes.echo", {"text": "through the bridge"})
        assert {"notes.echo", "notes.contents", "text.stats", "files.purge"} <= names
        assert result.is_error is False and text_of(result) == "through the bridge"
    ready = httpx.get(f"{server.base_url}/ready", timeout=5).json()
    assert ready["status"] == "ready"
    assert "notes" in json.dumps(ready["upstreams"])


async def test_a_toolset_has_its_own_endpoint(served: tuple[RunningServer, Path]) -> None:
    server, _config = served
    async with Client(f"{server.base_url}/toolsets/only_notes/mcp", mode="legacy") as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("notes.echo", {"text": "in a toolset"})
    assert names and all(name.startswith("notes.") for name in names)
    assert text_of(result) == "in a toolset"
    assert httpx.get(f"{server.base_url}/toolsets/nope/mcp", timeout=5).status_code in (404, 405)
    moved = httpx.get(f"{server.base_url}/scopes/only_notes/mcp", timeout=5)  # the deprecated path
    assert (moved.status_code, moved.headers["location"]) == (308, "../../toolsets/only_notes/mcp")


@pytest.mark.node
def test_the_typescript_client_calls_an_upstream_tool(served: tuple[RunningServer, Path]) -> None:
    server, _config = served
    run = run_ts_client(server, "--call", "notes.echo", "--args", json.dumps({"text": "from node"}))
    assert run.returncode == 0, run
    assert run.texts == ["from node"], run


async def test_sighup_reloads_and_keeps_unchanged_servers(served: tuple[RunningServer, Path]) -> None:
    server, config = served
    assert server.process is not None
    [notes_pid] = list(upstream_children(server.pid))
    write_config(config, {"notes": stdio_entry(), "more": stdio_entry("--tools", "2")})
    server.process.send_signal(signal.SIGHUP)

    async def listed() -> set[str]:
        async with server.client(era="legacy") as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    names: set[str] = set()

    async def more_is_mounted() -> bool:
        nonlocal names
        names = await listed()
        return "more.gen_000" in names

    await eventually_async(more_is_mounted, "the new server's tools to be listed")
    assert "notes.echo" in names
    children = upstream_children(server.pid)
    assert notes_pid in children and len(children) == 2  # the unchanged server kept its process

    write_config(config, {"more": stdio_entry("--tools", "2")})
    server.process.send_signal(signal.SIGHUP)
    await eventually(lambda: notes_pid not in upstream_children(server.pid), what="the dropped server to stop")
    assert "notes.echo" not in await listed()


async def eventually_async(condition: Any, what: str, timeout: float = 20.0) -> None:
    import anyio

    with anyio.fail_after(timeout):
        while not await condition():
            await anyio.sleep(0.1)


async def test_stdio_serves_upstream_tools(tmp_path: Path) -> None:
    config = write_config(tmp_path / "mcp.json", {"notes": stdio_entry()})
    server = start_server(apcore_server(EXTENSIONS, "--mcp-config", str(config)), "stdio", tmp_path)
    try:
        async with server.client(era="legacy") as client:
            result = await client.call_tool("notes.echo", {"text": "over stdio"})
    finally:
        server.stop()
    assert text_of(result) == "over stdio"
