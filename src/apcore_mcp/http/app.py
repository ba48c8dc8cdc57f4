"""The one Starlette app serving a bridge over HTTP.

Routes: ``/mcp`` (Streamable HTTP), ``/sse`` + ``/messages/`` (legacy SSE), ``GET /health``
(liveness), ``GET /ready`` (readiness), ``GET /metrics`` (Prometheus), ``GET /openai/tools``
and, when enabled, the explorer (with ``{prefix}/mcp``: the ``/mcp`` app behind the explorer's rules).
Every request is timed (``HttpMetrics``), then passes the Host/Origin guard, then has its body read
within the size limit and deadline (``BodyGuard``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp

from apcore_mcp._jsonbounds import JsonBounds
from apcore_mcp._redaction import RedactedLogs
from apcore_mcp.bridge import Bridge, BridgeService
from apcore_mcp.bridge.diagnostics import HiddenCount
from apcore_mcp.bridge.upstreams import drifted_count, readiness
from apcore_mcp.bridge.workers import EXPLORER_TOKEN, machine_secret
from apcore_mcp.http.admin import admin_routes
from apcore_mcp.http.approvals import approval_routes
from apcore_mcp.http.auth import Auth, build_auth
from apcore_mcp.http.body import BodyGuard
from apcore_mcp.http.direct import DirectPath
from apcore_mcp.http.events import ResumeStore
from apcore_mcp.http.explorer.mcp import ExplorerMcp
from apcore_mcp.http.explorer.page import ExecuteGate, explorer_routes
from apcore_mcp.http.exposure import warn_if_exposed
from apcore_mcp.http.forwarded import ForwardedClient, TrustedProxies
from apcore_mcp.http.guard import HostOriginGuard, HostPolicy
from apcore_mcp.http.mcp_front import McpFront, resume_grace_seconds
from apcore_mcp.http.metrics import HttpMetrics, Metrics, StreamCounter
from apcore_mcp.http.openai_tools import openai_tools_route
from apcore_mcp.http.protocol_state import HEADER_TIMEOUT_STATE, MAX_HEADER_BYTES_STATE, REJECT_STATE
from apcore_mcp.http.server_card import discovery_routes, is_discovery_path
from apcore_mcp.http.sessions import SessionManager
from apcore_mcp.http.shutdown import drain_when_stopping, reset_streams, take_over_stream_draining
from apcore_mcp.http.sse import MCP_PATH, MESSAGES_PATH, SSE_PATH, MessagesEndpoint, SseAcrossWorkers, SseEndpoint
from apcore_mcp.http.toolsets import ToolsetEndpoints
from apcore_mcp.settings import Settings
from apcore_mcp.types import RegistryOrExecutor

logger = logging.getLogger(__name__)


def create_app(
    registry_or_executor: RegistryOrExecutor | None = None,
    settings: Settings | None = None,
    *,
    bridge: Bridge | None = None,
) -> Starlette:
    """Build the HTTP app for a Registry or Executor (or an already built ``bridge``).

    The app owns what it creates: the ``BridgeService`` that serves the bridge, entered in its
    lifespan, and everything HTTP (sessions, resume store, metrics). A bridge handed to it is
    only read (it has nothing to close), so one bridge can be served by several apps in turn.
    """
    if bridge is None:
        if registry_or_executor is None:
            raise TypeError("create_app() needs a Registry or Executor, or bridge=")
        bridge = Bridge.build(registry_or_executor, settings)
    elif registry_or_executor is not None or settings is not None:
        raise TypeError("create_app(): give a Registry or Executor (with settings), or bridge=, not both")
    settings = bridge.settings
    policy = HostPolicy.for_settings(settings)
    sdk_security = policy.to_sdk_settings()
    metrics = Metrics(bridge.catalog, bridge.router)
    auth = build_auth(settings)  # None when auth is "none"
    # Streams resume with Last-Event-ID only in sessions and as SSE; each session's events are its own.
    resume_store = (
        ResumeStore(max_bytes=settings.resume_max_bytes, stream_max_bytes=settings.resume_stream_max_bytes)
        if settings.keeps_stream_events
        else None
    )
    manager = session_manager(bridge, sdk_security, resume_store)
    sse = SseServerTransport(MESSAGES_PATH, security_settings=sdk_security)
    sse_endpoint = SseEndpoint(bridge.server, sse)
    metrics.session_count = lambda: manager.session_count + sse_endpoint.connections

    # With auth on, explorer calls carry the caller's own token: no separate explorer token.
    gate = ExecuteGate(settings, authenticated=auth is not None, made=explorer_token(settings))
    # A handshake-era client whose POST stream broke may resume it (event store, SSE responses):
    # its call is cancelled only if it has not come back within a few of its reconnection delays.
    resume_grace = resume_grace_seconds(settings) if resume_store is not None else None
    take_over_stream_draining()
    # One MCP endpoint per toolset of the upstream config (the main toolset is /mcp itself).
    endpoints = (
        ToolsetEndpoints(
            bridge.executor, settings, sdk_security, bridge.limits, metrics.answered_direct, observed_with=bridge
        )
        if bridge.upstream_config
        else None
    )
    if endpoints is not None:
        metrics.in_flight = lambda: bridge.router.in_flight + endpoints.in_flight
    service = BridgeService(bridge, toolsets=endpoints)
    metrics.held_tools = lambda: drifted_count(service.upstreams)

    lifespan = functools.partial(
        _lifespan, service=service, manager=manager, metrics=metrics, gate=gate, authenticated=auth is not None
    )

    direct = DirectPath(manager, metrics.answered_direct) if settings.direct_path else None

    def streams(app: ASGIApp, route: str) -> ASGIApp:
        return StreamCounter(app, metrics.open_streams, route)

    mcp = streams(
        McpFront(StreamableHTTPASGIApp(manager), resume_grace, resume_store, direct, sessions=not settings.stateless),
        MCP_PATH,
    )
    legacy: list[BaseRoute] = [
        Route(SSE_PATH, endpoint=streams(sse_endpoint, SSE_PATH)),
        Mount(MESSAGES_PATH, app=MessagesEndpoint(sse, max_bytes=settings.max_body_bytes)),
    ]
    if settings.workers > 1:
        refused = SseAcrossWorkers(settings.workers)
        legacy = [Route(SSE_PATH, endpoint=refused, methods=["GET", "POST"]), Mount(MESSAGES_PATH, app=refused)]
    routes: list[BaseRoute] = [
        Route(MCP_PATH, endpoint=mcp),
        *legacy,
        *service_routes(service, metrics),
        *(endpoints.routes if endpoints is not None else []),
    ]
    if settings.server_card:
        routes += discovery_routes(bridge, endpoints)
    if settings.explorer:
        routes += explorer_routes(bridge, gate)
        # The page speaks MCP to this very app (sessions, direct path, metrics shared), behind its rules.
        explorer_mcp = ExplorerMcp(mcp, bridge, gate)
        routes.append(Route(f"{settings.explorer_prefix}{MCP_PATH}", explorer_mcp, methods=["GET", "POST", "DELETE"]))
    if auth is not None:
        routes += auth.routes
    routes += admin_routes(service, authenticated=auth is not None)
    approver = settings.auth_approver_scope if auth is not None else None
    routes += approval_routes(bridge.executor, approver_scope=approver)
    middleware = middleware_stack(settings, policy, auth, metrics)
    if auth is not None:
        middleware += auth.inner_middleware(bridge.authorization)  # reads the body BodyGuard bounded
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.bridge = bridge
    app.state.service = service
    app.state.metrics = metrics
    app.state.ready = False
    app.state.stopping = False
    app.state.upstreams = None
    app.state.resume_store = resume_store
    return app


def explorer_token(settings: Settings) -> str | None:
    """The execute token several workers share when none is configured (``None``: the gate makes one)."""
    if settings.workers < 2 or not (settings.explorer and settings.allow_execute) or settings.execute_token:
        return None
    return machine_secret(EXPLORER_TOKEN)


def session_manager(bridge: Bridge, security: TransportSecuritySettings, events: ResumeStore | None) -> SessionManager:
    """The ``/mcp`` session manager of ``bridge``'s server, with the settings' bounds."""
    settings = bridge.settings
    return SessionManager(
        bridge.server,
        max_per_caller=settings.max_sessions_per_caller,
        stateless=settings.stateless,
        json_response=settings.json_response,
        security_settings=security,
        events=events,
        retry_interval=settings.sse_retry_ms,
        session_idle_timeout=settings.session_idle_timeout,
        max_sessions=settings.max_sessions,
        max_request_body_size=settings.max_body_bytes,
    )


def middleware_stack(settings: Settings, policy: HostPolicy, auth: Auth | None, metrics: Metrics) -> list[Middleware]:
    """The app's pure-ASGI layers, outermost first (see the module doc)."""
    middleware = [
        # Outermost: all inside (limits, sessions per caller, the explorer's origin check) see the real client.
        Middleware(ForwardedClient, trusted=TrustedProxies(settings.forwarded_allow_ips)),
        Middleware(
            HostOriginGuard,
            policy=policy,
            on_reject=metrics.reject,
            max_header_bytes=settings.max_header_bytes,
            any_origin=is_discovery_path if settings.server_card else None,  # public, read-only, CORS "*"
        ),
    ]
    # Timing sits inside auth, whose copy of the scope is the one the router marks with the route.
    if auth is not None:
        middleware += auth.middleware(on_reject=metrics.reject)
    return [
        *middleware,
        Middleware(HttpMetrics, metrics=metrics),
        Middleware(
            BodyGuard,
            max_bytes=settings.max_body_bytes,
            timeout=settings.body_timeout,
            json_bounds=JsonBounds(settings.max_json_depth, settings.max_json_items),
        ),
    ]


