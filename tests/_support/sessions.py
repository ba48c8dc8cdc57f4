"""MCP client sessions over every transport, and the notifications they receive.

The ``connect`` fixture (conftest.py) opens one of these for each transport in ``TRANSPORTS``:

- ``memory``/``memory-modern``: the SDK's in-process client (handshake era / 2026-07-28);
- ``http``/``http-modern``: uvicorn on an ephemeral 127.0.0.1 port, Streamable HTTP; 2026-07-28
  requests that answer once take the direct path (``http/direct.py``, on by default);
- ``http-modern-sdk``: the same 2026-07-28 client against an app with ``direct_path=False``,
  every request through the SDK, so each scenario proves both paths agree;
- ``sse``: the same app's legacy SSE endpoint;
- ``stdio``: a subprocess running ``python -m tests.stdio_server``.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters
from prometheus_client.parser import text_string_to_metric_families

from apcore_mcp.bridge import Bridge
from apcore_mcp.run.serving import serving_http

TESTS_DIR = Path(__file__).resolve().parents[1]
REPO = TESTS_DIR.parent
TRANSPORTS = ["memory", "memory-modern", "http", "http-modern", "http-modern-sdk", "sse", "stdio"]
MODERN = frozenset({"memory-modern", "http-modern", "http-modern-sdk"})  # the 2026-07-28 client
SDK_PATH = "http-modern-sdk"  # the only transport whose server has ``direct_path=False``
DIRECT_REQUESTS = "apcore_mcp_direct_requests_total"


@dataclass
class Inbox:
    """Notifications a client received, with their arrival times and a way to wait for one."""

    arrivals: list[tuple[str, float]] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def handler(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if isinstance(method, str) and method.startswith("notifications/"):
            self.arrivals.append((method, time.monotonic()))
            self.arrived.set()

    def clear(self) -> None:
        self.arrivals.clear()

    async def wait_for(self, method: str, timeout: float = 5.0) -> float:
        """The arrival time of the first ``method`` notification since the last ``clear()``."""
        try:
            async with asyncio.timeout(timeout):
                while True:
                    for name, at in self.arrivals:
                        if name == method:
                            return at
                    self.arrived.clear()
                    await self.arrived.wait()
        except TimeoutError:
            pytest.fail(f"{method} did not arrive within {timeout}s")


@dataclass
class Connected:
    """What a test gets: a session-like client and the transport it runs on."""

    transport: str
    client: Any
    inbox: Inbox
    bridge: Bridge | None = None

    @property
    def modern(self) -> bool:
        return self.transport in MODERN


@contextlib.asynccontextmanager
async def running_http(bridge: Bridge) -> AsyncIterator[str]:
    """uvicorn serving ``bridge`` on a free 127.0.0.1 port in this event loop; yields the base URL."""
    async with serving_http(bridge) as (_server, url):
        yield url


@contextlib.asynccontextmanager
async def open_session(transport: str, url_or_bridge: Any, inbox: Inbox, **callbacks: Any) -> AsyncIterator[Any]:
    """A connected client for an existing server (an HTTP base URL, or a Bridge for memory).

    ``callbacks`` are the SDK client's (``elicitation_callback``, ``sampling_callback``,
    ``list_roots_callback``, ``logging_callback``; ``log_level`` opts 2026-07-28 requests into logs).
    """
    if transport in ("memory", "memory-modern"):
        mode = "legacy" if transport == "memory" else "auto"
        async with Client(
            url_or_bridge.server, mode=mode, message_handler=inbox.handler, cache=None, **callbacks
        ) as client:
            yield client
    elif transport in ("http", "http-modern", SDK_PATH):
        mode = "legacy" if transport == "http" else "auto"
        async with Client(
            f"{url_or_bridge}/mcp", mode=mode, message_handler=inbox.handler, cache=None, **callbacks
        ) as client:
            yield client
    elif transport == "sse":
        callbacks.pop("log_level", None)
        async with (
            sse_client(f"{url_or_bridge}/sse") as (read, write),
            ClientSession(read, write, message_handler=inbox.handler, **callbacks) as session,
        ):
            await session.initialize()
            yield session
    else:
        raise ValueError(transport)


def direct_requests_in(metrics: str) -> float:
    """How many requests a server answered on the direct path, all methods, from its ``/metrics`` text."""
    return sum(
        sample.value
        for family in text_string_to_metric_families(metrics)
        for sample in family.samples
        if sample.name == DIRECT_REQUESTS
    )


async def direct_requests(url: str) -> float:
    """How many requests the server at base ``url`` answered on the direct path so far."""
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.get(f"{url}/metrics")
    response.raise_for_status()
    return direct_requests_in(response.text)


def stdio_params(*args: str) -> StdioServerParameters:
    """``tests/stdio_server.py`` run as a module of the ``tests`` package, from the repository root."""
    return StdioServerParameters(command=sys.executable, args=["-m", "tests.stdio_server", *args], cwd=REPO)


OpenClient = Callable[..., contextlib.AbstractAsyncContextManager[Connected]]


async def call_text(client: Any, name: str, arguments: dict[str, Any] | None = None) -> tuple[str, bool]:
    result = await client.call_tool(name, arguments or {})
    return result.content[0].text, bool(result.is_error)
