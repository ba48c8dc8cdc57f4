"""Our stdio transport to an upstream server: the SDK's stream pair, with every message bounded.

The SDK's ``stdio_client`` joins stdout chunks into lines with no bound (re-joining the
buffer on each chunk: a 70 MiB line costs half a minute of event-loop time) and logs a
traceback for each line it cannot parse. This transport yields the same pair of
``SessionMessage`` streams for ``ClientSession``, and:

- reads stdout in chunks and splits it on newlines; a line longer than ``max_message_bytes``
  is refused as soon as the bound is passed, never held past it: the requests waiting for a
  reply fail with a ``WireFault("too-large")``, ``on_fault`` is told and the session sees the
  stream end; what the server still writes is read and dropped until it is stopped;
- parses a line (``json.loads``, then the JSON-RPC model), in a worker thread above
  ``OFF_LOOP_BYTES``;
- matches replies against the requests it sent: a malformed reply under a waiting id fails
  that request at once; a reply (malformed or not) under an id never sent fails the one
  request waiting when there is exactly one (it can only be its answer), and nothing
  otherwise; a line that is not JSON-RPC at all fails nothing. Each is counted in
  ``WireStats`` and logged through a ``LogThrottle`` (once, then a count per interval).

The process runs in a session (process group) of its own; its stderr is copied to ``errlog``
line by line through ``redact`` (values the config took from the environment are masked) and
through ``trace`` (which keeps the last bytes), and ``trace`` gets the exit code once the
process is reaped: that is how a failed upstream says why (``upstream.exits``).
Stopping follows the SDK's order: stdin closed, ``EXIT_GRACE`` to leave, then SIGTERM and
SIGKILL to the group, reaped.
"""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass
from typing import Literal, TextIO

import anyio
import anyio.to_thread
from anyio.abc import ByteReceiveStream, ByteSendStream, Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.message import SessionMessage
from mcp_types import (
    INTERNAL_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from apcore_mcp._log_throttle import LogThrottle
from apcore_mcp.upstream.config.parse import ServerSpec
from apcore_mcp.upstream.exits import ProcessTrace

logger = logging.getLogger(__name__)

OFF_LOOP_BYTES = 256 * 1024
"""Lines longer than this are parsed in a worker thread (``json.loads`` of 256 KiB takes ~2 ms)."""
EXIT_GRACE = 2.0
KILL_GRACE = 2.0
REAP_SECONDS = 2.0
FLUSH_SECONDS = 0.5
ERRLOG_LINE_BYTES = 64 * 1024
"""The longest stderr line held whole (to be redacted whole) before it is written in pieces."""
RECENT_IDS = 1024
"""Answered request ids remembered, so that a late reply is told from one under an id never sent."""
LONG_LIVED = frozenset({"subscriptions/listen"})
"""Requests that wait for the whole connection: never "the one request waiting" for a stray reply."""

Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]


@dataclass
class WireStats:
    """What one upstream sent that could not be used, across its restarts (shown in ``/ready``)."""

    oversized: int = 0
    malformed: int = 0
    unknown_ids: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class WireFault:
    """``ErrorData.data`` of an error this transport made up for a request: never from the wire."""

    kind: Literal["too-large", "bad-reply"]
    detail: str


class MessageTooLarge(Exception):
    """A line passed the bound before it ended."""


@contextlib.asynccontextmanager
async def stdio_transport(
    spec: ServerSpec,
    *,
    errlog: TextIO,
    max_message_bytes: int,
    stats: WireStats,
    on_fault: Callable[[str], None],
    trace: ProcessTrace | None = None,
    redact: Callable[[str], str] = str,
) -> AsyncIterator[Streams]:
    """Start ``spec``'s command and yield (read stream, write stream) for a ``ClientSession``.

    Raises:
        OSError: the command could not be started.
    """
    assert spec.command is not None
    trace = trace if trace is not None else ProcessTrace()
    process = await anyio.open_process(
        [spec.command, *spec.args],
        env=get_default_environment() | dict(spec.env),
        stderr=subprocess.PIPE,
        cwd=spec.cwd,
        start_new_session=True,
    )
    # No await until the task group is entered: a cancellation in the gap would leak the process.
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    sink, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, outgoing = anyio.create_memory_object_stream[SessionMessage](0)
    wire = _Wire(spec.name, sink, max_message_bytes, stats, on_fault)
    stderr_done = anyio.Event()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(wire.pump, process.stdout)
        tasks.start_soon(wire.write, process.stdin, outgoing)
        tasks.start_soon(_copy_stderr, process.stderr, _ErrLog(errlog, redact), trace, stderr_done)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):  # every wait inside is bounded
                read_stream.close()  # the pump turns to discarding: a server blocked on stdout can see stdin end
                write_stream.close()
                with anyio.move_on_after(FLUSH_SECONDS):
                    await wire.writer_done.wait()
                await _stop(process, stderr_done)
                trace.returncode = process.returncode
                for stream in (sink, outgoing):
                    stream.close()
            tasks.cancel_scope.cancel()


