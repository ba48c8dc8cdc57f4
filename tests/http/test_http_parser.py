"""Which HTTP parser and event loop the server runs on: the ``http_parser`` and ``event_loop`` settings."""

from __future__ import annotations

import asyncio
import logging
import socket

import httpx
import pytest

from apcore_mcp import BackgroundServer
from apcore_mcp.bridge import Bridge
from apcore_mcp.run.serving import serving_http
from apcore_mcp.settings import SettingError, Settings

from tests._support.hostile_modules import hostile_registry


async def connection_class(http_parser: str | None) -> str:
    """The protocol class of a connection the running server holds (``None``: the default setting)."""
    settings = Settings() if http_parser is None else Settings(http_parser=http_parser)
    async with serving_http(Bridge.build(hostile_registry(), settings)) as (server, url):
        host, port = url.removeprefix("http://").split(":")
        _, writer = await asyncio.open_connection(host, int(port))
        try:
            async with asyncio.timeout(5):
                while not server.server_state.connections:
                    await asyncio.sleep(0.01)
            return type(next(iter(server.server_state.connections))).__name__
        finally:
            writer.close()


@pytest.mark.parametrize(
    ("http_parser", "expected", "logged"),
    [
        (None, "TimedHttpToolsProtocol", "HTTP on the httptools parser"),  # auto: httptools is installed here
        ("httptools", "TimedHttpToolsProtocol", "HTTP on the httptools parser"),
        ("h11", "TimedH11Protocol", "HTTP on the h11 parser"),
    ],
)
async def test_auto_runs_httptools_when_installed_and_h11_when_asked(
    http_parser: str | None, expected: str, logged: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="apcore_mcp")
    assert await connection_class(http_parser) == expected
    assert any(record.getMessage().startswith(logged) for record in caplog.records)


# None: the default, asyncio's loop even with uvloop installed (uvloop's 200-connection tail: docs/performance.md).
@pytest.mark.parametrize(
    ("event_loop", "logged"), [(None, "asyncio"), ("auto", "uvloop"), ("asyncio", "asyncio"), ("uvloop", "uvloop")]
)
def test_the_background_server_runs_on_the_event_loop_the_setting_names(
    event_loop: str | None, logged: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="apcore_mcp")
    if event_loop is None:
        server = BackgroundServer(hostile_registry(), port=0, http_parser="h11")
    else:
        server = BackgroundServer(hostile_registry(), port=0, http_parser="h11", event_loop=event_loop)
    server.start()
    try:
        lines = [record.getMessage() for record in caplog.records if record.getMessage().startswith("HTTP on")]
    finally:
        server.stop()
        server.wait(10)
    assert lines == [f"HTTP on the h11 parser and the {logged} event loop"]


@pytest.mark.parametrize("name", ["http_parser", "event_loop"])
def test_an_unknown_value_is_an_error_naming_the_setting(name: str) -> None:
    with pytest.raises(SettingError, match=f"^{name} must be one of: auto, ") as raised:
        Settings(**{name: "fast"})  # type: ignore[arg-type]
    assert raised.value.field == name


@pytest.mark.parametrize("parser", ["h11", "httptools"])
async def test_every_connection_sends_at_once_whatever_socket_accepted_it(parser: str) -> None:
    """uvicorn's --workers socket is made without a protocol number, so asyncio leaves Nagle on
    for its connections; our protocols turn it off (else two-part replies wait 40 ms for an ACK)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # proto 0, as uvicorn's bind_socket
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    bridge = Bridge.build(hostile_registry(), Settings(http_parser=parser))
    async with serving_http(bridge, sock) as (server, base), httpx.AsyncClient() as client:
        assert (await client.get(f"{base}/health")).status_code == 200  # kept alive: still accepted
        (connection,) = server.server_state.connections
        accepted = connection.transport.get_extra_info("socket")
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
