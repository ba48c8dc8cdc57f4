"""Noticing at once that an upstream went away: the end of its transport's read stream.

``EofWatch`` wraps a transport so that its read side ending (the process exited, the stream
closed) calls ``on_eof`` as it happens; ``Connection`` uses it to stop its client then.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from types import TracebackType
from typing import Any, Protocol

import anyio
from mcp.client import Transport
from mcp.shared.message import SessionMessage


class EofWatch:
    """Wraps a transport so that the end of its read stream (the server went away) is noticed at once."""

    def __init__(self, transport: Transport, on_eof: Callable[[], None]) -> None:
        self._transport = transport
        self._on_eof = on_eof

    async def __aenter__(self) -> tuple[Any, Any]:
        read, write = await self._transport.__aenter__()
        return WatchedRead(read, self._on_eof), write

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self._transport.__aexit__(exc_type, exc, tb)


class _Receiver(Protocol):
    """The read side of a transport's streams, as ``WatchedRead`` uses it."""

    async def receive(self) -> SessionMessage | Exception: ...

    async def aclose(self) -> None: ...


class WatchedRead:
    def __init__(self, inner: _Receiver, on_eof: Callable[[], None]) -> None:
        self._inner = inner
        self._on_eof = on_eof

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context, which the SDK reads from the read stream when it has one."""
        found = getattr(self._inner, "last_context", None)
        return found if isinstance(found, contextvars.Context) else None

    async def receive(self) -> SessionMessage | Exception:
        try:
            item: SessionMessage | Exception = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_eof()
            raise
        return item

    def __aiter__(self) -> WatchedRead:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> WatchedRead:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
