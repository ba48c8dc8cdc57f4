"""Pure ASGI in front of the SDK's ``/mcp`` app: what it gets wrong, answered before it sees them.

- A request whose ``id`` is not a string or an integer (an object, array, float, bool or
  null): the SDK's handshake-era path parses it as a notification and answers 202 with no
  reply. It gets a JSON-RPC ``-32600`` error (HTTP 400) here.
- ``GET`` with ``Last-Event-ID``: without an event store the SDK sends no response at all
  (uvicorn then answers 500). Resuming is optional (the spec's MAY): the header is dropped
  and the client gets a fresh stream.
- A client that goes away while its call runs: the 2026-07-28 path in JSON mode and the
  handshake path never notice. Here the POST's disconnect is watched; the request is then
  cancelled, like a ``notifications/cancelled`` from the client (handshake era: one is
  delivered to the session; 2026-07-28: the handler, which runs in this request, is
  cancelled). No event store is configured, so a lost stream can never be resumed and the
  result could never be delivered.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import anyio
import pydantic_core
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import INVALID_REQUEST
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from apcore_mcp.http.body import send_json
from apcore_mcp.http.metrics import REASON_SCOPE_KEY

logger = logging.getLogger(__name__)

_SESSION = MCP_SESSION_ID_HEADER.lower().encode()
_VERSION = MCP_PROTOCOL_VERSION_HEADER.lower().encode()
_LAST_EVENT_ID = b"last-event-id"
_KEPT_FOR_CANCEL = frozenset({b"host", b"origin", _SESSION, _VERSION, b"authorization", b"user-agent"})


def valid_request_id(value: Any) -> bool:
    """JSON-RPC ids MCP accepts: a string or an integer (a bool is not one)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class McpFront:
    """Wraps the SDK's Streamable HTTP ASGI app (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "POST"):
            await self.app(scope, receive, send)
            return
        if scope["method"] == "GET":
            if any(key == _LAST_EVENT_ID for key, _ in scope["headers"]):
                scope = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k != _LAST_EVENT_ID]}
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive)
        if body is None:
            return
        message = _decode(body)
        if isinstance(message, dict) and "id" in message and not valid_request_id(message["id"]):
            scope[REASON_SCOPE_KEY] = "bad_request"
            error = {"code": INVALID_REQUEST, "message": "Invalid request id: it must be a string or an integer"}
            await send_json(send, 400, {"jsonrpc": "2.0", "id": None, "error": error})
            return
        request_id = message.get("id") if isinstance(message, dict) and "method" in message else None
        await self._serve(scope, body, receive, send, request_id)

    async def _serve(self, scope: Scope, body: bytes, receive: Receive, send: Send, request_id: Any) -> None:
        """Run the SDK app; if the client leaves before the response ends, cancel its request.

        A plain asyncio task watches the client (an anyio task group per request costs ~100 us).
        """
        left = asyncio.Event()
        complete = False
        replayed = False

        async def inner_receive() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            await left.wait()
            return {"type": "http.disconnect"}

        async def watch_send(message: Message) -> None:
            nonlocal complete
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                complete = True
            await send(message)

        modern = _is_modern(scope)
        with anyio.CancelScope() as serving:

            async def watch_client() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                left.set()
                if complete or request_id is None:
                    return
                if modern:
                    serving.cancel()  # the handler runs in this request
                else:
                    await self._cancel_in_session(scope, request_id)

            watcher = asyncio.get_running_loop().create_task(watch_client())
            try:
                await self.app(scope, inner_receive, watch_send)
            finally:
                if left.is_set() and not complete:
                    await asyncio.shield(watcher)  # let the cancellation reach the session
                else:
                    watcher.cancel()

    async def _cancel_in_session(self, scope: Scope, request_id: str | int) -> None:
        """Deliver ``notifications/cancelled`` for ``request_id`` to the request's session, as its client would."""
        if not any(key == _SESSION for key, _ in scope["headers"]):
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


async def _read_body(receive: Receive) -> bytes | None:
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        if not message.get("more_body", False):
            return bytes(body)


def _decode(body: bytes) -> Any:
    try:
        return pydantic_core.from_json(body)  # the SDK's parser: about twice as fast as json.loads
    except ValueError:
        return None  # the SDK answers its own parse error


def _is_modern(scope: Scope) -> bool:
    """The SDK's routing rule: a version header naming no handshake-era revision goes the 2026-07-28 way."""
    for key, value in scope["headers"]:
        if key == _VERSION:
            return value.decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS
    return False
