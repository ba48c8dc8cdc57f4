"""Prometheus metrics for one app, in a registry of its own (several apps can share a process).

Label values are bounded: a tool label is a served tool's name or ``_unknown``; no session
id, token or client address ever becomes a label.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from apcore_mcp.calls.router import CallRouter
    from apcore_mcp.mcp.admission import Refusals
    from apcore_mcp.tools.catalog import ToolCatalog

UNMATCHED_ROUTE = "_unmatched"
CALL_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
REASON_SCOPE_KEY = "apcore_mcp.reject_reason"
"""ASGI scope key a responder sets to name why it refused a request (else the status says it)."""
REASONS_BY_STATUS = {
    400: "bad_request",
    405: "method_not_allowed",
    406: "not_acceptable",
    408: "body_timeout",
    413: "too_large",
    415: "media_type",
    429: "rate_limited",
    431: "headers_too_large",
    503: "overloaded",
}
_METHODS = frozenset({"GET", "POST", "DELETE", "HEAD", "OPTIONS", "PUT", "PATCH"})


class Metrics:
    """The app's instruments; ``render()`` gives the exposition text."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self, catalog: ToolCatalog, router: CallRouter) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
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
        in_flight.set_function(lambda: self.in_flight())
        tools = Gauge("apcore_mcp_registered_tools", "Tools currently served", registry=self.registry)
        tools.set_function(lambda: len(catalog))
        sessions = Gauge(
            "apcore_mcp_active_sessions",
            "Open MCP sessions: Streamable HTTP sessions (initialized or not) and SSE connections",
            registry=self.registry,
        )
        sessions.set_function(lambda: self.session_count())
        self.open_streams = Gauge(
            "apcore_mcp_open_streams", "Server-sent event streams open now", ["route"], registry=self.registry
        )
        self.session_count: Callable[[], int] = lambda: 0
        """Set by the app: how many sessions are open now."""
        drifted = Gauge(
            "apcore_mcp_upstream_tools_held",
            "Upstream tools not served because they do not match their pin (drifted, new or unpinned)",
            registry=self.registry,
        )
        drifted.set_function(lambda: self.held_tools())
        self.held_tools: Callable[[], int] = lambda: 0
        """Set by the app: how many upstream tools the pins hold now."""
        self.in_flight: Callable[[], int] = lambda: router.in_flight
        """How many tool calls are running now (the app adds its toolset endpoints' calls)."""
        self.rejected = Counter(
            "apcore_mcp_rejected_requests",
            "Requests and tool calls refused, by reason (host, origin, bad_request, too_large, media_type, "
            "rate_limited, overloaded, session_limit, header_timeout, body_timeout...)",
            ["reason"],
            registry=self.registry,
        )
        self.http_duration = Histogram(
            "apcore_mcp_http_request_duration_seconds",
            "Time to answer an HTTP request (to the first byte for event streams), by route template, "
            "method and status class",
            ["route", "method", "status"],
            buckets=CALL_BUCKETS,
            registry=self.registry,
        )
        self._http_children: dict[tuple[str, str, str], Any] = {}
        self.direct = Counter(
            "apcore_mcp_direct_requests",
            "2026-07-28 requests answered by the direct path (without the SDK's per-request streams), by method",
            ["method"],
            registry=self.registry,
        )
        self._direct_children: dict[str, Any] = {}
        self.truncated = Counter(
            "apcore_mcp_tool_results_truncated",
            "Tool results cut to their result budget (max_result_bytes), by tool",
            ["tool"],
            registry=self.registry,
        )
        self.render_all: Callable[[bytes], bytes] | None = None
        """Set while several workers serve: this worker's exposition in, the machine's out."""

    @contextlib.contextmanager
    def observing(self, router: CallRouter, refusals: Refusals) -> Iterator[None]:
        """Count ``router``'s calls and the refusals of its MCP handlers while the block runs (the app's lifespan)."""
        router.observers.append(self.observe_call)
        refusals.observers.append(self.reject)
        cuts = router.budget.observers if router.budget is not None else []
        cuts.append(self.observe_cut)
        try:
            yield
        finally:
            router.observers.remove(self.observe_call)
            refusals.observers.remove(self.reject)
            cuts.remove(self.observe_cut)

    def observe_call(self, tool: str, kind: str, seconds: float) -> None:
        """Count one call: ``kind`` is ``ok``, ``cancelled``, ``input_required`` or the error kind."""
        children = self._children.get((tool, kind))
        if children is None:
            children = self._children[(tool, kind)] = (
                self.calls.labels(tool=tool, outcome=kind),
                self.duration.labels(tool=tool),
            )
        children[0].inc()
        children[1].observe(seconds)

    def observe_cut(self, tool: str) -> None:
        """Count a result cut to its budget (``tool`` is a served tool's name)."""
        self.truncated.labels(tool=tool).inc()

    def reject(self, reason: str) -> None:
        self.rejected.labels(reason=reason).inc()

    def observe_http(self, route: str, method: str, status: int | None, seconds: float) -> None:
        key = (route, method if method in _METHODS else "OTHER", f"{status // 100}xx" if status else "none")
        child = self._http_children.get(key)
        if child is None:
            child = self._http_children[key] = self.http_duration.labels(*key)
        child.observe(seconds)

    def answered_direct(self, method: str) -> None:
        """Count a request the direct path answered (``method`` is one of its bounded set)."""
        child = self._direct_children.get(method)
        if child is None:
            child = self._direct_children[method] = self.direct.labels(method=method)
        child.inc()

    def render(self) -> bytes:
        own = generate_latest(self.registry)
        return own if self.render_all is None else self.render_all(own)