class _ErrLog:
    """The upstream's stderr written to ``errlog`` line by line, each line through ``redact``.

    A line is held until its newline, at most ``ERRLOG_LINE_BYTES``: a longer one is written in pieces.
    """

    def __init__(self, errlog: TextIO, redact: Callable[[str], str]) -> None:
        self._errlog = errlog
        self._redact = redact
        self._partial = bytearray()

    def write(self, chunk: bytes) -> None:
        self._partial += chunk
        end = self._partial.rfind(b"\n")
        if end >= 0:
            self._emit(bytes(self._partial[: end + 1]))
            del self._partial[: end + 1]
        if len(self._partial) > ERRLOG_LINE_BYTES:
            self.flush()

    def flush(self) -> None:
        if self._partial:
            self._emit(bytes(self._partial))
            self._partial.clear()

    def _emit(self, data: bytes) -> None:
        text = "".join(self._redact(line) for line in data.decode("utf-8", errors="replace").splitlines(keepends=True))
        with contextlib.suppress(OSError, ValueError):  # a closed or full log must not stop the copy
            self._errlog.write(text)
            self._errlog.flush()


async def _copy_stderr(stderr: ByteReceiveStream, errlog: _ErrLog, trace: ProcessTrace, done: anyio.Event) -> None:
    """The process's stderr -> ``errlog``, its last bytes kept in ``trace``, until it ends."""
    try:
        while True:
            chunk = await stderr.receive()
            trace.feed(chunk)
            errlog.write(chunk)
    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        pass
    finally:
        errlog.flush()
        done.set()


class _Lines:
    """Lines of a byte stream; never more than ``limit`` bytes (plus the chunk that crossed it) held."""

    def __init__(self, stream: ByteReceiveStream, limit: int) -> None:
        self._stream = stream
        self._limit = limit
        self._buffer = bytearray()
        self._scanned = 0

    async def receive(self) -> bytearray:
        """The next line, without its newline.

        Raises:
            anyio.EndOfStream: the stream ended (a last line without a newline is dropped).
            MessageTooLarge: the line is longer than ``limit``.
        """
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end > self._limit or (end < 0 and len(self._buffer) > self._limit):
                raise MessageTooLarge
            if end >= 0:
                line = self._buffer[:end]
                del self._buffer[: end + 1]  # cheap: a bytearray drops its head without moving the rest
                self._scanned = 0
                return line
            self._scanned = len(self._buffer)
            self._buffer += await self._stream.receive()


@dataclass(frozen=True)
class _Unusable:
    """A line that is not a JSON-RPC message; ``reply``: it has a result or an error (``id``: its id)."""

    what: str
    reply: bool = False
    id: RequestId | None = None


def _parse(line: bytearray) -> JSONRPCMessage | _Unusable:
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return _Unusable("not JSON")
    try:
        message: JSONRPCMessage = jsonrpc_message_adapter.validate_python(data, by_name=False)
    except ValidationError:
        if isinstance(data, dict) and ("result" in data or "error" in data):
            return _Unusable("a malformed reply", reply=True, id=_request_id(data.get("id")))
        return _Unusable("not a JSON-RPC message")
    return message


def _request_id(value: object) -> RequestId | None:
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


class _Ids:
    """Requests sent and waiting for a reply (by coerced id: wire id, method), and recent answered ones."""

    def __init__(self) -> None:
        self._waiting: dict[RequestId, tuple[RequestId, str]] = {}
        self._answered: dict[RequestId, None] = {}

    def sent(self, message: JSONRPCMessage) -> None:
        if isinstance(message, JSONRPCRequest):
            self._waiting[coerce_request_id(message.id)] = (message.id, message.method)
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            cancelled = _request_id((message.params or {}).get("requestId"))
            if cancelled is not None:
                self.settle(cancelled)

    def settle(self, request_id: RequestId) -> bool:
        """Whether ``request_id`` was waiting (it no longer is)."""
        key = coerce_request_id(request_id)
        if self._waiting.pop(key, None) is None:
            return False
        self._answered[key] = None
        if len(self._answered) > RECENT_IDS:
            del self._answered[next(iter(self._answered))]
        return True

    def answered(self, request_id: RequestId) -> bool:
        return coerce_request_id(request_id) in self._answered

    def take_lone(self) -> RequestId | None:
        """The wire id of the one short request waiting, settled; ``None`` unless there is exactly one."""
        short = [wire_id for wire_id, method in self._waiting.values() if method not in LONG_LIVED]
        if len(short) != 1:
            return None
        self.settle(short[0])
        return short[0]

    def take_all(self) -> list[RequestId]:
        waiting = [wire_id for wire_id, _method in self._waiting.values()]
        for wire_id in waiting:
            self.settle(wire_id)
        return waiting


