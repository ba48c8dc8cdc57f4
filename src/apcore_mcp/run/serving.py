"""Running a bridge: stdio, or the HTTP app under uvicorn, with graceful shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import resource
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

from apcore_mcp.bridge import Bridge, BridgeService
from apcore_mcp.calls.router import CallRouter
from apcore_mcp.calls.signin import http_origin
from apcore_mcp.http.app import create_app, mark_stopping
from apcore_mcp.http.exposure import LISTEN_STATE
from apcore_mcp.http.shutdown import drain
from apcore_mcp.run.hooks import NO_HOOKS, ServeHooks, StartupHookError
from apcore_mcp.run.protocol.timed import http_protocol, parser_name
from apcore_mcp.run.stdin import stdin_lines
from apcore_mcp.run.stdio_drain import answering_before_eof

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
        end_listens: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(config)
        self.router = router
        self.drain_seconds = drain_seconds
        self.on_stopping = on_stopping
        self.end_listens = end_listens
        self.on_started: Callable[[], None] | None = None
        """Run once serving has started (the lifespan, upstream mounts included, is done)."""
        self.hooks: ServeHooks = NO_HOOKS
        """``on_startup`` runs after ``on_started``; ``on_shutdown`` once the server has stopped."""
        self.ready = False
        """Started, and ``on_startup`` has returned: what ``BackgroundServer.start()`` waits for."""
        self.startup_error: StartupHookError | None = None
        """``on_startup`` raised: the server shut down instead of serving (its runner raises this)."""
        self._sockets: list[socket.socket] = []

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self._sockets = list(sockets or [])
        await super().serve(sockets)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            logger.info(
                "HTTP on the %s parser and the %s event loop",
                parser_name(self.config.http_protocol_class),
                loop_name(asyncio.get_running_loop()),
            )
        if self.started and self.on_started is not None:
            self.on_started()
        if self.started:
            try:
                await self.hooks.started()
            except StartupHookError as exc:
                self.startup_error = exc
                self.should_exit = True  # uvicorn then shuts down what started, without serving
                return
            self.ready = True

    def listen_hosts(self) -> list[str]:
        """The addresses this server's sockets are bound to (its ``host`` before it has any)."""
        return [str(sock.getsockname()[0]) for sock in self._sockets] or [str(self.config.host)]

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

    async def stop_accepting(self) -> None:
        """Close the listening sockets, first taking the connections the kernel has queued on them.

        The kernel completes connections before the server accepts them; closing a listening
        socket resets those still queued, and a proxy has usually written a request into each
        (one it will not resend elsewhere if it is a POST). Taking them off the queue first (the
        socket kept open by a duplicate meanwhile) leaves only a connection arriving within the
        few system calls between the last accept and the close to be refused, and a refused
        connection is one a proxy retries on another replica.
        """
        loop = asyncio.get_running_loop()
        listeners = [sock.dup() for server in self.servers for sock in server.sockets]
        for server in self.servers:
            server.close()
        queued: list[socket.socket] = []
        for listener in listeners:
            with listener:
                listener.setblocking(False)
                with contextlib.suppress(OSError):  # BlockingIOError: the queue is empty
                    while True:
                        queued.append(listener.accept()[0])
        protocol_class = cast(Callable[..., asyncio.Protocol], self.config.http_protocol_class)  # as uvicorn's
        protocol = functools.partial(
            protocol_class,
            config=self.config,
            server_state=self.server_state,
            app_state=self.lifespan.state,
        )
        for connection in queued:
            connection.setblocking(False)
            try:
                await loop.connect_accepted_socket(protocol, connection, ssl=self.config.ssl)
            except OSError:  # the client has gone already
                connection.close()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # Stop taking work before draining, in uvicorn's own order: no new connections, idle
        # keep-alive ones closed now, busy ones after their response (connections that have not
        # brought their first request yet get to: ``TimedHeads._shutdown_gently``). A proxy holding
        # pooled connections then sends new requests to another replica instead of into the drain.
        await self.stop_accepting()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        await drain(self.router, self.drain_seconds, self.end_listens)
        await super().shutdown(sockets)
        if self.ready:
            await self.hooks.stopped()


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """``uvloop`` or ``asyncio``: what the start log says the server runs on."""
    return type(loop).__module__.partition(".")[0]


