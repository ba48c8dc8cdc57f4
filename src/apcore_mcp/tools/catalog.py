"""The set of tools a server exposes: built once from a registry, optionally kept live.

The catalog is the single source of truth for what is listed *and* what may be called:
a module hidden by the ``tags``/``prefix`` filters is not in it, so it can be neither.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import mcp.types as types

from apcore_mcp.tools.problems import ModuleProblem, describe_module
from apcore_mcp.tools.records import ToolRecord
from apcore_mcp.tools.views import ViewError, module_view

logger = logging.getLogger(__name__)

ChangeListener = Callable[[ToolRecord], None]
"""Called with the record that was added or removed."""


class ToolCatalog:
    """A thread-safe ``name -> ToolRecord`` map over an apcore ``Registry``.

    ``get_definition()`` is costly (it rebuilds JSON schemas on every call), so each module
    is converted exactly once: at ``load()``, or when the registry announces it.
    """

    def __init__(
        self,
        registry: Any,
        *,
        tags: Sequence[str] | None = None,
        prefix: str | None = None,
        include: Callable[[str], bool] | None = None,
    ) -> None:
        self._registry = registry
        self._tags = list(tags) if tags else None
        self._prefix = prefix
        self._include = include
        """A further filter on module ids (a toolset's selection), applied after ``tags``/``prefix``."""
        self._lock = threading.Lock()
        self._records: dict[str, ToolRecord] = {}
        self._loaded_ids: frozenset[str] = frozenset()
        self._tools: dict[str, ToolRecord] = {}
        self._snapshot: tuple[ToolRecord, ...] = ()
        self._resources: tuple[ToolRecord, ...] = ()
        self._mcp_tools: list[types.Tool] = []
        self._listeners: list[ChangeListener] = []
        self._watching = False
        self._load_problems: tuple[ModuleProblem, ...] = ()
        self.generation = 0
        """Bumped on every change: a cache of anything derived from the snapshot keys on it."""

    # -- reading -----------------------------------------------------------------------

    def get(self, name: str) -> ToolRecord | None:
        """The tool ``name`` (a module serving a resource is not a tool)."""
        return self._tools.get(name)

    def records(self) -> tuple[ToolRecord, ...]:
        """The tools: an immutable snapshot, sorted by name."""
        return self._snapshot

    def resource_records(self) -> tuple[ToolRecord, ...]:
        """Modules serving resources (``record.resource`` set), sorted by name."""
        return self._resources

    def module(self, name: str) -> ToolRecord | None:
        """Any served module by id, tool or resource."""
        return self._records.get(name)

    def mcp_tools(self) -> list[types.Tool]:
        """The MCP rendering of the snapshot (a fresh list; the tools themselves are shared)."""
        return list(self._mcp_tools)

    def __len__(self) -> int:
        return len(self._snapshot)

    # -- building ----------------------------------------------------------------------

    def problems(self) -> tuple[ModuleProblem, ...]:
        """The modules the last ``load()`` could not serve, and why (each was logged as a WARNING)."""
        return self._load_problems

    def load(self) -> None:
        """(Re)build every record from the registry, skipping (with a WARNING) modules that cannot be served."""
        module_ids = self._wanted_ids()
        built = [self._build(module_id) for module_id in module_ids]
        records = [item for item in built if isinstance(item, ToolRecord)]
        with self._lock:
            self._load_problems = tuple(item for item in built if isinstance(item, ModuleProblem))
            self._records = {record.name: record for record in records}
            self._loaded_ids = frozenset(module_ids)
            self._publish_locked()

    def catch_up(self) -> bool:
        """``load()`` again if the registry's modules are not those last loaded; True if it did.

        For a catalog loaded before it began to ``watch()``: what registered in between is read.
        """
        if frozenset(self._wanted_ids()) == self._loaded_ids:
            return False
        self.load()
        return True

    def _wanted_ids(self) -> list[str]:
        module_ids: list[str] = self._registry.list(tags=self._tags, prefix=self._prefix)
        if self._include is not None:
            module_ids = [module_id for module_id in module_ids if self._include(module_id)]
        return module_ids

    def excluded_by(self, module_id: str) -> str | None:
        """Which filter keeps registered ``module_id`` out of this catalog: ``prefix``, ``tags`` or
        ``selection`` (a toolset's), in the order they apply; ``None`` when none does."""
        if self._prefix is not None and not module_id.startswith(self._prefix):
            return "prefix"
        if self._tags is not None and module_id not in self._registry.list(tags=self._tags, prefix=module_id):
            return "tags"
        if self._include is not None and not self._include(module_id):
            return "selection"
        return None

    def _build(self, module_id: str) -> ToolRecord | ModuleProblem | None:
        described = describe_module(self._registry, module_id)
        if isinstance(described, ModuleProblem):
            # Listed with an empty schema it would answer every call "Internal error occurred": not served.
            logger.warning("Module not served: %s", described)
        if isinstance(described, ToolRecord) and described.resource is None:
            return self._with_view(described)
        return described

    def _with_view(self, record: ToolRecord) -> ToolRecord:
        """``record`` with the view its module declares; without it (and a WARNING) when it cannot be served."""
        try:
            view = module_view(self._registry.get(record.name), record.name)
        except ViewError as exc:
            logger.warning("Module %s is served without its view: %s", record.name, exc)
            return record
        return record if view is None else replace(record, view=view)

    def _publish_locked(self) -> None:
        ordered = [self._records[name] for name in sorted(self._records)]
        self._snapshot = tuple(record for record in ordered if record.resource is None)
        self._resources = tuple(record for record in ordered if record.resource is not None)
        self._tools = {record.name: record for record in self._snapshot}
        self._mcp_tools = [record.mcp_tool for record in self._snapshot]
        self.generation += 1

    # -- live updates ------------------------------------------------------------------

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        """Call ``listener(record)`` (on the registering thread) after each add or remove.

        Returns a function that unsubscribes.
        """
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def watch(self) -> None:
        """Follow the registry's ``register``/``unregister`` events (idempotent)."""
        with self._lock:
            if self._watching:
                return
            self._watching = True
        self._registry.on("register", self._on_register)
        self._registry.on("unregister", self._on_unregister)

    def unwatch(self) -> None:
        with self._lock:
            if not self._watching:
                return
            self._watching = False
        self._registry.off("register", self._on_register)
        self._registry.off("unregister", self._on_unregister)

    def _matches(self, module_id: str) -> bool:
        if self._prefix is not None and not module_id.startswith(self._prefix):
            return False
        if self._include is not None and not self._include(module_id):
            return False
        return module_id in self._registry.list(tags=self._tags, prefix=module_id)

    def _on_register(self, module_id: str, _module: Any) -> None:
        if not self._matches(module_id):
            return
        record = self._build(module_id)
        if not isinstance(record, ToolRecord):
            return
        with self._lock:
            self._records[module_id] = record
            self._publish_locked()
        logger.info("Tool registered: %s", module_id)
        self._notify(record)

    def _on_unregister(self, module_id: str, _module: Any) -> None:
        with self._lock:
            record = self._records.pop(module_id, None)
            if record is None:
                return
            self._publish_locked()
        logger.info("Tool unregistered: %s", module_id)
        self._notify(record)

    def _notify(self, record: ToolRecord) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(record)
            except Exception:
                logger.exception("Tool list change listener failed")
