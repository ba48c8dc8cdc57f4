# file: tests/test_weather_client.py
from pathlib import Path

import pytest

from apcore_mcp.testing import TEST_CASE_META, encode_responses, scripted_server
from apcore_mcp.testing.plugin import McpServerFactory

SCRIPT = Path(__file__).parent / "weather.script.yaml"


@pytest.mark.asyncio
async def test_the_client_sees_each_turn(mcp_server: McpServerFactory) -> None:
    server = mcp_server(scripted_server(SCRIPT))  # in memory
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with server.client() as client:
        first = await client.call_tool("forecast", {"city": "Rome"})
        second = await client.call_tool("forecast", {"city": "Rome"}, progress_callback=on_progress)
        storm = await client.call_tool("forecast", {"city": "Rome"}, meta={TEST_CASE_META: "storm"})
    assert first.structured_content == {"sky": "sunny"}
    assert [block.type for block in second.content] == ["image", "resource_link"]
    assert progress == [1, 2]
    assert storm.is_error
    # The record of what the client sent (over HTTP also GET /requests):
    assert [c["params"]["arguments"] for c in server.requests("tools/call")] == [{"city": "Rome"}] * 3


@pytest.mark.asyncio
async def test_a_declined_confirmation(mcp_server: McpServerFactory) -> None:
    import mcp.types as types

    async def decline(context: object, params: object) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    server = mcp_server(scripted_server(SCRIPT))
    async with server.client(era="modern", elicitation_callback=decline) as client:  # 2026-07-28
        result = await client.call_tool("confirm", {})
    assert result.content[0].text == "cancelled by the user"


@pytest.mark.asyncio
async def test_in_band_directives(mcp_server: McpServerFactory) -> None:
    # For agent tests where the LLM is mocked: the responses travel inside the tool's input.
    server = mcp_server(scripted_server(SCRIPT), "stdio")  # as a host starts it
    turns = [{"content": [{"type": "text", "text": "42 rows"}]}]
    task = f"Count the rows [test_case_id=rows] [mcp_responses_json={encode_responses(turns)}]"
    async with server.client() as client:
        result = await client.call_tool("get_data", {"task_description": task})
    assert result.content[0].text == "42 rows"
