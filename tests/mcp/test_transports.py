"""The same scenarios over every transport, with the SDK's real client (see conftest)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from tests._support.modules import EXPECTED_TOOLS
from tests._support.sessions import OpenClient, call_text


async def test_lists_one_tool_per_module_and_skips_the_circular_one(connect: OpenClient) -> None:
    async with connect() as conn:
        tools = {tool.name: tool for tool in (await conn.client.list_tools()).tools}
    assert sorted(tools) == EXPECTED_TOOLS
    assert "demo.cycle" not in tools
    echo = tools["demo.echo"].model_dump(by_alias=True, exclude_none=True, mode="json")
    assert echo["description"] == "Echo the text back"
    assert echo["inputSchema"]["type"] == "object"
    assert echo["inputSchema"]["required"] == ["text"]
    assert echo["inputSchema"]["properties"]["times"]["default"] == 1
    assert echo["outputSchema"]["properties"]["echo"]["type"] == "string"
    assert echo["annotations"] == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    path = tools["demo.path"].model_dump(by_alias=True, exclude_none=True, mode="json")
    assert "$defs" not in path["inputSchema"]
    assert path["inputSchema"]["properties"]["start"]["properties"]["x"]["type"] == "integer"
    assert path["inputSchema"]["properties"]["stops"]["items"]["required"] == ["x", "y"]
    secret = tools["admin.secret"].model_dump(by_alias=True, exclude_none=True, mode="json")
    assert secret["_meta"]["apcore/requiresApproval"] is True
    assert secret["annotations"]["destructiveHint"] is True


async def test_call_returns_json_text_and_structured_content(connect: OpenClient) -> None:
    async with connect() as conn:
        result = await conn.client.call_tool("demo.echo", {"text": "hi", "times": 2})
        values = await conn.client.call_tool("demo.values", {})
    assert result.is_error is False
    assert json.loads(result.content[0].text) == {"echo": "hi hi"}
    assert result.structured_content == {"echo": "hi hi"}
    # Declared formats survive: ISO 8601 date-times, UUIDs and paths as strings, bytes as text (never a repr).
    expected = {
        "when": "2026-01-02T03:04:05",
        "id": "12345678-1234-5678-1234-567812345678",
        "path": "/srv/data",
        "raw": "xy",
    }
    assert json.loads(values.content[0].text) == expected
    assert values.structured_content == expected


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("nope.missing", {}, "Module not found: nope.missing"),
        ("demo.echo", {}, "Input validation failed:\n- text: Field required (required)"),
        ("demo.echo", {"text": 5}, "Input validation failed:\n- text: Input should be a valid string (type)"),
        ("demo.path", {"start": {"x": 1}}, "Input validation failed:\n- start.y: Field required (required)"),
        ("demo.boom", {}, "Internal error occurred"),
        ("demo.slow", {"seconds": 2}, "Module timed out after 100ms"),
        ("demo.denied", {"text": "x"}, "Access denied"),
    ],
)
async def test_errors_are_safe_results(
    connect: OpenClient, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    async with connect() as conn:
        text, is_error = await call_text(conn.client, tool, arguments)
        # The session survives an error: the next call still works.
        after, after_error = await call_text(conn.client, "demo.echo", {"text": "ok"})
    assert (text, is_error) == (expected, True)
    assert "passwd" not in text and "RuntimeError" not in text
    assert (json.loads(after), after_error) == ({"echo": "ok"}, False)


async def test_filtered_module_is_neither_listed_nor_callable(connect: OpenClient) -> None:
    async with connect(prefix="demo.") as conn:
        names = [tool.name for tool in (await conn.client.list_tools()).tools]
        text, is_error = await call_text(conn.client, "admin.secret", {})
    assert "admin.secret" not in names and "demo.echo" in names
    assert (text, is_error) == ("Module not found: admin.secret", True)


async def test_documentation_resources(connect: OpenClient) -> None:
    async with connect() as conn:
        resources = (await conn.client.list_resources()).resources
        read = await conn.client.read_resource("docs://demo.echo")
        with pytest.raises(MCPError, match="Resource not found"):
            await conn.client.read_resource("docs://demo.boom")
    uris = sorted(str(resource.uri) for resource in resources)
    assert uris == ["docs://demo.denied", "docs://demo.echo"]
    assert read.contents[0].text == "Echo repeats `text` `times` times."
    assert read.contents[0].mime_type == "text/plain"


async def test_capabilities_tell_whether_the_list_is_live(connect: OpenClient) -> None:
    async with connect() as static:
        assert static.client.server_capabilities.tools.list_changed is False
    async with connect(dynamic=True) as live:
        assert live.client.server_capabilities.tools.list_changed is True


async def test_live_registration_is_listed_and_notified(connect: OpenClient) -> None:
    async with connect(dynamic=True) as conn:
        client = conn.client
        if conn.modern:
            async with client.listen(tools_list_changed=True) as subscription:
                await call_text(client, "demo.register", {"text": "add"})
                async with asyncio.timeout(5):
                    event = await anext(aiter(subscription))
            assert type(event).__name__ == "ToolsListChanged"
        else:
            await call_text(client, "demo.register", {"text": "add"})
            await conn.inbox.wait_for("notifications/tools/list_changed")
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert "demo.added" in names
        text, is_error = await call_text(client, "demo.added", {"text": "new"})
        assert (json.loads(text), is_error) == ({"echo": "new"}, False)

        conn.inbox.clear()
        await call_text(client, "demo.register", {"text": "remove"})
        if not conn.modern:
            await conn.inbox.wait_for("notifications/tools/list_changed")
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert "demo.added" not in names
        text, is_error = await call_text(client, "demo.added", {"text": "gone"})
        assert (text, is_error) == ("Module not found: demo.added", True)
