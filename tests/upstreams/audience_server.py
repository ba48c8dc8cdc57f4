"""A third-party MCP server over Streamable HTTP that wants a token issued for it, for the token exchange tests.

Every HTTP request must carry ``Authorization: Bearer`` with either the listing token (the
bridge's own, from its config: it may list tools, and a call with it is answered with an
error) or a JWT of the authorization server whose ``aud`` is this server's URL. Anything
else is a 401. ``whoami`` answers with the subject of the token its request carried (after
``delay`` seconds, so calls of several callers can overlap). Every ``Authorization`` value
received is recorded in ``seen``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import jwt
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

SUBJECT_KEY = "audience_server.subject"
LISTER = "lister"
WHOAMI = types.Tool(
    name="whoami",
    description="The subject of the token this call arrived with",
    input_schema={"type": "object", "properties": {"delay": {"type": "number", "default": 0}}},
    annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
)


@dataclass
class AudienceServer:
    """What the server checks tokens against, and what it saw."""

    url: str
    issuer: str
    public_pem: str
    lister_token: str
    seen: list[str] = field(default_factory=list)
    refused: int = 0

    def subject(self, header: str) -> str | None:
        """``LISTER`` for the listing token, the subject of a valid token for this server, else ``None``."""
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        if token == self.lister_token:
            return LISTER
        try:
            claims = jwt.decode(token, self.public_pem, algorithms=["RS256"], audience=self.url, issuer=self.issuer)
        except jwt.PyJWTError:
            return None
        subject = claims.get("sub")
        return subject if isinstance(subject, str) else None

    async def guard(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
            self.seen.append(header)
            subject = self.subject(header)
            if subject is None:
                self.refused += 1
                await JSONResponse({"error": "invalid_token"}, status_code=401)(scope, receive, send)
                return
            scope[SUBJECT_KEY] = subject
        await app(scope, receive, send)

    async def list_tools(self, _ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[WHOAMI])

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        subject = getattr(getattr(ctx, "request", None), "scope", {}).get(SUBJECT_KEY)
        if subject in (None, LISTER):
            return types.CallToolResult(content=[types.TextContent(text="no caller on this call")], is_error=True)
        await anyio.sleep(float((params.arguments or {}).get("delay", 0)))
        return types.CallToolResult(content=[types.TextContent(text=subject)], structured_content={"sub": subject})

    def app(self) -> Starlette:
        server: Server[Any] = Server(
            "audience-upstream", version="1.0", on_list_tools=self.list_tools, on_call_tool=self.call_tool
        )
        manager = StreamableHTTPSessionManager(app=server)

        @contextlib.asynccontextmanager
        async def lifespan(_app: Starlette) -> AsyncIterator[None]:
            async with manager.run():
                yield

        return Starlette(
            routes=[Route("/mcp", endpoint=_Guarded(self, StreamableHTTPASGIApp(manager)))], lifespan=lifespan
        )


class _Guarded:
    """A class instance, so Starlette passes it the raw ASGI scope (a function would get a Request)."""

    def __init__(self, server: AudienceServer, app: ASGIApp) -> None:
        self.server = server
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.server.guard(self.app, scope, receive, send)
