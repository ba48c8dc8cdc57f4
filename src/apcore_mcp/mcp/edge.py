"""Building a ``CallContext`` from an MCP request: the one place the SDK's request objects are read."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from apcore import Identity
from mcp.server.context import ServerRequestContext

from apcore_mcp.context import CallContext, Peer
from apcore_mcp.mcp.peer import HandshakePeer, LogLevels, ModernPeer, is_modern

Identify = Callable[[ServerRequestContext[Any, Any]], Identity | None]
"""Who is calling, from the request (an authenticated HTTP principal, the stdio operator identity)."""


def no_identity(_ctx: ServerRequestContext[Any, Any]) -> Identity | None:
    return None


@dataclass(frozen=True)
class Edge:
    """What every MCP handler needs to turn a request into a call context."""

    identify: Identify
    log_levels: LogLevels
    input_timeout: float

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
        return CallContext(
            identity=self.identify(ctx),
            peer=peer,
            meta={"progressToken": progress_token} if progress_token is not None else {},
            origin="mcp",
            release=ctx.close_sse_stream,
        )
