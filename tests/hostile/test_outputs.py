"""Outputs a module should not produce still reach every client as valid JSON; oversized ones are refused."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest
from apcore import Registry
from mcp import Client, ClientSession
from mcp.client.sse import sse_client
from pydantic import BaseModel, ConfigDict

from apcore_mcp.bridge import Bridge, BridgeService
from apcore_mcp.settings import Settings

from tests._support.hostile import MODERN, explorer_call, modern_headers, serving, tool_call
from tests._support.log_capture import every_record
from tests._support.results import text_of
from tests._support.sessions import Inbox, open_session


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
        explorer = await explorer_call(http, url, "hostile.huge")
        took = time.perf_counter() - started
        done.set()
        await poller
    for answer in (mcp, explorer):
        result = answer.json()["result"]
        assert result["isError"] is True
        assert "exceeds the limit of 16777216 bytes" in result["content"][0]["text"]
    print(
        f"\n100 MB output x2: {took:.3f}s; /health during it: max {max(latencies) * 1000:.1f} ms over {len(latencies)}"
    )


class Nothing(BaseModel):
    pass


class Balances(BaseModel):
    model_config = ConfigDict(extra="forbid")
    by_account: dict[str, int]


class KeyedBalances:
    """A mismatching output whose keys are the data: an account number and an address."""

    description = "Returns balances keyed by account, one of them not a number, and a stray key"
    input_schema = Nothing
    output_schema = Balances

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"by_account": {"DE89370400440532013000": "n/a"}, "alice@example.com": 1}


@pytest.mark.parametrize("route", ["memory", "memory-modern"])
async def test_a_mismatching_output_never_names_its_own_keys(route: str) -> None:
    registry = Registry()
    registry.register("bank.balances", KeyedBalances())
    bridge = Bridge.build(registry, Settings())
    with every_record() as logs:
        async with BridgeService(bridge), open_session(route, bridge, Inbox()) as client:
            result = await client.call_tool("bank.balances", {})
    assert result.is_error is True
    assert text_of(result) == (  # was "field 'by_account.DE89370400440532013000': ..."
        "The module's output does not match its schema: "
        "field 'by_account.*': Input should be a valid integer; field '*': Extra inputs are not permitted"
    )
    leaked = [line for line in logs.rendered if "DE89370400440532013000" in line or "alice@example.com" in line]
    assert leaked == []
