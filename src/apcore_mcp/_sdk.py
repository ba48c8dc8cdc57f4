"""The MCP SDK's private API, used here and nowhere else (like ``_apcore.py`` for apcore).

mcp 2.3 offers no public way to: reach the connection behind a handler's per-request session,
read a running session manager's lifespan state, know the ping interval and headers of its
2026-07-28 SSE responses, map a handler's exception to the wire as its modern entry does,
recognize its default span middleware, or tell whether a legacy SSE session is open.
The direct path (``http/direct.py``) must match the SDK in these, so they are read from the SDK
here, once; an SDK release that moves them fails at import and in ``tests/mcp/test_sdk_internals.py``,
not on the wire.
"""

from __future__ import annotations

from typing import Any, Final
from uuid import UUID

from mcp.server import _streamable_http_modern as _modern
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.runner import modern_error_data
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import ErrorData

SSE_PING_INTERVAL: Final[float] = _modern._SSE_PING_INTERVAL
"""Seconds a 2026-07-28 call may stay silent before its response commits to SSE with pings."""

SSE_HEADERS: Final[list[tuple[bytes, bytes]]] = list(_modern._SSE_HEADERS)
"""The response headers of a committed 2026-07-28 event stream."""


def error_data_of(exc: Exception) -> ErrorData:
    """A handler's exception as the SDK's modern entry puts it on the wire (``-32603`` when unknown, logged)."""
    return modern_error_data(exc)


def manager_started(manager: StreamableHTTPSessionManager) -> bool:
    """Whether ``manager.run()`` is entered (its lifespan state is then set)."""
    return manager._task_group is not None


def manager_lifespan_state(manager: StreamableHTTPSessionManager) -> Any:
    """What the server's lifespan yielded when ``manager.run()`` entered it."""
    return manager._lifespan_state


def connection_of(ctx: ServerRequestContext[Any, Any]) -> Connection | None:
    """The long-lived connection behind the per-request ``ServerSession`` a handler gets."""
    connection = getattr(ctx.session, "_connection", None)
    return connection if isinstance(connection, Connection) else None


def is_sdk_tracing(middleware: object) -> bool:
    """Whether ``middleware`` is the SDK's OpenTelemetry span middleware (a server's default first layer)."""
    return isinstance(middleware, OpenTelemetryMiddleware)


def sse_session_open(transport: SseServerTransport, session_id: UUID) -> bool:
    """Whether a legacy SSE transport has an open session of that id (its writers are private)."""
    return session_id in transport._read_stream_writers
