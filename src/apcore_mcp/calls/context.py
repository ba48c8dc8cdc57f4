"""The call context: one object per tool call, built at the edge that received it.

Every edge (the MCP handlers of each transport and protocol era, the explorer, a meta-tool)
builds a ``CallContext`` saying who calls (identity, the token's principal and scopes, the key
limits count it against), how to reach the client back (a ``Peer``) and how the call is
cancelled; the call router authorizes the module it will run against it, and
``CallContext.to_apcore()`` is the one place it becomes apcore's ``Context``. Module code
reaches the client only through the helpers here (``report_progress``, ``elicit``,
``sample``, ``list_roots``, ``request_inputs``, ``log_message``), which are no-ops outside MCP.

Asking the client works the same way in both protocol eras: in the handshake era the request
goes to the client over the call's own stream and the answer comes back; in the 2026-07-28
era the call ends with an *input-required* result, the client retries with the answers, and
the module runs again from the start, this time getting them. So a module asks before it has
side effects.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from apcore import Context, Identity
from apcore.cancel import CancelToken
from opentelemetry.context import Context as TraceContext
from opentelemetry.trace import Span

from apcore_mcp.calls.limits import LOCAL_PRINCIPAL
from apcore_mcp.calls.principal import Principal
from apcore_mcp.calls.spans import progress_event, trace_parent

MCP_PROGRESS_KEY: str = "_mcp_progress"
"""``context.data`` key of the progress callable ``(progress, total=None, message=None) -> Awaitable``."""
MCP_ELICIT_KEY: str = "_mcp_elicit"
"""``context.data`` key of the elicitation callable ``(message, requested_schema=None) -> Awaitable``."""
MCP_CALL_KEY: str = "_mcp_call"
"""``context.data`` key of the ``CallContext`` itself."""

Era = Literal["handshake", "modern", "none"]
InputKind = Literal["elicitation", "url_elicitation", "sampling", "roots"]
LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]

_KIND_OF_METHOD: dict[str, InputKind] = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


class InputRequired(BaseException):
    """Raised inside a 2026-07-28 call that needs answers it was not given.

    A ``BaseException`` on purpose: apcore's pipeline and middleware handle ``Exception``
    only, so this passes through them untouched (it is not a failure) and the MCP edge turns
    it into an ``input_required`` result carrying ``requests`` and the answers so far.
    """

    def __init__(self, requests: dict[str, dict[str, Any]], answers: dict[str, dict[str, Any]]) -> None:
        super().__init__(f"input required: {', '.join(sorted(requests))}")
        self.requests = requests
        self.answers = answers


class ClientCapabilityMissing(BaseException):
    """Raised when a call *requires* asking the client something it did not declare it can answer.

    The 2026-07-28 edge answers -32021 with ``requiredCapabilities``; the handshake edge an error result.
    """

    def __init__(self, kind: InputKind) -> None:
        super().__init__(f"the client did not declare the {kind} capability")
        self.kind = kind


class Peer(Protocol):
    """The client behind one call, as the edge that received the call can reach it."""

    @property
    def era(self) -> Era: ...  # pragma: no cover - a Protocol

    def can_ask(self, kind: InputKind) -> bool:
        """Whether the client declared the capability and the channel can carry the request."""
        ...  # pragma: no cover

    @property
    def back_channel(self) -> bool:
        """Whether a request to the client can travel at all (not on stateless HTTP in the handshake era)."""
        ...  # pragma: no cover

    async def progress(self, progress: float, total: float | None, message: str | None) -> None: ...

    async def ask(self, requests: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Answers (wire-form result dicts) for ``{key: {"method": ..., "params": ...}}``.

        Raises:
            InputRequired: 2026-07-28 era, when some answers are not there yet.
        """
        ...  # pragma: no cover

    async def log(self, level: LogLevel, data: object, logger_name: str | None) -> None: ...  # pragma: no cover

    request_state: str | None
    """2026-07-28 era: the sealed ``requestState`` this request carried back (answers of earlier rounds)."""

    async def spend_state(self, spend: Callable[[str], Awaitable[bool]]) -> bool:
        """2026-07-28 era: act on the answers of this request's ``requestState`` at most once (see
        ``ModernPeer.spend_state``); ``False`` where no state carries answers."""
        ...  # pragma: no cover


