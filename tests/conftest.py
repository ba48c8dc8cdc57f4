"""Fixtures shared by every test: ``connect``, real MCP clients over real transports.

``connect`` yields an async factory ``open_client(**settings) -> async context manager``
giving a ``Connected`` client (``tests._support.sessions``) of a fresh server for the test
registry, once per transport in ``TRANSPORTS``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

import pytest
from mcp import Client

from apcore_mcp.bridge import Bridge, BridgeService
from apcore_mcp.settings import Settings

from tests._support.auth import Issuer, mock_jwks
from tests._support.browser import launched_browser
from tests._support.modules import make_executor
from tests._support.sessions import TRANSPORTS, Connected, Inbox, OpenClient, open_session, running_http, stdio_params

if TYPE_CHECKING:
    from playwright.async_api import Browser


@pytest.fixture(params=TRANSPORTS)
def connect(request: pytest.FixtureRequest) -> OpenClient:
    transport: str = request.param

    @contextlib.asynccontextmanager
    async def open_client(
        *, dynamic: bool = False, prefix: str | None = None, **callbacks: Any
    ) -> AsyncIterator[Connected]:
        inbox = Inbox()
        if transport == "stdio":
            args = [*(["--dynamic"] if dynamic else []), *(["--prefix", prefix] if prefix else [])]
            async with Client(stdio_params(*args), mode="legacy", message_handler=inbox.handler, **callbacks) as client:
                yield Connected(transport, client, inbox)
            return
        bridge = Bridge.build(make_executor(), Settings(dynamic=dynamic, prefix=prefix))
        if transport.startswith("memory"):  # in memory, the test hosts the service (over HTTP, the app does)
            async with BridgeService(bridge), open_session(transport, bridge, inbox, **callbacks) as client:
                yield Connected(transport, client, inbox, bridge)
        else:
            async with running_http(bridge) as url, open_session(transport, url, inbox, **callbacks) as client:
                yield Connected(transport, client, inbox, bridge)

    return open_client


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    """Headless Chromium for the explorer's browser tests."""
    async with launched_browser() as launched:
        yield launched


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    """A token issuer with fresh keys, its JWKS served through respx for the test."""
    issuer = Issuer()
    with mock_jwks(issuer):
        yield issuer
