"""uvicorn's HTTP protocols with a deadline and a size limit on request headers.

uvicorn limits the idle time between requests (``timeout_keep_alive``) but not the time a
client takes to finish sending headers: a client trickling one header byte every few seconds
holds its socket (and a file descriptor) forever. This protocol closes a connection whose
request headers are not complete ``header_timeout`` seconds after the connection opened or
the next request's first byte came. Request bodies are timed by ``http.body.BodyGuard``.

Between requests a kept-alive connection waits at least ``KEEP_ALIVE_SECONDS`` (uvicorn's
``timeout_keep_alive``, 5 s by default, is raised to it). A server must not close an idle
connection while its clients still reuse it: a request sent as the close is under way is
reset (``ReadError``) and, being a POST, is not retried, so a ``tools/call`` is lost. httpx
(the MCP SDK's client) reuses a connection idle up to 5 s, exactly uvicorn's default.

Nor does uvicorn bound the size of the headers: h11's ``max_incomplete_event_size`` is checked
only while a head is incomplete, so a 70 KB head arriving in one read passes (and a trickled
one is answered 400). Here a request head (request line and header lines) over
``max_header_bytes`` is answered 431 before h11 parses it, whole or trickled.

``TimedHeads`` holds both; ``TimedH11Protocol`` (here) and ``TimedHttpToolsProtocol``
(``httptools`` beside it: httptools is an extra) put it on uvicorn's h11 and httptools protocols.
Our own server picks one by the ``http_parser`` setting; with the uvicorn command line pass
``--http apcore_mcp.run.protocol:TimedH11Protocol`` (or the httptools one). The deadline and the
size come from the app's ``header_timeout`` and ``max_header_bytes`` settings, which the app's lifespan puts in the
state uvicorn shares with its protocols under the keys of ``http.protocol_state`` (the ``DEFAULT_...``
values before the app has started).
The app checks the size of the headers it is given too (``http.guard``), for plain uvicorn.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import logging
import re
import socket
from collections.abc import Callable
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from apcore_mcp.http.protocol_state import HEADER_TIMEOUT_STATE, MAX_HEADER_BYTES_STATE, REJECT_STATE

logger = logging.getLogger(__name__)

DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_MAX_HEADER_BYTES = 16 * 1024
FIRST_REQUEST_GRACE_SECONDS = 0.5
"""At shutdown, how long a connection that has not yet brought a request gets to bring it."""
_TIMEOUT_RESPONSE = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
REFUSED_HEAD_DRAIN_SECONDS = 1.0
"""How long the rest of a refused head is read (and dropped) before the connection closes."""
_HEAD_END = re.compile(rb"\n\r?\n")  # h11's: the empty line ending a request head
KEEP_ALIVE_SECONDS = 20
"""Least time an idle kept-alive connection stays open: longer than the common clients' pools keep
one for reuse (httpx 5 s, Node's undici 4 s, aiohttp 15 s)."""


class TimedHeads(asyncio.Protocol):
    """The header deadline, the head size bound and the gentle shutdown, for a uvicorn HTTP protocol.

    Mixed in before uvicorn's protocol class (``TimedH11Protocol``, ``TimedHttpToolsProtocol``),
    which supplies the attributes below; each subclass says when its parser waits for a head
    (``_awaiting_head``) and whether no response has begun (``_may_answer``), and arms the
    deadline again when a response ends with no further request parsed.
    """

    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    client: tuple[str, int] | None
    app_state: dict[str, Any]
    cycle: Any  # uvicorn's RequestResponseCycle of each parser, None before the first request
    timeout_keep_alive: int  # uvicorn's idle timer between requests, set from its config

    _header_timer: asyncio.TimerHandle | None = None
    _had_request = False
    _close_after_request = False
    _head_bytes = 0
    """Bytes received since this connection began waiting for a request head."""
    _head_tail = b""
    """The last bytes received then: a head's end may straddle two reads."""
    _refused = False

    def _awaiting_head(self) -> bool:
        raise NotImplementedError

    def _may_answer(self) -> bool:
        raise NotImplementedError

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        no_delay(transport)
        # Read by uvicorn when a response ends; an operator's longer one stands.
        self.timeout_keep_alive = max(self.timeout_keep_alive, KEEP_ALIVE_SECONDS)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # the rest of a refused head, dropped until the client or the drain timer closes
        if self._header_timer is None and self._awaiting_head():
            self._arm()  # the next request began on a kept-alive connection: its head is timed from here
        if self._awaiting_head() and self._head_too_large(data):
            self._refuse_head()
            return
        before = self.cycle
        super().data_received(data)
        if self.cycle is not before:  # a request's headers were parsed
            self._disarm()
            self._head_bytes, self._head_tail = 0, b""
            self._had_request = True
            if self._close_after_request and self.cycle is not None:
                self.cycle.keep_alive = False

    def _head_too_large(self, data: bytes) -> bool:
        """Whether the request head that ``data`` begins or continues goes past the limit (cheap below it)."""
        limit = self._max_header_bytes()
        self._head_bytes += len(data)
        if self._head_bytes <= limit:
            self._head_tail = (self._head_tail + data[-2:])[-2:]
            return False
        window = self._head_tail + data
        start = self._head_bytes - len(window)  # where ``window`` begins in the head
        end = _HEAD_END.search(window)
        # The head: its request line and header lines, each with its line ending.
        return end is None or start + end.start() + 1 > limit

    def _refuse_head(self) -> None:
        """431, then the rest read and dropped a little while before closing.

        Closing at once, with the client still sending, would reset the connection, and the
        client might never see the answer.
        """
        self._refused = True
        self._disarm()
        limit = self._max_header_bytes()
        logger.info("Refusing a request from %s: its headers exceed %d bytes", _address(self.client), limit)
        reject: Callable[[str], None] | Any = self._state(REJECT_STATE)
        if callable(reject):
            reject("headers_too_large")
        self.transport.write(_refusal(431, "Request Header Fields Too Large", f"Request headers exceed {limit} bytes"))
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self.loop.call_later(REFUSED_HEAD_DRAIN_SECONDS, self.transport.close)
        else:
            self.transport.close()

    def _max_header_bytes(self) -> int:
        limit = self._state(MAX_HEADER_BYTES_STATE)
        return limit if isinstance(limit, int) and limit > 0 else DEFAULT_MAX_HEADER_BYTES

    def _shutdown_gently(self) -> bool:
        """Graceful shutdown; a connection that has not brought its first request yet gets to.

        Such a connection was accepted moments ago, and a proxy has most likely written a request
        into it already: closing it unanswered fails that request, which the proxy will not resend
        elsewhere if it is a POST (``tools/call``). It is answered, then closed, if its request
        begins within ``FIRST_REQUEST_GRACE_SECONDS``; otherwise closed then, quietly.
        Whether that was so (else the caller shuts down as uvicorn does: idle connections at once).
        """
        if self.cycle is None and not self._had_request and not self.transport.is_closing():
            if not self._close_after_request:  # not asked already (uvicorn's own shutdown after ours)
                self._close_after_request = True
                self.loop.call_later(FIRST_REQUEST_GRACE_SECONDS, self._close_if_no_request)
            return True
        return False

    def _close_if_no_request(self) -> None:
        # Quietly: a connection opened ahead of need (a browser's preconnect) is not a slow client.
        if self.cycle is None and not self.transport.is_closing():
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        seconds = self._state(HEADER_TIMEOUT_STATE)
        delay = seconds if isinstance(seconds, int | float) and seconds > 0 else DEFAULT_HEADER_TIMEOUT
        self._header_timer = self.loop.call_later(delay, self._headers_too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.transport.is_closing():
            return
        logger.info("Closing a connection from %s: request headers not received in time", _address(self.client))
        reject: Callable[[str], None] | Any = self._state(REJECT_STATE)
        if callable(reject):
            reject("header_timeout")
        if self._may_answer():
            self.transport.write(_TIMEOUT_RESPONSE)
        self.transport.close()

    def _state(self, key: str) -> Any:
        state = self.app_state if isinstance(self.app_state, dict) else {}
        return state.get(key)


class TimedH11Protocol(TimedHeads, H11Protocol):
    """``H11Protocol`` that closes connections whose request headers arrive too slowly."""

    def _awaiting_head(self) -> bool:
        return self.conn.their_state is h11.IDLE

    def _may_answer(self) -> bool:
        return self.conn.our_state is h11.IDLE

    def on_response_complete(self) -> None:
        before = self.cycle
        super().on_response_complete()
        if self.cycle is before and self.conn.trailing_data[0] and not self.transport.is_closing():
            self._arm()  # the next request's head has begun (pipelined): it is timed already

    def shutdown(self) -> None:
        if not self._shutdown_gently():
            super().shutdown()


def no_delay(transport: asyncio.BaseTransport) -> None:
    """Send each write at once (``TCP_NODELAY``), whatever made the listening socket.

    asyncio sets it only on connections of a socket created as ``IPPROTO_TCP``; uvicorn's
    ``--workers`` socket is created without a protocol number, so with several workers every
    response written in two parts waited for the client's delayed ACK: 40 ms a call.
    """
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def http_protocol(parser: str) -> type[asyncio.Protocol]:
    """The timed protocol for the ``http_parser`` setting: ``auto`` is httptools when it is installed."""
    if parser == "h11" or (parser == "auto" and importlib.util.find_spec("httptools") is None):
        return TimedH11Protocol
    from apcore_mcp.run.protocol.httptools import TimedHttpToolsProtocol  # httptools is an extra

    return TimedHttpToolsProtocol


def parser_name(protocol: type[asyncio.Protocol]) -> str:
    """How the start log names the parser a protocol class runs on."""
    return "h11" if issubclass(protocol, H11Protocol) else "httptools"


def _refusal(status: int, reason: str, message: str) -> bytes:
    body = json.dumps({"error": message}).encode()
    head = f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
    return head.encode() + b"connection: close\r\n\r\n" + body


def _address(client: tuple[str, int] | None) -> str:
    return client[0] if client else "an unknown client"