@dataclass(eq=False)
class CallContext:
    """Who calls, how to reach them, and how the call is cancelled."""

    identity: Identity | None = None
    peer: Peer | None = None
    principal: Principal | None = None
    """The authenticated caller, whose token's scopes decide which tools it may run (``None``: no token)."""
    caller: str = LOCAL_PRINCIPAL
    """Who the rate limit and the concurrency share count this call against (``limits.principal_key``)."""
    connection: str | None = None
    """An opaque token of the client connection (MCP session) the call came on; ``None`` where there is none."""
    cancel_token: CancelToken = field(default_factory=CancelToken)
    meta: Mapping[str, Any] = field(default_factory=dict)
    origin: str = "mcp"
    """Which edge built it: ``mcp``, ``explorer``, ``stdio``... (for logs and metrics)."""
    confirmed: bool = False
    """The caller confirmed this very call out of band (the explorer's dialog)."""
    release: Callable[[], Awaitable[None]] | None = None
    """Closes the call's response stream so the client reconnects and resumes (when the transport can)."""
    trace_context: TraceContext | None = None
    """The parent of the call's span where no span is current (an edge with no SDK span: its ``traceparent``)."""
    span: Span | None = None
    """The call's span while the router runs it traced (``apcore_mcp.calls.spans``): progress is recorded on it."""
    _last_progress: float | None = field(default=None, repr=False)
    _asked: int = field(default=0, repr=False)

    @property
    def era(self) -> Era:
        return self.peer.era if self.peer is not None else "none"

    @property
    def scopes(self) -> frozenset[str] | None:
        """The scopes the caller's token holds; ``None`` without a token (stdio, auth off): scopes do not apply."""
        return self.principal.scopes if self.principal is not None else None

    def to_apcore(self) -> Context:
        """apcore's ``Context`` for this call: identity, cancellation and the MCP helpers' keys."""
        return Context.create(
            identity=self.identity,
            trace_parent=trace_parent(),  # the call's span: apcore's trace id is the OpenTelemetry one
            cancel_token=self.cancel_token,
            data={
                MCP_PROGRESS_KEY: self.report_progress,
                MCP_ELICIT_KEY: self.elicit,
                MCP_CALL_KEY: self,
            },
        )

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send progress; a value not above the last one sent is dropped (progress only increases)."""
        if self.peer is None or self.cancel_token.is_cancelled:
            return
        if self._last_progress is not None and not progress > self._last_progress:
            return
        self._last_progress = progress
        if self.span is not None:
            progress_event(self.span, progress, total)
        await self.peer.progress(progress, total, message)

    def next_key(self, prefix: str) -> str:
        """A key for the next question of this run: the same sequence on every retry of the call."""
        self._asked += 1
        return f"{prefix}-{self._asked}"

    async def request_inputs(
        self, requests: dict[str, dict[str, Any]], *, required: bool = False
    ) -> dict[str, dict[str, Any] | None]:
        """Ask the client several things at once; an answer is ``None`` when it cannot be asked.

        Raises:
            ClientCapabilityMissing: ``required`` and a request is one the client cannot take.
        """
        if required:
            for request in requests.values():
                if not self._can_ask(request):
                    raise ClientCapabilityMissing(_KIND_OF_METHOD.get(str(request.get("method")), "elicitation"))
        if self.peer is None:
            return dict.fromkeys(requests)
        askable = {key: request for key, request in requests.items() if self._can_ask(request)}
        answers: dict[str, dict[str, Any] | None] = dict.fromkeys(requests)
        if askable:
            answers.update(await self.peer.ask(askable))
        return answers

    def _can_ask(self, request: dict[str, Any]) -> bool:
        kind = _KIND_OF_METHOD.get(str(request.get("method")))
        params = request.get("params")
        if kind == "elicitation" and isinstance(params, Mapping) and params.get("mode") == "url":
            kind = "url_elicitation"  # a client that declared forms only must not be sent a link
        return kind is not None and self.peer is not None and self.peer.can_ask(kind)

    async def elicit(
        self, message: str, requested_schema: dict[str, Any] | None = None, *, key: str | None = None
    ) -> dict[str, Any] | None:
        """The user's answer on accept; ``None`` on decline, cancel or when the client cannot be asked."""
        answer = await self.elicit_result(message, requested_schema, key=key)
        if answer is None or answer.get("action") != "accept":
            return None
        content = answer.get("content")
        return dict(content) if isinstance(content, Mapping) else {}

    async def elicit_result(
        self, message: str, requested_schema: dict[str, Any] | None = None, *, key: str | None = None
    ) -> dict[str, Any] | None:
        """The whole elicitation result (``action`` and ``content``), or ``None`` when it cannot be asked."""
        schema = requested_schema or {"type": "object", "properties": {}}
        request = {
            "method": "elicitation/create",
            "params": {"mode": "form", "message": message, "requestedSchema": schema},
        }
        key = key or self.next_key("elicit")
        return (await self.request_inputs({key: request}))[key]

    async def log(self, level: LogLevel, data: object, logger: str | None = None) -> None:
        if self.peer is not None and not self.cancel_token.is_cancelled:
            await self.peer.log(level, data, logger)


