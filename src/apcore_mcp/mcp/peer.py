"""Reaching the client behind one MCP request, in each protocol era (the ``Peer`` of ``calls/context.py``).

- ``HandshakePeer`` (2025-11-25 and earlier): progress, server-to-client requests
  (elicitation, sampling, roots) and log messages go on the request's own stream.
- ``ModernPeer`` (2026-07-28): the same progress and logs; a question is answered from the
  retried request's ``inputResponses`` (and the earlier rounds' answers carried in the sealed
  ``requestState``), else the call ends with an input-required result. Every state it mints
  is unique (a random nonce), so a state that granted an approval can be recorded as spent
  (``spend_state``; see ``apcore_mcp.calls.used_approvals``).
"""

from __future__ import annotations

import json
import logging
import secrets
import warnings
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import mcp.types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from apcore_mcp._sdk import connection_of
from apcore_mcp.calls.context import Era, InputKind, InputRequired, LogLevel

logger = logging.getLogger(__name__)

LOG_LEVELS: tuple[str, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
STATE_VERSION = 1

_REQUESTS: dict[str, tuple[type[types.ServerRequest], type[Any]]] = {
    "elicitation/create": (types.ElicitRequest, types.ElicitResult),
    "sampling/createMessage": (types.CreateMessageRequest, types.CreateMessageResult),
    "roots/list": (types.ListRootsRequest, types.ListRootsResult),
}
ANSWER_TYPES: dict[str, type[Any]] = {method: result for method, (_, result) in _REQUESTS.items()}
"""The result type of each client request a server may send (elicitation, sampling, roots)."""


class LogLevels:
    """The level each handshake-era connection asked for with ``logging/setLevel`` (none: no logs)."""

    def __init__(self) -> None:
        self._levels: weakref.WeakKeyDictionary[Connection, str] = weakref.WeakKeyDictionary()

    def set(self, connection: Connection | None, level: str) -> None:
        if connection is not None:
            self._levels[connection] = level

    def allows(self, connection: Connection | None, level: str) -> bool:
        wanted = self._levels.get(connection) if connection is not None else None
        return wanted is not None and LOG_LEVELS.index(level) >= LOG_LEVELS.index(wanted)


def is_modern(ctx: ServerRequestContext[Any, Any]) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _capable(ctx: ServerRequestContext[Any, Any], kind: InputKind) -> bool:
    capabilities = ctx.session.client_capabilities
    if capabilities is None:
        return False
    if kind == "elicitation":
        elicitation = capabilities.elicitation
        # A bare `elicitation: {}` (before modes existed) means form support; url-only does not.
        return elicitation is not None and (elicitation.form is not None or elicitation.url is None)
    if kind == "url_elicitation":
        return capabilities.elicitation is not None and capabilities.elicitation.url is not None
    if kind == "sampling":
        return capabilities.sampling is not None
    return capabilities.roots is not None


class HandshakePeer:
    """The client of a 2025-11-25-era request."""

    era: Era = "handshake"
    request_state: str | None = None

    def __init__(self, ctx: ServerRequestContext[Any, Any], log_levels: LogLevels, timeout: float) -> None:
        self._ctx = ctx
        self._log_levels = log_levels
        self._timeout = timeout

    async def spend_state(self, spend: Callable[[str], Awaitable[bool]]) -> bool:
        return False  # answers come back live on the session: no state carries them

    @property
    def back_channel(self) -> bool:
        # False in stateless Streamable HTTP: a request could go out on the POST's stream,
        # but the client's answer would arrive as a new POST that nothing waits for.
        return bool(self._ctx.session.can_send_request)

    def can_ask(self, kind: InputKind) -> bool:
        return self.back_channel and _capable(self._ctx, kind)

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        await self._ctx.session.report_progress(progress, total, message)

    async def ask(self, requests: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        answers: dict[str, dict[str, Any]] = {}
        for key, request in requests.items():
            answer = await self._send(request)
            if answer is not None:
                answers[key] = answer
        return answers

    async def _send(self, request: dict[str, Any]) -> dict[str, Any] | None:
        request_type, result_type = _REQUESTS[request["method"]]
        try:
            typed = request_type.model_validate(request)
            result = await self._ctx.session.send_request(
                typed,
                result_type,
                request_read_timeout_seconds=self._timeout,
                metadata=ServerMessageMetadata(related_request_id=self._ctx.request_id),
            )
        except (MCPError, ValidationError, TimeoutError) as exc:
            # No answer is never a "yes": the caller treats it as "could not ask".
            logger.info("%s to the client got no usable answer: %s", request["method"], exc)
            return None
        answer: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return answer

    async def log(self, level: LogLevel, data: object, logger_name: str | None) -> None:
        if self._log_levels.allows(connection_of(self._ctx), level):
            await send_log(self._ctx, level, data, logger_name)


class ModernPeer:
    """The client of a 2026-07-28 request: questions become input-required rounds."""

    era: Era = "modern"

    def __init__(
        self, ctx: ServerRequestContext[Any, Any], answers: dict[str, dict[str, Any]], request_state: str | None = None
    ) -> None:
        self._ctx = ctx
        self.answers = answers
        self.request_state = request_state
        """The verified (unsealed) ``requestState`` this request carried; ``None`` on a first round."""
        self._spent = False
        self._spending = anyio.Lock()

    @classmethod
    def for_request(
        cls, ctx: ServerRequestContext[Any, Any], request_state: str | None, input_responses: Mapping[str, Any] | None
    ) -> ModernPeer:
        """Answers so far: the (already verified) state's, then this retry's responses.

        Only answers to the questions the previous round asked count: responses the server
        never requested (or sent without the state that asked them) are ignored.
        """
        answers, asked = decode_state(request_state)
        responses = _responses(input_responses)
        answers.update({key: value for key, value in responses.items() if key in asked})
        return cls(ctx, answers, request_state)

    back_channel = True
    """Input-required rounds need no channel: the client retries with the answers."""

    def can_ask(self, kind: InputKind) -> bool:
        return _capable(self._ctx, kind)

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        await self._ctx.session.report_progress(progress, total, message)

    async def ask(self, requests: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        missing = {key: request for key, request in requests.items() if not _answers(self.answers.get(key), request)}
        if missing:
            raise InputRequired(missing, dict(self.answers))
        return {key: self.answers[key] for key in requests}

    async def spend_state(self, spend: Callable[[str], Awaitable[bool]]) -> bool:
        """Whether this request may act on its state's answers once more, spending the state at most once.

        ``spend(state)`` is awaited the first time (``True``: the state was not spent before); a
        spent state stays usable for the rest of this request (an approval nested in the approved
        call), never for another request. ``False`` without a state. Exceptions of ``spend``
        propagate and leave the state unspent.
        """
        async with self._spending:  # two approvals of one request at once spend the state once
            if not self._spent and self.request_state is not None:
                self._spent = await spend(self.request_state)
            return self._spent

    async def log(self, level: LogLevel, data: object, logger_name: str | None) -> None:
        # The SDK sends only what this request opted into with its log-level _meta key.
        await send_log(self._ctx, level, data, logger_name)


async def send_log(ctx: ServerRequestContext[Any, Any], level: LogLevel, data: object, logger_name: str | None) -> None:
    """``notifications/message`` on the request's own stream (logging is deprecated in 2026-07-28, still served)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await ctx.session.send_log_message(level, data, logger_name, related_request_id=ctx.request_id)


def _answers(answer: dict[str, Any] | None, request: dict[str, Any]) -> bool:
    """An answer counts only if it has the shape of the result of the request it answers."""
    if answer is None:
        return False
    try:
        ANSWER_TYPES[request["method"]].model_validate(answer)
    except ValidationError:
        return False
    return True


def _responses(input_responses: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    if not input_responses:
        return {}
    responses: dict[str, dict[str, Any]] = {}
    for key, value in input_responses.items():
        if hasattr(value, "model_dump"):
            responses[str(key)] = value.model_dump(by_alias=True, mode="json", exclude_none=True)
        elif isinstance(value, Mapping):
            responses[str(key)] = dict(value)
    return responses


def encode_state(answers: dict[str, dict[str, Any]], asked: list[str]) -> str:
    """The plaintext of a ``requestState`` (the SDK's boundary seals it on the way out).

    The nonce makes every state unique, so recording one as spent never spends another round
    that happens to carry the same answers and questions.
    """
    state = {"v": STATE_VERSION, "n": secrets.token_urlsafe(16), "answers": answers, "asked": asked}
    return json.dumps(state, separators=(",", ":"))


def decode_state(state: str | None) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """``(answers, keys asked)`` from a verified ``requestState``; anything unexpected counts as none."""
    if not state:
        return {}, set()
    try:
        data = json.loads(state)
    except ValueError:
        return {}, set()
    if not isinstance(data, dict) or data.get("v") != STATE_VERSION:
        return {}, set()
    answers, asked = data.get("answers"), data.get("asked")
    kept = {str(k): v for k, v in answers.items() if isinstance(v, dict)} if isinstance(answers, dict) else {}
    return kept, {str(key) for key in asked} if isinstance(asked, list) else set()
