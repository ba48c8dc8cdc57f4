"""OpenTelemetry spans for what the bridge does inside a call, on top of the SDK's span per MCP request.

The SDK opens a SERVER span for every MCP request (``tools/call <tool>``, ``tools/list``...;
see ``mcp/tracing.py``, which also takes its parent from a ``traceparent`` header). Inside
it, on every route (MCP, the explorer, search mode's ``invoke_tool``):

1. ``call_span`` opens ``call <module>`` around authorization, admission and the Executor, and
   records the outcome; an edge with no SDK span around it may pass the context of its
   request's ``traceparent`` as the parent (``CallContext.trace_context``).
2. ``trace_parent`` hands that span to apcore's ``Context`` (``Context.trace_parent``), so
   apcore's ``trace_id`` is the OpenTelemetry one; a module's own spans, made in the call's
   task, nest under it.
3. Progress is an event on the call's span, an approval a child span (``approval_span``), and
   an upstream call the MCP client's own span, whose context the SDK puts in the request ``_meta``.

Argument values are recorded only where the operator opts in (``trace_arguments``), redacted as
apcore redacts them for logs and cut at ``MAX_ARGUMENTS_CHARS``. With no tracer provider set,
nothing here builds anything: one ``isinstance`` check per call.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from apcore.trace_context import TraceParent
from apcore.utils.redaction import redact_sensitive
from opentelemetry import trace
from opentelemetry.context import Context as TraceContext
from opentelemetry.propagate import extract
from opentelemetry.trace import Span, SpanKind, StatusCode

from apcore_mcp._version import __version__

TRACER_NAME = "apcore_mcp"
MAX_ARGUMENTS_CHARS = 4096
"""Longest ``gen_ai.tool.call.arguments`` value recorded (opted-in arguments, after redaction)."""

_tracer = trace.get_tracer(TRACER_NAME, __version__)


def tracing_on() -> bool:
    """Whether a tracer provider is set (checked per call: one set after start is honoured at once)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def incoming_context(carrier: Mapping[str, Any]) -> TraceContext | None:
    """The trace context a request carries (``traceparent`` and ``tracestate`` in its headers or ``_meta``).

    ``None`` without a valid one, so the span that follows nests under the current one, if any.
    """
    if "traceparent" not in carrier:
        return None
    try:
        context = extract(carrier)
    except (TypeError, ValueError):  # a non-string value in a _meta
        return None
    return context if trace.get_current_span(context).get_span_context().is_valid else None


def trace_parent() -> TraceParent | None:
    """The current span as apcore's ``TraceParent`` (``None`` outside a recorded or propagated span)."""
    span_context = trace.get_current_span().get_span_context()
    if not span_context.is_valid:
        return None
    state = tuple(span_context.trace_state.items())
    return TraceParent(
        version="00",
        trace_id=format(span_context.trace_id, "032x"),
        parent_id=format(span_context.span_id, "016x"),
        trace_flags=format(int(span_context.trace_flags), "02x"),
        tracestate=state,
    )


@contextmanager
def call_span(
    tool: str,
    origin: str,
    *,
    parent: TraceContext | None = None,
    arguments: Mapping[str, Any] | None = None,
    input_schema: Mapping[str, Any] | None = None,
) -> Iterator[Span]:
    """The span of one tool call through the router; ``arguments``: record them (the operator opted in)."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "apcore.call.origin": origin,
    }
    if arguments is not None:
        attributes["gen_ai.tool.call.arguments"] = recorded_arguments(arguments, input_schema)
    with _tracer.start_as_current_span(
        f"call {tool}",
        kind=SpanKind.INTERNAL,
        context=parent,
        attributes=attributes,
        record_exception=False,  # a cancellation is the only exception that passes the router
    ) as span:
        yield span


def end_call_span(span: Span, kind: str) -> None:
    """Record a call's outcome (``CallOutcome.kind``): anything but a result or a question is an error."""
    span.set_attribute("apcore.call.outcome", kind)
    if kind not in ("ok", "input_required"):
        span.set_attribute("error.type", kind)
        span.set_status(StatusCode.ERROR)


def recorded_arguments(arguments: Mapping[str, Any], input_schema: Mapping[str, Any] | None) -> str:
    """Arguments as recorded on a span: ``x-sensitive`` fields and secret-looking keys redacted, then cut."""
    redacted = redact_sensitive(dict(arguments), dict(input_schema or {}))
    text = json.dumps(redacted, ensure_ascii=False, separators=(",", ":"), default=str)
    return text if len(text) <= MAX_ARGUMENTS_CHARS else text[: MAX_ARGUMENTS_CHARS - 1] + "…"


@contextmanager
def approval_span(module_id: str) -> Iterator[Span]:
    """The span of asking the client's user to approve a call (a child of the call's span)."""
    with _tracer.start_as_current_span(
        f"approval {module_id}", kind=SpanKind.INTERNAL, attributes={"apcore.module.id": module_id}
    ) as span:
        yield span


def progress_event(span: Span, progress: float, total: float | None) -> None:
    attributes: dict[str, float] = {"mcp.progress": progress}
    if total is not None:
        attributes["mcp.progress.total"] = total
    span.add_event("progress", attributes)