class _Wire:
    """The two pipe tasks of one connection, sharing what was sent."""

    def __init__(
        self,
        name: str,
        sink: MemoryObjectSendStream[SessionMessage | Exception],
        limit: int,
        stats: WireStats,
        on_fault: Callable[[str], None],
    ) -> None:
        self._name = name
        self._sink = sink
        self._limit = limit
        self._stats = stats
        self._on_fault = on_fault
        self._ids = _Ids()
        self._log = LogThrottle(logger)
        self.writer_done = anyio.Event()

    async def pump(self, stdout: ByteReceiveStream) -> None:
        """stdout -> the session, until stdout ends, the session goes or a line is too large."""
        lines = _Lines(stdout, self._limit)
        try:
            async with self._sink:
                while True:
                    try:
                        line = await lines.receive()
                    except MessageTooLarge:
                        await self._too_large()
                        return
                    for message in await self._decode(line):
                        await self._sink.send(message)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass  # the server closed stdout, or the session (or our shutdown) closed a stream
        finally:
            self._log.flush()
            await _discard(stdout)

    async def write(self, stdin: ByteSendStream, messages: MemoryObjectReceiveStream[SessionMessage]) -> None:
        """The session -> stdin, one JSON line per message."""
        try:
            async with messages:
                async for item in messages:
                    self._ids.sent(item.message)
                    data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send(data.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            self._sink.close()  # the server stopped reading: end the session rather than let requests hang
        finally:
            self.writer_done.set()

    async def _too_large(self) -> None:
        self._stats.oversized += 1
        detail = f"sent a message larger than {self._limit} bytes (upstream_max_message_bytes)"
        self._on_fault(detail)
        for wire_id in self._ids.take_all():
            await self._sink.send(_failure(wire_id, WireFault("too-large", detail)))

    async def _decode(self, line: bytearray) -> list[SessionMessage]:
        if not line or line.isspace():
            return []
        if len(line) > OFF_LOOP_BYTES:
            parsed = await anyio.to_thread.run_sync(_parse, line)
        else:
            parsed = _parse(line)
        if isinstance(parsed, _Unusable):
            return self._unusable(parsed, len(line))
        if isinstance(parsed, JSONRPCResponse | JSONRPCError):
            return self._reply(parsed)
        return [SessionMessage(parsed)]

    def _reply(self, reply: JSONRPCResponse | JSONRPCError) -> list[SessionMessage]:
        if reply.id is not None and (self._ids.settle(reply.id) or self._ids.answered(reply.id)):
            return [SessionMessage(reply)]  # a late reply (already answered or cancelled): the session drops it
        self._stats.unknown_ids += 1
        self._log.log(logging.WARNING, "unknown-id", "Upstream %r answered under an id it was never sent", self._name)
        return self._fail_lone("answered under an id it was never sent")

    def _unusable(self, line: _Unusable, size: int) -> list[SessionMessage]:
        self._stats.malformed += 1
        self._log.log(logging.WARNING, line.what, "Upstream %r sent %s (%d bytes)", self._name, line.what, size)
        if not line.reply:
            return []
        if line.id is not None and self._ids.settle(line.id):
            return [_failure(line.id, WireFault("bad-reply", "answered with a malformed reply"))]
        if line.id is not None and self._ids.answered(line.id):
            return []
        return self._fail_lone("answered with a malformed reply")

    def _fail_lone(self, detail: str) -> list[SessionMessage]:
        lone = self._ids.take_lone()
        return [] if lone is None else [_failure(lone, WireFault("bad-reply", detail))]


def _failure(request_id: RequestId, fault: WireFault) -> SessionMessage:
    error = ErrorData(code=INTERNAL_ERROR, message=f"upstream {fault.detail}", data=fault)
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


async def _discard(stdout: ByteReceiveStream) -> None:
    """Read and drop the rest of stdout, so a server blocked writing it can still see its stdin end."""
    with anyio.CancelScope(shield=True):  # ends when the shutdown closes the pipe
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            while True:
                await stdout.receive()


async def _stop(process: Process, stderr_done: anyio.Event) -> None:
    """Close stdin, give the server ``EXIT_GRACE`` to leave, then SIGTERM and SIGKILL its group; reap it.

    Once it has exited, its last stderr lines get ``FLUSH_SECONDS`` to arrive (a child that
    inherited the pipe may hold it open) before the pipes are closed.
    """
    assert process.stdin is not None
    assert process.stdout is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    if not await _exited(process, EXIT_GRACE):
        await terminate_posix_process_tree(process, KILL_GRACE)
        if not await _exited(process, REAP_SECONDS):
            logger.warning("Upstream process %d is still alive after SIGKILL; abandoning it", process.pid)
            for pipe in (process.stdout, process.stderr):
                with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    if pipe is not None:
                        await pipe.aclose()
            return
    with anyio.move_on_after(FLUSH_SECONDS):
        await stderr_done.wait()
    with anyio.move_on_after(REAP_SECONDS):
        await process.aclose()  # closes the pipes (ending the discard) and reaps the child


async def _exited(process: Process, seconds: float) -> bool:
    # anyio's wait() ends when the process exits; asyncio's own would also wait for the pipes
    # to close, which a grandchild that inherited them can hold open.
    with anyio.move_on_after(seconds):
        await process.wait()
        return True
    return False
