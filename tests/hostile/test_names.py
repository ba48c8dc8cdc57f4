"""Tool names past the limits: OpenAI's 64 characters (shortened, unique, reversible) and MCP's 128."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from apcore import Registry
from mcp import Client
from pydantic import BaseModel

from apcore_mcp import denormalize_tool_name, from_openai_call, normalize_tool_name, openai_names, to_openai_tools
from apcore_mcp.bridge import Bridge
from apcore_mcp.tools.catalog import ToolCatalog

from tests._support.hostile_modules import LONG_ID, TOO_LONG_ID, hostile_registry
from tests._support.results import text_of

REPO = Path(__file__).resolve().parents[2]
OPENAI_PAGE = REPO / "docs" / "openai.md"
OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_long_ids_get_short_unique_deterministic_openai_names() -> None:
    twin = LONG_ID[:-1] + "x"  # the same first 88 characters
    names = [normalize_tool_name(module_id) for module_id in (LONG_ID, twin, LONG_ID)]
    assert all(OPENAI_NAME.match(name) for name in names)
    assert names[0] == names[2] != names[1]
    assert openai_names([LONG_ID, twin, "demo.echo"]) == {names[0]: LONG_ID, names[1]: twin, "demo-echo": "demo.echo"}
    with pytest.raises(ValueError, match="shortened"):
        denormalize_tool_name(names[0])  # only a lookup can map it back
    assert normalize_tool_name("a" * 30 + "." + "b" * 33) == "a" * 30 + "-" + "b" * 33  # 64: kept as is


def test_every_exported_name_fits_and_maps_back() -> None:
    registry = hostile_registry()
    tools = to_openai_tools(registry, strict=True)
    names = [tool["function"]["name"] for tool in tools]
    assert len(names) == len(set(names)) and all(OPENAI_NAME.match(name) for name in names)
    back = openai_names(registry.list())
    assert sorted(back[name] for name in names) == sorted(set(registry.list()) - {TOO_LONG_ID})


async def test_an_89_character_id_is_an_mcp_tool_and_one_past_128_is_not_served(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bridge = Bridge.build(hostile_registry())
    async with Client(bridge.server, mode="legacy") as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        assert LONG_ID in listed and len(LONG_ID) == 89
        assert all(1 <= len(name) <= 128 and re.match(r"^[A-Za-z0-9_.-]+$", name) for name in listed)
        assert TOO_LONG_ID not in listed
        assert (await client.call_tool(LONG_ID, {})).is_error is False
        refused = await client.call_tool(TOO_LONG_ID, {})
        assert refused.is_error is True and text_of(refused) == f"Module not found: {TOO_LONG_ID}"
    assert any(TOO_LONG_ID in message and "128" in message for message in caplog.messages)


class Inner(BaseModel):
    label: str = "x"
    weight: float | None = None


class SearchIn(BaseModel):
    query: str
    top_n: int = 5
    cursor: str | None = None
    filters: Inner | None = None
    extra: list[Inner] = []


class Search:
    description = "Search"
    input_schema = SearchIn

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"inputs": inputs}


def search_registry() -> Registry:
    registry = Registry()
    registry.register(LONG_ID, Search())
    return registry


def test_from_openai_call_drops_only_the_nulls_strict_mode_introduced() -> None:
    registry = search_registry()
    name = to_openai_tools(registry, strict=True)[0]["function"]["name"]
    arguments = {
        "query": "q",
        "top_n": None,  # optional, not nullable: strict mode's null, dropped
        "cursor": None,  # optional and nullable in the module's schema: kept
        "filters": {"label": None, "weight": None},  # nested: label dropped, weight kept
        "extra": [{"label": None, "weight": 1.5}],
    }
    module_id, cleaned = from_openai_call(name, json.dumps(arguments), registry)
    assert module_id == LONG_ID
    assert cleaned == {"query": "q", "cursor": None, "filters": {"weight": None}, "extra": [{"weight": 1.5}]}
    catalog = ToolCatalog(registry)
    catalog.load()
    assert from_openai_call(name, arguments, catalog) == (module_id, cleaned)


def test_from_openai_call_refuses_unknown_names_and_non_objects() -> None:
    registry = search_registry()
    with pytest.raises(ValueError, match="No tool"):
        from_openai_call("nope", "{}", registry)
    name = normalize_tool_name(LONG_ID)
    with pytest.raises(ValueError, match="JSON object"):
        from_openai_call(name, "[1]", registry)


def test_the_documented_round_trip_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    text = OPENAI_PAGE.read_text()
    block = text.split("<!-- openai-round-trip -->", 1)[1].split("<!-- /openai-round-trip -->", 1)[0]
    code = block.split("```python", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(REPO)
    exec(compile(code, str(OPENAI_PAGE.relative_to(REPO)), "exec"), {})
