"""The scripted MCP server: a low-level SDK ``Server`` answering from a ``Script``.

It serves both protocol eras from one object. Middleware, outermost first: the request
record (what the client sent, as it arrived), the SDK's ``RequestStateBoundary`` (seals the
2026-07-28 ``requestState``), then connection tracking for list-change announcements.
"""

from __future__ import annotations

import json
import threading
import time
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import mcp.types as types
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import NotificationOptions
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ServerEvent,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError

from apcore_mcp._sdk import connection_of
from apcore_mcp.mcp.server import ApcoreServer
from apcore_mcp.testing.scripted.player import Context, Player
from apcore_mcp.testing.scripted.queues import case_of
from apcore_mcp.testing.scripted.script import Script

_EVENTS: dict[str, ServerEvent] = {
    "tools": ToolsListChanged(),
    "resources": ResourcesListChanged(),
    "prompts": PromptsListChanged(),
}


def select(
    entries: list[dict[str, Any]], method: str | None = None, test_case: str | None = None
) -> list[dict[str, Any]]:
    """The record entries of ``method`` and of ``test_case`` (each ``None``: any)."""
    return [
        e
        for e in entries
        if (method is None or e["method"] == method) and (test_case is None or e.get("test_case") == test_case)
    ]


class RequestRecord:
    """Every request and notification the server received, in order; optionally also a JSON lines file.

    Thread-safe: the HTTP endpoint reading it and the server writing it may run on different threads.
    """

    def __init__(self, path: Path | None = None, limit: int = 10_000) -> None:
        self._entries: list[dict[str, Any]] = []
        self._limit = limit
        self._count = 0  # every request received; the list keeps the first ``limit``
        self._lock = threading.Lock()
        self._file: IO[str] | None = path.open("a", encoding="utf-8") if path is not None else None

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        self.add(ctx.method, ctx.params, request_id=ctx.request_id, protocol_version=ctx.protocol_version)
        return await call_next(ctx)

    def add(self, method: str, params: Mapping[str, Any] | None, **extra: object) -> None:
        entry: dict[str, Any] = {"method": method, "params": dict(params or {}), **extra, "time": time.time()}
        if method == "tools/call" and params is not None:
            entry["test_case"] = case_of(params.get("arguments"), params.get("_meta"))
        with self._lock:
            self._count += 1
            entry["seq"] = self._count
            if len(self._entries) < self._limit:
                self._entries.append(entry)
            if self._file is not None:
                self._file.write(json.dumps(entry, default=str) + "\n")
                self._file.flush()

    def entries(self, method: str | None = None, test_case: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            found = list(self._entries)
        return select(found, method, test_case)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


class Connections:
    """Handshake-era connections seen so far (weakly), to announce list changes to."""

    def __init__(self) -> None:
        self._live: weakref.WeakSet[Connection] = weakref.WeakSet()

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        connection = connection_of(ctx)
        if ctx.method == "notifications/initialized" and connection is not None:
            self._live.add(connection)
        return result

    def __iter__(self) -> Iterator[Connection]:
        return iter(list(self._live))


def build_server(script: Script, record: RequestRecord) -> ApcoreServer:
    """A server playing ``script`` and writing every request to ``record``."""
    bus = InMemorySubscriptionBus()
    connections = Connections()

    async def announce(ctx: Context, kinds: tuple[str, ...]) -> None:
        for kind in kinds:
            for connection in connections:
                await getattr(connection, f"send_{kind[:-1]}_list_changed")()
            await bus.publish(_EVENTS[kind])

    player = Player(script, announce)

    async def list_tools(_ctx: Context, _params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=player.tools())

    async def list_resources(_ctx: Context, _params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[r.resource for r in script.resources.values()])

    async def read_resource(_ctx: Context, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        found = script.resources.get(str(params.uri))
        if found is None:
            raise MCPError(types.INVALID_PARAMS, f"Resource not found: {params.uri}", data={"uri": str(params.uri)})
        return types.ReadResourceResult(contents=[found.contents])

    async def list_prompts(_ctx: Context, _params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[p.prompt for p in script.prompts.values()])

    async def get_prompt(_ctx: Context, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        found = script.prompts.get(params.name)
        if found is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {params.name}")
        arguments = params.arguments or {}
        missing = [a.name for a in found.prompt.arguments or () if a.required and a.name not in arguments]
        if missing:
            raise MCPError(types.INVALID_PARAMS, f"Missing prompt argument(s): {', '.join(missing)}")
        messages = [_fill(message, arguments) for message in found.messages]
        return types.GetPromptResult(description=found.prompt.description, messages=messages)

    server = ApcoreServer(
        script.name,
        version=script.version,
        notifications=NotificationOptions(tools_changed=True, resources_changed=True, prompts_changed=True),
        instructions=script.instructions,
        on_list_tools=list_tools,
        on_call_tool=player.call,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_subscriptions_listen=ListenHandler(bus),
    )
    boundary = RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=script.name)
    server.middleware[:0] = [record, boundary, connections]
    return server


def _fill(message: types.PromptMessage, arguments: Mapping[str, str]) -> types.PromptMessage:
    """``{name}`` placeholders of a text message replaced by the prompt's arguments."""
    content = message.content
    if not isinstance(content, types.TextContent):
        return message
    text = content.text
    for name, value in arguments.items():
        text = text.replace("{" + name + "}", value)
    return types.PromptMessage(role=message.role, content=types.TextContent(text=text))