@contextlib.asynccontextmanager
async def _lifespan(
    app: Starlette,
    *,
    service: BridgeService,
    manager: SessionManager,
    metrics: Metrics,
    gate: ExecuteGate,
    authenticated: bool,
) -> AsyncIterator[dict[str, Any]]:
    """What the app runs while it serves; everything it enters here, it created."""
    bridge, settings = service.bridge, service.bridge.settings
    async with (
        RedactedLogs(),  # first in, last out: nothing logged while serving shows a credential
        service,
        manager.run(),
        anyio.create_task_group() as background,
        contextlib.AsyncExitStack() as stack,
    ):
        stopping = functools.partial(mark_stopping, app)
        background.start_soon(
            drain_when_stopping, bridge.router, settings.shutdown_timeout, stopping, bridge.parts.end_listen_streams
        )
        app.state.upstreams = service.upstreams
        app.state.stopping = False
        if warn_if_exposed(settings, app.state, len(bridge.catalog), authenticated=authenticated):
            gate.expose()
        if settings.workers > 1:
            from apcore_mcp.http.metrics_workers import machine_metrics  # sqlite3 only for workers

            await stack.enter_async_context(machine_metrics(metrics))
        app.state.ready = True
        try:
            with metrics.observing(bridge.router, bridge.parts.admission):
                # Shared with uvicorn's protocol (run/protocol/timed.py), which times request headers.
                yield {
                    HEADER_TIMEOUT_STATE: settings.header_timeout,
                    MAX_HEADER_BYTES_STATE: settings.max_header_bytes,
                    REJECT_STATE: metrics.reject,
                }
        finally:
            app.state.ready = False
            background.cancel_scope.cancel()
            reset_streams()


