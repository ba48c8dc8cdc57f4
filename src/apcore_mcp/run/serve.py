"""``serve()``: the blocking entry point behind the CLI and most embedders."""

from __future__ import annotations

import gc
import logging
import os
import socket
from functools import partial
from typing import Any, Unpack

import anyio

from apcore_mcp.bridge import Bridge, registry_of
from apcore_mcp.http.app import create_app
from apcore_mcp.run.hooks import CallMetrics, Hook, ServeHooks
from apcore_mcp.run.serving import bind_socket, make_http_server, raise_open_files_limit, run_stdio
from apcore_mcp.run.started import tools_line
from apcore_mcp.run.telemetry import configure_tracing
from apcore_mcp.run.version import version_line
from apcore_mcp.settings import Settings, SettingsOptions, configure_logging, normalize_transport
from apcore_mcp.settings.declared import options as declared_options
from apcore_mcp.types import RegistryOrExecutor

logger = logging.getLogger(__name__)

_LIST_SETTINGS = tuple(opt.name for opt in declared_options() if opt.kind == "list")


def build_settings(options: SettingsOptions) -> Settings:
    """``Settings`` from ``serve()``'s keyword arguments (lists accepted where tuples are stored).

    Raises:
        TypeError: an unknown option.
        ValueError: an invalid value (the SRS messages).
    """
    values: dict[str, Any] = dict(options)
    for name in _LIST_SETTINGS:
        value = values.get(name)
        if value is not None and not isinstance(value, str):
            values[name] = tuple(value)
    for name in ("allowed_hosts", "allowed_origins"):
        if name in values and values[name] is None:
            del values[name]
    return Settings(**values)


def one_process(settings: Settings, runner: str) -> None:
    """Refuse ``workers`` above 1 in a runner that serves in the caller's own process.

    Raises:
        ValueError: naming what runs several workers instead.
    """
    if settings.workers > 1:
        raise ValueError(
            f"workers={settings.workers}: {runner} serves in this one process; several workers each build "
            "the app themselves: run `apcore-mcp --workers N`, or an app factory under "
            "`uvicorn module:factory --factory --workers N` (docs/workers.md)"
        )


def serve(
    registry_or_executor: RegistryOrExecutor,
    *,
    transport: str = "stdio",
    on_startup: Hook | None = None,
    on_shutdown: Hook | None = None,
    metrics_collector: CallMetrics | None = None,
    **options: Unpack[SettingsOptions],
) -> None:
    """Serve every module of a Registry (or an Executor's registry) as MCP tools; block until stopped.

    ``transport`` is ``"stdio"`` (default), ``"streamable-http"`` (``/mcp``) or ``"sse"``
    (``/sse``, deprecated); the HTTP transports serve one app with both endpoints and
    ``/health``. ``options`` are ``Settings`` fields: ``host``, ``port``, ``name``,
    ``version``, ``tags``, ``prefix``, ``log_level``, ``dynamic``, ``stateless``,
    ``json_response``, ``allowed_hosts``, ``allowed_origins``, ``shutdown_timeout``,
    ``metrics``, ``explorer``, ``explorer_prefix``, ``allow_execute``, ``execute_token``
    and the rest of ``SettingsOptions`` (one key per ``Settings`` field, typed for mypy).
    ``host``/``port`` are ignored for stdio. SIGINT/SIGTERM stop the server gracefully.

    ``on_startup`` runs once the server is ready (HTTP: the port bound and the app started;
    stdio: stdin and stdout open), ``on_shutdown`` once it has stopped (no new connections, calls
    in flight finished), each once, plain or ``async``. ``metrics_collector`` (an
    ``apcore.MetricsCollector``) is told each tool call's module id, outcome and duration.

    Raises:
        TypeError: ``registry_or_executor`` is neither a Registry nor an Executor; a callback is
            not callable; ``metrics_collector`` lacks the ``MetricsCollector`` methods.
        ValueError: a setting is invalid (the message names it); ``OTEL_TRACES_EXPORTER`` names an
            exporter that is not installed.
        OSError: the HTTP port cannot be bound.
        StartupHookError: ``on_startup`` raised (its error is the cause); the server has stopped.
    """
    registry_of(registry_or_executor)
    hooks = ServeHooks(on_startup=on_startup, on_shutdown=on_shutdown, metrics_collector=metrics_collector)
    transport = normalize_transport(transport)
    settings = build_settings(options)
    one_process(settings, "serve()")
    configure_logging(settings.log_level)
    configure_tracing(os.environ)
    if transport == "stdio":
        bridge = Bridge.build(registry_or_executor, settings)
        hooks.observe(bridge.router)
        ready = partial(_started, bridge, transport)
        anyio.run(partial(run_stdio, bridge, on_ready=ready, hooks=hooks))
        return
    logger.debug("Open files limit: %d", raise_open_files_limit())
    sock = bind_socket(settings.host, settings.port)
    try:
        settings = bound_settings(settings, sock)
        bridge = Bridge.build(registry_or_executor, settings)
        hooks.observe(bridge.router)
        warn_if_deprecated(transport)
        server = make_http_server(create_app(bridge=bridge), bridge)
        server.on_started = partial(_started, bridge, transport)  # once the lifespan mounted upstreams
        server.hooks = hooks
        logger.info("Listening on http://%s:%d (MCP at /mcp, SSE at /sse)", settings.host, settings.port)
        server.run(sockets=[sock])
    finally:
        sock.close()
    if server.startup_error is not None:
        raise server.startup_error


def bound_settings(settings: Settings, sock: socket.socket) -> Settings:
    """``settings`` with the port the socket got: ``port=0`` asks for any free one, and the logs,
    the URLs the server gives out (OAuth resource metadata) and ``BackgroundServer.url`` say the real one."""
    port = int(sock.getsockname()[1])
    return settings if port == settings.port else settings.replace(port=port)


def warn_if_deprecated(transport: str) -> None:
    if transport == "sse":
        logger.warning("SSE transport is deprecated; use streamable-http instead")


def _started(bridge: Bridge, transport: str) -> None:
    # serve() owns its process: what start-up built (modules, schemas, the app) lives as long as
    # it does, so the collector's full passes need not walk it. Those passes were the 10-connection
    # p99 of a 2026 tools/call (~60 ms against a ~5 ms p50); after the freeze they walk only what
    # requests create. The garbage of start-up is collected first, not frozen.
    gc.collect()
    gc.freeze()
    logger.debug("%d start-up objects left out of the collector's passes", gc.get_freeze_count())
    identity = bridge.settings
    logger.info("%s; clients see server %r version %s", version_line(), identity.name, identity.server_version())
    logger.info("apcore-mcp server started, %s", tools_line(bridge, transport))
