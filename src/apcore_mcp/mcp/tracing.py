"""The SDK's OpenTelemetry span per request, skipped while no tracer provider is set.

mcp 2.3 wraps every request in a span (its ``OpenTelemetryMiddleware``, on by default). With no
tracer provider configured, OpenTelemetry's API makes every span a no-op, yet building its name,
attributes and trace context still costs about 3% of a 2026-07-28 ``tools/call``. The check is
made per request, so a provider set after the server is built (``opentelemetry-instrument``, or
``trace.set_tracer_provider`` in the app) is honoured from its first request on.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from opentelemetry import trace


class TracedWhenConfigured(ServerMiddleware[Any]):
    """Runs ``inner`` (the SDK's span middleware) only once a tracer provider is set."""

    def __init__(self, inner: ServerMiddleware[Any]) -> None:
        self.inner = inner

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            return await call_next(ctx)
        return await self.inner(ctx, call_next)
