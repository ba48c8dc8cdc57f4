"""Which upstream servers are mounted, and switching that set when the config or the active toolsets change.

``UpstreamRuntime.apply(config, toolsets)`` is a toolset switch: it mounts exactly the servers
the given toolsets use, releasing the servers no longer used, acquiring the new ones, and
leaving the unchanged ones (same ``ServerSpec.key``) running with their sessions. A server
whose spec changed is released and acquired again (never orphaned). One server that fails to
start is reported and left out; the others are served.

A toolset's tools are the local modules it selects plus the tools of its servers;
``toolset_filter`` is that selection as a predicate over module ids, for a ``ToolCatalog``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from apcore_mcp.calls.held import HeldTools
from apcore_mcp.upstream.config.parse import DEFAULT_TOOLSET, ServerSpec, ToolsetSpec, UpstreamConfig
from apcore_mcp.upstream.errors import UpstreamError, UpstreamsDisabled
from apcore_mcp.upstream.handles import UpstreamPool
from apcore_mcp.upstream.module import upstream_server_of
from apcore_mcp.upstream.names import server_segments
from apcore_mcp.upstream.openapi.mount import OpenApiSource
from apcore_mcp.upstream.pins.keeper import PinKeeper
from apcore_mcp.upstream.skills import SkillShelf
from apcore_mcp.upstream.source import UpstreamSource
from apcore_mcp.upstream.specs import OPENAPI

Source = UpstreamSource | OpenApiSource
"""A mounted server: an MCP server's tools, or an HTTP API's operations (``openapi`` entries)."""

__all__ = ["Switch", "UpstreamRuntime", "servers_needed", "toolset_filter", "upstream_server_of"]

logger = logging.getLogger(__name__)


@dataclass
class Switch:
    """What one ``apply`` did, by server name."""

    stopped: list[str] = field(default_factory=list)
    started: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    """Why each server failed, as ``/ready`` shows it (``UpstreamError.public``)."""
    logged: dict[str, str] = field(default_factory=dict)
    """Why each server failed, in full (its command and stderr): for the log only."""


def servers_needed(config: UpstreamConfig, toolsets: Sequence[str]) -> list[str]:
    """The servers the named toolsets use, in config order.

    Raises:
        KeyError: an unknown toolset name.
    """
    wanted = {server for name in toolsets for server in config.toolset(name).servers}
    return [name for name in config.servers if name in wanted]


class UpstreamRuntime:
    """The mounted upstream servers of one registry (see the module doc).

    With ``enabled=False`` (``no_upstreams``) nothing is ever started, and applying a toolset
    that names servers raises ``UpstreamsDisabled``.
    """

    def __init__(
        self,
        registry: Any,
        pool: UpstreamPool,
        *,
        enabled: bool = True,
        pins: PinKeeper | None = None,
        skills: SkillShelf | None = None,
        held: HeldTools | None = None,
    ) -> None:
        self.registry = registry
        self.held = held
        """The bridge's held tools, which every mounted server reports into (``calls/held.py``)."""
        self.pool = pool
        self.enabled = enabled
        self.pins = pins
        """The pins every mounted server's tools are held to (``None``: pinning off)."""
        self.skills = skills
        """Where the mounted servers' skills are relayed (``upstream/skills``; ``None``: skills are not served)."""
        self.config = UpstreamConfig()
        self.sources: dict[str, UpstreamSource] = {}
        """The mounted MCP servers."""
        self.apis: dict[str, OpenApiSource] = {}
        """The mounted HTTP APIs (``openapi`` entries)."""
        self.failed: dict[str, str] = {}
        self._lock = anyio.Lock()

    async def apply(self, config: UpstreamConfig, toolsets: Sequence[str] = (DEFAULT_TOOLSET,)) -> Switch:
        """Mount exactly the servers ``toolsets`` of ``config`` use.

        Raises:
            UpstreamsDisabled: upstreams are off and an explicit toolset names servers.
            KeyError: an unknown toolset name.
        """
        async with self._lock:
            if not self.enabled:
                self._refuse_disabled(config, toolsets)
                needed: list[str] = []
            else:
                needed = servers_needed(config, toolsets)
            switch = Switch()
            firsts = server_segments([*config.servers, *config.skipped])
            for name, source in list(self.mounted.items()):
                spec = config.servers.get(name)
                same_ids = source.segment == firsts.get(name)
                if name in needed and spec is not None and spec.key == source.spec.key and same_ids:
                    source.update_spec(spec)
                    switch.kept.append(name)
                    continue
                self.sources.pop(name, None)
                self.apis.pop(name, None)
                await source.close()
                switch.stopped.append(name)
            to_start = [config.servers[name] for name in needed if name not in self.mounted]
            async with anyio.create_task_group() as starting:
                for spec in to_start:
                    starting.start_soon(self._mount, spec, firsts[spec.name], switch)
            self.config = config
            self.failed = dict(switch.failed)
            for name, reason in config.skipped.items():
                self.failed.setdefault(name, reason)
            _log(switch)
            return switch

    @property
    def mounted(self) -> dict[str, Source]:
        """Every mounted server, MCP server or HTTP API, by name."""
        return {**self.sources, **self.apis}

    async def _mount(self, spec: ServerSpec, segment: str, switch: Switch) -> None:
        source: Source
        if spec.transport == OPENAPI:
            pool = self.pool
            source = OpenApiSource(
                spec,
                self.registry,
                segment=segment,
                max_bytes=pool.max_message_bytes,
                redactor=pool.redactor,
                pins=self.pins,
                held=self.held,
            )
        else:
            source = UpstreamSource(
                spec, self.pool, self.registry, segment=segment, pins=self.pins, skills=self.skills, held=self.held
            )
        try:
            await source.open()
        except UpstreamError as exc:
            switch.failed[spec.name], switch.logged[spec.name] = exc.public, exc.message
            return
        except Exception as exc:  # the edge of one server's mount: it must not take the others down
            logger.exception("Upstream %r could not be mounted", spec.name)
            switch.failed[spec.name] = switch.logged[spec.name] = f"{type(exc).__name__} while mounting"
            return
        if isinstance(source, OpenApiSource):
            self.apis[spec.name] = source
        else:
            self.sources[spec.name] = source
        switch.started.append(spec.name)

    def _refuse_disabled(self, config: UpstreamConfig, toolsets: Sequence[str]) -> None:
        for name in toolsets:
            toolset = config.toolset(name)
            if toolset.servers and not toolset.implicit:
                raise UpstreamsDisabled(
                    ",".join(toolset.servers),
                    f"toolset {name!r} needs upstream servers ({', '.join(toolset.servers)}) "
                    "but upstream servers are disabled (no_upstreams / --no-upstreams)",
                )

    async def close(self) -> None:
        """Unmount every server."""
        async with self._lock:
            sources = list(self.mounted.values())
            self.sources, self.apis = {}, {}
            for source in sources:
                await source.close()

    async def recheck_pins(self) -> bool:
        """When the pins file changed (an approval): judge every mounted server's tools again; whether it had."""
        if self.pins is None or not self.pins.changed():
            return False
        async with self._lock:
            for source in list(self.apis.values()):
                source.recheck()
            for upstream in list(self.sources.values()):
                try:
                    await upstream.refresh()
                except UpstreamError as exc:
                    logger.warning("Upstream %r: tools not judged against the new pins (%s)", upstream.name, exc.public)
        return True

    def status(self) -> dict[str, Any]:
        """For readiness detail (open to anyone): mounted servers with their tool counts, failed ones
        with the public reason, and the pool's state. No tool names: those are shown to the callers
        who may see them (the explorer shows each upstream tool's server and its own name there);
        no caller names (a server run per caller is one pool entry)."""
        return {
            "mounted": {name: len(source.module_ids) for name, source in sorted(self.mounted.items())},
            "failed": dict(sorted(self.failed.items())),
            "pool": self.pool.status(name_callers=False),
        }


