"""Call outcomes rendered as MCP ``tools/call`` results (plain wire dicts; the SDK validates them once)."""

from __future__ import annotations

from typing import Any

import mcp.types as types
from mcp.shared.exceptions import MCPError

from apcore_mcp.calls.context import InputKind, InputRequired
from apcore_mcp.calls.router import CallOutcome, wire_result
from apcore_mcp.mcp.peer import encode_state

_REQUIRED_CAPABILITY: dict[InputKind, dict[str, Any]] = {
    "elicitation": {"elicitation": {"form": {}}},
    "url_elicitation": {"elicitation": {"url": {}}},
    "sampling": {"sampling": {}},
    "roots": {"roots": {}},
}


def complete(result: dict[str, Any], *, modern: bool) -> dict[str, Any]:
    """2026-07-28 results say they are final (``resultType: complete``); older revisions have no such field."""
    if modern:
        result["resultType"] = "complete"
    return result


def error_result(message: str, *, modern: bool) -> dict[str, Any]:
    return complete({"content": [{"type": "text", "text": message}], "isError": True}, modern=modern)


def input_required_result(question: InputRequired) -> dict[str, Any]:
    """A 2026-07-28 input-required round: the questions, and the answers so far as the state to echo."""
    return {
        "resultType": "input_required",
        "inputRequests": question.requests,
        "requestState": encode_state(question.answers, sorted(question.requests)),
    }


def missing_capability_error(kind: InputKind) -> MCPError:
    """-32021 with ``requiredCapabilities`` (a ``ClientCapabilities`` object)."""
    return MCPError(
        code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=f"This request needs the client's {kind} capability, which the request did not declare",
        data={"requiredCapabilities": _REQUIRED_CAPABILITY[kind]},
    )


def call_result(outcome: CallOutcome, *, modern: bool) -> dict[str, Any]:
    """The ``tools/call`` result for an outcome.

    Raises:
        MCPError: a 2026-07-28 call that required a client capability the request lacks.
    """
    if outcome.input_required is not None:
        return input_required_result(outcome.input_required)
    if outcome.missing_capability is not None:
        kind = outcome.missing_capability.kind
        if modern:
            raise missing_capability_error(kind)
        message = f"This tool needs the client's {kind} capability, which the client did not declare."
        return error_result(message, modern=modern)
    return complete(wire_result(outcome), modern=modern)
