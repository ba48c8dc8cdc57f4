"""Issue 32: the Agents API format (``POST /agents``) in both forms, checked against the ``openai``
package's own request types for an agent's tools; its 3 MiB cap counted as the API counts it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from apcore import Registry
from openai.types.beta.persisted_agent_tool_param import (
    PersistedAgentToolConfigParamFunction,
    PersistedAgentToolConfigParamMcp,
    PersistedAgentToolConfigParamToolSearch,
)
from pydantic import TypeAdapter

from apcore_mcp import to_openai_tools
from apcore_mcp.openai.agents import MAX_AGENTS_TOOLS_BYTES, agents_size, check_agents_size, server_label

from tests.openai.test_openai import make_registry
from tests.openai.test_openai_formats import REGISTRIES

SERVER = "https://mcp.example.test/sub/mcp"

# -- the openai package's types as the judge (what client.beta.agents.create(tools=...) takes) ----------

AGENTS_TYPES: dict[str, Any] = {
    "function": PersistedAgentToolConfigParamFunction,
    "tool_search": PersistedAgentToolConfigParamToolSearch,
    "mcp": PersistedAgentToolConfigParamMcp,
}


def check_agents(tools: list[dict[str, Any]]) -> None:
    """Every tool is the Agents API's tool of its type, no key unknown to it (the transport's too)."""
    for tool in tools:
        TypeAdapter(AGENTS_TYPES[tool["type"]]).validate_python(tool, strict=True, extra="forbid")


@pytest.mark.parametrize("source", list(REGISTRIES))
@pytest.mark.parametrize("strict", [False, True])
def test_both_forms_are_valid_agents_requests(source: str, strict: bool) -> None:
    registry = REGISTRIES[source]()
    functions = to_openai_tools(registry, strict=strict, embed_annotations=True, format="agents")
    assert functions
    check_agents(functions)
    check_agents(to_openai_tools(registry, format="agents", agents_form="mcp", server_url=SERVER))


def test_a_wrong_key_fails_the_check() -> None:
    function = {"type": "function", "name": "a", "description": "d", "parameters": {}}
    check_agents([function])
    with pytest.raises(ValueError, match="strict"):
        check_agents([{**function, "strict": True}])  # the Agents API's function has no strict key
    mcp = {"type": "mcp", "server_label": "s", "transport": {"type": "http", "server_url": SERVER}}
    with pytest.raises(ValueError, match="server_url"):
        check_agents([{**mcp, "server_url": SERVER}])  # the Responses API's place for it, not this one's


# -- the functions form: the Responses functions, deferred, plus tool_search -------------------------------


def flat(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [function for tool in tools if tool["type"] != "tool_search" for function in tool.get("tools", [tool])]


@pytest.mark.parametrize("strict", [False, True])
def test_the_functions_form_keeps_names_descriptions_and_schemas(strict: bool) -> None:
    registry = make_registry()
    tools = to_openai_tools(registry, strict=strict, embed_annotations=True, format="agents")
    responses = flat(to_openai_tools(registry, strict=strict, embed_annotations=True, format="responses"))
    assert tools[-1] == {"type": "tool_search"}
    assert tools[:-1] == [
        {
            "type": "function",
            "name": function["name"],
            "description": function["description"],
            "parameters": function["parameters"],
            "defer_loading": True,
        }
        for function in responses
    ]


def test_no_modules_give_an_empty_list() -> None:
    assert to_openai_tools(Registry(), format="agents") == []  # no tool_search with nothing to search


# -- the mcp form: one tool reaching this server, allowing exactly the modules listed ----------------------


def test_the_mcp_form_allows_the_modules_listed_by_their_mcp_names() -> None:
    registry = make_registry()
    tools = to_openai_tools(registry, format="agents", agents_form="mcp", server_url=SERVER, server_label="images")
    assert tools == [
        {
            "type": "mcp",
            "server_label": "images",
            "transport": {"type": "http", "server_url": SERVER},
            "allowed_tools": ["image.crop", "image.resize", "text.echo"],
        }
    ]
    narrowed = to_openai_tools(registry, format="agents", agents_form="mcp", server_url=SERVER, prefix="text.")
    assert narrowed[0]["allowed_tools"] == ["text.echo"]
    # Nothing selected allows nothing: left out, allowed_tools would allow every tool the server lists.
    none = to_openai_tools(registry, format="agents", agents_form="mcp", server_url=SERVER, prefix="nothing")
    assert none[0]["allowed_tools"] == []


def test_a_server_name_becomes_a_label() -> None:
    assert server_label("apcore-mcp") == "apcore-mcp"
    assert server_label("My Server (prod)") == "My_Server_prod"
    assert server_label("..") == "apcore-mcp"
    assert len(server_label("x" * 300)) == 64


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"format": "agents", "agents_form": "xml"}, "agents_form must be one of functions, mcp, got 'xml'"),
        ({"format": "agents", "agents_form": "mcp"}, "agents_form 'mcp' needs server_url"),
        ({"format": "agents", "server_url": SERVER}, "server_url exists only with agents_form 'mcp'"),
        ({"format": "agents", "agents_form": "mcp", "server_url": "ftp://x/mcp"}, "must be an http"),
        ({"format": "agents", "agents_form": "mcp", "server_url": "/mcp"}, "must be an http"),
        ({"format": "agents", "agents_form": "mcp", "server_url": SERVER, "server_label": ""}, "must not be empty"),
        ({"agents_form": "mcp", "server_url": SERVER}, "exist only in format 'agents'"),
        ({"format": "responses", "agents_form": "mcp", "server_url": SERVER}, "exist only in format 'agents'"),
        ({"format": "agents", "defer_loading": True}, "only in format 'responses'"),
        ({"format": "agents", "agents_form": "mcp", "server_url": SERVER, "strict": True}, "not to agents_form"),
    ],
)
def test_bad_agents_options_raise(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        to_openai_tools(make_registry(), **options)


# -- the 3 MiB cap: compact UTF-8 JSON, the way the Agents API counts ---------------------------------------


def tools_of_size(size: int, char: str = "x") -> list[dict[str, Any]]:
    """One function tool whose compact UTF-8 JSON is exactly ``size`` bytes (``char`` 1 or 2 bytes)."""
    tool: dict[str, Any] = {"type": "function", "name": "a", "description": "", "parameters": {}}
    room = size - agents_size([tool])
    width = len(char.encode())
    tool["description"] = char * (room // width) + "x" * (room % width)
    assert agents_size([tool]) == size
    return [tool]


def test_a_list_of_exactly_3_mib_passes_and_one_byte_more_is_refused_with_its_size() -> None:
    check_agents_size(tools_of_size(MAX_AGENTS_TOOLS_BYTES))
    with pytest.raises(ValueError, match=r"^The Agents tool list is 3145729 bytes of JSON, over .* 3145728 bytes"):
        check_agents_size(tools_of_size(MAX_AGENTS_TOOLS_BYTES + 1))


def test_the_cap_counts_utf8_bytes_not_characters() -> None:
    tools = tools_of_size(MAX_AGENTS_TOOLS_BYTES + 2, char="é")
    assert len(json.dumps(tools, ensure_ascii=False, separators=(",", ":"))) < MAX_AGENTS_TOOLS_BYTES
    with pytest.raises(ValueError, match="3145730 bytes"):
        check_agents_size(tools)
