"""Request bodies read once, in full, within a size limit, a deadline and JSON bounds (pure ASGI).

Every route that takes a body (``POST /mcp``, ``/messages/``, the explorer's ``{prefix}/mcp``)
reads it whole before acting, so ``BodyGuard`` reads it first: a body over ``max_bytes``
(declared or chunked) is answered 413, one not complete within ``timeout`` seconds 408, and
both close the connection (its unread rest cannot be parsed as the next request). A body
nesting JSON deeper or holding more keys and elements than ``json_bounds`` allow is answered
400 before anything parses it (``jsonbounds``), whatever its Content-Type: each of those routes
parses JSON (the SDK's ``/messages/`` without looking at the Content-Type). The app then gets
the body at once, and later ``receive()`` calls reach the client as before (so disconnects are
still seen).
"""

from __future__ import annotations

import json

import anyio
from mcp_types import INVALID_REQUEST
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from apcore_mcp._jsonbounds import JsonBounds

_BODILESS = frozenset({"GET", "HEAD", "OPTIONS"})
DRAIN_SECONDS = 2.0
"""Longest time spent reading the rest of a refused body before answering 413."""
JSONRPC_ENDPOINT = "/mcp"
"""How the paths of the Streamable HTTP endpoints end (``/mcp``, ``/toolsets/{name}/mcp``)."""


def replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` giving ``body`` as one complete message, then whatever ``receive`` gives."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def read_replayed(receive: Receive, limit: int | None = None) -> bytes | None:
    """The body ``BodyGuard`` has already read and bounded, as it replays it (or read to just past
    ``limit``, should this run without it); ``None``: the client left."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        if (limit is not None and len(body) > limit) or not message.get("more_body", False):
            return bytes(body)


async def send_json(
    send: Send, status: int, payload: object, *, headers: dict[str, str] | None = None, close: bool = False
) -> None:
    """A complete JSON response; ``close`` asks the server to drop the connection after it."""
    body = json.dumps(payload).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(name.lower().encode(), value.encode()) for name, value in (headers or {}).items()]
    if close:
        raw.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


async def refuse(send: Send, scope: Scope, status: int, message: str, *, code: int = INVALID_REQUEST) -> None:
    """A refusal in the words its route speaks: ``{"error": message}``, or on the Streamable HTTP
    endpoints a JSON-RPC error (``id`` null), which the SDK's client hands to its caller."""
    if scope["path"].endswith(JSONRPC_ENDPOINT):
        await send_json(send, status, {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})
    else:
        await send_json(send, status, {"error": message})


class BodyGuard:
    """Pure ASGI middleware: the whole body within ``max_bytes``, ``timeout`` and ``json_bounds``, or 413/408/400."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, timeout: float, json_bounds: JsonBounds | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.json_bounds = json_bounds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in _BODILESS:
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._too_large(receive, send)
            return
        body = await self._read(receive, send)
        if body is None:
            return
        excess = self.json_bounds.excess(body) if self.json_bounds is not None else None
        if excess is not None:
            await refuse(send, scope, 400, f"Request body {excess}")
            return
        await self.app(scope, replaying(body, receive), send)

    async def _read(self, receive: Receive, send: Send) -> bytes | None:
        """The body, or ``None`` once answered (413, 408) or the client went away."""
        body = bytearray()
        with anyio.move_on_after(self.timeout):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                body += message.get("body", b"")
                if len(body) > self.max_bytes:
                    await self._too_large(receive, send, more=message.get("more_body", False))
                    return None
                if not message.get("more_body", False):
                    return bytes(body)
        await send_json(send, 408, {"error": f"Request body not received within {self.timeout:g}s"}, close=True)
        return None

    async def _too_large(self, receive: Receive, send: Send, *, more: bool = True) -> None:
        """413, after reading (and dropping) up to another ``max_bytes`` of the body.

        Closing a socket with unread bytes makes the kernel reset the connection, and a client
        still sending its body then never sees the 413. Past that allowance it is reset anyway.
        """
        dropped = 0
        with anyio.move_on_after(min(self.timeout, DRAIN_SECONDS)):
            while more and dropped <= self.max_bytes:
                message = await receive()
                dropped += len(message.get("body", b""))
                more = message["type"] == "http.request" and message.get("more_body", False)
        await send_json(send, 413, {"error": f"Request body exceeds {self.max_bytes} bytes"}, close=True)


def _content_length(scope: Scope) -> int | None:
    for key, value in scope["headers"]:
        if key == b"content-length":
            return int(value) if value.isdigit() else None
    return None
