"""Serving the scripted server: stdio, or one HTTP app with Streamable HTTP (``/mcp``), legacy SSE
(``/sse`` + ``/messages/``), ``GET /health`` and ``GET /requests`` (the request record as JSON).

Host and Origin are checked on every route (DNS-rebinding protection), as our real server does.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import uvicorn
from mcp.server.sse import SseServerTransport
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Mount, Route

from apcore_mcp._addresses import LOOPBACK_NAMES
from apcore_mcp.http.guard import HostOriginGuard, HostPolicy
from apcore_mcp.http.sse import MCP_PATH, MESSAGES_PATH, SSE_PATH, SseEndpoint
from apcore_mcp.mcp.server import ApcoreServer
from apcore_mcp.testing.scripted.server import RequestRecord


def create_scripted_app(server: ApcoreServer, record: RequestRecord, *, host: str = "127.0.0.1") -> Starlette:
    """The HTTP app for ``server``; ``host`` is the bound address, accepted as a Host header."""
    policy = HostPolicy([*LOOPBACK_NAMES, host])
    security = policy.to_sdk_settings()
    manager = StreamableHTTPSessionManager(app=server, security_settings=security)
    sse = SseServerTransport(MESSAGES_PATH, security_settings=security)

    async def health(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "name": server.name, "version": server.version})

    async def requests(request: Request) -> JSONResponse:
        query = request.query_params
        return JSONResponse(record.entries(method=query.get("method"), test_case=query.get("test_case")))

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    routes: list[BaseRoute] = [
        Route(MCP_PATH, endpoint=StreamableHTTPASGIApp(manager)),
        Route(SSE_PATH, endpoint=SseEndpoint(server, sse)),
        Mount(MESSAGES_PATH, app=sse.handle_post_message),
        Route("/health", health, methods=["GET"]),
        Route("/requests", requests, methods=["GET"]),
    ]
    return Starlette(routes=routes, middleware=[Middleware(HostOriginGuard, policy=policy)], lifespan=lifespan)


def run_http(server: ApcoreServer, record: RequestRecord, *, host: str, port: int) -> None:
    """Serve until SIGINT/SIGTERM (uvicorn's own handling)."""
    app = create_scripted_app(server, record, host=host)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan="on", ws="none", timeout_graceful_shutdown=1
    )  # an open SSE stream must not hold a stopping test server
    uvicorn.Server(config).run()


async def run_stdio(server: ApcoreServer) -> None:
    """Serve one client on stdin/stdout until it closes the pipe."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