def make_http_server(app: Any, bridge: Bridge) -> HttpServer:
    """uvicorn for ``app``, with request headers timed (``protocol.TimedHeads``) and graceful shutdown.

    The parser and the event loop are the ``http_parser`` and ``event_loop`` settings (the loop is
    uvicorn's when it runs one, ``HttpServer.run``; ``BackgroundServer`` makes it the same way).
    """
    settings = bridge.settings
    config = uvicorn.Config(
        app,
        loop=settings.event_loop,
        lifespan="on",
        log_config=None,
        access_log=False,
        # The app names the client itself, from the proxies in forwarded_allow_ips only
        # (http/forwarded.py); uvicorn's own rewrite would trust loopback peers by default.
        proxy_headers=False,
        timeout_graceful_shutdown=STREAM_CLOSE_SECONDS,
        ws="none",
        http=http_protocol(settings.http_parser),
        # h11's own bound on a head (checked only while incomplete, answered 400) sits above ours (431).
        h11_max_incomplete_event_size=settings.max_header_bytes + 1024,
    )
    stopping = functools.partial(mark_stopping, app) if isinstance(app, Starlette) else None
    server = HttpServer(config, bridge.router, settings.shutdown_timeout, stopping, bridge.parts.end_listen_streams)
    state = getattr(app, "state", None)
    if state is not None:
        setattr(state, LISTEN_STATE, server.listen_hosts)  # the app learns where it really listens
    return server


@contextlib.asynccontextmanager
async def serving_http(
    bridge: Bridge, sock: socket.socket | None = None, *, ready_seconds: float = 10.0
) -> AsyncIterator[tuple[HttpServer, str]]:
    """``bridge``'s app under our uvicorn in the running event loop, for tests and benchmarks.

    Serves on ``sock`` (default: a free 127.0.0.1 port); yields the server and its base URL once
    it is started, and stops it (gracefully, as a signal would) when the block ends. The socket is
    closed then; the bridge stays the caller's.

    Raises:
        TimeoutError: the server did not start within ``ready_seconds``.
    """
    sock = sock if sock is not None else bind_socket("127.0.0.1", 0)
    host, port = sock.getsockname()[:2]
    server = make_http_server(create_app(bridge=bridge), bridge)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(ready_seconds):
            while not server.started:
                if task.done():
                    task.result()  # it failed to start: say why
                await asyncio.sleep(0.01)
        yield server, http_origin(host, port)
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            async with asyncio.timeout(ready_seconds):
                await task
        sock.close()


def raise_open_files_limit() -> int:
    """Raise this process's soft limit on open files to its hard limit; return the soft limit now.

    Each client connection holds a file descriptor; the usual soft limit of 1,024 lets ~1,000
    idle or slow clients stop the server from accepting anyone (``/health`` included).
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            return hard
    return soft


async def run_stdio(
    bridge: Bridge,
    *,
    handle_signals: bool = True,
    on_ready: Callable[[], None] | None = None,
    hooks: ServeHooks = NO_HOOKS,
) -> None:
    """Serve one client over stdin/stdout until it closes the pipe or a stop signal arrives.

    ``hooks.on_startup`` runs once stdin and stdout are open (a request arriving meanwhile waits
    for it), then ``on_ready``: stop signals are handled by then, so a "started" log line is a
    promise that SIGTERM/SIGINT from then on end the server cleanly. ``hooks.on_shutdown`` runs
    once the session has ended, shielded from the cancellation that ends it.

    Raises:
        StartupHookError: ``on_startup`` raised; nothing was served.
    """
    try:
        await _serve_stdio(bridge, handle_signals, on_ready, hooks)
    except BaseExceptionGroup as group:  # the task group wraps on_startup's error: raise it as itself
        failed = group.subgroup(StartupHookError)
        if failed is None:
            raise
        error = failed.exceptions[0]
        raise error from error.__cause__


async def _serve_stdio(
    bridge: Bridge, handle_signals: bool, on_ready: Callable[[], None] | None, hooks: ServeHooks
) -> None:
    server = bridge.server
    async with BridgeService(bridge), anyio.create_task_group() as tasks, stdin_lines(bridge.settings) as stdin:
        if handle_signals and threading.current_thread() is threading.main_thread():
            await tasks.start(_stop_on_signal, tasks.cancel_scope, bridge)
        serving = False
        try:
            async with stdio_server(stdin=cast(Any, stdin)) as (read_stream, write_stream):
                if stdin is not None:
                    stdin.attach(write_stream)  # answers to malformed lines go out in order with the rest
                await hooks.started()
                serving = True
                if on_ready is not None:
                    on_ready()
                # A client that closes stdin right after its requests still gets every answer (bounded).
                seconds = bridge.settings.shutdown_timeout
                async with answering_before_eof(read_stream, write_stream, seconds) as (reads, writes):
                    await server.run(reads, writes, server.create_initialization_options())
        finally:
            if serving:
                with anyio.CancelScope(shield=True):
                    await hooks.stopped()
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
