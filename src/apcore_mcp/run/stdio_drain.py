"""Every request read from stdin before it closed gets its answer before the stdio server exits.

The SDK's dispatcher cancels the requests in flight as soon as its read stream ends, so a
client that writes its requests and closes stdin at once lost the answers still being worked
on. ``answering_before_eof`` sits between the transport and the server: it passes messages
through, keeps the ids of the client's requests not yet answered (a ``notifications/cancelled``
drops its request: a cancelled request gets no answer), and at EOF holds the server's read
stream open until they are all answered or ``seconds`` (the shutdown timeout) have passed.

Once stdin is closed nothing can answer the server's own requests (elicitation, sampling,
roots): those pending at EOF, and any sent after it, are answered at once on the client's
behalf with a ``CONNECTION_CLOSED`` error, so an interactive tool fails cleanly instead of
waiting for an answer that cannot come.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, Self

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp_types import (
    CONNECTION_CLOSED,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
)

logger = logging.getLogger(__name__)

CLOSED_TEXT = "the client closed stdin: it can no longer answer"

Item = SessionMessage | Exception


class _Drain:
    """What is in flight between one stdio client and the server (see the module doc)."""

    def __init__(self, relay: MemoryObjectSendStream[Item], out: Any) -> None:
        self.relay = relay
        self.out = out
        self.unanswered: set[RequestId] = set()
        """The client's requests the server has not answered yet."""
        self.asked: set[RequestId] = set()
        """The server's requests the client has not answered yet."""
        self.eof = False
        self.idle = anyio.Event()

    def incoming(self, item: Item) -> None:
        message = item.message if isinstance(item, SessionMessage) else None
        if isinstance(message, JSONRPCRequest):
            self.unanswered.add(message.id)
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            self._answered((message.params or {}).get("requestId"))
        elif isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            self.asked.discard(message.id)

    async def outgoing(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, JSONRPCRequest):
            if self.eof:
                await self._refuse(message.id)  # answered instead of written: no one would read it
                return
            self.asked.add(message.id)
        await self.out.send(item)
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            self._answered(message.id)  # once the writer has it: ending now cannot cancel the send

    async def at_eof(self) -> None:
        self.eof = True
        for request_id in sorted(self.asked, key=str):
            await self._refuse(request_id)
        self.asked.clear()
        if not self.unanswered:
            self.idle.set()

    def _answered(self, request_id: object) -> None:
        if isinstance(request_id, str | int):
            self.unanswered.discard(request_id)
        if self.eof and not self.unanswered:
            self.idle.set()

    async def _refuse(self, request_id: RequestId) -> None:
        error = ErrorData(code=CONNECTION_CLOSED, message=CLOSED_TEXT)
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self.relay.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=error)))


class _Writes:
    """The server's write stream: each message seen by the drain on its way out."""

    def __init__(self, drain: _Drain) -> None:
        self._drain = drain

    async def send(self, item: SessionMessage, /) -> None:
        await self._drain.outgoing(item)

    async def aclose(self) -> None:
        await self._drain.out.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


async def _relay(source: Any, drain: _Drain, seconds: float) -> None:
    async with drain.relay:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            async for item in source:
                drain.incoming(item)
                await drain.relay.send(item)
        await drain.at_eof()
        with anyio.move_on_after(seconds):
            await drain.idle.wait()
        if drain.unanswered:
            logger.warning(
                "stdin closed; %d request(s) still unanswered after %gs are cancelled", len(drain.unanswered), seconds
            )


@contextlib.asynccontextmanager
async def answering_before_eof(
    read_stream: Any, write_stream: Any, seconds: float
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[Item], _Writes]]:
    """The (read, write) pair to serve on instead of the transport's (see the module doc)."""
    relay, reads = anyio.create_memory_object_stream[Item](0)
    drain = _Drain(relay, write_stream)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_relay, read_stream, drain, seconds)
        try:
            yield reads, _Writes(drain)
        finally:
            tasks.cancel_scope.cancel()
            reads.close()
            read_stream.close()  # the transport's: the server run on ``reads`` would have closed it
