"""Sessions: capped per caller and in all, reaped when idle, and counted exactly (half-open ones too)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from tests._support.hostile import ACCEPT, HANDSHAKE, INIT, metric, metrics_text, open_session, serving, wait_until
from tests._support.results import text_of

SESSIONS = "apcore_mcp_active_sessions"
STREAMS = "apcore_mcp_open_streams"
REJECTED = "apcore_mcp_rejected_requests_total"


async def gauge(url: str, name: str, **labels: str) -> float:
    return metric(await metrics_text(url), name, **labels)


@pytest.mark.slow
async def test_session_and_stream_gauges_are_exact_with_1000_half_open_sessions() -> None:
    async with (
        serving(max_sessions=2_000, max_sessions_per_caller=2_000) as (url, _),
        httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=50)) as http,
    ):
        gate = asyncio.Semaphore(50)

        async def half_open() -> str:
            async with gate:
                return await open_session(http, url, initialized=False)

        half = await asyncio.gather(*(half_open() for _ in range(1_000)))
        assert len(set(half)) == 1_000
        assert await gauge(url, SESSIONS) == 1_000  # read 1 with 9,900 open before

        full = [await open_session(http, url) for _ in range(10)]
        async with contextlib.AsyncExitStack() as streams, httpx.AsyncClient(timeout=30) as listener:
            for session_id in full:
                headers = {
                    "Accept": "text/event-stream",
                    "mcp-session-id": session_id,
                    "mcp-protocol-version": HANDSHAKE,
                }
                stream = await streams.enter_async_context(listener.stream("GET", f"{url}/mcp", headers=headers))
                assert stream.status_code == 200
            assert await gauge(url, SESSIONS) == 1_010
            assert await gauge(url, STREAMS, route="/mcp") == 10
        await wait_until(_equals(url, STREAMS, 0, route="/mcp"), "the GET streams closed")

        async def delete(session_id: str) -> None:
            async with gate:
                headers = {"mcp-session-id": session_id, "mcp-protocol-version": HANDSHAKE}
                assert (await http.delete(f"{url}/mcp", headers=headers)).status_code == 200

        await asyncio.gather(*(delete(session_id) for session_id in [*half, *full]))
        await wait_until(_equals(url, SESSIONS, 0), "every session deleted")


def _equals(url: str, name: str, value: float, **labels: str) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return await gauge(url, name, **labels) == value

    return check


async def test_sse_connections_count_as_sessions() -> None:
    async with serving() as (url, _):
        async with sse_client(f"{url}/sse") as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            assert await gauge(url, SESSIONS) == 1
            assert await gauge(url, STREAMS, route="/sse") == 1
        await wait_until(_equals(url, SESSIONS, 0), "the SSE session ended")
        assert await gauge(url, STREAMS, route="/sse") == 0


def from_address(address: str) -> httpx.AsyncClient:
    """A client whose connections come from another loopback address: another caller."""
    return httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address=address), timeout=10)


async def test_one_caller_at_its_session_cap_does_not_lock_out_another() -> None:
    async with serving(max_sessions_per_caller=5) as (url, _):
        async with from_address("127.0.0.1") as greedy:
            held = [await open_session(greedy, url, initialized=False) for _ in range(5)]
            refused = await greedy.post(f"{url}/mcp", json=INIT, headers=ACCEPT)
            assert refused.status_code == 429
            assert refused.json()["error"]["code"] == -32012
            # A real client from another address still gets a session and a call through.
            other = httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(local_address="127.0.0.2"))
            async with (
                other,
                streamable_http_client(f"{url}/mcp", http_client=other) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                result = await session.call_tool("hostile.echo", {})
                assert json.loads(text_of(result)) == {"ok": True}
            # Ending one of its sessions gives the first caller room again.
            headers = {"mcp-session-id": held[0], "mcp-protocol-version": HANDSHAKE}
            assert (await greedy.delete(f"{url}/mcp", headers=headers)).status_code == 200
            assert (await greedy.post(f"{url}/mcp", json=INIT, headers=ACCEPT)).status_code == 200
        assert await gauge(url, REJECTED, reason="session_limit") == 1


async def test_the_server_wide_cap_answers_503() -> None:
    async with serving(max_sessions=3) as (url, _), httpx.AsyncClient() as http:
        for _ in range(3):
            await open_session(http, url, initialized=False)
        full = await http.post(f"{url}/mcp", json=INIT, headers=ACCEPT)
        assert full.status_code == 503
        assert await gauge(url, SESSIONS) == 3
        assert await gauge(url, REJECTED, reason="session_limit") == 1


async def test_idle_half_open_sessions_are_reaped() -> None:
    async with serving(session_idle_timeout=0.3) as (url, _), httpx.AsyncClient() as http:
        ids = [await open_session(http, url, initialized=False) for _ in range(20)]
        await wait_until(_equals(url, SESSIONS, 0), "idle sessions reaped", timeout=10)
        headers = {**ACCEPT, "mcp-session-id": ids[0], "mcp-protocol-version": HANDSHAKE}
        gone = await http.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)
        assert gone.status_code == 404
