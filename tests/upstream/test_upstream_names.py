"""Upstream tool names people can type: ``get-sum`` is ``everything.get_sum``, a hash only where two collide.

The rule is ``upstream.names``'s; these tests hold it to a real upstream (``named_server.py``,
whose tools have the names given on its command line and answer with the name they were
called under) mounted in process and behind the CLI, where the explorer shows the mapping
(``/ready``, open to anyone, names no tool: tests/hostile/test_ready_disclosure.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp import Client

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings
from apcore_mcp.testing import apcore_server, start_server
from apcore_mcp.upstream.module import upstream_origin
from apcore_mcp.upstream.names import module_ids, server_segments

from tests._support.named_upstream import named_children, named_entry
from tests._support.results import text_of
from tests._support.upstreams import mounted

EXTENSIONS = Path(__file__).resolve().parents[2] / "examples" / "extensions"
EVERYTHING = ["echo", "get-sum", "get-tiny-image", "trigger-long-running-operation", "getResourceLinks", "sampleLLM"]
COLLIDING = ["get-sum", "Get-Sum", "get_sum", "get.sum2", "get-sum2"]


@pytest.fixture(autouse=True)
def no_child_left() -> Iterator[None]:
    yield
    assert named_children() == []


def test_names_of_npm_servers_are_readable_without_a_hash() -> None:
    ids = module_ids("everything", EVERYTHING)
    assert ids == {
        "echo": "everything.echo",
        "get-sum": "everything.get_sum",
        "get-tiny-image": "everything.get_tiny_image",
        "trigger-long-running-operation": "everything.trigger_long_running_operation",
        "getResourceLinks": "everything.get_resource_links",
        "sampleLLM": "everything.sample_llm",
    }


def test_a_hash_only_where_two_names_collide_whatever_the_order() -> None:
    ids = module_ids("up", COLLIDING)
    assert ids["get_sum"] == "up.get_sum"  # a name valid as is keeps it
    assert ids["get-sum"].startswith("up.get_sum_") and ids["Get-Sum"].startswith("up.get_sum_")
    assert ids["get.sum2"].startswith("up.get_sum2_") and ids["get-sum2"].startswith("up.get_sum2_")
    assert len(set(ids.values())) == len(COLLIDING)
    assert module_ids("up", list(reversed(COLLIDING))) == ids
    assert module_ids("up", ["get-sum", "echo"])["get-sum"] == "up.get_sum"  # no collision, no hash
    assert server_segments(["my-server", "files"]) == {"my-server": "my_server", "files": "files"}
    assert set(server_segments(["my-server", "my_server"]).values()) == {"my_server", "my_server_ae348b"}


def test_the_same_names_in_another_process() -> None:
    code = f"from apcore_mcp.upstream.names import module_ids; print(sorted(module_ids('up', {COLLIDING!r}).items()))"
    runs = {
        subprocess.run(
            [sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True
        ).stdout
        for seed in ("1", "2")
    }
    assert runs == {str(sorted(module_ids("up", COLLIDING).items())) + "\n"}


async def test_calls_reach_the_upstream_under_its_own_name() -> None:
    data = {"mcpServers": {"my-tools": named_entry(*COLLIDING, "getTinyImage", "echo")}}
    async with mounted(data) as mount:
        bridge = Bridge.build(mount.executor, Settings())
        ids = module_ids("my_tools", [*COLLIDING, "getTinyImage", "echo"])
        origins = {ours: upstream_origin(mount.executor.registry, ours) for ours in ids.values()}
        async with Client(bridge.server, mode="legacy") as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
            called = {name: text_of(await client.call_tool(ours, {})) for name, ours in ids.items()}
    assert set(ids.values()) <= listed and "my_tools.get_tiny_image" in listed
    assert called == {name: name for name in ids}  # each id reached its own upstream tool
    assert origins == {ours: {"server": "my-tools", "tool": name} for name, ours in ids.items()}


async def test_the_explorer_shows_the_upstream_names(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"everything": named_entry("echo", "get-sum", "Get-Sum")}}))
    ids = module_ids("everything", ["echo", "get-sum", "Get-Sum"])
    command = apcore_server(EXTENSIONS, "--mcp-config", str(config), "--explorer")
    server = start_server(command, "streamable-http", tmp_path)
    try:
        tools = httpx.get(f"{server.base_url}/explorer/tools", timeout=5).json()
        ready = httpx.get(f"{server.base_url}/ready", timeout=5).json()
        async with server.client(era="legacy") as client:
            called = text_of(await client.call_tool(ids["Get-Sum"], {}))
    finally:
        server.stop()
    origins = {tool["name"]: tool.get("upstream") for tool in tools}
    assert {ours: origins[ours] for ours in ids.values()} == {
        ids["echo"]: {"server": "everything", "tool": "echo"},
        ids["get-sum"]: {"server": "everything", "tool": "get-sum"},
        ids["Get-Sum"]: {"server": "everything", "tool": "Get-Sum"},
    }
    assert "renamed" not in ready["upstreams"]
    assert called == "Get-Sum"
