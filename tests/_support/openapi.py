"""The OpenAPI test service (tests/upstreams/openapi_service.py) on a free 127.0.0.1 port, in this event loop or
as a process of its own, and the bridge serving it through an ``mcp.json`` with an ``openapi`` entry."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import uvicorn
from apcore import Executor, Registry
from mcp import Client
from starlette.applications import Starlette

from apcore_mcp.bridge import Bridge
from apcore_mcp.bridge.service import BridgeService
from apcore_mcp.run.serving import bind_socket
from apcore_mcp.settings import Settings
from apcore_mcp.testing import free_port

from tests._support.processes import stop_process, wait_ok
from tests.upstreams.openapi_service import service_app

SERVICE = Path(__file__).resolve().parents[1] / "upstreams" / "openapi_service.py"
SECRET = "sk-openapi-7c41d9e2-never-shown"
"""The bearer token the service wants, given to apcore-mcp only as ``${SHOP_TOKEN}``."""


@contextlib.asynccontextmanager
async def service_in_loop(secret: str = SECRET) -> AsyncIterator[tuple[str, Starlette]]:
    """The service served by uvicorn in this event loop; yields (base URL, app)."""
    app = service_app(secret)
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, log_level="warning"))
    sock = bind_socket("127.0.0.1", 0)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(10):
            while not server.started:
                assert not task.done(), task
                await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", app
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()


@contextlib.contextmanager
def service_process(secret: str = SECRET) -> Iterator[str]:
    """The service as a process of its own (for a server process that reads its document at start)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVICE), "--port", str(port), "--secret", secret],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_ok(f"http://127.0.0.1:{port}/health", proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(proc)


@contextlib.asynccontextmanager
async def trickling_document(*, seconds: float, every: float = 0.5) -> AsyncIterator[str]:
    """A document URL on 127.0.0.1 whose server answers ``200`` and its headers at once, then one byte
    of the body every ``every`` seconds for ``seconds`` (bounded), never all of it."""
    answering: set[asyncio.Task[Any]] = set()
    stopping = asyncio.Event()  # ends each answer (a cancelled stream handler would log an ERROR)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        answering.add(task)
        try:
            await reader.readuntil(b"\r\n\r\n")  # the request head, bounded by the reader's 64 KiB limit
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
            for _ in range(int(seconds / every)):
                writer.write(b" ")
                await writer.drain()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), every)
                if stopping.is_set():
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the reader gave up: what a deadline does
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/openapi.json"
    finally:
        server.close()
        stopping.set()
        await asyncio.gather(*answering, return_exceptions=True)
        await server.wait_closed()


def shop_entry(base: str, **fields: Any) -> dict[str, Any]:
    """The ``mcpServers`` entry of the service, its token from ``${SHOP_TOKEN}``."""
    return {"openapi": f"{base}/openapi.json", "headers": {"Authorization": "Bearer ${SHOP_TOKEN}"}, **fields}


@contextlib.asynccontextmanager
async def shop_bridge(
    tmp_path: Path,
    servers: dict[str, Any],
    *,
    toolsets: dict[str, Any] | None = None,
    registry: Registry | Executor | None = None,
    **settings: Any,
) -> AsyncIterator[Bridge]:
    """A bridge serving ``servers`` from an ``mcp.json`` (``SHOP_TOKEN`` set to ``SECRET``), mounted."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers, "toolsets": toolsets or {}}))
    with _environ(SHOP_TOKEN=SECRET):
        bridge = Bridge.build(registry or Registry(), Settings(mcp_config=str(config), **settings))
        async with BridgeService(bridge, handle_sighup=False):
            yield bridge


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def client(bridge: Bridge, **callbacks: Any) -> Client:
    """A 2025-11-25 (handshake era) SDK client of ``bridge`` in memory."""
    return Client(bridge.server, mode="legacy", cache=None, **callbacks)
