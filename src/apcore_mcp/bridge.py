"""Wiring one registry (or executor) to one MCP server: catalog, call router, notifier."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from apcore import Executor, Registry

from apcore_mcp.calls import CallRouter
from apcore_mcp.catalog import ToolCatalog
from apcore_mcp.mcp.access import ToolAccess, executor_acl
from apcore_mcp.mcp.notifier import ListChangedNotifier
from apcore_mcp.mcp.server import ApcoreServer, build_server
from apcore_mcp.principal import parse_scope_rules, stdio_identity
from apcore_mcp.records import ToolRecord
from apcore_mcp.settings import Settings

logger = logging.getLogger(__name__)


def resolve_source(registry_or_executor: Any) -> tuple[Any, Any]:
    """``(registry, executor)`` for a Registry (which gets a default Executor) or an Executor.

    Raises:
        TypeError: for anything else.
    """
    if isinstance(registry_or_executor, Executor):
        return registry_or_executor.registry, registry_or_executor
    if isinstance(registry_or_executor, Registry):
        return registry_or_executor, Executor(registry_or_executor)
    raise TypeError(f"Expected Registry or Executor instance, got {type(registry_or_executor).__name__}")


@dataclass
class Bridge:
    """Everything one served registry needs; build it with ``Bridge.build``."""

    registry: Any
    executor: Any
    settings: Settings
    catalog: ToolCatalog
    router: CallRouter
    notifier: ListChangedNotifier
    server: ApcoreServer
    access: ToolAccess
    started_at: float = field(default_factory=time.monotonic)
    _unsubscribe: Any = None

    @classmethod
    def build(cls, registry_or_executor: Any, settings: Settings | None = None) -> Bridge:
        """Convert every module once; with ``settings.dynamic``, follow the registry from now on."""
        settings = settings or Settings()
        registry, executor = resolve_source(registry_or_executor)
        catalog = ToolCatalog(registry, tags=settings.tags, prefix=settings.prefix)
        if settings.dynamic:
            catalog.watch()  # before load(): a module registered meanwhile is not missed
        catalog.load()
        router = CallRouter(executor, catalog)
        notifier = ListChangedNotifier()
        access = ToolAccess(
            tool_rules=parse_scope_rules(settings.auth_tool_scopes, "auth_tool_scopes"),
            acl=executor_acl(executor),
            filter_list=settings.auth_filter_tools,
            default_identity=stdio_identity(settings),
        )
        server = build_server(
            catalog,
            router,
            notifier,
            name=settings.name,
            version=settings.server_version(),
            live=settings.dynamic,
            access=access,
        )
        bridge = cls(registry, executor, settings, catalog, router, notifier, server, access)
        if settings.dynamic:
            bridge._unsubscribe = catalog.subscribe(bridge._on_change)
        if not len(catalog):
            logger.warning("No modules registered; server starting with zero tools")
        return bridge

    def _on_change(self, record: ToolRecord) -> None:
        self.notifier.changed(tools=True, resources=bool(record.documentation))

    @property
    def uptime_seconds(self) -> float:
        return time.monotonic() - self.started_at

    def close(self) -> None:
        """Stop following the registry."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self.catalog.unwatch()
