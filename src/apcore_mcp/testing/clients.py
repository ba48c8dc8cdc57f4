"""MCP SDK clients for a server under test: connected sessions in either protocol era, the
readiness probe (a completed handshake, run on a worker thread so it works from sync and
async code alike), and reading the scripted server's request record."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import Client, ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from apcore_mcp.testing.scripted.server import select

ERAS = {"legacy": "legacy", "modern": "auto"}


class ProbeFailed(RuntimeError):
    """The handshake did not complete; the message says why."""


def stdio_parameters(params: Mapping[str, Any]) -> StdioServerParameters:
    return StdioServerParameters(
        command=params["command"], args=list(params["args"]), env=dict(params.get("env") or {}), cwd=params.get("cwd")
    )


def client_mode(era: str) -> str:
    """``legacy`` = the 2025-11-25 handshake; ``modern`` = 2026-07-28 (``mcp.Client(mode="auto")``)."""
    if era not in ERAS:
        raise ValueError(f"Unknown era {era!r}: expected 'legacy' or 'modern'")
    return ERAS[era]


def connect(
    transport: str, url: str, params: Mapping[str, Any], *, era: str = "legacy", **options: Any
) -> contextlib.AbstractAsyncContextManager[Client]:
    """An ``mcp.Client`` for a server on ``transport`` (SSE speaks only the legacy era).

    Response caching is off unless ``options`` says otherwise: a test must see every answer.
    """
    mode = client_mode(era)
    options.setdefault("cache", None)
    if transport == "streamable-http":
        return Client(url, mode=mode, **options)
    if transport == "sse":
        if era != "legacy":
            raise ValueError("the SSE transport has no 2026-07-28 era: use era='legacy'")
        return Client(sse_client(url), mode=mode, **options)
    if transport == "stdio":
        return Client(stdio_parameters(params), mode=mode, **options)
    raise ValueError(f"Unknown transport {transport!r}")


def probe(transport: str, url: str, params: Mapping[str, Any], *, timeout: float, errlog: Path | None = None) -> None:
    """Complete an ``initialize`` handshake with the server, on a worker thread.

    Raises:
        ProbeFailed: the handshake failed or did not finish within ``timeout`` seconds.
    """
    with (
        open(errlog or os.devnull, "a", encoding="utf-8") as log,
        concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="mcp-probe") as pool,
    ):
        future = pool.submit(anyio.run, _handshake, transport, url, params, timeout, log)
        try:
            future.result()  # bounded inside: the handshake by ``timeout``, the SDK's shutdown by its own limits
        except ProbeFailed:
            raise
        except Exception as exc:  # the edge of a probe: any failure means "not ready"
            raise ProbeFailed(f"{type(exc).__name__}: {exc}") from exc


async def _handshake(transport: str, url: str, params: Mapping[str, Any], seconds: float, log: TextIO) -> None:
    try:
        with anyio.fail_after(seconds):
            async with _probe_session(transport, url, params, log) as session:
                await session.initialize()
    except TimeoutError:
        raise ProbeFailed(f"no handshake within {seconds:g}s") from None


@contextlib.asynccontextmanager
async def _probe_session(
    transport: str, url: str, params: Mapping[str, Any], log: TextIO
) -> AsyncIterator[ClientSession]:
    async with contextlib.AsyncExitStack() as stack:
        if transport == "stdio":
            streams = await stack.enter_async_context(stdio_client(stdio_parameters(params), errlog=log))
        elif transport == "sse":
            streams = await stack.enter_async_context(sse_client(url))
        else:
            streams = await stack.enter_async_context(streamable_http_client(url))
        yield await stack.enter_async_context(ClientSession(*streams))


def read_record(path: Path, *, method: str | None = None, test_case: str | None = None) -> list[dict[str, Any]]:
    """The entries of a request record file (JSON lines), optionally only one method or test case."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    return select([json.loads(line) for line in lines if line.strip()], method, test_case)
