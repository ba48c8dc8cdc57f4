"""What module code reads while it runs under MCP: the call context and the helpers that reach
the client (progress, elicitation, sampling, roots, inputs, log messages). The public face of
``calls/context.py``, where they live; see there for how each works in both protocol eras."""

from __future__ import annotations

from apcore_mcp.calls.context import (
    MCP_CALL_KEY,
    MCP_ELICIT_KEY,
    MCP_PROGRESS_KEY,
    CallContext,
    ClientCapabilityMissing,
    Era,
    InputKind,
    InputRequired,
    LogLevel,
    Peer,
    call_context,
    elicit,
    list_roots,
    log_message,
    release_stream,
    report_progress,
    request_inputs,
    sample,
)

__all__ = [
    "MCP_CALL_KEY",
    "MCP_ELICIT_KEY",
    "MCP_PROGRESS_KEY",
    "CallContext",
    "ClientCapabilityMissing",
    "Era",
    "InputKind",
    "InputRequired",
    "LogLevel",
    "Peer",
    "call_context",
    "elicit",
    "list_roots",
    "log_message",
    "release_stream",
    "report_progress",
    "request_inputs",
    "sample",
]
