"""Building a ``CallContext`` from an MCP request: the one place the SDK's request objects are read."""

from __future__ import annotations

import secrets
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from apcore import Identity
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from starlette.requests import HTTPConnection

from apcore_mcp._sdk import connection_of
from apcore_mcp.calls.context import CallContext, Peer
from apcore_mcp.calls.dry_run import DRY_RUN_META
from apcore_mcp.calls.limits import principal_key
from apcore_mcp.calls.principal import principal_of
from apcore_mcp.mcp.peer import HandshakePeer, LogLevels, ModernPeer, is_modern

EXPLORER_SCOPE_KEY = "apcore_mcp.explorer"
"""ASGI scope key set on requests that came through the explorer's MCP endpoint (``http/explorer/mcp.py``)."""

Identify = Callable[[ServerRequestContext[Any, Any]], Identity | None]
"""Who is calling, from the request (an authenticated HTTP principal, the stdio operator identity)."""


def no_identity(_ctx: ServerRequestContext[Any, Any]) -> Identity | None:
    return None


def http_scope(ctx: ServerRequestContext[Any, Any]) -> Mapping[str, Any] | None:
    """The ASGI scope of the HTTP request behind ``ctx`` (``None`` for stdio and in-memory)."""
    request = ctx.request
    return request.scope if isinstance(request, HTTPConnection) else None


class ConnectionTokens:
    """A random token per live client connection (never an ``id()``, which a later connection may reuse)."""

    def __init__(self) -> None:
        self._tokens: weakref.WeakKeyDictionary[Connection, str] = weakref.WeakKeyDictionary()

    def of(self, ctx: ServerRequestContext[Any, Any]) -> str | None:
        connection = connection_of(ctx)
        if connection is None:
            return None
        token = self._tokens.get(connection)
        if token is None:
            token = self._tokens[connection] = secrets.token_urlsafe(16)
        return token


@dataclass(frozen=True)
class Edge:
    """What every MCP handler needs to turn a request into a call context."""

    identify: Identify
    log_levels: LogLevels
    input_timeout: float
    connections: ConnectionTokens = field(default_factory=ConnectionTokens)

    def call_context(
        self,
        ctx: ServerRequestContext[Any, Any],
        *,
        request_state: str | None = None,
        input_responses: Mapping[str, Any] | None = None,
    ) -> CallContext:
        peer: Peer
        if is_modern(ctx):
            peer = ModernPeer.for_request(ctx, request_state, input_responses)
        else:
            peer = HandshakePeer(ctx, self.log_levels, self.input_timeout)
        meta = ctx.meta or {}
        progress_token = meta.get("progress_token", meta.get("progressToken"))
        scope = http_scope(ctx)
        return CallContext(
            identity=self.identify(ctx),
            peer=peer,
            principal=principal_of(scope),  # its token's scopes, checked on the module the router will run
            caller=principal_key(scope),
            connection=self.connections.of(ctx),
            meta=call_meta(meta, progress_token),
            origin="explorer" if scope is not None and EXPLORER_SCOPE_KEY in scope else "mcp",
            release=ctx.close_sse_stream,
        )


def call_meta(meta: Mapping[str, Any], progress_token: object) -> dict[str, Any]:
    """What of a request's ``_meta`` the router reads: its progress token and the dry-run flag."""
    kept: dict[str, Any] = {} if progress_token is None else {"progressToken": progress_token}
    if meta.get(DRY_RUN_META) is True:
        kept[DRY_RUN_META] = True
    return kept
