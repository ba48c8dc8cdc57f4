"""The direct path: a 2026-07-28 request whose answer is one JSON reply, served without the SDK's per-request streams.

For every 2026-07-28 POST the SDK's Streamable HTTP app (SSE mode, our default) opens a
memory stream pair, a task group with two tasks and a 15 s cancel scope, re-reads and re-parses
the body, and only then runs its kernel, ``serve_one``. A request that cannot stream (no
progress token, no log level, a method that answers once) needs none of that. ``DirectPath``
answers it with the same kernel and the same checks, in the SDK's order:

1. Content-Type (and, again, Host and Origin): the SDK's own ``TransportSecurityMiddleware``.
2. Accept: JSON, and SSE too unless the endpoint answers JSON only (406).
3. A routing header sent twice (400 ``-32020``).
4. Headers against body and the ``_meta`` envelope: the SDK's ``classify_inbound_request``.
5. ``Mcp-Param-*`` headers against the called tool's schema (fails open, like the SDK).
6. ``serve_one`` with a born-ready ``Connection`` and a dispatch context without back channel:
   per-version validation, our server middleware, cache hints, ``resultType``, the server stamp.
7. The reply as the SDK writes it: the same JSON bytes, status table and headers.

A handler still silent after the SDK's ping interval commits ``text/event-stream`` with pings,
then the result as an event, as the SDK does in SSE mode; a notification a handler sends anyway
is delivered the same way. What ``takes`` refuses goes to the SDK untouched (``McpFront``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

import anyio
from mcp.server.connection import Connection
from mcp.server.runner import serve_one
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_PARAM_HEADER_PREFIX,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
    x_mcp_header_map,
)
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import (
    HEADER_MISMATCH,
    LOG_LEVEL_META_KEY,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCResponse,
)
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from apcore_mcp._sdk import (
    SSE_HEADERS,
    SSE_PING_INTERVAL,
    error_data_of,
    manager_lifespan_state,
    manager_started,
)
from apcore_mcp.types import JSONValue

logger = logging.getLogger(__name__)

DIRECT_METHODS: Final = frozenset(
    {
        "server/discover",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
    }
)
"""Methods that answer with one result. ``subscriptions/listen`` is a stream; ``tasks/*`` are
polled, off the hot path; anything else (``ping``, ``initialize``, unknown methods: ``-32601`` at
2026-07-28) is the SDK's to answer."""

_PARAM_PREFIX = MCP_PARAM_HEADER_PREFIX.lower()
_PARAM_PREFIX_BYTES = _PARAM_PREFIX.encode()
_JSON_HEADERS = (b"content-type", b"application/json")
_PING = b": ping\r\n\r\n"
_DUMP: Final[dict[str, Any]] = {"mode": "json", "by_alias": True, "exclude_none": True}
"""How the SDK dumps a JSON-RPC message before ``json.dumps``."""
_SCHEMA_MEMO_MAX = 4096


class DirectPath:
    """Answers the one-JSON-reply 2026-07-28 requests of one ``/mcp`` endpoint (see the module doc).

    Built once per endpoint, from the endpoint's session manager: its server, its security
    settings, its JSON-or-SSE choice and (once running) its lifespan state.
    """

    def __init__(self, manager: StreamableHTTPSessionManager, on_answer: Callable[[str], None] | None = None) -> None:
        self.manager = manager
        self.on_answer = on_answer
        """Told each method it answers (the app's metrics)."""
        self.server = manager.app
        self.json_response = manager.json_response
        self.security = TransportSecurityMiddleware(manager.security_settings)
        self._plain_schemas: dict[int, tuple[object, bool]] = {}
        """Per input schema (by identity): whether no property carries ``x-mcp-header``."""

    def takes(self, scope: Scope, message: JSONValue) -> bool:
        """Whether this request is one to answer here; anything else is the SDK's, untouched.

        ``message`` is the decoded body of a request the caller routed as 2026-07-28 (by its
        version header, as the SDK's manager does), whose ``id`` it has already checked.
        """
        if not isinstance(message, dict) or "id" not in message or message.get("jsonrpc") != "2.0":
            return False
        method = message.get("method")
        params = message.get("params")
        if method not in DIRECT_METHODS or not (params is None or isinstance(params, dict)):
            return False
        if not manager_started(self.manager):
            return False
        if params is None:
            return True
        if progress_token_from_params(params) is not None:
            return False  # progress notifications stream
        meta = params.get("_meta")
        if isinstance(meta, dict) and LOG_LEVEL_META_KEY in meta:
            return False  # log notifications stream
        if method == "tools/call" and self.server.get_tool_input_schema is None:
            # Lists filtered per caller: the SDK lists the tools as this caller to find the schema.
            return not params.get("arguments") and not _has_param_header(scope)
        return True

    async def answer(self, message: dict[str, Any], scope: Scope, receive: Receive, send: Send) -> None:
        """Answer ``message`` (accepted by ``takes``) as the SDK would, steps as in the module doc."""
        if self.on_answer is not None:
            self.on_answer(message["method"])
        request = Request(scope, receive)
        refused = await self.security.validate_request(request, is_post=True)
        if refused is not None:
            await refused(scope, receive, send)
            return
        has_json, has_sse = check_accept_headers(request)
        if not has_json or (not self.json_response and not has_sse):
            await Response(status_code=406)(scope, receive, send)
            return
        request_id = message["id"]
        duplicated = find_duplicated_routing_header(request.headers.items())
        if duplicated is not None:
            message_text = f"{duplicated} header appears more than once"
            await _reject(send, request_id, InboundLadderRejection(code=HEADER_MISMATCH, message=message_text))
            return
        verdict = classify_inbound_request(message, headers=dict(request.headers))
        if isinstance(verdict, InboundLadderRejection):
            await _reject(send, request_id, verdict)
            return
        method: str = message["method"]
        params: dict[str, Any] | None = message.get("params")
        if method == "tools/call" and params is not None:
            rejection = self._param_rejection(params, request)
            if rejection is not None:
                await _reject(send, request_id, rejection)
                return
        connection = Connection.from_envelope(
            verdict.protocol_version, verdict.client_info, verdict.client_capabilities
        )
        reply = _Reply(send, request_id, streams=not self.json_response)
        dispatch = _Dispatch(
            transport=TransportContext(kind="streamable-http", can_send_request=False, headers=request.headers),
            request_id=request_id,
            message_metadata=ServerMessageMetadata(request_context=request),
            reply=reply,
        )
        try:
            result = await serve_one(
                self.server,
                dispatch,
                method,
                params,
                connection=connection,
                lifespan_state=manager_lifespan_state(self.manager),
            )
        except Exception as exc:  # noqa: BLE001 - the SDK's boundary: every handler error becomes a reply
            await reply.error(error_data_of(exc))
            return
        except BaseException:  # cancelled (the client left): no reply, and no ping after it
            reply.cancel_pings()
            raise
        await reply.result(result)

    def _param_rejection(self, params: dict[str, Any], request: Request) -> InboundLadderRejection | None:
        """``Mcp-Param-*`` headers against the tool's schema, skipped as the SDK skips them."""
        lookup = self.server.get_tool_input_schema
        name = params.get("name")
        arguments = params.get("arguments")
        if lookup is None or not isinstance(name, str) or not (arguments is None or isinstance(arguments, Mapping)):
            return None
        if not arguments and not any(header.startswith(_PARAM_PREFIX) for header in request.headers):
            return None
        try:
            schema = lookup(name)
        except Exception:
            logger.exception("Mcp-Param header validation skipped: get_tool_input_schema raised")
            return None
        if schema is None or self._plain(schema):
            return None  # the SDK checks declared headers only: none declared, none to disagree
        return validate_mcp_param_headers(schema, arguments or {}, request.headers)

    def _plain(self, schema: object) -> bool:
        """Whether ``schema`` declares no ``x-mcp-header`` (walked once per schema object)."""
        memo = self._plain_schemas.get(id(schema))
        if memo is not None and memo[0] is schema:
            return memo[1]
        if len(self._plain_schemas) >= _SCHEMA_MEMO_MAX:
            self._plain_schemas.clear()  # schemas of catalogs long replaced
        plain = not x_mcp_header_map(schema)
        self._plain_schemas[id(schema)] = (schema, plain)
        return plain


class _Reply:
    """One request's response: JSON, or ``text/event-stream`` once a ping or a notification commits it.

    In SSE mode a timer commits the stream after the SDK's ping interval, as the SDK's own
    SSE branch does for a handler still running then; in JSON mode nothing but the reply is sent.
    """

    def __init__(self, send: Send, request_id: str | int, *, streams: bool) -> None:
        self._send = send
        self._id = request_id
        self._streams = streams
        self._lock = asyncio.Lock()
        self._committed = False
        self._pinger: asyncio.Task[None] | None = None
        self._timer = asyncio.get_running_loop().call_later(SSE_PING_INTERVAL, self._start_pings) if streams else None

    async def result(self, result: dict[str, Any]) -> None:
        self.cancel_pings()
        # Through the model, as the SDK writes it: JSON mode also turns what a short-circuiting
        # middleware may return unconverted (a datetime, NaN) into JSON the way the SDK does.
        reply = JSONRPCResponse(jsonrpc="2.0", id=self._id, result=result)
        await self._finish(200, reply.model_dump(**_DUMP))

    async def error(self, error: ErrorData) -> None:
        self.cancel_pings()
        await self._finish(*_error_reply(self._id, error))

    async def notify(self, method: str, params: Mapping[str, Any] | None) -> None:
        """A request-scoped notification: commits the event stream (SSE mode) or is dropped (JSON mode)."""
        if not self._streams:
            logger.debug("dropped %s: this endpoint answers JSON only", method)
            return
        note = JSONRPCNotification(jsonrpc="2.0", method=method, params=dict(params) if params is not None else None)
        async with self._lock:
            await self._commit()
            await self._send(
                {"type": "http.response.body", "body": _event(note.model_dump(**_DUMP)), "more_body": True}
            )

    def cancel_pings(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._pinger is not None:
            self._pinger.cancel()

    async def _finish(self, status: int, body: dict[str, Any]) -> None:
        async with self._lock:
            if self._committed:  # after a commit, errors travel in the stream with HTTP 200
                await self._send({"type": "http.response.body", "body": _event(body), "more_body": False})
                return
            await _send_json(self._send, status, body)

    async def _commit(self) -> None:
        if not self._committed:
            self._committed = True
            await self._send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})

    def _start_pings(self) -> None:
        self._pinger = asyncio.get_running_loop().create_task(self._ping())

    async def _ping(self) -> None:
        while True:
            async with self._lock:
                await self._commit()
                await self._send({"type": "http.response.body", "body": _PING, "more_body": True})
            await asyncio.sleep(SSE_PING_INTERVAL)


class _Dispatch:
    """The ``DispatchContext`` of one direct request: no back channel, notifications to ``_Reply``."""

    can_send_request = False

    def __init__(
        self,
        *,
        transport: TransportContext,
        request_id: str | int,
        message_metadata: ServerMessageMetadata,
        reply: _Reply,
    ) -> None:
        self.transport = transport
        self.request_id = request_id
        self.message_metadata = message_metadata
        self._reply = reply
        self._cancel: anyio.Event | None = None

    @property
    def cancel_requested(self) -> anyio.Event:
        """Never set: a client cancels a 2026-07-28 call by leaving, and ``McpFront`` cancels it then."""
        if self._cancel is None:
            self._cancel = anyio.Event()
        return self._cancel

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None) -> None:
        await self._reply.notify(method, params)

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        return None  # taken only without a progress token


async def _reject(send: Send, request_id: str | int, rejection: InboundLadderRejection) -> None:
    """A transport-ladder rejection: JSON with the table's status, before anything could stream."""
    error = ErrorData(code=rejection.code, message=rejection.message, data=rejection.data)
    await _send_json(send, *_error_reply(request_id, error))


def _error_reply(request_id: str | int, error: ErrorData) -> tuple[int, dict[str, Any]]:
    """The HTTP status (the SDK's table) and body of a JSON-RPC error reply."""
    body = JSONRPCError(jsonrpc="2.0", id=request_id, error=error).model_dump(**_DUMP)
    return ERROR_CODE_HTTP_STATUS.get(error.code, 200), body


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    """One JSON response, encoded and headed as the SDK's Starlette ``Response`` would be."""
    data = json.dumps(body, separators=(",", ":")).encode()
    headers = [(b"content-length", str(len(data)).encode()), _JSON_HEADERS]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def _event(body: dict[str, Any]) -> bytes:
    return b"event: message\r\ndata: " + json.dumps(body, separators=(",", ":")).encode() + b"\r\n\r\n"


def _has_param_header(scope: Scope) -> bool:
    return any(key.startswith(_PARAM_PREFIX_BYTES) for key, _ in scope["headers"])
