"""Which upstream servers are mounted, and switching that set when the config or the active scopes change.

``UpstreamRuntime.apply(config, scopes)`` is a scope switch: it mounts exactly the servers
the given scopes use, releasing the servers no longer used, acquiring the new ones, and
leaving the unchanged ones (same ``ServerSpec.key``) running with their sessions. A server
whose spec changed is released and acquired again (never orphaned). One server that fails to
start is reported and left out; the others are served.

A scope's tools are the local modules it selects plus the tools of its servers;
``scope_filter`` is that selection as a predicate over module ids, for a ``ToolCatalog``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from apcore_mcp.upstream.config import DEFAULT_SCOPE, ScopeSpec, ServerSpec, UpstreamConfig
from apcore_mcp.upstream.errors import UpstreamError, UpstreamsDisabled
from apcore_mcp.upstream.module import upstream_server_of
from apcore_mcp.upstream.pool import UpstreamPool
from apcore_mcp.upstream.source import UpstreamSource

__all__ = ["Switch", "UpstreamRuntime", "scope_filter", "servers_needed", "upstream_server_of"]

logger = logging.getLogger(__name__)


@dataclass
class Switch:
    """What one ``apply`` did, by server name."""

    stopped: list[str] = field(default_factory=list)
    started: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


def servers_needed(config: UpstreamConfig, scopes: Sequence[str]) -> list[str]:
    """The servers the named scopes use, in config order.

    Raises:
        KeyError: an unknown scope name.
    """
    wanted = {server for name in scopes for server in config.scope(name).servers}
    return [name for name in config.servers if name in wanted]


class UpstreamRuntime:
    """The mounted upstream servers of one registry (see the module doc).

    With ``enabled=False`` (``no_upstreams``) nothing is ever started, and applying a scope
    that names servers raises ``UpstreamsDisabled``.
    """

    def __init__(self, registry: Any, pool: UpstreamPool, *, enabled: bool = True) -> None:
        self.registry = registry
        self.pool = pool
        self.enabled = enabled
        self.config = UpstreamConfig()
        self.sources: dict[str, UpstreamSource] = {}
        self.failed: dict[str, str] = {}
        self._lock = anyio.Lock()

    async def apply(self, config: UpstreamConfig, scopes: Sequence[str] = (DEFAULT_SCOPE,)) -> Switch:
        """Mount exactly the servers ``scopes`` of ``config`` use.

        Raises:
            UpstreamsDisabled: upstreams are off and an explicit scope names servers.
            KeyError: an unknown scope name.
        """
        async with self._lock:
            if not self.enabled:
                self._refuse_disabled(config, scopes)
                needed: list[str] = []
            else:
                needed = servers_needed(config, scopes)
            switch = Switch()
            for name, source in list(self.sources.items()):
                spec = config.servers.get(name)
                if name in needed and spec is not None and spec.key == source.spec.key:
                    source.update_spec(spec)
                    switch.kept.append(name)
                    continue
                del self.sources[name]
                await source.close()
                switch.stopped.append(name)
            to_start = [config.servers[name] for name in needed if name not in self.sources]
            async with anyio.create_task_group() as starting:
                for spec in to_start:
                    starting.start_soon(self._mount, spec, switch)
            self.config = config
            self.failed = dict(switch.failed)
            for name, reason in config.skipped.items():
                self.failed.setdefault(name, reason)
            _log(switch)
            return switch

    async def _mount(self, spec: ServerSpec, switch: Switch) -> None:
        source = UpstreamSource(spec, self.pool, self.registry)
        try:
            await source.open()
        except UpstreamError as exc:
            switch.failed[spec.name] = exc.message
            return
        except Exception as exc:  # the edge of one server's mount: it must not take the others down
            logger.exception("Upstream %r could not be mounted", spec.name)
            switch.failed[spec.name] = f"{type(exc).__name__} while mounting"
            return
        self.sources[spec.name] = source
        switch.started.append(spec.name)

    def _refuse_disabled(self, config: UpstreamConfig, scopes: Sequence[str]) -> None:
        for name in scopes:
            scope = config.scope(name)
            if scope.servers and not scope.implicit:
                raise UpstreamsDisabled(
                    ",".join(scope.servers),
                    f"scope {name!r} needs upstream servers ({', '.join(scope.servers)}) "
                    "but upstream servers are disabled (no_upstreams / --no-upstreams)",
                )

    async def close(self) -> None:
        """Unmount every server."""
        async with self._lock:
            sources, self.sources = list(self.sources.values()), {}
            for source in sources:
                await source.close()

    def status(self) -> dict[str, Any]:
        """For readiness detail: mounted servers with their tool counts, and failed ones with the reason."""
        return {
            "mounted": {name: len(source.module_ids) for name, source in sorted(self.sources.items())},
            "failed": dict(sorted(self.failed.items())),
            "pool": self.pool.status(),
        }


def scope_filter(registry: Any, scope: ScopeSpec) -> Callable[[str], bool]:
    """``include(module_id)``: the upstream tools of the scope's servers, and the local modules it selects.

    Local modules are selected by the scope's ``tags`` (all must match) and ``prefix``;
    ``modules: false`` selects none.
    """
    servers = frozenset(scope.servers)
    tags = list(scope.tags) if scope.tags else None

    def include(module_id: str) -> bool:
        server = upstream_server_of(registry, module_id)
        if server is not None:
            return server in servers
        if not scope.modules:
            return False
        if scope.prefix is not None and not module_id.startswith(scope.prefix):
            return False
        return tags is None or has_tags(registry, module_id, tags)

    return include


def has_tags(registry: Any, module_id: str, tags: list[str]) -> bool:
    """Whether a module carries all of ``tags``: its own ``tags`` and its metadata's, as apcore counts them.

    One module's check (``Registry.list(tags=...)`` would copy and scan the whole registry for it).
    """
    module = registry.get(module_id)
    if module is None:
        return False
    have = set(getattr(module, "tags", None) or ())
    have.update((registry.get_module_metadata(module_id) or {}).get("tags") or ())
    return set(tags) <= have


def _log(switch: Switch) -> None:
    if switch.stopped or switch.started or switch.failed:
        logger.info(
            "Upstream servers: started %s, stopped %s, kept %s",
            switch.started or "none",
            switch.stopped or "none",
            switch.kept or "none",
        )
    for name, reason in switch.failed.items():
        logger.warning("Upstream server %r not mounted: %s", name, reason)


class ScopeSelection:
    """A scope's selection as a predicate whose scope can be swapped under a live catalog."""

    def __init__(self, registry: Any, scope: ScopeSpec) -> None:
        self._registry = registry
        self.scope = scope
        self._include: Callable[[str], bool] = scope_filter(registry, scope)

    def __call__(self, module_id: str) -> bool:
        return self._include(module_id)

    def update(self, scope: ScopeSpec) -> bool:
        """Take ``scope``; whether the selection changed."""
        if scope == self.scope:
            return False
        self.scope = scope
        self._include = scope_filter(self._registry, scope)
        return True
