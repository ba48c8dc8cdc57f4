"""One live client connection to an upstream server, run by a task of the pool's task group.

The task enters the transport (our bounded ``stdio_transport`` in its own process group,
the SDK's ``streamable_http_client`` or ``sse_client``) and an ``mcp.Client``, with the
handshake bounded by the server's ``timeout``; it then waits until told to stop or until the
transport ends (the process exited, the stream closed, a message was too large). Leaving the
transport's context stops the child: stdin closed, then SIGTERM and SIGKILL to its process
group, then reaped.

No message from an upstream is read past ``max_message_bytes``: over stdio a larger line ends
the connection (the server is restarted on next use); over Streamable HTTP a larger JSON body
fails its request (SSE events are bounded by the SDK's own ``max_sse_event_size``).

When a stdio upstream's process goes away (it exited, or failed the handshake), what is
reported says why, at two levels told apart in one place (``Connection._why``): the log and
the server-side error of a call that hit it get its command, its exit code and its last stderr
lines (``upstream.exits``), redacted; ``/ready``, open to anyone, gets the exit code only and a
pointer to the log (``failure_public``, ``UpstreamError.public``).

Requests the upstream sends back during a call (elicitation, sampling) are answered through
the call's ``Asker``. In the 2026-07-28 era they arrive as input-required rounds of that very
call; in the handshake era they arrive on the connection with nothing naming the call, so
they are routed only when exactly one call that can ask is in flight, and refused otherwise
rather than risk showing one caller's question to another.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, TextIO

import anyio
import anyio.abc
import httpx2
import mcp.types as types
from mcp import Client
from mcp.client import Transport
from mcp.client.session import ClientRequestContext, IncomingMessage
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError

from apcore_mcp._redaction import redact
from apcore_mcp.upstream.config.parse import ServerSpec
from apcore_mcp.upstream.eof_watch import EofWatch
from apcore_mcp.upstream.errors import (
    ConnectionLost,
    SessionLost,
    UpstreamBadReply,
    UpstreamError,
    UpstreamMessageTooLarge,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from apcore_mcp.upstream.exits import ProcessTrace, exit_detail, exit_reason
from apcore_mcp.upstream.expand import Redactor
from apcore_mcp.upstream.remote import MAX_MESSAGE_BYTES, TOO_LARGE_TEXT, remote_transport
from apcore_mcp.upstream.stdio import WireFault, WireStats, stdio_transport

logger = logging.getLogger(__name__)

MAX_INPUT_ROUNDS = 8
_SESSION_LOST = ("session not found", "session terminated")
EXIT_WAIT_SECONDS = 3.0
"""How long a call whose connection closed waits for the process to be reaped, to say why it ended."""
SEE_THE_LOG = "(see the server log)"
"""Ends a public reason whose detail has more (the command, its stderr, an exception's text)."""
_SSE_TOO_LARGE_TEXT = "byte limit"
"""In the SDK's ``CONNECTION_CLOSED`` for an SSE event over ``max_sse_event_size``."""


class Asker(Protocol):
    """Asks our own client on behalf of the upstream: ``{key: {"method", "params"}}`` -> answers or ``None``."""

    async def ask(self, requests: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any] | None]: ...


