"""Shared helpers of the hostile suite: raw MCP requests, metrics, waiting, servers in this loop or a process."""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import uvicorn
from apcore import Executor, Registry
from prometheus_client.parser import text_string_to_metric_families
from starlette.types import ASGIApp

from apcore_mcp.bridge import Bridge
from apcore_mcp.run.serving import bind_socket
from apcore_mcp.settings import Settings
from apcore_mcp.testing import free_port

from tests._support.hostile_modules import hostile_registry
from tests._support.processes import stop_process, wait_ok
from tests._support.sessions import running_http

REPO = Path(__file__).resolve().parents[2]
HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "hostile", "version": "1"}},
}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "hostile", "version": "1"},
}


def session_headers(session_id: str) -> dict[str, str]:
    return {**ACCEPT, "mcp-session-id": session_id, "mcp-protocol-version": HANDSHAKE}


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {**ACCEPT, "mcp-protocol-version": MODERN, "mcp-method": method}
    return {**headers, "mcp-name": name} if name else headers


def tool_call(request_id: int | str, name: str, arguments: dict[str, Any], *, modern: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if modern:
        params["_meta"] = MODERN_META
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


async def explorer_call(
    http: httpx.AsyncClient,
    url: str,
    name: str,
    arguments: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """A 2026-07-28 ``tools/call`` of ``name`` on the explorer's door, ``{url}/explorer/mcp`` (one POST)."""
    message = tool_call(1, name, arguments or {}, modern=True)
    return await http.post(
        f"{url}/explorer/mcp", json=message, headers={**modern_headers("tools/call", name), **(headers or {})}
    )


async def open_session(http: httpx.AsyncClient, url: str, *, initialized: bool = True) -> str:
    """A handshake-era session id; ``initialized=False`` leaves it half-open."""
    response = await http.post(f"{url}/mcp", json=INIT, headers=ACCEPT)
    assert response.status_code == 200, response.text
    session_id = response.headers["mcp-session-id"]
    if initialized:
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(f"{url}/mcp", json=note, headers=session_headers(session_id))).status_code == 202
    return session_id


def sse_payload(text: str) -> dict[str, Any]:
    """The last JSON-RPC message of an SSE body (or the body itself when it is JSON)."""
    import json

    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    message: dict[str, Any] = json.loads(data[-1] if data else text)
    return message


async def sse_data(lines: AsyncIterator[str], needle: str) -> str:
    """The first ``data:`` line of a legacy SSE stream holding ``needle`` (within 10 s)."""
    with anyio.fail_after(10):
        while True:
            line = await anext(lines)
            if line.startswith("data:") and needle in line:
                return line.removeprefix("data:").strip()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def metric(text: str, name: str, **labels: str) -> float:
    return samples(text).get((name, tuple(sorted(labels.items()))), 0.0)


async def metrics_text(url: str) -> str:
    async with httpx.AsyncClient() as http:
        return (await http.get(f"{url}/metrics")).text


async def wait_until(check: Callable[[], Any], what: str, timeout: float = 20.0) -> None:
    """Poll ``check`` (sync or async) until truthy; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return
        await asyncio.sleep(0.02)
    pytest.fail(f"not within {timeout}s: {what}")


@contextlib.asynccontextmanager
async def serving(registry: Registry | Executor | None = None, **settings: Any) -> AsyncIterator[tuple[str, Bridge]]:
    """The hostile registry (or ``registry``, or an executor) served by uvicorn in this event loop."""
    bridge = Bridge.build(registry or hostile_registry(), Settings(**settings))
    async with running_http(bridge) as url:
        yield url, bridge


@contextlib.contextmanager
def server_process(*settings: str, log: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``python -m tests.hostile.server streamable-http`` in a process of its own (stderr to ``log``); stopped by PID."""
    port = free_port()
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.hostile.server", "streamable-http", f"port={port}", *settings],
            stdout=subprocess.DEVNULL,
            stderr=sink,
            cwd=REPO,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ok(f"{url}/health", proc, details=lambda: log.read_text(errors="replace"))
        yield proc, url
    finally:
        stop_process(proc)


NGINX_CONF = REPO / "deploy" / "nginx.conf"


@contextlib.contextmanager
def nginx_in_front(upstream: str, tmp: Path, **overrides: str) -> Iterator[str]:
    """The shipped ``deploy/nginx.conf`` proxying to ``upstream`` on a free 127.0.0.1 port; its URL.

    ``overrides`` replace directives' values (``client_body_timeout="1s"``) to keep tests short.
    """
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        pytest.fail("nginx is not installed: apt-get install -y nginx")
    port = free_port()
    conf = NGINX_CONF.read_text().replace("apcore-mcp:8000", upstream.removeprefix("http://"))
    conf = conf.replace("listen 80;", f"listen 127.0.0.1:{port};")
    for directive, value in overrides.items():
        conf, count = re.subn(rf"\b{directive} [^;]+;", f"{directive} {value};", conf)
        assert count, directive
    prefix = tmp / "nginx"
    prefix.mkdir()
    (prefix / "nginx.conf").write_text(conf)
    log = tmp / "nginx.log"
    command = [nginx, "-e", "stderr", "-p", f"{prefix}/", "-c", str(prefix / "nginx.conf")]
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [*command, "-g", f"daemon off; pid {prefix}/nginx.pid;"], stdout=subprocess.DEVNULL, stderr=sink
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ok(f"{url}/health", proc, details=lambda: log.read_text(errors="replace"))
        yield url
    finally:
        stop_process(proc)


def error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if " ERROR " in line or "Traceback" in line]


@contextlib.asynccontextmanager
async def uvicorn_told(host: str, app: ASGIApp) -> AsyncIterator[str]:
    """``app`` served as ``uvicorn app:create_app --factory --host HOST`` runs it (its Server, its signal
    handlers, the app's settings knowing nothing of HOST), listening on a loopback socket only."""
    server = uvicorn.Server(uvicorn.Config(app, host=host, log_config=None))
    sock = bind_socket("127.0.0.1", 0)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            assert not task.done(), task.exception()
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()
