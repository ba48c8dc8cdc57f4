"""Admission refusals at the MCP edge: the JSON-RPC error a refused call is, and counting them.

The call router admits every module run (``authorization.Authorization``: the rate limit and
the caller's share of the concurrency cap). A refused ``tools/call`` (``invoke_tool``'s
target included) or module-backed ``resources/read`` is a JSON-RPC error, in every transport
and era: ``-32010`` (``RATE_LIMITED``) or ``-32011`` (``OVERLOADED``), with
``data.retryAfter`` in seconds. The HTTP status stays the transport's (the error travels
inside the JSON-RPC exchange).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError

from apcore_mcp.limits import OVERLOADED, RATE_LIMITED, CallLimits, Refusal

logger = logging.getLogger(__name__)

_REASONS = {RATE_LIMITED: "rate_limited", OVERLOADED: "overloaded"}


def refusal_error(refusal: Refusal) -> MCPError:
    """The JSON-RPC error answering a call the limits refused."""
    return MCPError(code=refusal.code, message=refusal.message, data={"retryAfter": refusal.retry_after})


class CallAdmission:
    """Server middleware telling ``observers`` the reason of each admission refusal a handler answered."""

    def __init__(self, limits: CallLimits) -> None:
        self.limits = limits
        self.observers: list[Callable[[str], None]] = []
        """Called with the reason of each refusal (the metrics count them)."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if not self.limits.active or not self.observers:
            return await call_next(ctx)
        try:
            return await call_next(ctx)
        except MCPError as error:
            reason = _REASONS.get(error.code)
            if reason is not None:
                for observe in self.observers:
                    observe(reason)
            raise