class Connection:
    """A started (or failed) connection; ``alive`` until it stops or its transport ends."""

    def __init__(
        self,
        spec: ServerSpec,
        redactor: Redactor,
        *,
        log_dir: Path | None = None,
        on_tools_changed: Callable[[], None] | None = None,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        stats: WireStats | None = None,
    ) -> None:
        self.spec = spec
        self._redactor = redactor
        self._log_dir = log_dir
        self._max_message_bytes = max_message_bytes
        self.stats = stats or WireStats()
        self._on_tools_changed = on_tools_changed or (lambda: None)
        self._client: Client | None = None
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._done = anyio.Event()
        self._failure = ""
        self._failure_public = ""
        self._requested = False
        """``stop()`` was called: the end that follows is ours, not a failure."""
        self._trace = ProcessTrace()
        self._scope = anyio.CancelScope()
        self._askers: dict[int, Asker | None] = {}
        self._ids = itertools.count()
        self.started_at = 0.0
        self.extensions: dict[str, Any] = {}  # capabilities.extensions the server advertised, by identifier

    @property
    def alive(self) -> bool:
        return self._ready.is_set() and not self._stop.is_set() and not self._done.is_set()

    @property
    def failure(self) -> str:
        """Why the connection failed or ended badly, in full, for the log (``""`` if healthy or stopped on purpose)."""
        return self._failure

    @property
    def failure_public(self) -> str:
        """``failure`` as anyone may be shown it (``/ready``): no command, stderr or exception text."""
        return self._failure_public

    @property
    def modern(self) -> bool:
        """Whether the connection speaks the 2026-07-28 era (no session; input-required rounds)."""
        return self._client is not None and self._client.protocol_version in MODERN_PROTOCOL_VERSIONS

    async def start(self, task_group: anyio.abc.TaskGroup) -> None:
        """Run the connection in ``task_group`` and return once the handshake is done.

        The handshake is bounded by the server's ``timeout``: past it, the connection's task is
        cancelled, which stops (and reaps) whatever it had started.

        Raises:
            UpstreamUnavailable: the server could not be started or did not complete the handshake.
        """
        task_group.start_soon(self._run)
        with anyio.move_on_after(self.spec.timeout):
            async with anyio.create_task_group() as waiters:

                async def until(event: anyio.Event) -> None:
                    await event.wait()
                    waiters.cancel_scope.cancel()

                waiters.start_soon(until, self._ready)
                waiters.start_soon(until, self._done)
        if not self._ready.is_set() and not self._done.is_set():
            self._fail(f"no answer to the handshake within {self.spec.timeout:g}s")
            self._scope.cancel()
            await self._done.wait()
        if not self._ready.is_set():
            said = f"upstream {self.spec.name!r} did not start: "
            raise UpstreamUnavailable(self.spec.name, said + self._failure, public=said + self._failure_public)
        self.started_at = anyio.current_time()

    async def stop(self) -> None:
        """Stop the connection (and the child process) and wait until it is gone."""
        self._requested = True
        self._stop.set()
        await self._done.wait()

    async def _run(self) -> None:
        try:
            with self._scope:
                async with contextlib.AsyncExitStack() as stack:
                    errlog = stack.enter_context(self._errlog())
                    transport = EofWatch(self._open_transport(errlog), self._stop.set)
                    client = Client(
                        transport,
                        mode="legacy" if self.spec.protocol == "legacy" or self.spec.transport == "sse" else "auto",
                        elicitation_callback=self._on_elicit,
                        sampling_callback=self._on_sample,
                        message_handler=self._on_message,
                        cache=None,
                    )
                    await stack.enter_async_context(client)
                    self._client = client
                    self.extensions = dict(client.server_capabilities.extensions or {})
                    async with anyio.create_task_group() as inner:
                        if self.modern and _announces_tool_changes(client):
                            inner.start_soon(self._listen, client)
                        self._ready.set()
                        await self._stop.wait()
                        inner.cancel_scope.cancel()
        except Exception as exc:  # noqa: BLE001 - a background task's edge: report, never crash the pool
            self._fail(*self._why(exc))
        else:
            if not self._requested and not self._failure:
                self._fail(*self._why())  # the process went away by itself
        finally:
            self._client = None
            self._done.set()
        if self._failure:
            logger.warning("Upstream %r: %s", self.spec.name, self._failure)
        else:
            logger.info("Upstream %r stopped", self.spec.name)

    def exit_detail(self) -> str:
        """The command, exit code and last stderr lines of a stdio process that has exited; else ``""``."""
        if self.spec.transport != "stdio" or self.spec.command is None:
            return ""
        return exit_detail(self.spec.command, self.spec.args, self._trace, self._redact)

    def _why(self, exc: BaseException | None = None) -> tuple[str, str]:
        """(detail, public) of how the connection ended: the one place the two are told apart.

        The detail (the log, a call's server-side error) is ``exc``'s text, redacted, and the
        process's command, exit code and last stderr lines. The public form (``/ready``) is the
        exit code, or else ``exc``'s type, and points to the log when the detail says more.
        """
        detail = "; ".join(filter(None, [self._redact(_describe(exc)) if exc is not None else "", self.exit_detail()]))
        public = exit_reason(self._trace) or (_kind(exc) if exc is not None else "")
        return detail, f"{public} {SEE_THE_LOG}".strip() if detail and detail != public else public

    def _fail(self, detail: str, public: str | None = None) -> None:
        self._failure = detail
        self._failure_public = detail if public is None else public

    def _redact(self, text: str) -> str:
        return redact(self._redactor.redact(text))

    def _open_transport(self, errlog: TextIO) -> Transport:
        if self.spec.transport != "stdio":
            return remote_transport(self.spec, max_message_bytes=self._max_message_bytes)
        return stdio_transport(
            self.spec,
            errlog=errlog,
            max_message_bytes=self._max_message_bytes,
            stats=self.stats,
            on_fault=self._on_fault,
            trace=self._trace,
            redact=self._redact,
        )

    def _on_fault(self, detail: str) -> None:
        self._fail(detail)  # our own words; the transport ends next: this is what _run reports

    @contextlib.contextmanager
    def _errlog(self) -> Iterator[TextIO]:
        if self._log_dir is None:
            yield sys.__stderr__ if sys.__stderr__ is not None else sys.stderr
            return
        self._log_dir.mkdir(parents=True, exist_ok=True)
        with (self._log_dir / f"{_file_name(self.spec.name)}.log").open("a", encoding="utf-8") as file:
            yield file

    async def _listen(self, client: Client) -> None:
        """2026-07-28 servers announce list changes on a ``subscriptions/listen`` stream."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self._on_tools_changed()
        except (ListenNotSupportedError, SubscriptionLost, MCPError) as exc:
            logger.info("Upstream %r: no tool list changes will be seen (%s)", self.spec.name, type(exc).__name__)

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._on_tools_changed()

    # -- calls ---------------------------------------------------------------------------------

    async def list_tools(self) -> list[types.Tool]:
        """Every tool, following pagination."""
        client = self._live_client()
        tools: list[types.Tool] = []
        cursor: str | None = None
        async with self._errors():
            for _page in range(1000):
                result = await client.list_tools(cursor=cursor)
                tools.extend(result.tools)
                cursor = result.next_cursor
                if not cursor:
                    break
        return tools

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, progress: ProgressFnT | None = None, asker: Asker | None = None
    ) -> types.CallToolResult:
        """Call ``name``; input-required rounds are answered through ``asker``.

        Raises:
            SessionLost, ConnectionLost, UpstreamTimeout, UpstreamError: see ``upstream.errors``.
        """
        session = self._live_client().session
        call_id = next(self._ids)
        self._askers[call_id] = asker
        try:
            responses: dict[str, Any] | None = None
            state: str | None = None
            async with self._errors():
                for answered in range(MAX_INPUT_ROUNDS + 1):  # the first call, then one per round answered
                    result = await session.call_tool(
                        name,
                        arguments,
                        read_timeout_seconds=self.spec.timeout,
                        progress_callback=progress,
                        input_responses=responses,
                        request_state=state,
                        allow_input_required=True,
                    )
                    if not isinstance(result, types.InputRequiredResult):
                        return result
                    if answered == MAX_INPUT_ROUNDS:
                        break
                    responses = await _answer_round(result, asker)
                    if responses is None:
                        return _error_result("The upstream tool asked for input this client cannot give")
                    state = result.request_state
            return _error_result("The upstream tool kept asking for input")
        finally:
            del self._askers[call_id]

    async def send(self, request: types.Request[Any, Any], result_type: type[types.Result]) -> types.Result:
        """A request the SDK has no method for (an extension's), its errors mapped as every other's."""
        client = self._live_client()
        async with self._errors():
            return await client.session.send_request(request, result_type, self.spec.timeout)

    def _live_client(self) -> Client:
        client = self._client
        if client is None or not self.alive:
            raise ConnectionLost(self.spec.name, f"upstream {self.spec.name!r} is not connected")
        return client

    @contextlib.asynccontextmanager
    async def _errors(self) -> AsyncIterator[None]:
        """The SDK's errors as upstream errors (one mapping for every request)."""
        try:
            yield
        except MCPError as exc:
            if exc.error.code == types.CONNECTION_CLOSED and self.spec.transport == "stdio":
                await self._ended()  # so that the error can say how the process ended
            raise self._translate(exc) from None
        except ValidationError:
            self.stats.malformed += 1
            name = self.spec.name
            raise UpstreamBadReply(name, f"upstream {name!r} answered with a result of the wrong shape") from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, httpx2.TransportError) as exc:
            self._stop.set()
            raise ConnectionLost(self.spec.name, f"upstream {self.spec.name!r}: {type(exc).__name__}") from None

    async def _ended(self) -> None:
        self._stop.set()
        with anyio.move_on_after(EXIT_WAIT_SECONDS):
            await self._done.wait()

    def _translate(self, exc: MCPError) -> UpstreamError:
        name, code, text = self.spec.name, exc.error.code, exc.error.message
        if isinstance(exc.error.data, WireFault):
            if exc.error.data.kind == "too-large":
                self._stop.set()
                return UpstreamMessageTooLarge(
                    name, f"upstream {name!r} {exc.error.data.detail}; it is restarted on next use"
                )
            return UpstreamBadReply(name, f"upstream {name!r} {exc.error.data.detail}")
        if code == types.PARSE_ERROR and TOO_LARGE_TEXT in text:
            self.stats.oversized += 1
            return UpstreamMessageTooLarge(name, f"upstream {name!r} sent a body {TOO_LARGE_TEXT}")
        if code == types.CONNECTION_CLOSED and _SSE_TOO_LARGE_TEXT in text:
            self.stats.oversized += 1
            return UpstreamMessageTooLarge(name, f"upstream {name!r} sent an event {TOO_LARGE_TEXT}")
        if any(marker in text.lower() for marker in _SESSION_LOST):
            self._stop.set()
            return SessionLost(name, f"upstream {name!r} no longer knows the session")
        if code == types.CONNECTION_CLOSED:
            self._stop.set()
            said = f"upstream {name!r} closed the connection"
            detail, public = self._why()
            return ConnectionLost(
                name, said + (f": {detail}" if detail else ""), public=said + (f": {public}" if public else "")
            )
        if code == types.REQUEST_TIMEOUT:
            return UpstreamTimeout(name, f"upstream {name!r} did not answer within {self.spec.timeout:g}s")
        return UpstreamError(name, f"upstream {name!r} answered error {code}", upstream_code=code)

    # -- requests from the upstream (handshake era) ----------------------------------------------

    async def _on_elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        answer = await self._ask_single_caller("elicitation/create", params)
        return answer if isinstance(answer, types.ErrorData) else types.ElicitResult.model_validate(answer)

    async def _on_sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        answer = await self._ask_single_caller("sampling/createMessage", params)
        return answer if isinstance(answer, types.ErrorData) else types.CreateMessageResult.model_validate(answer)

    async def _ask_single_caller(self, method: str, params: BaseModel) -> dict[str, Any] | types.ErrorData:
        askers = [asker for asker in self._askers.values() if asker is not None]
        if len(askers) != 1 or len(self._askers) != 1:
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"{method} is not available here")
        request = {"method": method, "params": params.model_dump(by_alias=True, mode="json", exclude_none=True)}
        answer = (await askers[0].ask({"upstream": request}))["upstream"]
        if answer is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"the client cannot answer {method}")
        return answer


async def _answer_round(result: types.InputRequiredResult, asker: Asker | None) -> dict[str, Any] | None:
    """Responses for an input-required round, or ``None`` when some request cannot be answered."""
    if asker is None:
        return None
    requests = {
        key: request.model_dump(by_alias=True, mode="json", exclude_none=True)
        for key, request in (result.input_requests or {}).items()
    }
    answers = await asker.ask(requests)
    if any(answers.get(key) is None for key in requests):
        return None
    return {key: answers[key] for key in requests}


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _announces_tool_changes(client: Client) -> bool:
    tools = client.server_capabilities.tools
    return bool(tools is not None and tools.list_changed)


def _describe(exc: BaseException) -> str:
    """One line for a failure, looking inside exception groups (task groups wrap what went wrong)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _kind(exc: BaseException) -> str:
    """The type of what went wrong (inside exception groups), without its text."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return type(exc).__name__


def _file_name(server: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in server) or "server"
