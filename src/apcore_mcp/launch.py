"""``serve()``: the blocking entry point behind the CLI and most embedders."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import anyio

from apcore_mcp.bridge import Bridge, resolve_source
from apcore_mcp.http_app import create_app
from apcore_mcp.serving import bind_socket, make_http_server, run_stdio
from apcore_mcp.settings import Settings, configure_logging, normalize_transport

logger = logging.getLogger(__name__)


def build_settings(
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    name: str = "apcore-mcp",
    version: str | None = None,
    tags: Sequence[str] | None = None,
    prefix: str | None = None,
    log_level: str | None = None,
    dynamic: bool = False,
    stateless: bool = False,
    json_response: bool = False,
    allowed_hosts: Sequence[str] | None = None,
    allowed_origins: Sequence[str] | None = None,
    shutdown_timeout: float = 3.0,
) -> Settings:
    """``Settings`` from ``serve()``'s keyword arguments (validated, with the SRS messages)."""
    return Settings(
        host=host,
        port=port,
        name=name,
        version=version,
        tags=tuple(tags) if tags is not None and not isinstance(tags, str) else tags,  # type: ignore[arg-type]
        prefix=prefix,
        log_level=log_level,
        dynamic=dynamic,
        stateless=stateless,
        json_response=json_response,
        allowed_hosts=tuple(allowed_hosts or ()),
        allowed_origins=tuple(allowed_origins or ()),
        shutdown_timeout=shutdown_timeout,
    )


def serve(registry_or_executor: Any, *, transport: str = "stdio", **options: Any) -> None:
    """Serve every module of a Registry (or an Executor's registry) as MCP tools; block until stopped.

    ``transport`` is ``"stdio"`` (default), ``"streamable-http"`` (``/mcp``) or ``"sse"``
    (``/sse``, deprecated); the HTTP transports serve one app with both endpoints and
    ``/health``. ``options`` are ``Settings`` fields: ``host``, ``port``, ``name``,
    ``version``, ``tags``, ``prefix``, ``log_level``, ``dynamic``, ``stateless``,
    ``json_response``, ``allowed_hosts``, ``allowed_origins``, ``shutdown_timeout``.
    ``host``/``port`` are ignored for stdio. SIGINT/SIGTERM stop the server gracefully.

    Raises:
        TypeError: ``registry_or_executor`` is neither a Registry nor an Executor.
        ValueError: a setting is invalid (the message names it).
        OSError: the HTTP port cannot be bound.
    """
    resolve_source(registry_or_executor)
    transport = normalize_transport(transport)
    settings = build_settings(**options)
    configure_logging(settings.log_level)
    if transport == "stdio":
        bridge = Bridge.build(registry_or_executor, settings)
        _log_started(bridge, transport)
        try:
            anyio.run(run_stdio, bridge)
        finally:
            bridge.close()
        return
    sock = bind_socket(settings.host, settings.port)
    try:
        bridge = Bridge.build(registry_or_executor, settings)
        warn_if_deprecated(transport)
        server = make_http_server(create_app(bridge=bridge), bridge)
        _log_started(bridge, transport)
        logger.info("Listening on http://%s:%d (MCP at /mcp, SSE at /sse)", settings.host, settings.port)
        server.run(sockets=[sock])
    finally:
        sock.close()


def warn_if_deprecated(transport: str) -> None:
    if transport == "sse":
        logger.warning("SSE transport is deprecated; use streamable-http instead")


def _log_started(bridge: Bridge, transport: str) -> None:
    logger.info("apcore-mcp server started: %d tools registered, transport=%s", len(bridge.catalog), transport)
