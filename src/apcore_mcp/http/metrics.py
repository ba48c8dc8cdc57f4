"""Prometheus metrics for one app, in a registry of its own (several apps can share a process).

Label values are bounded: a tool label is a served tool's name or ``_unknown``; no session
id, token or client address ever becomes a label.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from apcore_mcp.bridge import Bridge

UNKNOWN_TOOL = "_unknown"
CALL_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    """The app's instruments; ``render()`` gives the exposition text."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self, bridge: Bridge) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._catalog = bridge.catalog
        self._children: dict[tuple[str, str], tuple[Any, Any]] = {}
        self.calls = Counter(
            "apcore_mcp_tool_calls",
            "Tool calls by tool and outcome (ok, cancelled, input_required, or the error kind)",
            ["tool", "outcome"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "apcore_mcp_tool_call_duration_seconds",
            "Time spent answering a tool call",
            ["tool"],
            buckets=CALL_BUCKETS,
            registry=self.registry,
        )
        in_flight = Gauge("apcore_mcp_tool_calls_in_flight", "Tool calls running now", registry=self.registry)
        in_flight.set_function(lambda: bridge.router.in_flight)
        tools = Gauge("apcore_mcp_registered_tools", "Tools currently served", registry=self.registry)
        tools.set_function(lambda: len(bridge.catalog))
        sessions = Gauge(
            "apcore_mcp_active_sessions",
            "Open MCP sessions with a channel back to the client (stdio, SSE, Streamable HTTP)",
            registry=self.registry,
        )
        sessions.set_function(lambda: bridge.notifier.connection_count)
        self.open_streams = Gauge(
            "apcore_mcp_open_streams", "Server-sent event streams open now", ["route"], registry=self.registry
        )
        self.rejected = Counter(
            "apcore_mcp_rejected_requests",
            "HTTP requests refused before reaching a handler, by reason",
            ["reason"],
            registry=self.registry,
        )

    def observe_call(self, name: str, kind: str, seconds: float) -> None:
        """Count one call: ``kind`` is ``ok``, ``cancelled``, ``input_required`` or the error kind."""
        tool = name if self._catalog.get(name) is not None else UNKNOWN_TOOL
        children = self._children.get((tool, kind))
        if children is None:
            children = self._children[(tool, kind)] = (
                self.calls.labels(tool=tool, outcome=kind),
                self.duration.labels(tool=tool),
            )
        children[0].inc()
        children[1].observe(seconds)

    def reject(self, reason: str) -> None:
        self.rejected.labels(reason=reason).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


class StreamCounter:
    """Pure ASGI middleware counting open ``text/event-stream`` responses on one route."""

    def __init__(self, app: ASGIApp, gauge: Gauge, route: str) -> None:
        self.app = app
        self.gauge = gauge.labels(route=route)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        streaming = False

        async def watch(message: Message) -> None:
            nonlocal streaming
            if message["type"] == "http.response.start" and not streaming:
                content_type = dict(message.get("headers", [])).get(b"content-type", b"")
                if content_type.startswith(b"text/event-stream"):
                    streaming = True
                    self.gauge.inc()
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if streaming:
                self.gauge.dec()
