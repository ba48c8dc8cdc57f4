"""One Streamable HTTP MCP endpoint per config toolset: ``/toolsets/<name>/mcp``.

Each toolset gets its own ``Bridge`` (catalog, call router, list-change notifier) over the
shared registry and executor, narrowed by the toolset's selection, in the toolset's tool mode,
and its own session manager. Upstream handles are shared: two toolsets naming one server use
one process. ``update(config)`` follows a reload: new toolsets get an endpoint, dropped ones
lose it (their sessions end), and a toolset whose selection changed re-reads its catalog and
tells its clients (``list_changed``). Call it before ``UpstreamRuntime.apply`` so the
registrations that follow are filtered by the new selections, then again after it.

The old path ``/scopes/<name>/mcp`` answers a 308 redirect to the new one: MCP clients follow a
same-origin 307/308 with the method and body kept, and every request is then judged (auth
route rules included) on the one path that serves. Its first use logs a deprecation WARNING.

Wiring (the app factory): ``routes`` into the app (behind the Host/Origin guard), and
``async with endpoints.run(config):`` in the lifespan.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import anyio
import anyio.abc
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import PlainTextResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from apcore_mcp.bridge import Bridge, BridgeService
from apcore_mcp.calls.limits import CallLimits
from apcore_mcp.http.direct import DirectPath
from apcore_mcp.http.mcp_front import McpFront
from apcore_mcp.http.sessions import SessionManager
from apcore_mcp.settings import Settings
from apcore_mcp.settings.upstreams import MOUNTING, OLD_TOOLSETS_PREFIX, TOOLSETS_PREFIX
from apcore_mcp.upstream.config.parse import ToolsetSpec, UpstreamConfig
from apcore_mcp.upstream.toolsets import ToolsetSelection

logger = logging.getLogger(__name__)

TOOLSET_PATH = TOOLSETS_PREFIX + "/{name}/mcp"
OLD_TOOLSET_PATH = OLD_TOOLSETS_PREFIX + "/{name}/mcp"
"""Deprecated: the path toolsets were served at when they were called scopes."""


def endpoint_settings(settings: Settings, tool_mode: str) -> Settings:
    """A toolset endpoint's settings: the server's, in the toolset's tool mode, without its filters and mounting.

    The toolset's own selection replaces the server-wide tags/prefix filters; the mounting
    settings go back to their defaults (set without ``mcp_config`` they would stop the start).
    """
    defaults = {field.name: field.default for field in dataclasses.fields(Settings) if field.name in MOUNTING}
    return settings.replace(tool_mode=tool_mode, dynamic=True, tags=None, prefix=None, **defaults)


class MovedToolset:
    """``/scopes/<name>/mcp`` (deprecated): a permanent redirect to ``/toolsets/<name>/mcp``.

    The ``Location`` is relative (``../../toolsets/<name>/mcp``), so it stays right behind a
    proxy that serves us under a path prefix.
    """

    def __init__(self) -> None:
        self._warned = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._warned:
            self._warned = True
            logger.warning("A client used the deprecated path %s; it is now %s", OLD_TOOLSET_PATH, TOOLSET_PATH)
        name = quote(str(scope.get("path_params", {}).get("name", "")), safe="")
        query = scope.get("query_string", b"").decode("latin-1")
        location = f"../..{TOOLSET_PATH.format(name=name)}" + (f"?{query}" if query else "")
        response = PlainTextResponse(f"Moved to {TOOLSET_PATH.format(name=name)}", 308, {"Location": location})
        await response(scope, receive, send)


@dataclass(eq=False)
class ToolsetEndpoint:
    name: str
    selection: ToolsetSelection
    bridge: Bridge
    manager: SessionManager
    front: ASGIApp
    stop: anyio.Event = field(default_factory=anyio.Event)
    stopped: anyio.Event = field(default_factory=anyio.Event)


class ToolsetEndpoints:
    """The per-toolset endpoints of one app (see the module doc)."""

    def __init__(
        self,
        executor: Any,
        settings: Settings,
        security: TransportSecuritySettings | None = None,
        limits: CallLimits | None = None,
        on_direct: Callable[[str], None] | None = None,
        *,
        observed_with: Bridge | None = None,
    ) -> None:
        self._executor = executor
        self._settings = settings
        self._security = security
        self._limits = limits
        self._on_direct = on_direct
        """Told each method a toolset's direct path answers (the app's metrics, as for /mcp)."""
        self._observed_with = observed_with
        """The main endpoint's bridge: whatever observes its calls and refusals observes the toolsets' too."""
        self._endpoints: dict[str, ToolsetEndpoint] = {}
        self._task_group: anyio.abc.TaskGroup | None = None

    @property
    def routes(self) -> list[BaseRoute]:
        return [Route(TOOLSET_PATH, endpoint=self), Route(OLD_TOOLSET_PATH, endpoint=MovedToolset())]

    @property
    def names(self) -> list[str]:
        return sorted(self._endpoints)

    def bridge_of(self, name: str) -> Bridge | None:
        """The bridge serving toolset ``name`` now (``None``: no such endpoint, or it is closing)."""
        endpoint = self._endpoints.get(name)
        return endpoint.bridge if endpoint is not None and not endpoint.stop.is_set() else None

    @property
    def in_flight(self) -> int:
        """Tool calls running now on every toolset endpoint."""
        return sum(endpoint.bridge.router.in_flight for endpoint in self._endpoints.values())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = self._endpoints.get(str(scope.get("path_params", {}).get("name", "")))
        if endpoint is None or endpoint.stop.is_set():
            await PlainTextResponse("Unknown toolset", status_code=404)(scope, receive, send)
            return
        await endpoint.front(scope, receive, send)

    @asynccontextmanager
    async def run(self, config: UpstreamConfig, *, skip: str | None = None) -> AsyncIterator[ToolsetEndpoints]:
        """Serve an endpoint for every toolset of ``config`` (but ``skip``, the main endpoint's) until exit."""
        async with anyio.create_task_group() as task_group:
            self._task_group = task_group
            try:
                await self.update(config, skip=skip)
                yield self
            finally:
                for endpoint in list(self._endpoints.values()):
                    await self._close(endpoint)
                self._task_group = None
                task_group.cancel_scope.cancel()

    async def update(self, config: UpstreamConfig, *, skip: str | None = None) -> None:
        """Endpoints for exactly the toolsets of ``config`` (see the module doc)."""
        wanted = {name: toolset for name, toolset in config.toolsets.items() if name != skip}
        for name in [name for name in self._endpoints if name not in wanted]:
            await self._close(self._endpoints.pop(name))
        for name, toolset in wanted.items():
            endpoint = self._endpoints.get(name)
            if endpoint is None or endpoint.bridge.settings.tool_mode != self._mode(toolset):
                if endpoint is not None:
                    await self._close(endpoint)
                self._endpoints[name] = await self._open(toolset)
            elif endpoint.selection.update(toolset):
                endpoint.bridge.refilter()

    def refresh(self) -> None:
        """Re-read every toolset's catalog (after mounts changed under unchanged selections)."""
        for endpoint in self._endpoints.values():
            endpoint.bridge.refilter()

    def _mode(self, toolset: ToolsetSpec) -> str:
        return toolset.tool_mode or self._settings.tool_mode

    async def _open(self, toolset: ToolsetSpec) -> ToolsetEndpoint:
        if self._task_group is None:
            raise RuntimeError("ToolsetEndpoints.update() outside run()")
        selection = ToolsetSelection(self._executor.registry, toolset)
        settings = endpoint_settings(self._settings, self._mode(toolset))
        # A toolset's calls are the server's (/metrics, serve()'s collector): the same observers.
        bridge = Bridge.build(
            self._executor, settings, include=selection, limits=self._limits, observed_with=self._observed_with
        )
        # The same limits and fixes as /mcp (see http/app.py); no event store, so nothing to resume.
        manager = SessionManager(
            bridge.server,
            max_per_caller=settings.max_sessions_per_caller,
            stateless=settings.stateless,
            json_response=settings.json_response,
            security_settings=self._security,
            session_idle_timeout=settings.session_idle_timeout,
            max_sessions=settings.max_sessions,
            max_request_body_size=settings.max_body_bytes,
        )
        front = McpFront(
            manager.handle_request,
            direct=DirectPath(manager, self._on_direct) if settings.direct_path else None,
            sessions=not settings.stateless,
        )
        endpoint = ToolsetEndpoint(toolset.name, selection, bridge, manager, front)
        await self._task_group.start(self._serve, endpoint)
        logger.info("Toolset %r served at %s", toolset.name, TOOLSET_PATH.format(name=toolset.name))
        return endpoint

    async def _serve(self, endpoint: ToolsetEndpoint, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        try:
            # Its own service follows the registry; the main one holds the upstreams and the replicas' link.
            async with BridgeService(endpoint.bridge, replicas=False), endpoint.manager.run():
                task_status.started()
                await endpoint.stop.wait()
        finally:
            endpoint.stopped.set()

    async def _close(self, endpoint: ToolsetEndpoint) -> None:
        endpoint.stop.set()
        await endpoint.stopped.wait()