def toolset_filter(registry: Any, toolset: ToolsetSpec) -> Callable[[str], bool]:
    """``include(module_id)``: the upstream tools of the toolset's servers, and the local modules it selects.

    Local modules are selected by the toolset's ``tags`` (all must match) and ``prefix``;
    ``modules: false`` selects none.
    """
    servers = frozenset(toolset.servers)
    tags = list(toolset.tags) if toolset.tags else None

    def include(module_id: str) -> bool:
        server = upstream_server_of(registry, module_id)
        if server is not None:
            return server in servers
        if not toolset.modules:
            return False
        if toolset.prefix is not None and not module_id.startswith(toolset.prefix):
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
        logger.warning("Upstream server %r not mounted: %s", name, switch.logged.get(name, reason))


class ToolsetSelection:
    """A toolset's selection as a predicate whose toolset can be swapped under a live catalog."""

    def __init__(self, registry: Any, toolset: ToolsetSpec) -> None:
        self._registry = registry
        self.toolset = toolset
        self._include: Callable[[str], bool] = toolset_filter(registry, toolset)

    def __call__(self, module_id: str) -> bool:
        return self._include(module_id)

    def update(self, toolset: ToolsetSpec) -> bool:
        """Take ``toolset``; whether the selection changed."""
        if toolset == self.toolset:
            return False
        self.toolset = toolset
        self._include = toolset_filter(self._registry, toolset)
        return True