def mark_stopping(app: Starlette) -> None:
    """From the stop signal on, ``/ready`` answers 503 so balancers stop sending new work here."""
    app.state.stopping = True


def service_routes(service: BridgeService, metrics: Metrics) -> list[BaseRoute]:
    """``/health``, ``/ready``, ``/metrics`` and ``/openai/tools`` of the bridge ``service`` serves."""
    bridge = service.bridge
    settings = bridge.settings
    hidden = HiddenCount(bridge)

    async def health(request: Request) -> JSONResponse:
        if not request.app.state.ready:
            return JSONResponse({"status": "starting"}, status_code=503)
        return JSONResponse(
            {
                "status": "ok",
                "module_count": len(bridge.catalog),
                "uptime_seconds": round(service.uptime_seconds, 3),
                "version": settings.server_version(),
            }
        )

    async def ready(request: Request) -> JSONResponse:
        if getattr(request.app.state, "stopping", False):
            return JSONResponse({"status": "stopping"}, status_code=503)
        if not request.app.state.ready:
            return JSONResponse({"status": "starting"}, status_code=503)
        body: dict[str, Any] = {"status": "ready", "module_count": len(bridge.catalog)}
        body["hidden_tools"] = hidden(request.app.state.upstreams)  # a count: names are the operator's
        upstreams = readiness(request.app.state.upstreams)
        if upstreams is not None:
            body["upstreams"] = upstreams
        degraded = await service.problems()
        if degraded:
            body["degraded"] = degraded
        return JSONResponse(body)

    async def metrics_text(_request: Request) -> Response:
        return Response(metrics.render(), media_type=metrics.content_type)

    routes: list[BaseRoute] = [
        Route("/health", health, methods=["GET"]),
        Route("/ready", ready, methods=["GET"]),
        openai_tools_route(bridge),
    ]
    if settings.metrics:
        routes.append(Route("/metrics", metrics_text, methods=["GET"]))
    return routes
