# file: tests/test_stats_fixture.py
from pathlib import Path

import pytest

from apcore_mcp.testing import apcore_server
from apcore_mcp.testing.plugin import McpServerFactory  # the fixture's type, for type checkers

EXTENSIONS = Path(__file__).parent.parent / "extensions"


@pytest.mark.asyncio
@pytest.mark.parametrize("era", ["legacy", "modern"])  # 2025-11-25 handshake, 2026-07-28
async def test_stats_in_memory(mcp_server: McpServerFactory, era: str) -> None:
    server = mcp_server(apcore_server(EXTENSIONS))  # in this process
    async with server.client(era=era) as client:  # an mcp.Client
        result = await client.call_tool("text.stats", {"text": "a b a"})
    assert result.structured_content["words"] == 3
    assert server.pid is None  # no process
    assert server.url is None


@pytest.mark.asyncio
@pytest.mark.parametrize("transport", ["stdio", "streamable-http", "sse"])
async def test_stats_end_to_end(mcp_server: McpServerFactory, transport: str) -> None:
    server = mcp_server(apcore_server(EXTENSIONS), transport, scope="module")  # a process
    async with server.client(era="legacy") as client:
        result = await client.call_tool("text.stats", {"text": "a b a"})
    assert result.structured_content["words"] == 3


def test_connection_parameters(mcp_server: McpServerFactory) -> None:
    server = mcp_server(apcore_server(EXTENSIONS), "streamable-http", scope="session")
    assert server.params == {"url": server.url}  # stdio: {"command", "args", "env"}
    entry = server.mcp_servers_entry("stats")  # for hosts that read an mcpServers file
    assert entry == {"mcpServers": {"stats": {"type": "http", "url": server.url}}}
