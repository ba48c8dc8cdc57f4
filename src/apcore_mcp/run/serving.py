"""Running a bridge: stdio, or the HTTP app under uvicorn, with graceful shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
import socket
import threading
from collections.abc import AsyncIterator, Callable, Generator
from types import FrameType
from typing import Any, cast

import anyio
import anyio.abc
import uvicorn
from mcp.server.stdio import stdio_server
from starlette.applications import Starlette

from apcore_mcp.bridge import Bridge
from apcore_mcp.calls import CallRouter
from apcore_mcp.http.app import mark_stopping
from apcore_mcp.run.shutdown import drain
from apcore_mcp.run.upstreams import serving_upstreams

logger = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# After in-flight calls drain and streams are told to end, how long they get to close.
STREAM_CLOSE_SECONDS = 1


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket, bound now so that a busy port is an ``OSError`` for the caller.

    Raises:
        OSError: the address cannot be bound (in use, not permitted, unknown host).
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
        sock.listen(2048)
        sock.set_inheritable(True)
    except OSError:
        sock.close()
        raise
    return sock


class HttpServer(uvicorn.Server):
    """uvicorn with our shutdown: stop accepting, let calls in flight finish, then close streams.

    Signals stop the server and ``serve()`` returns normally (uvicorn alone would re-raise
    the signal after shutdown, killing the process with it).
    """

    def __init__(
        self,
        config: uvicorn.Config,
        router: CallRouter,
        drain_seconds: float,
        on_stopping: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(config)
        self.router = router
        self.drain_seconds = drain_seconds
        self.on_stopping = on_stopping

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # Our own, not uvicorn's: sse-starlette patches uvicorn's handler to end every SSE
        # response at the first signal, which would cut off replies to calls in flight.
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        self.should_exit = True
        if self.on_stopping is not None:
            self.on_stopping()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def on_signal(sig: int, frame: FrameType | None) -> None:
            # A plain function: sse-starlette also finds a server through a bound handler.
            self.handle_exit(sig, frame)

        previous = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # Stop taking work before draining, in uvicorn's own order: no new connections, idle
        # keep-alive ones closed now, busy ones after their response. A proxy holding pooled
        # connections then sends new requests to another replica instead of into the drain.
        for server in self.servers:
            server.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        await drain(self.router, self.drain_seconds)
        await super().shutdown(sockets)


def make_http_server(app: Any, bridge: Bridge) -> HttpServer:
    settings = bridge.settings
    config = uvicorn.Config(
        app,
        lifespan="on",
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=STREAM_CLOSE_SECONDS,
        ws="none",
    )
    stopping = functools.partial(mark_stopping, app) if isinstance(app, Starlette) else None
    return HttpServer(config, bridge.router, settings.shutdown_timeout, stopping)


async def run_stdio(bridge: Bridge, *, handle_signals: bool = True, on_ready: Callable[[], None] | None = None) -> None:
    """Serve one client over stdin/stdout until it closes the pipe or a stop signal arrives.

    ``on_ready`` runs once stop signals are handled, so a "started" log line is a promise that
    SIGTERM/SIGINT from then on end the server cleanly.
    """
    bridge.notifier.bind(asyncio.get_running_loop())
    server = bridge.server
    async with serving_upstreams(bridge), anyio.create_task_group() as tasks, stdin_lines() as stdin:
        if handle_signals and threading.current_thread() is threading.main_thread():
            await tasks.start(_stop_on_signal, tasks.cancel_scope, bridge)
        if on_ready is not None:
            on_ready()
        async with stdio_server(stdin=cast(Any, stdin)) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        tasks.cancel_scope.cancel()


async def _stop_on_signal(
    scope: anyio.CancelScope, bridge: Bridge, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        task_status.started()
        async for signum in signals:
            logger.info("Received %s, shutting down", signal.Signals(signum).name)
            with anyio.move_on_after(bridge.settings.shutdown_timeout):
                await bridge.router.wait_idle()
            scope.cancel()
            return


class _Lines:
    """``async for line in ...`` over an asyncio reader: cancellable, unlike a thread read."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


STDIN_LINE_LIMIT = 64 * 1024 * 1024


@contextlib.asynccontextmanager
async def stdin_lines() -> AsyncIterator[_Lines | None]:
    """Read stdin through the event loop so a stop signal can end the server at once.

    The SDK reads stdin on a worker thread, which no cancellation can interrupt: a server
    told to stop would wait for the client's next line. While serving, fd 0 points at the
    null device so module code cannot consume protocol bytes. Yields ``None`` (the SDK's own
    reader is then used) when stdin is a regular file, which the loop cannot watch.
    """
    loop = asyncio.get_running_loop()
    private = os.dup(0)
    reader = asyncio.StreamReader(limit=STDIN_LINE_LIMIT)
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
        yield _Lines(reader)
    finally:
        transport.close()
        os.dup2(saved, 0)
        os.close(saved)
        with contextlib.suppress(OSError):
            os.set_blocking(0, True)
