"""The legacy SSE transport's routes, for any low-level MCP ``Server``: ``GET /sse`` (the connection)
and ``POST /messages/`` (each message a client sends on it)."""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import parse_qsl
from uuid import UUID

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.sse import SseServerTransport
from mcp_types import INVALID_REQUEST, PARSE_ERROR
from pydantic import ValidationError
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from apcore_mcp._sdk import sse_session_open
from apcore_mcp.http.body import read_replayed, replaying, send_json

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
SSE_PATH = "/sse"
MESSAGES_PATH = "/messages/"
UNKNOWN_SESSION = -32001
"""The JSON-RPC code of a message for no open session (404), as the Streamable HTTP transport uses."""


class SseEndpoint:
    """One legacy SSE connection per request, served until the client goes away.

    An ASGI app rather than a Starlette endpoint function, so it gets the raw scope the
    transport needs.
    """

    def __init__(self, server: Server[Any], transport: SseServerTransport) -> None:
        self.server = server
        self.transport = transport
        self.connections = 0
        """Open SSE connections (each is one MCP session)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "GET":
            await PlainTextResponse("Method Not Allowed", 405, headers={"Allow": "GET"})(scope, receive, send)
            return
        async with self.transport.connect_sse(scope, receive, send) as (read_stream, write_stream):
            self.connections += 1
            try:
                await self.server.run(read_stream, write_stream, self.server.create_initialization_options())
            finally:
                self.connections -= 1


class MessagesEndpoint:
    """``POST /messages/``: the transport's message endpoint, with a client's malformed message refused first.

    The transport logs a body that is not one JSON-RPC message as an ERROR with its traceback
    (and a bad ``session_id`` as a WARNING), so any client could fill the log. A client's
    malformed input is its own mistake: as on ``/mcp``, it is answered 400 with a JSON-RPC error
    saying what is wrong, and logged as one DEBUG line. Good messages reach the transport as sent.
    """

    def __init__(self, transport: SseServerTransport, *, max_bytes: int) -> None:
        self.transport = transport
        self.max_bytes = max_bytes
        """Bound on the body read here (``BodyGuard`` has bounded it already in the app)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            await self.transport.handle_post_message(scope, receive, send)
            return
        body = await read_replayed(receive, self.max_bytes)
        if body is None:
            return
        if len(body) > self.max_bytes:
            await send_json(send, 413, {"error": f"Request body exceeds {self.max_bytes} bytes"}, close=True)
            return
        problem = session_problem(scope, self.transport) or message_problem(body)
        if problem is not None:
            code, message = problem
            logger.debug("Refused a message on %s: %s", MESSAGES_PATH, message)
            status = 404 if code == UNKNOWN_SESSION else 400
            await send_json(send, status, {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})
            return
        await self.transport.handle_post_message(scope, replaying(body, receive), send)


def session_problem(scope: Scope, transport: SseServerTransport) -> tuple[int, str] | None:
    """Why the request's ``session_id`` query parameter names no open session (``None``: it does).

    An unknown session (a stream that ended, a server that restarted) is answered 404 as the
    transport would, without the WARNING it logs for it.
    """
    values = [value for name, value in _query(scope) if name == "session_id"]
    if not values:
        return INVALID_REQUEST, "Missing session_id query parameter (the one the SSE stream's endpoint event gave)"
    try:
        session_id = UUID(hex=values[0])
    except ValueError:
        return INVALID_REQUEST, "Invalid session_id query parameter: not a session id"
    if not sse_session_open(transport, session_id):
        return UNKNOWN_SESSION, "Could not find session: its SSE stream is closed or never existed"
    return None


def _query(scope: Scope) -> list[tuple[str, str]]:
    return parse_qsl(scope.get("query_string", b"").decode("latin-1"))


def message_problem(body: bytes) -> tuple[int, str] | None:
    """The JSON-RPC error code and words for a body that is not one JSON-RPC message (``None``: it is).

    The words name what is wrong, never the body's content.
    """
    try:
        types.jsonrpc_message_adapter.validate_json(body, by_name=False)
    except ValidationError as err:
        errors = err.errors(include_url=False, include_input=False)
        if errors and errors[0]["type"] == "json_invalid":
            return PARSE_ERROR, f"Parse error: {errors[0].get('ctx', {}).get('error', errors[0]['msg'])}"
        return INVALID_REQUEST, f"Not a JSON-RPC message: {_closest(errors, body)}"
    return None


def _closest(errors: list[Any], body: bytes) -> str:
    """What is wrong for the kind of message (request, notification, response, error) the body meant to be."""
    kinds: dict[str, list[Any]] = {}
    for error in errors:
        kinds.setdefault(str(error["loc"][0]) if error["loc"] else "", []).append(error)
    meant = kinds.get(_meant(body)) or min(kinds.values(), key=len)
    if any(error["type"] == "model_type" for error in meant):
        return "the body must be one JSON object (a batch is not accepted)"
    return "; ".join(f"{'.'.join(map(str, error['loc'][1:])) or 'message'}: {error['msg']}" for error in meant[:3])


def _meant(body: bytes) -> str:
    """The kind of JSON-RPC message an object's keys say it is (``""``: they do not say)."""
    try:
        message = json.loads(body)  # JSON to the SDK's parser: only the JSON-RPC shape was wrong
    except (ValueError, RecursionError):  # the two parsers disagree at an edge: say nothing more
        return ""
    if not isinstance(message, dict):
        return ""
    if "method" in message:
        return "JSONRPCRequest" if "id" in message else "JSONRPCNotification"
    return "JSONRPCResponse" if "result" in message else "JSONRPCError" if "error" in message else ""


class SseAcrossWorkers:
    """``/sse`` and ``/messages/`` while several workers serve the port: refused, clearly.

    A legacy SSE session lives in the worker that holds its stream, and the client's posts
    reach whichever worker the kernel hands their connection to.
    """

    def __init__(self, workers: int) -> None:
        self.message = (
            f"The legacy SSE transport is off: {workers} worker processes serve this port and an SSE "
            f"session lives in one of them. Use Streamable HTTP at {MCP_PATH}."
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await PlainTextResponse(self.message, 501)(scope, receive, send)