# -- helpers for module code: each takes apcore's Context and is a no-op outside MCP -----------


def call_context(context: object) -> CallContext | None:
    """The ``CallContext`` behind an apcore ``Context``, or ``None`` outside MCP."""
    data = getattr(context, "data", None)
    found = data.get(MCP_CALL_KEY) if isinstance(data, Mapping) else None
    return found if isinstance(found, CallContext) else None


async def report_progress(
    context: object, progress: float, total: float | None = None, message: str | None = None
) -> None:
    """Send ``notifications/progress`` for the current call (only increasing values reach the client)."""
    data = getattr(context, "data", None)
    sink = data.get(MCP_PROGRESS_KEY) if isinstance(data, Mapping) else None
    if callable(sink):
        await sink(progress, total, message)


async def elicit(
    context: object, message: str, requested_schema: dict[str, Any] | None = None, *, key: str | None = None
) -> dict[str, Any] | None:
    """Ask the user: the form content on accept; ``None`` on decline, cancel, an incapable client or outside MCP.

    ``key`` names the question in a 2026-07-28 input-required round (default: its order in the run).
    """
    call = call_context(context)
    if call is not None:
        return await call.elicit(message, requested_schema, key=key)
    data = getattr(context, "data", None)
    asker: Callable[..., Awaitable[Any]] | None = data.get(MCP_ELICIT_KEY) if isinstance(data, Mapping) else None
    return await asker(message, requested_schema) if callable(asker) else None


async def sample(
    context: object,
    messages: list[dict[str, Any]],
    *,
    max_tokens: int,
    key: str | None = None,
    required: bool = False,
    **params: object,
) -> dict[str, Any] | None:
    """Ask the client's model (``sampling/createMessage``): the result dict, or ``None`` if it cannot be asked.

    ``params`` are further wire fields (``systemPrompt``, ``temperature``, ``modelPreferences``...).
    With ``required``, a client without the sampling capability fails the call instead
    (2026-07-28: error -32021 naming the capability).
    """
    call = call_context(context)
    if call is None:
        return None
    request = {"method": "sampling/createMessage", "params": {"messages": messages, "maxTokens": max_tokens, **params}}
    key = key or call.next_key("sample")
    return (await call.request_inputs({key: request}, required=required))[key]


async def list_roots(context: object, *, key: str | None = None) -> list[dict[str, Any]] | None:
    """The client's roots (``roots/list``), or ``None`` if it cannot be asked."""
    call = call_context(context)
    if call is None:
        return None
    key = key or call.next_key("roots")
    answer = (await call.request_inputs({key: {"method": "roots/list", "params": {}}}))[key]
    return None if answer is None else list(answer.get("roots", []))


async def request_inputs(
    context: object, requests: dict[str, dict[str, Any]], *, required: bool = False
) -> dict[str, dict[str, Any] | None]:
    """Ask several things in one round: ``{key: {"method": ..., "params": ...}}`` -> ``{key: result or None}``."""
    call = call_context(context)
    if call is None:
        return dict.fromkeys(requests)
    return await call.request_inputs(requests, required=required)


async def release_stream(context: object) -> bool:
    """Let go of the client's response stream while the call goes on (SEP-1699 polling).

    The client reconnects (``GET /mcp`` with ``Last-Event-ID``) and receives what follows, the
    result included. For long calls behind proxies that cut idle connections. Returns whether
    the stream was released: only resumable Streamable HTTP streams of 2025-11-25 clients can be.
    """
    call = call_context(context)
    if call is None or call.release is None:
        return False
    await call.release()
    return True


async def log_message(context: object, level: LogLevel, data: object, logger: str | None = None) -> None:
    """Send ``notifications/message`` for the current call when the client asked for logs at that level."""
    call = call_context(context)
    if call is not None:
        await call.log(level, data, logger)
