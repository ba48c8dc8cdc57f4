"""Rate-limit buckets in a real ``redis-server``, shared by replicas (two links, as two processes have).

A bucket is one limit for every replica: tokens taken through one link are gone for the other,
concurrent takes never overdraw it (one Lua script), and an idle bucket's key expires. Redis
stopped: takes fall back to a bucket per replica at once, with one WARNING; back: shared again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from apcore_mcp.calls.limits import MemoryBuckets
from apcore_mcp.mcp.notifier import ListChange, ListChangedNotifier
from apcore_mcp.replicas.broadcast import ChangeBroadcaster
from apcore_mcp.replicas.buckets import RedisBuckets, bucket_key
from apcore_mcp.replicas.link import RedisLink

from tests._support.replicas import RedisServer, redis_running

pytestmark = pytest.mark.redis

RATE = 0.5  # tokens a second: slow enough that a test run refills nothing worth counting
BURST = 5


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with redis_running(tmp_path_factory.mktemp("buckets")) as server:
        yield server


@pytest.fixture
async def links(redis: RedisServer) -> AsyncIterator[tuple[RedisLink, RedisLink]]:
    first, second = RedisLink(redis.url, "test-buckets:"), RedisLink(redis.url, "test-buckets:")
    yield first, second
    await first.aclose()
    await second.aclose()


def unique(name: str) -> str:
    return f"{name}-{time.monotonic_ns()}"


async def test_one_bucket_for_every_replica(links: tuple[RedisLink, RedisLink]) -> None:
    a, b = RedisBuckets(links[0]), RedisBuckets(links[1])
    caller = unique("alice")
    waits = [await (a if i % 2 else b).take(caller, RATE, BURST, time.monotonic()) for i in range(BURST)]
    assert waits == [0.0] * BURST
    refused = [await store.take(caller, RATE, BURST, time.monotonic()) for store in (a, b)]
    assert all(0 < wait <= 1 / RATE for wait in refused), refused
    assert await a.take(unique("bob"), RATE, BURST, time.monotonic()) == 0.0  # another caller, another bucket


async def test_concurrent_takes_never_overdraw(links: tuple[RedisLink, RedisLink]) -> None:
    stores = [RedisBuckets(links[0]), RedisBuckets(links[1])]
    caller = unique("crowd")
    burst = 20
    waits = await asyncio.gather(*(stores[i % 2].take(caller, RATE, burst, 0.0) for i in range(60)))
    assert sum(wait == 0.0 for wait in waits) == burst


async def test_an_idle_bucket_expires(links: tuple[RedisLink, RedisLink]) -> None:
    store = RedisBuckets(links[0])
    caller = unique("idle")
    await store.take(caller, 10.0, 2, 0.0)
    ttl_ms = await links[0].client.pttl(bucket_key(links[0], caller))
    assert 0 < ttl_ms <= 2_000  # one token to refill at 10/s, plus a second of slack


async def test_redis_down_falls_back_per_replica_then_recovers(
    redis: RedisServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    link = RedisLink(redis.url, "test-buckets:", cooldown=0.2)
    fallback = MemoryBuckets()
    store = RedisBuckets(link, fallback)
    caller = unique("carol")
    try:
        assert await store.take(caller, RATE, BURST, time.monotonic()) == 0.0
        redis.stop()
        with caplog.at_level(logging.WARNING, logger="apcore_mcp.replicas.link"):
            waits = [await store.take(caller, RATE, BURST, time.monotonic()) for _ in range(BURST + 1)]
        # the local bucket starts full: this replica alone allows a whole burst, then refuses
        assert waits[:BURST] == [0.0] * BURST and waits[BURST] > 0
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "rate limits" in r.getMessage()]
        assert len(warnings) == 1, [r.getMessage() for r in caplog.records]
        problem = link.problem()
        assert problem is not None and "unreachable" in problem and "on its own" in problem
        assert not link.available()  # within the cooldown no call pays for a connection attempt
    finally:
        redis.start()
    deadline = time.monotonic() + 10
    while link.problem() is not None and time.monotonic() < deadline:
        await store.take(unique("probe"), RATE, BURST, time.monotonic())
        await asyncio.sleep(0.05)
    assert link.problem() is None
    await link.aclose()


async def test_a_failed_change_publish_degrades_ready_until_a_publish_succeeds(redis: RedisServer) -> None:
    """Publishing fails while the subscription stays up (Redis refuses PUBLISH): /ready's problem
    names it, and the next successful publish clears it (it used to stay degraded for good)."""
    link = RedisLink(redis.url, unique("test-publish:"))
    broadcaster = ChangeBroadcaster(link, ListChangedNotifier())
    admin = aioredis.Redis.from_url(redis.url)
    task = asyncio.create_task(broadcaster.run())
    try:
        await until(lambda: broadcaster._loop is not None)
        await admin.acl_setuser("default", enabled=True, commands=["-publish"])
        broadcaster.local_change(ListChange(tools=True))
        await until(lambda: "change publishing" in (link.problem() or ""))
        await admin.acl_setuser("default", enabled=True, commands=["+publish"])
        broadcaster.local_change(ListChange(tools=True))
        await until(lambda: link.problem() is None)
    finally:
        await admin.acl_setuser("default", enabled=True, categories=["+@all"])
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await admin.aclose()
        await link.aclose()


async def until(check: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "not within the time bound"
        await asyncio.sleep(0.02)
