"""The call path: every tool call goes through the apcore ``Executor``, and never raises."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp.types as types
from apcore import Context

from apcore_mcp.catalog import ToolCatalog
from apcore_mcp.context import CallContext
from apcore_mcp.errors import SafeError, log_call_error, to_safe_error
from apcore_mcp.upstream.results import MCP_RESULT_KEY, mcp_result_of

logger = logging.getLogger(__name__)

SERIALIZATION_ERROR = "Failed to serialize module output"


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """The result of one call, before it is rendered for a transport."""

    tool: str
    output: dict[str, Any] | None = None
    text: str = ""
    structured: bool = False
    error: SafeError | None = None
    result: types.CallToolResult | None = None
    """A whole MCP result the module produced (an upstream tool's), passed on as it is."""

    @property
    def ok(self) -> bool:
        return self.error is None


class CallRouter:
    """Runs tool calls for one server: catalog check, ``Executor.call_async``, safe errors.

    Also counts calls in flight so a shutdown can let them finish.
    """

    def __init__(self, executor: Any, catalog: ToolCatalog) -> None:
        self.executor = executor
        self.catalog = catalog
        self._in_flight = 0
        self.observers: list[Callable[[CallOutcome, float], None]] = []

    @property
    def in_flight(self) -> int:
        return self._in_flight

    async def wait_idle(self, poll_seconds: float = 0.05) -> None:
        """Return once no call is running (polled: this only runs during shutdown)."""
        while self._in_flight:  # noqa: ASYNC110 - a counter, not an event, keeps the hot path cheap
            await anyio.sleep(poll_seconds)

    async def call(self, name: str, arguments: dict[str, Any] | None, call: CallContext | None = None) -> CallOutcome:
        """Call the tool ``name``; errors come back as an outcome, never as an exception.

        ``call`` is who calls and how to reach them back (progress, questions); none: a bare call.
        """
        started = time.perf_counter()
        outcome = await self._call(name, arguments, call)
        if self.observers:
            elapsed = time.perf_counter() - started
            for observe in self.observers:
                observe(outcome, elapsed)
        return outcome

    async def _call(self, name: str, arguments: dict[str, Any] | None, call: CallContext | None) -> CallOutcome:
        logger.debug("Tool call: %s", name)
        arguments = arguments if arguments is not None else {}
        record = self.catalog.get(name)
        if record is None:
            # Filtered-out and unknown modules look the same: neither exists for this client.
            return CallOutcome(tool=name, error=SafeError("not_found", f"Module not found: {name}"))
        self._in_flight += 1
        try:
            context = call.to_apcore() if call is not None else Context.create()
            output = await self.executor.call_async(name, arguments, context)
        except Exception as exc:  # noqa: BLE001 - the edge: nothing may reach the SDK
            log_call_error(name, exc)
            return CallOutcome(tool=name, error=to_safe_error(exc, arguments, record.input_schema))
        finally:
            self._in_flight -= 1
        return success_outcome(name, output, structured=record.has_output_schema)


def success_outcome(name: str, output: Any, *, structured: bool) -> CallOutcome:
    """The outcome of a call that returned ``output`` (``structured``: the tool declares an output schema)."""
    if isinstance(output, dict) and MCP_RESULT_KEY in output:
        return _carried(name, output)
    try:
        text = json.dumps(output, default=str, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        log_call_error(name, exc)
        return CallOutcome(tool=name, error=SafeError("internal", SERIALIZATION_ERROR))
    if not isinstance(output, dict):
        return CallOutcome(tool=name, text=text)
    # The JSON round trip turns dates, paths and UUIDs into the strings the text shows.
    plain = json.loads(text) if structured else output
    return CallOutcome(tool=name, output=plain, text=text, structured=structured)


def _carried(name: str, output: dict[str, Any]) -> CallOutcome:
    try:
        result = mcp_result_of(output)
    except ValueError as exc:  # pydantic's ValidationError: not a tool result after all
        log_call_error(name, exc)
        return CallOutcome(tool=name, error=SafeError("internal", SERIALIZATION_ERROR))
    wire = output[MCP_RESULT_KEY]
    text = wire if isinstance(wire, str) else json.dumps(wire, ensure_ascii=False)
    return CallOutcome(tool=name, output=output, text=text, result=result)


def to_call_tool_result(outcome: CallOutcome) -> types.CallToolResult:
    """Render an outcome as an MCP ``CallToolResult``."""
    if outcome.result is not None:
        return outcome.result
    if outcome.error is not None:
        return types.CallToolResult(content=[types.TextContent(text=outcome.error.message)], is_error=True)
    return types.CallToolResult(
        content=[types.TextContent(text=outcome.text)],
        structured_content=outcome.output if outcome.structured else None,
        is_error=False,
    )
