"""Admission of MCP tool calls: the rate limit and the concurrency cap, as server middleware.

A refused ``tools/call`` is a JSON-RPC error, in every transport and era: ``-32010``
(``RATE_LIMITED``) or ``-32011`` (``OVERLOADED``), with ``data.retryAfter`` in seconds. The
HTTP status stays the transport's (the error travels inside the JSON-RPC exchange).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from starlette.requests import HTTPConnection

from apcore_mcp.limits import CallLimits, principal_key

logger = logging.getLogger(__name__)


def caller_of(ctx: ServerRequestContext[Any, Any]) -> str:
    """The ``principal_key`` of the HTTP request behind ``ctx`` (``local`` for stdio and in-memory)."""
    request = ctx.request
    return principal_key(request.scope if isinstance(request, HTTPConnection) else None)


class CallAdmission:
    """Server middleware letting a ``tools/call`` run only when ``limits`` admit it."""

    def __init__(self, limits: CallLimits) -> None:
        self.limits = limits
        self.observers: list[Callable[[str], None]] = []
        """Called with the reason of each refusal (the metrics count them)."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call" or not self.limits.active:
            return await call_next(ctx)
        refusal = await self.limits.acquire(caller_of(ctx))
        if refusal is not None:
            logger.info("Tool call refused (%s)", refusal.reason)
            for observe in self.observers:
                observe(refusal.reason)
            raise MCPError(code=refusal.code, message=refusal.message, data={"retryAfter": refusal.retry_after})
        try:
            return await call_next(ctx)
        finally:
            self.limits.release()
