"""The one Starlette app serving a bridge over HTTP: Streamable HTTP, SSE and ``/health``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Mount, Route
from starlette.types import Receive, Scope, Send

from apcore_mcp.bridge import Bridge
from apcore_mcp.security import HostOriginGuard, HostPolicy
from apcore_mcp.settings import Settings

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
SSE_PATH = "/sse"
MESSAGES_PATH = "/messages/"


class SseEndpoint:
    """``GET /sse``: one legacy SSE connection, served until the client goes away."""

    def __init__(self, bridge: Bridge, transport: SseServerTransport) -> None:
        self.bridge = bridge
        self.transport = transport

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "GET":
            await PlainTextResponse("Method Not Allowed", 405, headers={"Allow": "GET"})(scope, receive, send)
            return
        server = self.bridge.server
        async with self.transport.connect_sse(scope, receive, send) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def create_app(
    registry_or_executor: Any = None, settings: Settings | None = None, *, bridge: Bridge | None = None
) -> Starlette:
    """Build the HTTP app for a Registry or Executor (or an already built ``bridge``).

    Routes: ``/mcp`` (Streamable HTTP), ``/sse`` + ``/messages/`` (legacy SSE) and
    ``GET /health``. Every route is behind Host/Origin checking.
    """
    if bridge is None:
        bridge = Bridge.build(registry_or_executor, settings)
    settings = bridge.settings
    policy = HostPolicy.for_settings(settings)
    sdk_security = policy.to_sdk_settings()
    manager = StreamableHTTPSessionManager(
        app=bridge.server,
        stateless=settings.stateless,
        json_response=settings.json_response,
        security_settings=sdk_security,
    )
    sse = SseServerTransport(MESSAGES_PATH, security_settings=sdk_security)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            bridge.notifier.bind(asyncio.get_running_loop())
            app.state.ready = True
            try:
                yield
            finally:
                app.state.ready = False
                bridge.close()

    async def health(request: Request) -> JSONResponse:
        if not getattr(request.app.state, "ready", False):
            return JSONResponse({"status": "starting"}, status_code=503)
        return JSONResponse(
            {
                "status": "ok",
                "module_count": len(bridge.catalog),
                "uptime_seconds": round(bridge.uptime_seconds, 3),
                "version": settings.server_version(),
            }
        )

    routes = [
        Route(MCP_PATH, endpoint=StreamableHTTPASGIApp(manager)),
        Route(SSE_PATH, endpoint=SseEndpoint(bridge, sse)),
        Mount(MESSAGES_PATH, app=sse.handle_post_message),
        Route("/health", endpoint=health, methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(HostOriginGuard, policy=policy)],
        lifespan=lifespan,
    )
    app.state.bridge = bridge
    app.state.ready = False
    return app
