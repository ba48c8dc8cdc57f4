"""Fixtures shared by every test: ``connect``, real MCP clients over real transports.

``connect`` yields an async factory ``open_client(**settings) -> async context manager``
giving a ``Connected`` client (``tests._support.sessions``) of a fresh server for the test
registry, once per transport in ``TRANSPORTS``. Over HTTP the 2026-07-28 client checks, once
the session ends, that its server used the path the transport names: ``http-modern`` the direct
path (some request counted in ``/metrics``), ``http-modern-sdk`` the SDK alone (none).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio
from mcp import Client

from apcore_mcp.bridge import Bridge, BridgeService
from apcore_mcp.settings import Settings

from tests._support.auth import Issuer, mock_jwks
from tests._support.browser import launched_browser
from tests._support.modules import make_executor
from tests._support.sessions import (
    MODERN,
    SDK_PATH,
    TRANSPORTS,
    Connected,
    Inbox,
    OpenClient,
    direct_requests,
    open_session,
    running_http,
    stdio_params,
)

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
        settings = Settings(dynamic=dynamic, prefix=prefix, direct_path=transport != SDK_PATH)
        bridge = Bridge.build(make_executor(), settings)
        if transport.startswith("memory"):  # in memory, the test hosts the service (over HTTP, the app does)
            async with BridgeService(bridge), open_session(transport, bridge, inbox, **callbacks) as client:
                yield Connected(transport, client, inbox, bridge)
            return
        async with running_http(bridge) as url:
            async with open_session(transport, url, inbox, **callbacks) as client:
                yield Connected(transport, client, inbox, bridge)
            if transport in MODERN:  # the path the test meant: the 2026 client's discovery answers once
                answered = await direct_requests(url)
                assert (answered > 0) is (transport != SDK_PATH), f"{transport}: {answered} direct requests"

    return open_client


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def session_browser() -> AsyncIterator[Browser]:
    """One headless Chromium per test process (per xdist worker), in the session's event loop."""
    async with launched_browser() as launched:
        yield launched


@pytest_asyncio.fixture(loop_scope="session")
async def browser(session_browser: Browser) -> AsyncIterator[Browser]:
    """The session's Chromium for one test, which opens its own context (``new_context``,
    ``new_page``): every context it opened is closed after it. Tests using it run in the session's
    event loop (``pytest.mark.asyncio(loop_scope="session")``), where that Chromium lives."""
    if not session_browser.is_connected():
        pytest.fail("the session's Chromium has gone (crashed or killed): see the earlier failures")
    before = set(session_browser.contexts)
    try:
        yield session_browser
    finally:
        for context in [c for c in session_browser.contexts if c not in before]:
            await context.close()


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    """A token issuer with fresh keys, its JWKS served through respx for the test."""
    issuer = Issuer()
    with mock_jwks(issuer):
        yield issuer


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Markers implied by what a test uses: the TypeScript client and the conformance suites run on
    Node (``interop``, ``conformance`` imply ``node``); the ``browser`` fixture is Chromium."""
    for item in items:
        if item.get_closest_marker("interop") or item.get_closest_marker("conformance"):
            item.add_marker(pytest.mark.node)
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
