"""``GET /sse``: the legacy SSE transport's connection endpoint, for any low-level MCP ``Server``."""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.sse import SseServerTransport
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

MCP_PATH = "/mcp"
SSE_PATH = "/sse"
MESSAGES_PATH = "/messages/"


class SseEndpoint:
    """One legacy SSE connection per request, served until the client goes away.

    An ASGI app rather than a Starlette endpoint function, so it gets the raw scope the
    transport needs.
    """

    def __init__(self, server: Server[Any], transport: SseServerTransport) -> None:
        self.server = server
        self.transport = transport
        self.connections = 0
        """Open SSE connections (each is one MCP session)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "GET":
            await PlainTextResponse("Method Not Allowed", 405, headers={"Allow": "GET"})(scope, receive, send)
            return
        async with self.transport.connect_sse(scope, receive, send) as (read_stream, write_stream):
            self.connections += 1
            try:
                await self.server.run(read_stream, write_stream, self.server.create_initialization_options())
            finally:
                self.connections -= 1
