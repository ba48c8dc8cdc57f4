"""Tool search: BM25 ranking on 1,000+ generated tools plus the examples, and the three meta-tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from apcore import Executor, ModuleAnnotations, Registry
from apcore.acl import ACL, ACLRule
from apcore.approval import AlwaysDenyHandler
from bench.catalogs import generated, register_generated
from mcp import Client
from pydantic import BaseModel

from apcore_mcp.bridge import Bridge
from apcore_mcp.bridge.metatools import DESCRIBE_TOOL, INVOKE_TOOL, MAX_DESCRIBE, SEARCH_TOOLS
from apcore_mcp.settings import Settings
from apcore_mcp.tools.catalog import ToolCatalog
from apcore_mcp.tools.search import ToolSearch, tokenize

from tests._support.modules import Echo
from tests._support.results import text_of
from tests._support.upstreams import mounted, stdio_entry

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "extensions"
GENERATED = 1200


def example_registry(generated_count: int = GENERATED) -> Registry:
    registry = Registry(extensions_dir=str(EXAMPLES))
    registry.discover()
    register_generated(registry, generated_count)
    return registry


@pytest.fixture(scope="module")
def search() -> ToolSearch:
    catalog = ToolCatalog(example_registry())
    catalog.load()
    return ToolSearch(catalog)


def names(records: list[Any]) -> list[str]:
    return [record.name for record in records]


def test_tokens_are_normalised_split_and_folded() -> None:
    fullwidth = "".join(chr(ord(ch) + 0xFEE0) for ch in "FileSearch")  # what NFKC folds back to ASCII
    assert tokenize(f"{fullwidth} the Straße") == ["file", "search", "strasse"]
    assert tokenize("getUserIssues list_open_Requests") == ["get", "user", "issue", "list", "open", "request"]
    assert tokenize("address glass a an of") == ["address", "glass"]


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("haversine distance between two coordinates", "geo.distance"),
        ("count the words of a text", "text.stats"),
        ("most frequent words", "text.stats"),
        ("delete old files from a directory", "files.purge"),
        ("older_than_days", "files.purge"),  # a parameter name
        ("remind the assignee before the due time", "tasks.schedule"),  # parameter descriptions
        (generated(21)[0], generated(21)[0]),  # an exact name
        ("LATITUDE longitude", "geo.distance"),
    ],
)
def test_the_obvious_tool_ranks_first_among_1200_others(search: ToolSearch, query: str, best: str) -> None:
    assert len(search.catalog) == GENERATED + 5  # and the five example modules
    assert names(search.search(query, 3))[0] == best


def test_field_weights_and_limits(search: ToolSearch) -> None:
    found = names(search.search("export customer audit trail", 10))
    assert len(found) == 10 and all(name.startswith("gen.export_customer_") for name in found[:3])
    assert generated(int(found[0].rsplit("_", 1)[1]))[1] == "Export customer records with an audit trail."
    # The name outweighs the description: a tool named after the words beats one describing them.
    assert names(search.search("archive invoice", 1))[0].startswith("gen.archive_invoice_")
    assert search.search("zebra quasar", 5) == []
    assert len(search.search("records", 7)) == 7


def test_the_index_follows_the_catalog_and_results_carry_current_schemas() -> None:
    registry = example_registry(20)
    catalog = ToolCatalog(registry)
    catalog.watch()
    catalog.load()
    tool_search = ToolSearch(catalog)
    assert names(tool_search.search("haversine", 1)) == ["geo.distance"]
    distance = registry.get("geo.distance")
    registry.unregister("geo.distance")
    assert tool_search.search("haversine", 1) == []

    class Replacement(BaseModel):
        meters: float

    distance.input_schema = Replacement
    registry.register("geo.distance", distance)
    (record,) = tool_search.search("haversine", 1)
    assert list(record.input_schema["properties"]) == ["meters"]
    catalog.unwatch()


# -- the meta-tools, through our MCP server ------------------------------------------------------


class Nothing(BaseModel):
    pass


class Gated:
    description = "Launch the rocket (needs a human's approval)"
    input_schema = Nothing
    output_schema = Nothing
    annotations = ModuleAnnotations(requires_approval=True, destructive=True)

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {}


def search_bridge(executor: Executor) -> Bridge:
    return Bridge.build(executor, Settings(tool_mode="search"))


async def meta(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[str, Any, bool]:
    result = await client.session.call_tool(tool, arguments)
    return text_of(result), result.structured_content, bool(result.is_error)


def hidden_executor(registry: Registry) -> Executor:
    acl = ACL([ACLRule(["*"], ["geo.distance"], "deny"), ACLRule(["*"], ["*"], "allow")], default_effect="deny")
    return Executor(registry, acl=acl)


async def test_search_mode_lists_three_annotated_meta_tools() -> None:
    bridge = search_bridge(Executor(example_registry(10)))
    async with Client(bridge.server, mode="legacy") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {SEARCH_TOOLS, DESCRIBE_TOOL, INVOKE_TOOL}
    for lookup in (SEARCH_TOOLS, DESCRIBE_TOOL):
        hints = tools[lookup].annotations
        assert hints is not None and hints.read_only_hint and not hints.destructive_hint and not hints.open_world_hint
    invoke = tools[INVOKE_TOOL].annotations
    assert invoke is not None and invoke.destructive_hint and invoke.open_world_hint and not invoke.read_only_hint
    assert tools[DESCRIBE_TOOL].input_schema["properties"]["names"]["maxItems"] == MAX_DESCRIBE


async def test_search_describe_and_invoke() -> None:
    bridge = search_bridge(Executor(example_registry(50)))
    async with Client(bridge.server, mode="legacy") as client:
        _text, found, _ = await meta(client, SEARCH_TOOLS, {"query": "word counts of a text", "limit": 2})
        names = ["text.stats", "reports.chart", "nope.nothing"]  # the chart's output holds an image field
        _text, described, _ = await meta(client, DESCRIBE_TOOL, {"names": names})
        _text, invoked, error = await meta(client, INVOKE_TOOL, {"name": "text.stats", "arguments": {"text": "a b a"}})
        direct = await client.session.call_tool(INVOKE_TOOL, {"name": "text.stats", "arguments": {"text": 1}})
        too_many = await client.session.call_tool(DESCRIBE_TOOL, {"names": ["x"] * (MAX_DESCRIBE + 1)})
    assert [tool["name"] for tool in found["tools"]] == ["text.stats"]  # nothing else mentions words or text
    assert found["tools"][0] == {
        "name": "text.stats",
        "description": "Count the characters, words and lines of a text and list its most frequent words",
        "hints": ["readOnlyHint", "idempotentHint"],
    }
    assert bridge.search is not None
    stats, chart = described["tools"]
    record = bridge.search.catalog.get("text.stats")
    assert record is not None and stats["inputSchema"] == record.input_schema
    assert "chart" not in chart["outputSchema"]["properties"]  # the image goes out as a content block
    assert described["not_found"] == ["nope.nothing"]
    assert not error and invoked["words"] == 3
    assert direct.is_error and "text" in text_of(direct)  # the target's own validation
    assert too_many.is_error


async def test_invoke_tool_holds_the_target_to_the_output_size_limit() -> None:
    registry = Registry()
    registry.register("demo.echo", Echo())
    bridge = Bridge.build(Executor(registry), Settings(tool_mode="search", max_output_bytes=1024))
    async with Client(bridge.server, mode="legacy") as client:
        big = await client.session.call_tool(
            INVOKE_TOOL, {"name": "demo.echo", "arguments": {"text": "x" * 600, "times": 5}}
        )
        small = await client.session.call_tool(INVOKE_TOOL, {"name": "demo.echo", "arguments": {"text": "hi"}})
    assert not small.is_error
    assert big.is_error and "exceeds the limit" in text_of(big)


async def test_hidden_tools_are_never_found_and_look_exactly_missing() -> None:
    hidden = search_bridge(hidden_executor(example_registry(10)))
    registry = example_registry(10)
    registry.unregister("geo.distance")
    missing = search_bridge(Executor(registry))
    answers: list[list[str]] = []
    for bridge in (hidden, missing):
        async with Client(bridge.server, mode="legacy") as client:
            _t, found, _e = await meta(client, SEARCH_TOOLS, {"query": "haversine distance latitude", "limit": 50})
            described, _s, _e = await meta(client, DESCRIBE_TOOL, {"names": ["geo.distance"]})
            invoked, _s, error = await meta(client, INVOKE_TOOL, {"name": "geo.distance", "arguments": {}})
            answers.append([json.dumps(found), described, invoked])
            assert error
    assert "geo.distance" not in answers[0][0]
    assert answers[0] == answers[1]  # byte for byte: nothing tells a hidden tool from a missing one


async def test_invoke_applies_the_targets_approval() -> None:
    registry = example_registry(5)
    registry.register("ops.launch", Gated())
    bridge = search_bridge(Executor(registry, approval_handler=AlwaysDenyHandler()))
    async with Client(bridge.server, mode="legacy") as client:
        text, _structured, error = await meta(client, INVOKE_TOOL, {"name": "ops.launch"})
        _t, found, _e = await meta(client, SEARCH_TOOLS, {"query": "launch rocket"})
    assert error and text == "Not run: ops.launch requires approval: Always denied."
    assert "destructiveHint" in found["tools"][0]["hints"]  # search shows what the target is


async def test_upstream_tools_are_searched_by_server_and_invoked_unchanged() -> None:
    async with mounted({"mcpServers": {"notes": stdio_entry()}}) as mount:
        bridge = search_bridge(mount.executor)
        async with Client(bridge.server, mode="legacy") as client:
            _t, found, _e = await meta(client, SEARCH_TOOLS, {"query": "notes echo"})
            result = await client.session.call_tool(INVOKE_TOOL, {"name": "notes.contents", "arguments": {}})
            direct = await Bridge.build(mount.executor).router.call("notes.contents", {})
    assert found["tools"][0]["name"] == "notes.echo"
    assert result.model_dump(by_alias=True, mode="json", exclude_none=True, exclude={"result_type"}) == direct.carried