class StreamCounter:
    """Pure ASGI middleware counting open ``text/event-stream`` responses on one route, and ending them cleanly.

    An event stream ended by the server (shutdown, a finished session) returns from the app
    without the final empty chunk; uvicorn then logs "ASGI callable returned without
    completing response" at ERROR and the client sees a broken chunked body. The final chunk
    is sent here instead (a no-op when the client is already gone).
    """

    def __init__(self, app: ASGIApp, gauge: Gauge, route: str) -> None:
        self.app = app
        self.gauge = gauge.labels(route=route)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        streaming = started = complete = False

        async def watch(message: Message) -> None:
            nonlocal streaming, started, complete
            if message["type"] == "http.response.start" and not started:
                started = True
                if _is_event_stream(message):
                    streaming = True
                    self.gauge.inc()
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                complete = True
            await send(message)

        try:
            await self.app(scope, receive, watch)
            if started and not complete:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            if streaming:
                self.gauge.dec()


class HttpMetrics:
    """Pure ASGI middleware timing every HTTP request and counting refusals by reason.

    The route label is the matched route's template (``/explorer/tools/{name}``), never
    the raw path. A refusal's reason is the one its responder put in the scope
    (``REASON_SCOPE_KEY``), else the status's (``REASONS_BY_STATUS``).
    """

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status: int | None = None
        recorded = False

        async def watch(message: Message) -> None:
            nonlocal status, recorded
            if message["type"] == "http.response.start":
                status = message["status"]
                if _is_event_stream(message):
                    recorded = True
                    self._record(scope, status, started)
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if not recorded:
                self._record(scope, status, started)

    def _record(self, scope: Scope, status: int | None, started: float) -> None:
        route = getattr(scope.get("route"), "path", None) or UNMATCHED_ROUTE
        self.metrics.observe_http(route, scope["method"], status, time.perf_counter() - started)
        reason = scope.get(REASON_SCOPE_KEY) or (REASONS_BY_STATUS.get(status) if status else None)
        if reason:
            self.metrics.reject(reason)


def _is_event_stream(message: Message) -> bool:
    return any(
        key == b"content-type" and value.startswith(b"text/event-stream") for key, value in message.get("headers", [])
    )
