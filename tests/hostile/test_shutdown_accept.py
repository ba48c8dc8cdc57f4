"""At the stop, connections the server has not served yet are answered, not reset.

A proxy in front of replicas (nginx, round-robin) opens a connection and writes the request at
once. When the replica stops, two kinds of connection would otherwise fail a request the proxy
will not resend elsewhere (a POST): those the kernel had completed but the server had not yet
accepted (closing the listening socket resets them), and those accepted but whose request had
not been read yet (uvicorn closes a connection without a request as idle). Both are served,
then closed; a connection made after the stop is refused, which a proxy retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import AsyncIterator

import pytest

from apcore_mcp import Settings
from apcore_mcp.bridge import Bridge
from apcore_mcp.run.serving import HttpServer, serving_http

from tests._support.hostile_modules import hostile_registry

QUEUED = 20
pytestmark = pytest.mark.parametrize("http_parser", ["h11", "httptools"])  # each timed protocol


@contextlib.asynccontextmanager
async def server_in_loop(http_parser: str) -> AsyncIterator[tuple[HttpServer, int]]:
    bridge = Bridge.build(hostile_registry(), Settings(http_parser=http_parser))
    async with serving_http(bridge) as (server, url):
        yield server, int(url.rsplit(":", 1)[1])


def request(port: int) -> bytes:
    return f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (b"" or a partial reply if it resets)."""
    sock.settimeout(10)
    chunks = []
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


async def accepted_then_stopped(server: HttpServer, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection the server has accepted (no request on it yet); then the server is told to stop."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    async with asyncio.timeout(5):
        while not server.server_state.connections:
            await asyncio.sleep(0.01)
    server.should_exit = True
    return reader, writer


async def test_a_connection_accepted_before_the_stop_is_served_when_its_request_comes_after(http_parser: str) -> None:
    async with server_in_loop(http_parser) as (server, port):
        reader, writer = await accepted_then_stopped(server, port)
        async with asyncio.timeout(5):
            while not await asyncio.to_thread(refused, port):  # the stop has begun
                await asyncio.sleep(0.01)
        writer.write(request(port))
        async with asyncio.timeout(10):
            reply = await reader.read()  # to the end: the server closes the connection after it
        writer.close()
    head = reply.split(b"\r\n\r\n", 1)[0].lower()
    assert head.startswith(b"http/1.1 200"), reply
    assert b'"status":"ok"' in reply.replace(b" ", b"")


async def test_a_connection_that_brings_no_request_is_closed_quietly_and_does_not_hold_the_stop(
    caplog: pytest.LogCaptureFixture, http_parser: str
) -> None:
    caplog.set_level(logging.INFO)
    async with server_in_loop(http_parser) as (server, port):
        reader, writer = await accepted_then_stopped(server, port)
        async with asyncio.timeout(5):  # the grace is 0.5 s; uvicorn's own stop would wait 1 s more
            assert await reader.read() == b""
        writer.close()
    messages = [record.getMessage() for record in caplog.records]
    assert not [m for m in messages if "not received in time" in m]  # not taken for a slow client
    assert not [m for m in messages if "timeout graceful shutdown exceeded" in m]


async def test_connections_queued_in_the_kernel_at_the_stop_are_served_not_reset(http_parser: str) -> None:
    clients: list[socket.socket] = []
    stopping: list[asyncio.Task[None]] = []

    async with server_in_loop(http_parser) as (server, port):

        def queue_then_stop() -> None:
            # The event loop is busy here (as under load), so the kernel completes these
            # connections and keeps the requests, unaccepted; the stop then begins before the
            # loop polls the listening socket again.
            for _ in range(QUEUED):
                client = socket.create_connection(("127.0.0.1", port), timeout=5)
                client.sendall(request(port))
                clients.append(client)
            time.sleep(0.05)
            stopping.append(asyncio.ensure_future(server.stop_accepting()))

        accepted_before = len(server.server_state.connections)
        asyncio.get_running_loop().call_soon(queue_then_stop)
        async with asyncio.timeout(10):
            while not stopping:
                await asyncio.sleep(0.01)
            await stopping[0]
        assert accepted_before == 0
        assert await asyncio.to_thread(refused, port)
        server.should_exit = True
        replies = await asyncio.gather(*(asyncio.to_thread(read_all, client) for client in clients))
    for client in clients:
        client.close()
    statuses = [reply.split(b"\r\n", 1)[0] for reply in replies]
    assert statuses == [b"HTTP/1.1 200 OK"] * QUEUED
