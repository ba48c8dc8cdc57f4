"""``apcore-mcp --workers N``: N worker processes on one port, under uvicorn's supervisor.

This process (the supervisor) checks the settings, discovers the modules once to refuse a broken
directory before anything starts, holds the port, then hands over to uvicorn's ``Multiprocess``:
it starts N workers, restarts one that dies, and on SIGINT or SIGTERM stops them all, each
draining its calls within ``shutdown_timeout``. On Linux each worker listens on a socket of its
own and the kernel spreads new connections over them (``run/reuseport.py``); elsewhere they
share the supervisor's socket.

A worker is a fresh interpreter (spawned), so it builds its registry and app itself, from the
launch this process parsed: ``worker_app`` reads it from ``LAUNCH_VARIABLE`` in the environment
the workers inherit (it may hold secrets, as the operator's ``APCORE_MCP_*`` variables do; a
process's environment is readable by its own user only). What the workers share, and the key
sealing 2026-07-28 ``requestState``, live in their private store (``bridge/workers.py``), made
here once before they start.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from uvicorn.supervisors import Multiprocess

from apcore_mcp.bridge.workers import machine_directory, shared_request_state_key
from apcore_mcp.run.protocol.timed import http_protocol
from apcore_mcp.run.reuseport import WorkerListener, holding_socket, spreads_connections
from apcore_mcp.run.serve import bound_settings, build_settings
from apcore_mcp.run.serving import bind_socket, raise_open_files_limit
from apcore_mcp.settings import Settings, configure_logging

logger = logging.getLogger(__name__)

LAUNCH_VARIABLE = "_APCORE_MCP_WORKER_LAUNCH"
"""Outside ``APCORE_MCP_*``: the settings read from the environment refuse names they do not know."""
WORKER_APP = "apcore_mcp.run.workers:worker_app"
DRAIN_MARGIN_SECONDS = 2.0
"""uvicorn's own graceful limit sits above ``shutdown_timeout``: the app drains its calls first."""


def serve_workers(extensions_dir: Path, values: dict[str, Any], *, transport: str) -> None:
    """Serve ``extensions_dir`` with ``values["workers"]`` worker processes; block until stopped.

    Raises:
        ValueError: a transport other than Streamable HTTP (stdio has one client; a legacy SSE
            session lives in one process), or an invalid setting.
        OSError: the port cannot be bound.
    """
    if transport != "streamable-http":
        raise ValueError(
            f"--workers above 1 needs --transport streamable-http, not {transport}: "
            "stdio serves one client, and a legacy SSE session lives in one process"
        )
    settings = build_settings(values)  # type: ignore[arg-type]  # checked by Settings itself
    logger.debug("Open files limit: %d", raise_open_files_limit())
    spread = spreads_connections()
    sock = holding_socket(settings.host, settings.port) if spread else bind_socket(settings.host, settings.port)
    directory: Path | None = None
    try:
        settings = bound_settings(settings, sock)
        directory = machine_directory(os.getpid())  # the workers' parent is this process
        if not settings.request_state_keys:
            shared_request_state_key(os.getpid())  # made once, here, before any worker asks
        resolved = {**values, "port": settings.port, "workers": settings.workers}
        launch = {"extensions_dir": str(extensions_dir), "values": resolved}
        os.environ[LAUNCH_VARIABLE] = json.dumps(launch)  # spawned workers inherit it
        logger.info(
            "Listening on http://%s:%d with %d workers (MCP at /mcp)", settings.host, settings.port, settings.workers
        )
        listener: Any = WorkerListener(sock) if spread else sock  # each worker its own socket, where it can
        Multiprocess(worker_config(settings), sockets=[listener]).run()
    finally:
        os.environ.pop(LAUNCH_VARIABLE, None)
        sock.close()
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)


def worker_config(settings: Settings) -> uvicorn.Config:
    """uvicorn's config for the workers: the one ``make_http_server`` gives a single process."""
    return uvicorn.Config(
        WORKER_APP,
        factory=True,
        workers=settings.workers,
        loop=settings.event_loop,
        lifespan="on",
        log_config=None,
        access_log=False,
        proxy_headers=False,  # the app names the client from forwarded_allow_ips (http/forwarded.py)
        timeout_graceful_shutdown=int(settings.shutdown_timeout + DRAIN_MARGIN_SECONDS),
        ws="none",
        http=http_protocol(settings.http_parser),
        h11_max_incomplete_event_size=settings.max_header_bytes + 1024,
    )


def worker_app() -> Starlette:
    """One worker's app, built from the supervisor's launch (uvicorn calls it in each worker)."""
    from apcore_mcp.http.app import create_app
    from apcore_mcp.run.cli import discovered_registry

    launch = json.loads(os.environ[LAUNCH_VARIABLE])
    values: dict[str, Any] = launch["values"]
    configure_logging(values.get("log_level", "INFO"))
    registry = discovered_registry(Path(launch["extensions_dir"]), strict=bool(values.get("strict_modules")))
    return create_app(registry, build_settings(values))  # type: ignore[arg-type]
