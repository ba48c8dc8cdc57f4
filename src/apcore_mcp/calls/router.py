"""The call path: every tool call goes through the apcore ``Executor``, and never raises.

One run path for every edge: the caller builds a ``CallContext``, ``CallRouter.call`` finds
the module, authorizes running it for that caller (``Authorization``: tool scopes, then
admission by the rate limit and the concurrency share), turns the context into apcore's
``Context``, runs the module (streamed through ``Executor.stream`` when the module streams
and the client asked for progress), and returns a ``CallOutcome``: a rendered result, a safe
error, an admission refusal, or the questions of a 2026-07-28 input-required round. A
cancelled call sets its ``CancelToken`` and re-raises the cancellation.

A *dispatcher* (``invoke_tool``) is a module that runs another through a router with the same
``CallContext``: its target is authorized and admitted there, so the dispatcher itself is
checked for scopes but not admitted (one run, counted once).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

import anyio
from apcore import Context

from apcore_mcp.calls.authorization import Authorization
from apcore_mcp.calls.budget import ResultBudget
from apcore_mcp.calls.context import CallContext, ClientCapabilityMissing, InputRequired
from apcore_mcp.calls.dry_run import dry_run_result, wants_dry_run
from apcore_mcp.calls.errors import SafeError, log_call_error, module_not_found, to_safe_error
from apcore_mcp.calls.held import HeldTool, HeldTools, held_error
from apcore_mcp.calls.inputs import invalid_input
from apcore_mcp.calls.limits import Refusal
from apcore_mcp.calls.spans import call_span, end_call_span, tracing_on
from apcore_mcp.tools.catalog import ToolCatalog
from apcore_mcp.tools.content import (
    MCP_RESULT_KEY,
    OutputError,
    RenderedOutput,
    dump_json,
    precheck_size,
    render_output,
    to_json_value,
)
from apcore_mcp.tools.records import ToolRecord
from apcore_mcp.types import ModuleInvoker

logger = logging.getLogger(__name__)

SERIALIZATION_ERROR = "Failed to serialize module output"
CANCELLED = "cancelled"
STOPPED = "Call cancelled: the server is shutting down"


class CallRefused(BaseException):
    """Raised by a dispatcher whose target was not admitted, so the refusal reaches the edge as a refusal.

    A ``BaseException`` for the reason ``InputRequired`` is one: it passes apcore's pipeline untouched.
    """

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.reason)
        self.refusal = refusal


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """The result of one call, before it is rendered for a transport."""

    tool: str
    rendered: RenderedOutput | None = None
    error: SafeError | None = None
    input_required: InputRequired | None = None
    missing_capability: ClientCapabilityMissing | None = None
    value: object = None
    """The raw module output, for edges that render it themselves (``read_module``)."""
    carried: dict[str, Any] | None = None
    """A whole MCP tool result the module produced (an upstream tool's), passed on as it is."""
    refusal: Refusal | None = None
    """Not admitted (rate limit, concurrency): edges answer it as such; ``error`` says it too, for the others."""

    @property
    def ok(self) -> bool:
        return self.error is None and self.input_required is None and self.missing_capability is None

    @property
    def kind(self) -> str:
        """``ok``, ``input_required``, ``missing_capability``, a refusal's reason or the error kind (metrics label)."""
        if self.refusal is not None:
            return self.refusal.reason
        if self.error is not None:
            return self.error.kind
        if self.input_required is not None:
            return "input_required"
        if self.missing_capability is not None:
            return "missing_capability"
        return "ok"

    @property
    def text(self) -> str:
        if self.carried is not None:
            return json.dumps(self.carried, ensure_ascii=False, separators=(",", ":"))
        return self.rendered.text if self.rendered is not None else ""


Observer = Callable[[str, str, float], None]
"""``(tool, outcome kind, seconds)`` after each call, cancelled ones included; the tool is
``UNKNOWN_TOOL`` for a name the router's catalog does not hold (a client's made-up names do not
become label values)."""

UNKNOWN_TOOL = "_unknown"


def refused_outcome(tool: str, refusal: Refusal) -> CallOutcome:
    return CallOutcome(tool=tool, error=SafeError("refused", refusal.message), refusal=refusal)


class CallRouter:
    """Runs tool calls for one server: catalog check, authorization, the Executor, safe errors, calls in flight.

    ``dispatchers`` name the tools that run another through a router (see the module doc).
    ``validate_inputs`` refuses arguments the module's input contract refuses before anything
    else runs for them (the ``validate_inputs`` setting); the Executor validates them again.
    """

    def __init__(
        self,
        executor: ModuleInvoker,
        catalog: ToolCatalog,
        *,
        max_output_bytes: int | None = None,
        authorization: Authorization | None = None,
        dispatchers: Collection[str] = (),
        validate_inputs: bool = False,
        trace_arguments: bool = False,
        observers: list[Observer] | None = None,
        budget: ResultBudget | None = None,
        held: HeldTools | None = None,
        held_shown: Callable[[HeldTool], bool] | None = None,
    ) -> None:
        self.executor = executor
        self.catalog = catalog
        self.max_output_bytes = max_output_bytes
        self.authorization = authorization if authorization is not None else Authorization()
        self.dispatchers = frozenset(dispatchers)
        self.validate_inputs = validate_inputs
        self.trace_arguments = trace_arguments
        self._in_flight = 0
        self._scopes: set[anyio.CancelScope] = set()
        self.observers: list[Observer] = observers if observers is not None else []
        """Told of every call's outcome; a list another router may share (a toolset's calls are the server's)."""
        self.budget = budget
        """The result budget every successful result passes (``calls/budget.py``); ``None``: results go as they are."""
        self.held = held
        """Tools held from their pins (``calls/held.py``): a call of one the caller could see names the drift."""
        self.held_shown = held_shown
        """Which held tools this router's catalog would serve were they not held (``None``: every one)."""

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def cancel_all(self) -> int:
        """Cancel every call running now; each answers a ``cancelled`` error (shutdown past its grace period)."""
        for scope in self._scopes:
            scope.cancel()
        return len(self._scopes)

    async def wait_idle(self, poll_seconds: float = 0.05) -> None:
        """Return once no call is running (polled: this only runs during shutdown)."""
        while self._in_flight:  # noqa: ASYNC110 - a counter, not an event, keeps the hot path cheap
            await anyio.sleep(poll_seconds)

    async def call(self, name: str, arguments: dict[str, Any] | None, call: CallContext | None = None) -> CallOutcome:
        """Call the tool ``name``; errors come back as an outcome, never as an exception.

        Raises:
            asyncio.CancelledError: the call was cancelled (its token is set first).
        """
        call = call if call is not None else CallContext(origin="direct")
        arguments = arguments if arguments is not None else {}
        if tracing_on():
            return await self._traced(name, arguments, call)
        return await self._observed(name, arguments, call)

    async def _traced(self, name: str, arguments: dict[str, Any], call: CallContext) -> CallOutcome:
        # A dispatcher's arguments hold its target's, which only the target's schema marks sensitive:
        # they are recorded (redacted) on the target's span, nested in the dispatcher's.
        recorded = self.trace_arguments and name not in self.dispatchers
        record = self.catalog.get(name) if recorded else None
        outer = call.span
        with call_span(
            name,
            call.origin,
            parent=call.trace_context if outer is None else None,
            arguments=arguments if recorded else None,
            input_schema=record.input_schema if record is not None else None,
        ) as span:
            call.span = span
            try:
                outcome = await self._observed(name, arguments, call)
            finally:
                call.span = outer
            end_call_span(span, outcome.kind)
            return outcome

    async def _observed(self, name: str, arguments: dict[str, Any], call: CallContext) -> CallOutcome:
        started = time.perf_counter()
        kind = CANCELLED
        try:
            with anyio.CancelScope() as scope:
                self._scopes.add(scope)
                try:
                    outcome = await self._call(name, arguments, call)
                finally:
                    self._scopes.discard(scope)
            if scope.cancelled_caught:  # cancel_all(): answered, not dropped
                call.cancel_token.cancel()
                outcome = CallOutcome(tool=name, error=SafeError("cancelled", STOPPED))
            kind = outcome.kind
            return outcome
        except asyncio.CancelledError:
            call.cancel_token.cancel()
            logger.info("Tool call cancelled: %s", name)
            raise
        finally:
            if self.observers:
                elapsed = time.perf_counter() - started
                tool = name if self.catalog.get(name) is not None else UNKNOWN_TOOL
                for observe in self.observers:
                    observe(tool, kind, elapsed)

    async def _call(self, name: str, arguments: dict[str, Any], call: CallContext) -> CallOutcome:
        logger.debug("Tool call: %s", name)
        record = self.catalog.get(name)
        if record is None:
            # Filtered-out and unknown modules look the same: neither exists for this client.
            return CallOutcome(tool=name, error=self._absent(name, call))
        if wants_dry_run(call.meta):
            return await self._dry_run(record, arguments, call)
        outcome = await self._execute(record, arguments, call)
        if not outcome.ok:
            return outcome
        return await self._budgeted(record, await finish_outcome(record, outcome.value, self.max_output_bytes), call)

    def _absent(self, name: str, call: CallContext) -> SafeError:
        """Not served: a held tool's drift where the caller could see it were it served, else the absent answer."""
        told = self.held_answer(name, call)
        return told if told is not None else module_not_found(name)

    def held_answer(self, name: str, call: CallContext) -> SafeError | None:
        """Held tool ``name``'s drift error when the caller of ``call`` could see it were it served, else ``None``."""
        held = self.held.get(name) if self.held is not None else None
        if held is None or (self.held_shown is not None and not self.held_shown(held)):
            return None
        if not self.authorization.visible_to(call)(name):
            return None  # the hidden-tool rule: a tool it may not see is absent
        return held_error(held)

    async def _budgeted(self, record: ToolRecord, outcome: CallOutcome, call: CallContext) -> CallOutcome:
        """The outcome within its result budget; a dispatcher's result is its target's, budgeted there."""
        budget = self.budget
        if budget is None or not outcome.ok or record.name in self.dispatchers:
            return outcome
        if not budget.active(record.annotations, call.era):
            return outcome
        wire = await budget.apply(record.name, record.annotations, wire_result(outcome), call)
        return CallOutcome(tool=record.name, carried=wire)

    async def _dry_run(self, record: ToolRecord, arguments: dict[str, Any], call: CallContext) -> CallOutcome:
        """The checks of a call without the run (``calls/dry_run.py``): the same scope check first."""
        denied = self.authorization.check(record.name, call)
        if denied is not None:
            return CallOutcome(tool=record.name, error=denied)
        result = await dry_run_result(self.executor, record, arguments, call.to_apcore())
        return CallOutcome(tool=record.name, carried=result)

    async def read_module(self, record: ToolRecord, inputs: dict[str, Any], call: CallContext) -> CallOutcome:
        """Run a resource module; the outcome's ``value`` is its raw output."""
        return await self._execute(record, inputs, call)

    async def _execute(self, record: ToolRecord, arguments: dict[str, Any], call: CallContext) -> CallOutcome:
        """The one authorization point: every module run, whatever its route, passes here first."""
        denied = self.authorization.check(record.name, call)
        if denied is not None:
            return CallOutcome(tool=record.name, error=denied)
        if self.validate_inputs:  # before admission: a refused call takes no slot and no rate-limit token
            invalid = invalid_input(self.executor.registry.get(record.name), arguments, record.input_schema)
            if invalid is not None:
                return CallOutcome(tool=record.name, error=invalid)
        if record.name in self.dispatchers:  # admitted as its target, by the router that runs it
            return await self._admitted(record, arguments, call)
        refusal = await self.authorization.admit(call)
        if refusal is not None:
            return refused_outcome(record.name, refusal)
        try:
            return await self._admitted(record, arguments, call)
        finally:
            self.authorization.release(call)

    async def _admitted(self, record: ToolRecord, arguments: dict[str, Any], call: CallContext) -> CallOutcome:
        self._in_flight += 1
        try:
            output = await self._run(record, arguments, call)
        except InputRequired as question:
            return CallOutcome(tool=record.name, input_required=question)
        except ClientCapabilityMissing as missing:
            return CallOutcome(tool=record.name, missing_capability=missing)
        except CallRefused as refused:
            return refused_outcome(record.name, refused.refusal)
        except Exception as exc:  # noqa: BLE001 - the edge: nothing may reach the SDK
            log_call_error(record.name, exc)
            return CallOutcome(tool=record.name, error=to_safe_error(exc, arguments, record.input_schema))
        finally:
            self._in_flight -= 1
        return CallOutcome(tool=record.name, value=output)

    async def _run(self, record: ToolRecord, arguments: dict[str, Any], call: CallContext) -> dict[str, Any]:
        context = call.to_apcore()
        if record.streaming and call.peer is not None and call.meta.get("progressToken") is not None:
            return await self._stream(record, arguments, context, call)
        return await self.executor.call_async(record.name, arguments, context)

    async def _stream(
        self, record: ToolRecord, arguments: dict[str, Any], context: Context, call: CallContext
    ) -> dict[str, Any]:
        """FR-STREAM-001: each chunk is progress 1, 2, 3... (message = the chunk as JSON); returns the last output.

        The result is the Executor's own accumulation (deep-merged chunks), validated after
        the stream by its post-stream steps.
        """
        count = 0
        merged: dict[str, Any] = {}
        async for chunk in self.executor.stream(record.name, arguments, context):
            count += 1
            _merge(merged, chunk)
            await call.report_progress(count, None, dump_json(to_json_value(chunk)))
        return merged


async def finish_outcome(record: ToolRecord, output: object, max_output_bytes: int | None) -> CallOutcome:
    """``success_outcome``, refusing a surely too large output first, and off the event loop when large."""
    try:
        cheap = precheck_size(output, max_output_bytes)
    except OutputError as exc:  # surely too large: refused before spending time encoding it
        return output_error(record, exc)
    if cheap:
        return success_outcome(record, output, max_output_bytes)
    # Many values: encoding takes a while, so it runs off the event loop (and /health stays free).
    return await anyio.to_thread.run_sync(success_outcome, record, output, max_output_bytes)


def success_outcome(record: ToolRecord, output: object, max_output_bytes: int | None = None) -> CallOutcome:
    """The outcome of a call of ``record`` that returned ``output``: rendered, or the result it carries."""
    try:
        carried = carried_result(output)
    except ValueError as exc:  # a carried result that is not JSON: the module's fault, answered as such
        return output_error(record, OutputError(f"the carried MCP result is not JSON: {exc}"))
    if carried is not None:
        return CallOutcome(tool=record.name, carried=carried)
    try:
        rendered = render_output(output, record.layout, max_output_bytes)
    except OutputError as exc:
        return output_error(record, exc)
    return CallOutcome(tool=record.name, rendered=rendered)


def output_error(record: ToolRecord, exc: OutputError) -> CallOutcome:
    """A module output that cannot be sent: logged, and a safe message for the client."""
    log_call_error(record.name, exc)
    message = str(exc) if "exceeds the limit" in str(exc) else SERIALIZATION_ERROR
    return CallOutcome(tool=record.name, error=SafeError("output", message[:1].upper() + message[1:]))


def carried_result(output: object) -> dict[str, Any] | None:
    """The MCP tool result an output carries under ``MCP_RESULT_KEY`` (wire JSON text or dict), else ``None``.

    Raises:
        ValueError: the carried text is not JSON.
    """
    wire = output.get(MCP_RESULT_KEY) if isinstance(output, dict) else None
    if isinstance(wire, str):
        wire = json.loads(wire)
    if isinstance(wire, dict) and isinstance(wire.get("content"), list):
        return wire
    return None


def wire_result(outcome: CallOutcome) -> dict[str, Any]:
    """An ok or failed outcome as a ``CallToolResult`` wire dict (no ``resultType``: the edge adds it)."""
    if outcome.carried is not None:
        return dict(outcome.carried)
    if outcome.error is not None:
        failed: dict[str, Any] = {"content": [{"type": "text", "text": outcome.error.message}], "isError": True}
        if outcome.error.meta:
            failed["_meta"] = dict(outcome.error.meta)
        return failed
    rendered = outcome.rendered
    assert rendered is not None
    result: dict[str, Any] = {"content": list(rendered.blocks), "isError": False}
    if rendered.structured is not None:
        result["structuredContent"] = rendered.structured
    return result


def _merge(target: dict[str, Any], chunk: object) -> None:
    """Deep-merge a stream chunk into the accumulated output (objects merge, anything else replaces)."""
    if not isinstance(chunk, dict):
        return
    for key, value in chunk.items():
        current = target.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            _merge(current, value)
        else:
            target[key] = value
