"""Readable upstream names where they meet other features: ACL rules, toolsets and tool search.

An operator writes rules with the names they can read: a deny rule on ``everything.get_sum``
must stop the upstream's ``get-sum`` (with a hash suffix it silently did not), and a colliding
``Get-Sum`` stays a tool of its own that the rule does not cover. Toolsets select servers by
their config name (``my-tools``), whatever segment their tools get; tool search finds the
readable name and ``invoke_tool`` with what it found reaches the upstream tool under its own name.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apcore import Executor, Registry
from apcore.acl import ACL, ACLRule
from mcp import Client

from apcore_mcp.bridge import Bridge
from apcore_mcp.bridge.metatools import INVOKE_TOOL, SEARCH_TOOLS
from apcore_mcp.settings import Settings
from apcore_mcp.testing import apcore_server, start_server
from apcore_mcp.upstream.names import module_ids

from tests._support.named_upstream import named_children, named_entry
from tests._support.results import text_of
from tests._support.upstreams import mounted

EXTENSIONS = Path(__file__).resolve().parents[2] / "examples" / "extensions"


@pytest.fixture(autouse=True)
def no_child_left() -> Iterator[None]:
    yield
    assert named_children() == []


async def test_a_deny_rule_on_the_readable_name_stops_the_upstream_tool() -> None:
    acl = ACL([ACLRule(["*"], ["everything.get_sum"], "deny"), ACLRule(["*"], ["*"], "allow")])
    executor = Executor(Registry(), acl=acl)
    async with mounted({"mcpServers": {"everything": named_entry("get-sum", "echo")}}, executor=executor) as mount:
        bridge = Bridge.build(mount.executor, Settings())
        async with Client(bridge.server, mode="legacy") as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
            denied = await client.session.call_tool("everything.get_sum", {})
            echo = await client.session.call_tool("everything.echo", {})
    assert "everything.get_sum" in listed
    assert (denied.is_error, text_of(denied)) == (True, "Access denied")
    assert text_of(echo) == "echo"


async def test_a_rule_on_one_of_two_colliding_names_covers_only_that_one() -> None:
    ids = module_ids("everything", ["get-sum", "Get-Sum"])
    acl = ACL([ACLRule(["*"], [ids["get-sum"]], "deny"), ACLRule(["*"], ["*"], "allow")])
    executor = Executor(Registry(), acl=acl)
    async with mounted({"mcpServers": {"everything": named_entry("get-sum", "Get-Sum")}}, executor=executor) as mount:
        bridge = Bridge.build(mount.executor, Settings())
        async with Client(bridge.server, mode="legacy") as client:
            denied = await client.session.call_tool(ids["get-sum"], {})
            other = await client.session.call_tool(ids["Get-Sum"], {})
            plain = await client.session.call_tool("everything.get_sum", {})
    assert text_of(denied) == "Access denied"
    assert text_of(other) == "Get-Sum"  # the other one reached its own upstream tool
    assert plain.is_error and "not found" in text_of(plain)  # neither owns the plain form


def _search(found: Any) -> list[str]:
    return [tool["name"] for tool in found.structured_content["tools"]]


async def test_toolsets_select_by_server_name_and_search_finds_the_name_it_can_call(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    servers = {"my-tools": named_entry("get-sum", "Get-Sum", "getTinyImage"), "other": named_entry("get-sum")}
    toolsets = {
        "mine": {"servers": ["my-tools"], "modules": False},
        "finder": {"servers": ["my-tools"], "modules": False, "toolMode": "search"},
    }
    config.write_text(json.dumps({"mcpServers": servers, "toolsets": toolsets}))
    ids = module_ids("my_tools", ["get-sum", "Get-Sum", "getTinyImage"])
    server = start_server(apcore_server(EXTENSIONS, "--mcp-config", str(config)), "streamable-http", tmp_path)
    try:
        async with Client(f"{server.base_url}/toolsets/mine/mcp", mode="legacy") as mine:
            listed = {tool.name for tool in (await mine.list_tools()).tools}
        async with Client(f"{server.base_url}/toolsets/finder/mcp", mode="legacy") as finder:
            image = _search(await finder.session.call_tool(SEARCH_TOOLS, {"query": "get-tiny-image"}))
            sums = _search(await finder.session.call_tool(SEARCH_TOOLS, {"query": "get sum"}))
            invoked = {
                name: await finder.session.call_tool(INVOKE_TOOL, {"name": name, "arguments": {}}) for name in sums
            }
    finally:
        server.stop()
    assert listed == set(ids.values())  # "other" (also with a get-sum) is not in this toolset
    assert image[0] == "my_tools.get_tiny_image"
    assert set(sums[:2]) == {ids["get-sum"], ids["Get-Sum"]}  # both match better than get_tiny_image
    upstream_names = {ours: theirs for theirs, ours in ids.items()}
    assert {name: text_of(result) for name, result in invoked.items()} == {name: upstream_names[name] for name in sums}
