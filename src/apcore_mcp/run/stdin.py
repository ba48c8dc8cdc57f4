"""The stdio server's input: lines read through the event loop, screened before the SDK parses them.

The SDK's stdio transport drops a line it cannot parse without a word, and a line longer than
the reader's limit ended the process. Here every line is screened first: one longer than
``max_body_bytes`` is skipped to its end (memory stays bounded) and answered ``-32600``; one
nesting JSON deeper or holding more keys and elements than ``max_json_depth`` and
``max_json_items`` allow is answered ``-32600`` before anything parses it (a million keys took
the server 19 s to get through); one that is not JSON ``-32700``; one that is not a JSON-RPC
message (a batch, a bad ``id``, a missing ``method``) ``-32600``. The server then goes on with
the next line. Answers go out through the transport's own write stream, so they never
interleave with other messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import selectors
from collections.abc import AsyncIterator
from typing import Any

import anyio
from anyio.abc import ObjectSendStream
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError, jsonrpc_message_adapter
from pydantic import ValidationError

from apcore_mcp._jsonbounds import JsonBounds
from apcore_mcp.settings import Settings

logger = logging.getLogger(__name__)

_CHUNK = 1024 * 1024


def screen(line: bytes) -> ErrorData | tuple[ErrorData, Any] | None:
    """``None`` for a JSON-RPC message the SDK will take; else the error (and the id to answer, if known)."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return ErrorData(code=PARSE_ERROR, message="Parse error: the line is not valid JSON")
    if not isinstance(message, dict):
        return ErrorData(code=INVALID_REQUEST, message="Invalid request: expected one JSON-RPC message object")
    request_id = message.get("id")
    if "id" in message and not (isinstance(request_id, str | int) and not isinstance(request_id, bool)):
        return ErrorData(code=INVALID_REQUEST, message="Invalid request id: it must be a string or an integer")
    try:
        jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError:
        return ErrorData(code=INVALID_REQUEST, message="Invalid request: not a JSON-RPC 2.0 message"), request_id
    return None


class StdinLines:
    """``async for line in ...``: screened lines of an asyncio reader (cancellable, unlike a thread read).

    Answers to rejected lines wait until ``attach()`` gave the transport's write stream.
    """

    def __init__(self, reader: asyncio.StreamReader, limit: int, json_bounds: JsonBounds) -> None:
        self._reader = reader
        self._limit = limit
        self._json_bounds = json_bounds
        self._buffer = bytearray()
        self._start = 0
        self._scanned = 0
        self._oversized = False
        self._replies: ObjectSendStream[SessionMessage] | None = None
        self._attached = anyio.Event()

    def attach(self, replies: ObjectSendStream[SessionMessage]) -> None:
        self._replies = replies
        self._attached.set()

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._next_line()
            if line is None:
                raise StopAsyncIteration
            if not line.strip():
                continue
            problem = _too_long(self._limit) if line is _TOO_LONG else self._out_of_bounds(line) or screen(line)
            if problem is None:
                return line.decode("utf-8", errors="replace")
            await self._answer(problem)

    def _out_of_bounds(self, line: bytes) -> ErrorData | None:
        excess = self._json_bounds.excess(line)
        if excess is None:
            return None
        return ErrorData(code=INVALID_REQUEST, message=f"Invalid request: the message {excess}")

    async def _next_line(self) -> bytes | None:
        """The next whole line; ``_TOO_LONG`` for one past the limit (consumed, not kept); ``None`` at EOF."""
        while True:
            end = self._buffer.find(b"\n", max(self._start, self._scanned))
            if end >= 0:
                line = bytes(self._buffer[self._start : end + 1])
                self._start = self._scanned = end + 1
                if self._start > len(self._buffer) // 2:  # compact now and then, not per line
                    del self._buffer[: self._start]
                    self._start = self._scanned = 0
                if self._oversized or len(line) > self._limit + 1:
                    self._oversized = False
                    return _TOO_LONG
                return line
            if len(self._buffer) - self._start > self._limit:
                self._oversized = True
                self._buffer.clear()
                self._start = 0
            self._scanned = len(self._buffer)
            chunk = await self._reader.read(_CHUNK)
            if not chunk:
                rest = bytes(self._buffer[self._start :])
                self._buffer.clear()
                self._start = self._scanned = 0
                return _TOO_LONG if self._oversized else (rest or None)
            self._buffer += chunk

    async def _answer(self, problem: ErrorData | tuple[ErrorData, Any]) -> None:
        error, request_id = problem if isinstance(problem, tuple) else (problem, None)
        logger.info("Rejected a stdin message: %s", error.message)
        await self._attached.wait()
        assert self._replies is not None
        reply = JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._replies.send(SessionMessage(reply))


_TOO_LONG = b"\x00too long\x00"


def _too_long(limit: int) -> ErrorData:
    return ErrorData(code=INVALID_REQUEST, message=f"Invalid request: the message exceeds {limit} bytes")


def _pollable(fd: int) -> bool:
    """Whether the event loop can watch ``fd``. asyncio registers a read pipe's fd in a callback
    after ``connect_read_pipe`` returns, so epoll refusing it (EPERM: files, ``/dev/null``) would
    only surface there, unhandled, and stdin would never be read: ask a selector first."""
    with selectors.DefaultSelector() as probe:
        try:
            probe.register(fd, selectors.EVENT_READ)
        except (OSError, ValueError):
            return False
    return True


@contextlib.asynccontextmanager
async def stdin_lines(settings: Settings) -> AsyncIterator[StdinLines | None]:
    """Read stdin through the event loop so a stop signal can end the server at once.

    Lines are bounded by ``settings``: ``max_body_bytes``, ``max_json_depth``, ``max_json_items``.

    The SDK reads stdin on a worker thread, which no cancellation can interrupt: a server
    told to stop would wait for the client's next line. While serving, fd 0 points at the
    null device so module code cannot consume protocol bytes. Yields ``None`` (the SDK's own
    reader is then used) when the loop cannot watch stdin: a regular file, or ``/dev/null``.
    """
    if not _pollable(0):
        yield None
        return
    loop = asyncio.get_running_loop()
    private = os.dup(0)
    reader = asyncio.StreamReader(limit=_CHUNK * 2)
    try:
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(private, "rb", buffering=0)
        )
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            os.close(private)
        yield None
        return
    saved = os.dup(0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    try:
        yield StdinLines(reader, settings.max_body_bytes, JsonBounds(settings.max_json_depth, settings.max_json_items))
    finally:
        transport.close()
        os.dup2(saved, 0)
        os.close(saved)
        with contextlib.suppress(OSError):
            os.set_blocking(0, True)
