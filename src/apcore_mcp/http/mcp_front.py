"""Pure ASGI in front of the SDK's ``/mcp`` app: what it gets wrong, answered before it sees them.

- A request whose ``id`` is not a string or an integer (an object, array, float, bool or
  null): the SDK's handshake-era path parses it as a notification and answers 202 with no
  reply. It gets a JSON-RPC ``-32600`` error (HTTP 400) here.
- A request with neither ``Mcp-Session-Id`` nor ``MCP-Protocol-Version``, other than
  ``initialize``, on a server with sessions (or whose body carries the 2026-07-28 envelope,
  ``_meta["io.modelcontextprotocol/protocolVersion"]``, on any server): the SDK takes it for a
  handshake-era request and answers "Missing session ID", the wrong problem for a 2026-07-28
  client. It gets a 400 saying the version header is missing, and that a handshake-era client
  initializes first (``-32020`` when the body is a 2026-07-28 one, as the SDK answers a version
  header that disagrees with the body; else ``-32600``, the SDK's code).
- ``GET`` with ``Last-Event-ID`` and no event store: the SDK sends no response at all (uvicorn
  then answers 500). Resuming is optional (the spec's MAY): the header is dropped and the
  client gets a fresh stream.
- A client that goes away while its call runs: the 2026-07-28 path in JSON mode and the
  handshake path never notice. Here the POST's disconnect is watched and the request is then
  cancelled, like a ``notifications/cancelled`` from its client. 2026-07-28: at once (closing
  the stream *is* cancelling; the handler runs in this request). Handshake era: a
  ``notifications/cancelled`` is delivered to the session, at once when the stream cannot be
  resumed (no event store, or JSON responses), else after ``resume_grace`` seconds unless the
  client came back for the stream with ``Last-Event-ID`` meanwhile (a broken connection is
  not a client that left): an event id its session's store can resume (``ResumeStore.stream_of``),
  not one it refuses.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging

import anyio
import pydantic_core
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import HEADER_MISMATCH, INVALID_REQUEST, PROTOCOL_VERSION_META_KEY
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from apcore_mcp.http.body import read_replayed, send_json
from apcore_mcp.http.direct import DirectPath
from apcore_mcp.http.events import ResumeStore
from apcore_mcp.http.metrics import REASON_SCOPE_KEY
from apcore_mcp.settings import Settings
from apcore_mcp.types import JSONValue

logger = logging.getLogger(__name__)

_SESSION = MCP_SESSION_ID_HEADER.lower().encode()
_VERSION = MCP_PROTOCOL_VERSION_HEADER.lower().encode()
_LAST_EVENT_ID = b"last-event-id"
_MISSING_VERSION = (
    "Missing MCP-Protocol-Version header: every 2026-07-28 request must carry it "
    "(a 2025-11-25 client sends initialize first, then its Mcp-Session-Id header)"
)
_KEPT_FOR_CANCEL = frozenset({b"host", b"origin", _SESSION, _VERSION, b"authorization", b"user-agent"})


def resume_grace_seconds(settings: Settings) -> float:
    """How long a handshake-era call outlives its broken stream: five reconnection delays, at least 1 s."""
    return max(1.0, 5 * settings.sse_retry_ms / 1000)


def valid_request_id(value: object) -> bool:
    """JSON-RPC ids MCP accepts: a string or an integer (a bool is not one)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class McpFront:
    """Wraps the SDK's Streamable HTTP ASGI app (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        resume_grace: float | None = None,
        events: ResumeStore | None = None,
        direct: DirectPath | None = None,
        *,
        sessions: bool = True,
    ) -> None:
        self.app = app
        self.sessions = sessions
        """False when the server is stateless: a handshake-era request then needs no session id."""
        self.direct = direct
        """Answers the one-JSON-reply 2026-07-28 requests itself (``http/direct.py``); None: all go to ``app``."""
        self.resume_grace = resume_grace
        self.events = events
        self._pending: dict[tuple[str, str], asyncio.Task[None]] = {}
        """Cancellations waiting for a resumption, by (session id, request stream)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "POST"):
            await self.app(scope, receive, send)
            return
        if scope["method"] == "GET":
            await self._get(scope, receive, send)
            return
        body = await read_replayed(receive)
        if body is None:
            return
        message = _decode(body)
        if isinstance(message, dict) and "id" in message and not valid_request_id(message["id"]):
            scope[REASON_SCOPE_KEY] = "bad_request"
            error = {"code": INVALID_REQUEST, "message": "Invalid request id: it must be a string or an integer"}
            await send_json(send, 400, {"jsonrpc": "2.0", "id": None, "error": error})
            return
        found = message.get("id") if isinstance(message, dict) and "method" in message else None
        request_id = found if isinstance(found, str | int) else None  # a valid id, as checked above
        code = self._unversioned(scope, message)
        if code is not None:
            scope[REASON_SCOPE_KEY] = "bad_request"
            error = {"code": code, "message": _MISSING_VERSION}
            await send_json(send, 400, {"jsonrpc": "2.0", "id": request_id, "error": error})
            return
        modern = _is_modern(scope)
        if modern and self.direct is not None and isinstance(message, dict) and self.direct.takes(scope, message):
            answer = functools.partial(self.direct.answer, message)
            await self._serve(scope, body, receive, send, request_id, modern, answer)
            return
        await self._serve(scope, body, receive, send, request_id, modern)

    def _unversioned(self, scope: Scope, message: JSONValue) -> int | None:
        """The error code for a request that names neither its session nor its version, else ``None``.

        Without either header only ``initialize`` can open a handshake-era session (or, stateless,
        any handshake-era request goes through); a body with the 2026-07-28 envelope is never one.
        """
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            return None  # a parse error, a response or a batch: the SDK's to answer
        if message["method"] == "initialize" or any(key in (_SESSION, _VERSION) for key, _ in scope["headers"]):
            return None
        if _has_modern_envelope(message):
            return HEADER_MISMATCH
        return INVALID_REQUEST if self.sessions else None

    async def _get(self, scope: Scope, receive: Receive, send: Send) -> None:
        last_event_id = header(scope, _LAST_EVENT_ID)
        if last_event_id is None:
            await self.app(scope, receive, send)
            return
        if self.resume_grace is None:
            scope = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k != _LAST_EVENT_ID]}
            await self.app(scope, receive, send)
            return
        session = header(scope, _SESSION)
        stream = self.events.stream_of(session, last_event_id) if self.events is not None and session else None
        waiting = self._pending.pop((session, stream), None) if session and stream else None
        if waiting is not None:
            waiting.cancel()  # the client came back for the stream: its call goes on
        # A resumed request stream that breaks again is watched like the POST that started it.
        await self._serve(scope, None, receive, send, stream if waiting is not None else None, _is_modern(scope))

    async def _serve(
        self,
        scope: Scope,
        body: bytes | None,
        receive: Receive,
        send: Send,
        request_id: str | int | None,
        modern: bool,
        app: ASGIApp | None = None,
    ) -> None:
        """Run ``app`` (the SDK's unless given); if the client leaves before the response ends, cancel its request.

        A plain asyncio task watches the client (an anyio task group per request costs ~100 us).
        """
        left = asyncio.Event()
        complete = False
        replayed = False

        async def inner_receive() -> Message:
            nonlocal replayed
            if not replayed:  # a GET's (empty) body first, as the server would give it
                replayed = True
                return {"type": "http.request", "body": body or b"", "more_body": False}
            await left.wait()
            return {"type": "http.disconnect"}

        async def watch_send(message: Message) -> None:
            nonlocal complete
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                complete = True
            await send(message)

        with anyio.CancelScope() as serving:

            async def watch_client() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                left.set()
                if complete or request_id is None:
                    return
                if modern:
                    serving.cancel()  # the handler runs in this request
                elif self.resume_grace is None:
                    await self._cancel_in_session(scope, request_id)
                else:
                    self._cancel_unless_resumed(scope, request_id)

            watcher = asyncio.get_running_loop().create_task(watch_client())
            try:
                await (app or self.app)(scope, inner_receive, watch_send)
            finally:
                if left.is_set() and not complete:
                    await asyncio.shield(watcher)  # let the cancellation reach the session
                else:
                    watcher.cancel()

    def _cancel_unless_resumed(self, scope: Scope, request_id: str | int) -> None:
        session = header(scope, _SESSION)
        if session is None:
            return
        key = (session, str(request_id))
        grace = self.resume_grace or 0.0

        async def later() -> None:
            await asyncio.sleep(grace)
            self._pending.pop(key, None)
            await self._cancel_in_session(scope, request_id)

        self._pending[key] = asyncio.get_running_loop().create_task(later())

    async def _cancel_in_session(self, scope: Scope, request_id: str | int) -> None:
        """Deliver ``notifications/cancelled`` for ``request_id`` to the request's session, as its client would."""
        if header(scope, _SESSION) is None:
            return
        notification = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": "The client disconnected"},
        }
        body = json.dumps(notification).encode()
        headers = [(key, value) for key, value in scope["headers"] if key in _KEPT_FOR_CANCEL]
        headers += [
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            (b"content-length", str(len(body)).encode()),
        ]
        sent = False

        async def receive() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return {"type": "http.disconnect"}

        async def discard(_message: Message) -> None:
            return None

        logger.info("Client disconnected during request %r: cancelling it", request_id)
        with anyio.CancelScope(shield=True):
            await self.app({**scope, "headers": headers}, receive, discard)


def _decode(body: bytes) -> JSONValue:
    try:
        message: JSONValue = pydantic_core.from_json(body)  # the SDK's parser: about twice as fast as json.loads
    except ValueError:
        return None  # the SDK answers its own parse error
    return message


def _has_modern_envelope(message: dict[str, JSONValue]) -> bool:
    """Whether the body's ``params._meta`` names a protocol version, as only a 2026-07-28 body does."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of header ``name`` (lower-case bytes), or ``None``."""
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _is_modern(scope: Scope) -> bool:
    """The SDK's routing rule: a version header naming no handshake-era revision goes the 2026-07-28 way."""
    version = header(scope, _VERSION)
    return version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS
