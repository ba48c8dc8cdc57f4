"""Outputs a module should not produce still reach every client as valid JSON; oversized ones are refused."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from mcp import Client, ClientSession
from mcp.client.sse import sse_client

from tests._support.hostile import ACCEPT, MODERN, modern_headers, serving, tool_call
from tests._support.results import text_of


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_lone_surrogate_and_nan_reach_a_streamable_http_client(mode: str) -> None:
    async with serving() as (url, _), Client(f"{url}/mcp", mode=mode) as client:
        result = await client.call_tool("hostile.surrogate", {})  # was a 200 with an empty body
        assert result.is_error is False
        assert json.loads(text_of(result)) == {"name": "caf\ufffd.txt", "ratio": None}


async def test_a_lone_surrogate_reaches_an_sse_client() -> None:
    async with serving() as (url, _), sse_client(f"{url}/sse") as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("hostile.surrogate", {})
        assert json.loads(text_of(result))["name"] == "caf\ufffd.txt"


async def test_the_raw_response_body_is_valid_utf8_json() -> None:
    async with serving() as (url, _), httpx.AsyncClient() as http:
        body = tool_call(1, "hostile.surrogate", {}, modern=True)
        response = await http.post(f"{url}/mcp", json=body, headers=modern_headers("tools/call", "hostile.surrogate"))
    assert response.status_code == 200 and response.content
    message = json.loads(response.content.decode("utf-8"))  # strict: a surrogate would not decode
    assert message["result"]["resultType"] == "complete"
    assert response.request.headers["mcp-protocol-version"] == MODERN


@pytest.mark.slow
async def test_100_mb_of_output_is_refused_and_health_keeps_answering() -> None:
    async with serving(explorer=True, allow_execute=True) as (url, _), httpx.AsyncClient(timeout=30) as http:
        latencies: list[float] = []
        polling, done = asyncio.Event(), asyncio.Event()

        async def poll_health() -> None:
            while not done.is_set():
                started = time.perf_counter()
                assert (await http.get(f"{url}/health")).status_code == 200
                latencies.append(time.perf_counter() - started)
                polling.set()
                await asyncio.sleep(0.005)  # the polling rate, not a wait for something

        poller = asyncio.create_task(poll_health())
        async with asyncio.timeout(10):
            await polling.wait()  # /health answers before the big output starts
        started = time.perf_counter()
        mcp = await http.post(
            f"{url}/mcp",
            json=tool_call(1, "hostile.huge", {}, modern=True),
            headers=modern_headers("tools/call", "hostile.huge"),
        )
        explorer = await http.post(f"{url}/explorer/tools/hostile.huge/call", json={}, headers=ACCEPT)
        took = time.perf_counter() - started
        done.set()
        await poller
    result = mcp.json()["result"]
    assert result["isError"] is True
    assert "exceeds the limit of 16777216 bytes" in result["content"][0]["text"]
    assert explorer.status_code == 500 and "exceeds the limit" in explorer.json()["error"]
    print(
        f"\n100 MB output x2: {took:.3f}s; /health during it: max {max(latencies) * 1000:.1f} ms over {len(latencies)}"
    )
