"""Wiring one registry (or executor) to one MCP server: catalog, call router, notifier, prompts."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from apcore import Executor, Registry
from apcore.approval import AutoApproveHandler

from apcore_mcp.approval import MCPApprovalHandler
from apcore_mcp.calls import CallRouter
from apcore_mcp.catalog import ToolCatalog
from apcore_mcp.limits import CallLimits
from apcore_mcp.mcp.edge import Identify, no_identity
from apcore_mcp.mcp.notifier import ListChangedNotifier
from apcore_mcp.mcp.server import ApcoreServer, ServerParts, build_server
from apcore_mcp.pipeline import build_executor, close_pipeline
from apcore_mcp.prompts import Prompt, load_prompts
from apcore_mcp.records import ToolRecord
from apcore_mcp.resources import DOCS_SCHEME
from apcore_mcp.settings import Settings

logger = logging.getLogger(__name__)


def registry_of(registry_or_executor: Registry | Executor) -> Registry:
    """The Registry behind a Registry or an Executor.

    Raises:
        TypeError: for anything else.
    """
    if isinstance(registry_or_executor, Executor):
        return registry_or_executor.registry
    if isinstance(registry_or_executor, Registry):
        return registry_or_executor
    raise TypeError(f"Expected Registry or Executor instance, got {type(registry_or_executor).__name__}")


def executor_for(registry_or_executor: Registry | Executor, settings: Settings) -> Executor:
    """A user's Executor as it is; for a bare Registry, one with the fast, cancellable pipeline
    (``pipeline.build_executor``) and our approval handler.

    ``settings.approval == "auto"`` runs approval-gated modules unconfirmed (an operator's opt-out).
    """
    if isinstance(registry_or_executor, Executor):
        return registry_or_executor
    registry = registry_of(registry_or_executor)
    handler = AutoApproveHandler() if settings.approval == "auto" else MCPApprovalHandler()
    return build_executor(
        registry,
        approval_handler=handler,
        sync_workers=settings.sync_workers,
        timeout_ceiling_ms=settings.timeout_ceiling_ms,
    )


def call_limits(settings: Settings) -> CallLimits:
    """The rate limit and concurrency cap the settings ask for (shared by every edge of one server)."""
    return CallLimits(rate=settings.rate_limit, burst=settings.rate_burst, max_concurrent=settings.max_concurrent_calls)


@dataclass
class Bridge:
    """Everything one served registry needs; build it with ``Bridge.build``."""

    registry: Registry
    executor: Executor
    settings: Settings
    catalog: ToolCatalog
    router: CallRouter
    notifier: ListChangedNotifier
    parts: ServerParts
    limits: CallLimits
    prompts: dict[str, Prompt] = field(default_factory=dict)
    owns_executor: bool = False
    started_at: float = field(default_factory=time.monotonic)
    _unsubscribe: Callable[[], None] | None = None

    @property
    def server(self) -> ApcoreServer:
        return self.parts.server

    @classmethod
    def build(
        cls,
        registry_or_executor: Registry | Executor,
        settings: Settings | None = None,
        *,
        identify: Identify = no_identity,
    ) -> Bridge:
        """Convert every module once; with ``settings.dynamic``, follow the registry from now on.

        Raises:
            TypeError: not a Registry or an Executor.
            PromptFileError: a prompt file in ``settings.prompts_dir`` is malformed.
        """
        settings = settings or Settings()
        registry = registry_of(registry_or_executor)
        executor = executor_for(registry_or_executor, settings)
        prompts = load_prompts(settings.prompts_dir) if settings.prompts_dir else {}
        catalog = ToolCatalog(registry, tags=settings.tags, prefix=settings.prefix)
        if settings.dynamic:
            catalog.watch()  # before load(): a module registered meanwhile is not missed
        catalog.load()
        router = CallRouter(executor, catalog, max_output_bytes=settings.max_output_bytes)
        notifier = ListChangedNotifier()
        limits = call_limits(settings)
        parts = build_server(catalog, router, notifier, settings, prompts=prompts, identify=identify, limits=limits)
        notifier.subscriptions = parts.subscriptions
        owns = not isinstance(registry_or_executor, Executor)
        bridge = cls(registry, executor, settings, catalog, router, notifier, parts, limits, prompts, owns)
        if settings.dynamic:
            bridge._unsubscribe = catalog.subscribe(bridge._on_change)
        if not len(catalog) and not catalog.resource_records():
            logger.warning("No modules registered; server starting with zero tools")
        bridge._warn_about_approval(registry_or_executor)
        return bridge

    def _warn_about_approval(self, source: Registry | Executor) -> None:
        gated = [record.name for record in self.catalog.records() if record.requires_approval]
        if self.settings.approval == "auto":
            logger.warning(
                "Approval is off (approval=auto): %d tool(s) that require approval run unconfirmed: %s",
                len(gated),
                ", ".join(gated) or "none now",
            )
        elif gated and isinstance(source, Executor) and getattr(source, "_approval_handler", None) is None:
            logger.warning(
                "Your Executor has no approval handler, so apcore runs these tools unconfirmed: %s. "
                "Give it one: executor.set_approval_handler(apcore_mcp.MCPApprovalHandler())",
                ", ".join(gated),
            )

    def _on_change(self, record: ToolRecord) -> None:
        documented = bool(record.documentation)
        self.notifier.changed(
            tools=record.resource is None,
            resources=documented or record.resource is not None,
            updated=(f"{DOCS_SCHEME}{record.name}",) if documented else (),
        )

    @property
    def uptime_seconds(self) -> float:
        return time.monotonic() - self.started_at

    def close(self) -> None:
        """Stop following the registry; shut down the Executor's pool if the bridge built it."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self.catalog.unwatch()
        if self.owns_executor:
            close_pipeline(self.executor)
