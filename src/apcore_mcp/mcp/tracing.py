"""The SDK's OpenTelemetry span per request: its parent taken from the request, skipped while no tracer is set.

mcp 2.3 wraps every request in a SERVER span (its ``OpenTelemetryMiddleware``, on by default),
parented on the ``traceparent`` of the request's ``_meta`` (SEP-414) and named after the method
and tool, with the gen_ai and MCP attributes. ``TracedWhenConfigured`` wraps it:

1. The trace context of the request: the ``_meta`` one, else the HTTP ``traceparent`` header
   (what proxies and instrumented HTTP clients send), made current for the request; with no
   tracer provider it still reaches apcore's ``Context``, so a module's trace id is the caller's.
2. With no tracer provider set, the SDK's span is skipped: OpenTelemetry's API would make it a
   no-op, yet building its name, attributes and context costs about 3% of a 2026-07-28
   ``tools/call``. The check is per request: a provider set after start is honoured at once.
3. Over HTTP the span gets the transport's attributes (``network.*``, ``mcp.session.id``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context as TraceContext

from apcore_mcp.calls.spans import incoming_context
from apcore_mcp.mcp.edge import http_scope

_TRACE_HEADERS = {b"traceparent": "traceparent", b"tracestate": "tracestate"}


class TracedWhenConfigured(ServerMiddleware[Any]):
    """Runs ``inner`` (the SDK's span middleware) under the request's trace context, once a provider is set."""

    def __init__(self, inner: ServerMiddleware[Any]) -> None:
        self.inner = inner

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        scope = http_scope(ctx)
        incoming = request_context(ctx.meta, scope)
        token = otel_context.attach(incoming) if incoming is not None else None
        try:
            if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
                return await call_next(ctx)
            if scope is None:
                return await self.inner(ctx, call_next)

            async def described(inner_ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
                trace.get_current_span().set_attributes(transport_attributes(scope))
                return await call_next(inner_ctx)

            return await self.inner(ctx, described)
        finally:
            if token is not None:
                otel_context.detach(token)


def request_context(meta: Mapping[str, Any] | None, scope: Mapping[str, Any] | None) -> TraceContext | None:
    """The caller's trace context: ``_meta``'s ``traceparent``, else the HTTP header's; ``None`` without a valid one."""
    if meta and "traceparent" in meta:  # the spec's is a string; a list is what a header carrier may hold
        return incoming_context(meta) if isinstance(meta["traceparent"], str) else None
    if scope is not None:
        return incoming_context(_trace_headers(scope.get("headers", ())))
    return None


def _trace_headers(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in raw:  # the raw list: no Headers object built for the (usual) request without one
        key = _TRACE_HEADERS.get(name)
        if key is not None and key not in found:
            found[key] = value.decode("latin-1")
    return found


def transport_attributes(scope: Mapping[str, Any]) -> dict[str, str]:
    attributes = {
        "network.transport": "tcp",
        "network.protocol.name": "http",
        "network.protocol.version": str(scope.get("http_version", "1.1")),
    }
    for name, value in scope.get("headers", ()):
        if name == b"mcp-session-id":
            attributes["mcp.session.id"] = value.decode("latin-1")
            break
    return attributes
