"""A client test against the scripted server: the server answers what the script says, turn by
turn, and records what the client sent."""

from __future__ import annotations

from pathlib import Path

import pytest
from weather_agent import forecast_sentence  # beside this file: pytest puts its folder on sys.path

from apcore_mcp.testing import TEST_CASE_META, encode_responses, scripted_server
from apcore_mcp.testing.plugin import McpServerFactory

SCRIPT = Path(__file__).parent / "weather.script.yaml"


@pytest.mark.asyncio
@pytest.mark.parametrize("transport", ["stdio", "streamable-http", "sse"])
async def test_retries_once_after_a_tool_error(mcp_server: McpServerFactory, transport: str) -> None:
    server = mcp_server(scripted_server(SCRIPT), transport, scope="module")
    async with server.client() as client:
        flaky = await forecast_sentence(client, "Lisbon", meta={TEST_CASE_META: "flaky"})
        down = await forecast_sentence(client, "Oslo", meta={TEST_CASE_META: "down"})
    assert flaky == "Lisbon: sunny, 24 C"
    assert down == "Oslo: unavailable"
    if transport != "stdio":  # a stdio client starts its own server process; its record is its own
        sent = [call["params"]["arguments"] for call in server.requests("tools/call", test_case="flaky")]
        assert sent == [{"city": "Lisbon"}, {"city": "Lisbon"}]


@pytest.mark.asyncio
async def test_in_band_directives_for_an_agent_with_a_mocked_llm(mcp_server: McpServerFactory) -> None:
    server = mcp_server(scripted_server(SCRIPT), "streamable-http")
    turns = [{"content": [{"type": "text", "text": "42 rows"}], "structured_content": {"rows": 42}}]
    # What a mocked LLM would pass through to the generic tool:
    task = f"Count the rows. [test_case_id=rows-1] [mcp_responses_json={encode_responses(turns)}]"
    async with server.client() as client:
        result = await client.call_tool("get_data", {"task_description": task})
    assert result.structured_content == {"rows": 42}
