"""``BackgroundServer``: ``serve()`` in a background thread, for embedding and for tests."""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Unpack

from apcore_mcp.bridge import Bridge, registry_of
from apcore_mcp.calls.signin import http_origin
from apcore_mcp.http.app import create_app
from apcore_mcp.run.hooks import CallMetrics, Hook, ServeHooks, StartupHookError
from apcore_mcp.run.serve import bound_settings, build_settings, one_process, warn_if_deprecated
from apcore_mcp.run.serving import HttpServer, bind_socket, make_http_server, run_stdio
from apcore_mcp.settings import SettingsOptions, configure_logging, normalize_transport
from apcore_mcp.types import RegistryOrExecutor


class BackgroundServer:
    """Run a server on its own thread: ``start()``, ``stop()``, ``wait()``.

    Takes the same arguments as ``serve()``. ``start()`` returns once ``on_startup`` has; every
    ``start()`` after a ``stop()`` runs the callbacks again. For the HTTP transports, ``start()`` binds the
    port before returning, so a busy port raises ``OSError`` there; ``port=0`` picks a free
    port, readable as ``.port`` afterwards. (Named ``MCPServer`` before; that name, which the MCP
    SDK's own server class has too, is a deprecated alias in ``apcore_mcp`` for one release.)
    """

    def __init__(
        self,
        registry_or_executor: RegistryOrExecutor,
        *,
        transport: str = "streamable-http",
        on_startup: Hook | None = None,
        on_shutdown: Hook | None = None,
        metrics_collector: CallMetrics | None = None,
        **options: Unpack[SettingsOptions],
    ) -> None:
        registry_of(registry_or_executor)
        self.hooks = ServeHooks(on_startup=on_startup, on_shutdown=on_shutdown, metrics_collector=metrics_collector)
        self._source = registry_or_executor
        self.transport = normalize_transport(transport)
        self.settings = build_settings(options)
        one_process(self.settings, "BackgroundServer")
        self.port = self.settings.port
        self.bridge: Bridge | None = None
        self._thread: threading.Thread | None = None
        self._http: HttpServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stdio_task: asyncio.Task[None] | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        return http_origin(self.settings.host, self.port)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, timeout: float = 10.0) -> None:
        """Start serving; return once the server accepts connections (no-op if running).

        Raises:
            OSError: the port cannot be bound.
            StartupHookError: ``on_startup`` raised (a ``RuntimeError``; its error is the cause).
            RuntimeError: the server failed while starting.
        """
        if self.running:
            return
        configure_logging(self.settings.log_level)
        sock = None
        if self.transport != "stdio":
            sock = bind_socket(self.settings.host, self.settings.port)
            self.port = sock.getsockname()[1]
        settings = self.settings if sock is None else bound_settings(self.settings, sock)
        self.bridge = Bridge.build(self._source, settings)
        self.hooks.observe(self.bridge.router)
        warn_if_deprecated(self.transport)
        self._started.clear()
        self._error = None
        self._thread = threading.Thread(target=self._run, args=(sock,), name="apcore-mcp", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout) or self._error is not None:
            self.stop()
            self.wait(timeout)
            if isinstance(self._error, StartupHookError):
                raise self._error from self._error.__cause__
            raise RuntimeError("MCP server failed to start") from self._error

    def _run(self, sock: socket.socket | None) -> None:
        assert self.bridge is not None
        try:
            if sock is None:
                asyncio.run(self._run_stdio())
                return
            self._http = make_http_server(create_app(bridge=self.bridge), self.bridge)
            self._http.hooks = self.hooks
            # On the loop the event_loop setting names, as uvicorn's own run() would.
            with asyncio.Runner(loop_factory=self._http.config.get_loop_factory()) as runner:
                runner.run(self._serve_http(self._http, sock))
        except BaseException as exc:  # noqa: BLE001 - reported to start() on the caller's thread
            self._error = exc
            self._started.set()
        finally:
            if sock is not None:
                sock.close()

    async def _serve_http(self, server: HttpServer, sock: socket.socket) -> None:
        self._loop = asyncio.get_running_loop()
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.ready and not task.done():  # noqa: ASYNC110 - uvicorn exposes a flag only
            await asyncio.sleep(0.01)
        if server.startup_error is not None:
            await task
            raise server.startup_error
        self._started.set()
        await task

    async def _run_stdio(self) -> None:
        assert self.bridge is not None
        self._loop = asyncio.get_running_loop()
        self._stdio_task = asyncio.current_task()
        await run_stdio(self.bridge, handle_signals=False, on_ready=self._started.set, hooks=self.hooks)

    def stop(self) -> None:
        """Ask the server to shut down gracefully (non-blocking; see ``wait()``)."""
        if self._http is not None:
            self._http.should_exit = True
        elif self._loop is not None and self._stdio_task is not None:
            self._loop.call_soon_threadsafe(self._stdio_task.cancel)

    def wait(self, timeout: float | None = None) -> None:
        """Block until the server thread has finished."""
        if self._thread is not None:
            self._thread.join(timeout)
