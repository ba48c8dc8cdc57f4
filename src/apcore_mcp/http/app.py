"""The one Starlette app serving a bridge over HTTP.

Routes: ``/mcp`` (Streamable HTTP), ``/sse`` + ``/messages/`` (legacy SSE), ``GET /health``
(liveness), ``GET /ready`` (readiness), ``GET /metrics`` (Prometheus), ``GET /openai/tools``
and, when enabled, the explorer. Every route sits behind the Host/Origin guard.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from apcore_mcp.bridge import Bridge
from apcore_mcp.http.auth import build_auth
from apcore_mcp.http.events import MemoryEventStore
from apcore_mcp.http.explorer import execute_token, explorer_routes
from apcore_mcp.http.guard import HostOriginGuard, HostPolicy
from apcore_mcp.http.metrics import Metrics, StreamCounter
from apcore_mcp.http.scopes import ScopeEndpoints
from apcore_mcp.openai import check_filters, select_records, tools_from_records
from apcore_mcp.run.shutdown import drain_when_stopping, reset_streams, take_over_stream_draining
from apcore_mcp.run.upstreams import readiness, serving_upstreams
from apcore_mcp.settings import Settings

if TYPE_CHECKING:
    from apcore_mcp.replicas.shared import SharedState

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
SSE_PATH = "/sse"
MESSAGES_PATH = "/messages/"
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_MAX_RENDERED = 64  # distinct /openai/tools queries kept per catalog generation


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
    """Build the HTTP app for a Registry or Executor (or an already built ``bridge``)."""
    if bridge is None:
        bridge = Bridge.build(registry_or_executor, settings)
    settings = bridge.settings
    policy = HostPolicy.for_settings(settings)
    sdk_security = policy.to_sdk_settings()
    metrics = Metrics(bridge)
    bridge.router.observers.append(metrics.observe_call)
    manager = StreamableHTTPSessionManager(
        app=bridge.server,
        stateless=settings.stateless,
        json_response=settings.json_response,
        security_settings=sdk_security,
        event_store=MemoryEventStore() if settings.resumable and not settings.stateless else None,
        retry_interval=settings.sse_retry_ms,
    )
    sse = SseServerTransport(MESSAGES_PATH, security_settings=sdk_security)

    take_over_stream_draining()
    shared = _shared_state(bridge)
    # One MCP endpoint per scope of the upstream config (the main scope is /mcp itself).
    endpoints = ScopeEndpoints(bridge.executor, settings, sdk_security) if bridge.upstream_config else None

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with (
            manager.run(),
            serving_upstreams(bridge, endpoints=endpoints) as upstreams,
            anyio.create_task_group() as background,
        ):
            bridge.notifier.bind(asyncio.get_running_loop())
            stopping = functools.partial(mark_stopping, app)
            background.start_soon(drain_when_stopping, bridge.router, settings.shutdown_timeout, stopping)
            if shared is not None:
                background.start_soon(shared.run)
            app.state.upstreams = upstreams
            app.state.stopping = False
            app.state.ready = True
            try:
                yield
            finally:
                app.state.ready = False
                background.cancel_scope.cancel()
                if shared is not None:
                    await shared.aclose()
                bridge.close()
                reset_streams()

    def streams(app: ASGIApp, route: str) -> ASGIApp:
        return StreamCounter(app, metrics.open_streams, route)

    routes: list[BaseRoute] = [
        Route(MCP_PATH, endpoint=streams(StreamableHTTPASGIApp(manager), MCP_PATH)),
        Route(SSE_PATH, endpoint=streams(SseEndpoint(bridge, sse), SSE_PATH)),
        Mount(MESSAGES_PATH, app=sse.handle_post_message),
        *service_routes(bridge, metrics, shared.problems if shared is not None else dict),
        *(endpoints.routes if endpoints is not None else []),
    ]
    auth = build_auth(settings)  # None when auth is "none"
    if settings.explorer:
        # With auth on, explorer calls carry the caller's own token: no separate explorer token.
        routes += explorer_routes(bridge, execute_token(bridge) if auth is None else None)
    middleware = [Middleware(HostOriginGuard, policy=policy, on_reject=metrics.reject)]
    if auth is not None:
        routes += auth.routes
        middleware += auth.middleware(on_reject=metrics.reject)
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.bridge = bridge
    app.state.metrics = metrics
    app.state.ready = False
    app.state.stopping = False
    app.state.upstreams = None
    return app


def mark_stopping(app: Starlette) -> None:
    """From the stop signal on, ``/ready`` answers 503 so balancers stop sending new work here."""
    app.state.stopping = True


def _shared_state(bridge: Bridge) -> SharedState | None:
    if bridge.settings.redis_url is None:
        return None
    from apcore_mcp.replicas.shared import shared_state  # redis is an optional dependency

    return shared_state(bridge)


Problems = Callable[[], dict[str, str]]
"""What runs degraded (``{"redis": "unreachable ..."}``): still serving, so still ready."""


def service_routes(bridge: Bridge, metrics: Metrics, problems: Problems = dict) -> list[BaseRoute]:
    """``/health``, ``/ready``, ``/metrics`` and ``/openai/tools``."""
    settings = bridge.settings

    async def health(request: Request) -> JSONResponse:
        if not request.app.state.ready:
            return JSONResponse({"status": "starting"}, status_code=503)
        return JSONResponse(
            {
                "status": "ok",
                "module_count": len(bridge.catalog),
                "uptime_seconds": round(bridge.uptime_seconds, 3),
                "version": settings.server_version(),
            }
        )

    async def ready(request: Request) -> JSONResponse:
        if getattr(request.app.state, "stopping", False):
            return JSONResponse({"status": "stopping"}, status_code=503)
        if not request.app.state.ready:
            return JSONResponse({"status": "starting"}, status_code=503)
        body: dict[str, Any] = {"status": "ready", "module_count": len(bridge.catalog)}
        upstreams = readiness(request.app.state.upstreams)
        if upstreams is not None:
            body["upstreams"] = upstreams
        degraded = problems()
        if degraded:
            body["degraded"] = degraded
        return JSONResponse(body)

    async def metrics_text(_request: Request) -> Response:
        return Response(metrics.render(), media_type=metrics.content_type)

    # Rendered bodies per query, valid for one catalog generation (strict mode on 1,000 tools
    # costs ~50 ms to compute; a repeated GET then costs a dict lookup).
    rendered: dict[tuple[Any, ...], bytes] = {}
    rendered_generation = -1

    async def openai_tools(request: Request) -> Response:
        try:
            options = parse_openai_query(request)
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        nonlocal rendered_generation
        generation = bridge.catalog.generation
        if generation != rendered_generation or len(rendered) >= _MAX_RENDERED:
            rendered.clear()
            rendered_generation = generation
        key = (options["strict"], options["embed_annotations"], tuple(options["tags"] or ()), options["prefix"])
        body = rendered.get(key)
        if body is None:
            records = select_records(bridge.catalog.records(), tags=options["tags"], prefix=options["prefix"])
            tools = tools_from_records(
                records, strict=options["strict"], embed_annotations=options["embed_annotations"]
            )
            body = bytes(JSONResponse(tools).body)
            if bridge.catalog.generation == generation:
                rendered[key] = body
        return Response(body, media_type="application/json")

    routes: list[BaseRoute] = [
        Route("/health", health, methods=["GET"]),
        Route("/ready", ready, methods=["GET"]),
        Route("/openai/tools", openai_tools, methods=["GET"]),
    ]
    if settings.metrics:
        routes.append(Route("/metrics", metrics_text, methods=["GET"]))
    return routes


def parse_openai_query(request: Request) -> dict[str, Any]:
    """``strict``, ``embed_annotations`` (booleans), ``tags`` (repeatable), ``prefix``.

    Raises:
        ValueError: an unknown parameter or a bad value (the message names it).
    """
    query = request.query_params
    unknown = sorted(set(query) - {"strict", "embed_annotations", "tags", "prefix"})
    if unknown:
        raise ValueError(f"Unknown query parameter: {unknown[0]}")
    options: dict[str, Any] = {name: _flag(query.get(name), name) for name in ("strict", "embed_annotations")}
    tags = [tag for value in query.getlist("tags") for tag in value.split(",")] if "tags" in query else None
    prefix = query.get("prefix")
    check_filters(tags, prefix)
    options.update(tags=tags, prefix=prefix)
    return options


def _flag(value: str | None, name: str) -> bool:
    if value is None:
        return False
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ValueError(f"{name} must be true or false, got {value!r}")
