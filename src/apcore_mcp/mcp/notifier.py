"""Pushing ``notifications/tools/list_changed`` to every connected client, from any thread.

Handshake-era clients (2025-11-25 and earlier) are reached on their connection's standalone
channel (the stdio pipe, the SSE stream, the Streamable HTTP GET stream). The SDK keeps no
list of connections, so this module remembers each one when its ``notifications/initialized``
arrives, weakly: a connection that ends is dropped with its runner. 2026-07-28 clients have no
connection; they open ``subscriptions/listen`` streams, fed from a subscription bus.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from dataclasses import dataclass
from typing import Any

from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourcesListChanged, ToolsListChanged

from apcore_mcp._sdk import connection_of
from apcore_mcp.mcp.resources import Subscriptions
from apcore_mcp.tools.records import ToolRecord
from apcore_mcp.tools.resources import DOCS_SCHEME

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ListChange:
    """One change to announce: the tool list, the resource list, resources whose content changed."""

    tools: bool = True
    resources: bool = False
    updated: tuple[str, ...] = ()


def change_of(record: ToolRecord) -> ListChange:
    """What adding or removing ``record`` changes for clients: a list, and its docs resource."""
    documented = bool(record.documentation)
    return ListChange(
        tools=record.resource is None,
        resources=documented or record.resource is not None,
        updated=(f"{DOCS_SCHEME}{record.name}",) if documented else (),
    )


class ListChangedNotifier:
    """Tracks live connections and broadcasts list changes to them.

    Use the instance as a ``Server.middleware`` entry (it tracks connections) and call
    ``changed()`` from any thread. Bursts of changes are coalesced into one broadcast.
    """

    def __init__(self, subscriptions: Subscriptions | None = None, *, resources_follow_tools: bool = False) -> None:
        self.bus = InMemorySubscriptionBus()
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: set[str] = set()
        self._updated: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.subscriptions = subscriptions if subscriptions is not None else Subscriptions()
        """Resource subscriptions of handshake-era connections, told when a subscribed URI changes
        (the server's resource handlers record them here: ``build_server`` hands them this one)."""
        self.resources_follow_tools = resources_follow_tools
        """With skills served, a tool change changes the ``skill://`` resources too: both lists are announced."""

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        self._loop = asyncio.get_running_loop()
        result = await call_next(ctx)
        if ctx.method == "notifications/initialized":
            connection = connection_of(ctx)
            if connection is not None and connection.has_standalone_channel:
                self._connections.add(connection)
                connection.exit_stack.callback(self._connections.discard, connection)
        return result

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Deliver on ``loop`` (also learned from the first request it serves)."""
        self._loop = loop

    def changed(self, *, tools: bool = True, resources: bool = False, updated: tuple[str, ...] = ()) -> None:
        """Announce a change (and resource URIs whose content changed); safe from any thread.

        A no-op before any client came.
        """
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        resources = resources or (tools and self.resources_follow_tools)
        kinds = {kind for kind, flag in (("tools", tools), ("resources", resources)) if flag}
        try:
            loop.call_soon_threadsafe(self._schedule, kinds, updated)
        except RuntimeError:  # the loop closed between the check and the call
            logger.debug("List change not delivered: the event loop is closed")

    def announce(self, change: ListChange) -> None:
        """``changed()`` for a ``ListChange``; safe from any thread."""
        self.changed(tools=change.tools, resources=change.resources, updated=change.updated)

    def _schedule(self, kinds: set[str], updated: tuple[str, ...] = ()) -> None:
        start = not self._pending and not self._updated
        self._pending |= kinds
        self._updated.update(updated)
        if start:
            task = asyncio.get_running_loop().create_task(self._broadcast())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _broadcast(self) -> None:
        await asyncio.sleep(0)  # let a burst of changes from the same tick coalesce
        kinds, self._pending = self._pending, set()
        updated, self._updated = self._updated, set()
        for uri in sorted(updated):
            for subscriber in self.subscriptions.subscribers(uri):
                await subscriber.send_resource_updated(uri)
        connections = list(self._connections)
        logger.debug("Broadcasting %s list change to %d connection(s)", sorted(kinds), len(connections))
        for connection in connections:
            # Connection.notify never raises: a closed stream drops the message.
            if "tools" in kinds:
                await connection.send_tool_list_changed()
            if "resources" in kinds:
                await connection.send_resource_list_changed()
        try:
            if "tools" in kinds:
                await self.bus.publish(ToolsListChanged())
            if "resources" in kinds:
                await self.bus.publish(ResourcesListChanged())
        except Exception:
            logger.warning("List change not delivered to subscription streams", exc_info=True)
