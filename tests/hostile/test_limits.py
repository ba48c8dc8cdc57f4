"""The rate limit and the concurrency cap: fast, documented refusals over MCP (both eras) and HTTP."""

from __future__ import annotations

import anyio
import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from apcore_mcp.calls.limits import OVERLOADED, RATE_LIMITED, CallLimits, MemoryBuckets

from tests._support.hostile import explorer_call, metric, metrics_text, serving, wait_until
from tests._support.hostile_modules import hostile_registry, sleeper


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_rate_limit_refuses_mcp_calls_with_a_stable_code(mode: str) -> None:
    async with serving(rate_limit=0.5, rate_burst=3) as (url, _), Client(f"{url}/mcp", mode=mode) as client:
        for _ in range(3):
            assert (await client.call_tool("hostile.echo", {})).is_error is False
        with pytest.raises(MCPError) as refused:
            await client.call_tool("hostile.echo", {})
        assert refused.value.code == RATE_LIMITED == -32010
        assert 0 < refused.value.error.data["retryAfter"] <= 2.0
        assert (await client.list_tools()).tools  # only tool calls are limited
        text = await metrics_text(url)
    assert metric(text, "apcore_mcp_rejected_requests_total", reason="rate_limited") == 1


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_concurrency_cap_refuses_at_once_instead_of_queueing(mode: str) -> None:
    registry = hostile_registry()
    counts = sleeper(registry).counts
    async with (
        # One client holds both slots here: its share is the whole cap (test_fair_share splits it).
        serving(registry, max_concurrent_calls=2, max_caller_share=1.0, explorer=True, allow_execute=True) as (url, _),
        Client(f"{url}/mcp", mode=mode) as client,
        anyio.create_task_group() as tasks,
    ):
        for _ in range(2):
            tasks.start_soon(client.call_tool, "hostile.sleep", {"seconds": 30})
        await wait_until(lambda: counts.started == 2, "two calls running")
        with anyio.fail_after(5), pytest.raises(MCPError) as refused:  # a refusal, not a wait
            await client.call_tool("hostile.echo", {})
        assert refused.value.code == OVERLOADED == -32011
        async with httpx.AsyncClient() as http:  # the explorer's door counts against the same cap
            busy = (await explorer_call(http, url, "hostile.echo")).json()
            assert busy["error"]["code"] == OVERLOADED
        text = await metrics_text(url)
        tasks.cancel_scope.cancel()
    assert metric(text, "apcore_mcp_rejected_requests_total", reason="overloaded") == 2


async def test_a_refused_call_does_not_hold_a_slot() -> None:
    limits = CallLimits(rate=1, burst=1, max_concurrent=1)
    assert await limits.acquire("alice") is None
    refusal = await limits.acquire("bob")
    assert refusal is not None and refusal.reason == "overloaded"
    limits.release("alice")
    assert await limits.acquire("alice") is not None  # rate limited now, and the slot is free again
    assert limits.running == 0


async def test_buckets_refill_at_the_rate_and_are_per_caller() -> None:
    now = 100.0
    limits = CallLimits(rate=2, burst=2, clock=lambda: now)
    for _ in range(2):
        assert await limits.acquire("alice") is None
        limits.release("alice")
    refusal = await limits.acquire("alice")
    assert refusal is not None and refusal.retry_after == pytest.approx(0.5)
    assert await limits.acquire("bob") is None  # another caller has its own bucket
    limits.release("bob")
    now += 0.5
    assert await limits.acquire("alice") is None


async def test_a_shared_bucket_store_plugs_in() -> None:
    """What a Redis-backed store would be: anything with ``async take(key, rate, burst, now) -> wait``."""
    seen: list[str] = []

    class Recording(MemoryBuckets):
        async def take(self, key: str, rate: float, burst: int, now: float) -> float:
            seen.append(key)
            return await super().take(key, rate, burst, now)

    limits = CallLimits(rate=10, buckets=Recording())
    async with serving(rate_limit=10) as (url, bridge):
        bridge.limits.buckets = limits.buckets
        async with Client(f"{url}/mcp", mode="auto") as client:
            await client.call_tool("hostile.echo", {})
    assert seen == ["127.0.0.1"]  # keyed by principal_key: the client's address until auth replaces it


async def test_memory_buckets_stay_bounded() -> None:
    buckets = MemoryBuckets(max_keys=100)
    for caller in range(1_000):
        await buckets.take(f"10.0.{caller // 256}.{caller % 256}", 1.0, 1, 0.0)
    assert len(buckets._buckets) == 100
