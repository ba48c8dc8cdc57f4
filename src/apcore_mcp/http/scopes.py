"""One Streamable HTTP MCP endpoint per config scope: ``/scopes/<name>/mcp``.

Each scope gets its own ``Bridge`` (catalog, call router, list-change notifier) over the
shared registry and executor, narrowed by the scope's selection, in the scope's tool mode,
and its own session manager. Upstream handles are shared: two scopes naming one server use
one process. ``update(config)`` follows a reload: new scopes get an endpoint, dropped ones
lose it (their sessions end), and a scope whose selection changed re-reads its catalog and
tells its clients (``list_changed``). Call it before ``UpstreamRuntime.apply`` so the
registrations that follow are filtered by the new selections, then again after it.

Wiring (the app factory): ``routes`` into the app (behind the Host/Origin guard), and
``async with endpoints.run(config):`` in the lifespan.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import PlainTextResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from apcore_mcp.bridge import Bridge
from apcore_mcp.http.mcp_front import McpFront
from apcore_mcp.http.sessions import SessionManager
from apcore_mcp.limits import CallLimits
from apcore_mcp.settings import Settings
from apcore_mcp.settings_needs import MOUNTING
from apcore_mcp.upstream.config import ScopeSpec, UpstreamConfig
from apcore_mcp.upstream.scopes import ScopeSelection

logger = logging.getLogger(__name__)

SCOPE_PATH = "/scopes/{name}/mcp"


def endpoint_settings(settings: Settings, tool_mode: str) -> Settings:
    """A scope endpoint's settings: the server's, in the scope's tool mode, without its filters and mounting.

    The scope's own selection replaces the server-wide tags/prefix filters; the mounting
    settings go back to their defaults (set without ``mcp_config`` they would stop the start).
    """
    defaults = {field.name: field.default for field in dataclasses.fields(Settings) if field.name in MOUNTING}
    return settings.replace(tool_mode=tool_mode, dynamic=True, tags=None, prefix=None, **defaults)


@dataclass(eq=False)
class ScopeEndpoint:
    name: str
    selection: ScopeSelection
    bridge: Bridge
    manager: SessionManager
    front: ASGIApp
    stop: anyio.Event = field(default_factory=anyio.Event)
    stopped: anyio.Event = field(default_factory=anyio.Event)


class ScopeEndpoints:
    """The per-scope endpoints of one app (see the module doc)."""

    def __init__(
        self,
        executor: Any,
        settings: Settings,
        security: TransportSecuritySettings | None = None,
        limits: CallLimits | None = None,
    ) -> None:
        self._executor = executor
        self._settings = settings
        self._security = security
        self._limits = limits
        self._endpoints: dict[str, ScopeEndpoint] = {}
        self._task_group: anyio.abc.TaskGroup | None = None

    @property
    def routes(self) -> list[BaseRoute]:
        return [Route(SCOPE_PATH, endpoint=self)]

    @property
    def names(self) -> list[str]:
        return sorted(self._endpoints)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = self._endpoints.get(str(scope.get("path_params", {}).get("name", "")))
        if endpoint is None or endpoint.stop.is_set():
            await PlainTextResponse("Unknown scope", status_code=404)(scope, receive, send)
            return
        await endpoint.front(scope, receive, send)

    @asynccontextmanager
    async def run(self, config: UpstreamConfig, *, skip: str | None = None) -> AsyncIterator[ScopeEndpoints]:
        """Serve an endpoint for every scope of ``config`` (but ``skip``, the main endpoint's) until exit."""
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
        """Endpoints for exactly the scopes of ``config`` (see the module doc)."""
        wanted = {name: scope for name, scope in config.scopes.items() if name != skip}
        for name in [name for name in self._endpoints if name not in wanted]:
            await self._close(self._endpoints.pop(name))
        for name, scope in wanted.items():
            endpoint = self._endpoints.get(name)
            if endpoint is None or endpoint.bridge.settings.tool_mode != self._mode(scope):
                if endpoint is not None:
                    await self._close(endpoint)
                self._endpoints[name] = await self._open(scope)
            elif endpoint.selection.update(scope):
                endpoint.bridge.refilter()

    def refresh(self) -> None:
        """Re-read every scope's catalog (after mounts changed under unchanged selections)."""
        for endpoint in self._endpoints.values():
            endpoint.bridge.refilter()

    def _mode(self, scope: ScopeSpec) -> str:
        return scope.tool_mode or self._settings.tool_mode

    async def _open(self, scope: ScopeSpec) -> ScopeEndpoint:
        if self._task_group is None:
            raise RuntimeError("ScopeEndpoints.update() outside run()")
        selection = ScopeSelection(self._executor.registry, scope)
        settings = endpoint_settings(self._settings, self._mode(scope))
        bridge = Bridge.build(self._executor, settings, include=selection, limits=self._limits)
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
        endpoint = ScopeEndpoint(scope.name, selection, bridge, manager, McpFront(manager.handle_request))
        await self._task_group.start(self._serve, endpoint)
        logger.info("Scope %r served at %s", scope.name, SCOPE_PATH.format(name=scope.name))
        return endpoint

    async def _serve(self, endpoint: ScopeEndpoint, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        try:
            async with endpoint.manager.run():
                endpoint.bridge.notifier.bind(asyncio.get_running_loop())
                task_status.started()
                await endpoint.stop.wait()
        finally:
            endpoint.bridge.close()
            endpoint.stopped.set()

    async def _close(self, endpoint: ScopeEndpoint) -> None:
        endpoint.stop.set()
        await endpoint.stopped.wait()
