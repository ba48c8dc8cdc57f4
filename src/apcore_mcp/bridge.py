"""Wiring one registry (or executor) to one MCP server: catalog, call router, notifier."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from apcore import Executor, Registry

from apcore_mcp.calls import CallRouter
from apcore_mcp.catalog import ToolCatalog
from apcore_mcp.mcp.notifier import ListChangedNotifier
from apcore_mcp.mcp.server import ApcoreServer, build_server
from apcore_mcp.records import ToolRecord
from apcore_mcp.settings import Settings
from apcore_mcp.upstream.module import upstream_server_of

if TYPE_CHECKING:
    from apcore_mcp.search import ToolSearch

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
    started_at: float = field(default_factory=time.monotonic)
    search: ToolSearch | None = None
    """Tool-search mode: the index over every tool (``catalog`` then holds the three meta-tools)."""
    _unsubscribe: Any = None
    _full_catalog: ToolCatalog | None = None

    @classmethod
    def build(
        cls,
        registry_or_executor: Any,
        settings: Settings | None = None,
        *,
        include: Callable[[str], bool] | None = None,
    ) -> Bridge:
        """Convert every module once; with ``settings.dynamic``, follow the registry from now on.

        ``include`` narrows the served modules further (a scope's selection, see
        ``apcore_mcp.upstream.scopes.scope_filter``).
        """
        settings = settings or Settings()
        registry, executor = resolve_source(registry_or_executor)
        catalog = ToolCatalog(registry, tags=settings.tags, prefix=settings.prefix, include=include)
        if settings.dynamic:
            catalog.watch()  # before load(): a module registered meanwhile is not missed
        catalog.load()
        search: ToolSearch | None = None
        served, served_executor = catalog, executor
        if settings.tool_mode == "search":
            # Imported here: only search mode pays for the meta-tools' contracts (built at import).
            from apcore_mcp.metatools import meta_registry
            from apcore_mcp.search import ToolSearch

            # The served list is the meta-tools, constant; the full catalog is only searched.
            search = ToolSearch(catalog, server_of=lambda name: upstream_server_of(registry, name))
            meta, served_executor = meta_registry(search, executor)
            served = ToolCatalog(meta)
            served.load()
        router = CallRouter(served_executor, served)
        notifier = ListChangedNotifier()
        server = build_server(
            served, router, notifier, name=settings.name, version=settings.server_version(), live=settings.dynamic
        )
        bridge = cls(registry, executor, settings, served, router, notifier, server, search=search)
        if settings.dynamic and search is None:
            bridge._unsubscribe = catalog.subscribe(bridge._on_change)
        bridge._full_catalog = catalog
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
        if self._full_catalog is not None:
            self._full_catalog.unwatch()
