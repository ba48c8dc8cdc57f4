# file: tests/test_stats_fixture.py
from pathlib import Path

import pytest

from apcore_mcp.testing import apcore_server
from apcore_mcp.testing.plugin import McpServerFactory  # the fixture's type, for type checkers

EXTENSIONS = Path(__file__).parent.parent / "extensions"


@pytest.mark.asyncio
@pytest.mark.parametrize("transport", ["stdio", "streamable-http", "sse"])
async def test_stats_on_every_transport(mcp_server: McpServerFactory, transport: str) -> None:
    server = mcp_server(apcore_server(EXTENSIONS), transport, scope="module")
    async with server.client(era="legacy") as client:  # an mcp.Client; era="modern" for 2026-07-28
        result = await client.call_tool("text.stats", {"text": "a b a"})
    assert result.structured_content["words"] == 3


def test_connection_parameters(mcp_server: McpServerFactory) -> None:
    server = mcp_server(apcore_server(EXTENSIONS), "streamable-http", scope="session")
    assert server.params == {"url": server.url}  # stdio: {"command", "args", "env"}
    entry = server.mcp_servers_entry("stats")  # for hosts that read an mcpServers file
    assert entry == {"mcpServers": {"stats": {"type": "http", "url": server.url}}}
