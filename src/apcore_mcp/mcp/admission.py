"""Admission refusals at the MCP edge: the JSON-RPC error a refused call is, and who hears of it.

The call router admits every module run (``authorization.Authorization``: the rate limit and
the caller's share of the concurrency cap). A refused ``tools/call`` (``invoke_tool``'s
target included) or module-backed ``resources/read`` is a JSON-RPC error, in every transport
and era: ``-32010`` (``RATE_LIMITED``) or ``-32011`` (``OVERLOADED``), with
``data.retryAfter`` in seconds. The HTTP status stays the transport's (the error travels
inside the JSON-RPC exchange).
"""

from __future__ import annotations

from collections.abc import Callable

from mcp.shared.exceptions import MCPError

from apcore_mcp.calls.limits import Refusal


class Refusals:
    """Turns the refusals the MCP handlers meet into errors, telling ``observers`` each reason."""

    def __init__(self, observers: list[Callable[[str], None]] | None = None) -> None:
        self.observers: list[Callable[[str], None]] = observers if observers is not None else []
        """Called with the reason of each refusal (the metrics count them)."""

    def error(self, refusal: Refusal) -> MCPError:
        """The JSON-RPC error answering a call the limits refused (the observers are told first)."""
        for observe in self.observers:
            observe(refusal.reason)
        return MCPError(code=refusal.code, message=refusal.message, data={"retryAfter": refusal.retry_after})
