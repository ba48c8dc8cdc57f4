"""Shared state on a real ``redis-server``: registry changes relayed between replicas, Redis outages.

Two replicas with ``--dynamic --broadcast-changes --redis-url``: a change in one replica's registry
reaches the ``list_changed`` listeners of the other (2026-07-28 ``subscriptions/listen`` and
handshake-era sessions alike). Redis stopped mid-load: every call still succeeds, each replica
logs a WARNING naming its fallback, ``/ready`` stays 200 with a ``degraded`` detail, changes still
reach each replica's own listeners; Redis back: the detail clears and relaying resumes.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from apcore_mcp.calls.limits import RATE_LIMITED

from tests._support.replicas import (
    CALL_SECONDS,
    ROUND_ROBIN,
    Proxy,
    RedisServer,
    Replica,
    new_key,
    proxy_running,
    ready,
    redis_running,
    replicas_running,
    structured,
    wait_until,
)
from tests._support.sessions import Inbox

pytestmark = [pytest.mark.redis, pytest.mark.nginx]

NOTIFY_SECONDS = 5.0
OUTAGE_SECONDS = 15.0
LOAD_CALLS = 60


@dataclass
class Cluster:
    replicas: list[Replica]
    proxy: Proxy
    redis: RedisServer

    def replica(self, name: str) -> Replica:
        return next(replica for replica in self.replicas if replica.name == name)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    work = tmp_path_factory.mktemp("redis")
    with redis_running(work / "redis") as redis:
        args = ("--dynamic", "--broadcast-changes", "--redis-url", redis.url, "--request-state-keys", new_key())
        with (
            replicas_running(["a", "b"], work, *args) as replicas,
            proxy_running(ROUND_ROBIN, replicas, work / "px") as proxy,
        ):
            for replica in replicas:  # subscribed to the channel before any test publishes on it
                wait_until(lambda r=replica: "degraded" not in ready(r.base).json(), 10, "replica ready")
            yield Cluster(replicas, proxy, redis)


@contextlib.asynccontextmanager
async def listening(base: str) -> AsyncIterator[tuple[anyio.Event, Inbox]]:
    """A 2026-07-28 listen stream and a handshake-era session, both on the replica at ``base``."""
    heard = anyio.Event()
    inbox = Inbox()
    async with (
        Client(f"{base}/mcp", mode="auto", cache=None) as modern,
        modern.listen(tools_list_changed=True) as subscription,
        Client(f"{base}/mcp", mode="legacy", cache=None, message_handler=inbox.handler) as legacy,
        anyio.create_task_group() as tasks,
    ):
        await legacy.list_tools()  # the session is up, its GET stream open

        async def wait_event() -> None:
            async for _event in subscription:
                heard.set()
                return

        tasks.start_soon(wait_event)
        yield heard, inbox
        tasks.cancel_scope.cancel()


async def add_module(base: str, name: str) -> str:
    async with Client(f"{base}/mcp", mode="auto", cache=None) as client:
        return str(structured(await client.call_tool("replica.add", {"name": name}))["replica"])


async def assert_heard(heard: anyio.Event, inbox: Inbox) -> None:
    with anyio.fail_after(NOTIFY_SECONDS):
        await heard.wait()
    await inbox.wait_for("notifications/tools/list_changed", NOTIFY_SECONDS)


async def test_a_change_on_one_replica_reaches_the_listeners_of_the_other(cluster: Cluster) -> None:
    a, b = cluster.replica("a"), cluster.replica("b")
    with anyio.fail_after(CALL_SECONDS):
        async with listening(a.base) as (heard, inbox):
            assert await add_module(b.base, "added.relayed") == "b"
            await assert_heard(heard, inbox)
    async with Client(f"{b.base}/mcp", mode="auto", cache=None) as client:
        assert "added.relayed" in {tool.name for tool in (await client.list_tools()).tools}


async def test_redis_stopped_mid_load_then_back(cluster: Cluster) -> None:
    a, b = cluster.replica("a"), cluster.replica("b")
    answered: list[str] = []
    with anyio.fail_after(60):
        async with Client(cluster.proxy.mcp, mode="auto", cache=None) as client:
            for i in range(LOAD_CALLS):
                if i == LOAD_CALLS // 3:
                    cluster.redis.stop()
                    for replica in (a, b):
                        detail = wait_until(
                            lambda r=replica: ready(r.base).json().get("degraded"), OUTAGE_SECONDS, "degraded"
                        )
                        assert "unreachable" in detail["redis"] and "this replica's own clients" in detail["redis"]
                        assert ready(replica.base).status_code == 200  # degraded, still serving
                answered.append(structured(await client.call_tool("replica.echo", {"text": f"r{i}"}))["replica"])
    assert len(answered) == LOAD_CALLS and set(answered) == {"a", "b"}
    for replica in (a, b):
        assert "WARNING" in replica.output() and "Redis unreachable for change broadcast" in replica.output()

    # Per-replica fallback: a change still reaches the replica's own listeners.
    with anyio.fail_after(CALL_SECONDS):
        async with listening(a.base) as (heard, inbox):
            await add_module(a.base, "added.local")
            await assert_heard(heard, inbox)

    cluster.redis.start()
    for replica in (a, b):
        wait_until(lambda r=replica: "degraded" not in ready(r.base).json(), OUTAGE_SECONDS, "recovered")
        assert "Redis reachable again for change broadcast" in replica.output()
    with anyio.fail_after(CALL_SECONDS):
        async with listening(a.base) as (heard, inbox):
            await add_module(b.base, "added.after_outage")
            await assert_heard(heard, inbox)


async def test_the_rate_limit_is_shared_by_the_replicas(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Two replicas with one Redis: a caller's burst spent on one replica is spent on the other too."""
    work = tmp_path_factory.mktemp("redis-rate")
    with redis_running(work / "redis") as redis:
        args = ("--redis-url", redis.url, "--rate-limit", "0.01", "--rate-burst", "3")
        with replicas_running(["a", "b"], work, *args) as (first, second):
            async with Client(f"{first.base}/mcp", mode="auto", cache=None) as client:
                for _ in range(3):  # the whole burst, on replica a
                    await client.call_tool("replica.echo", {"text": "x"})
            async with Client(f"{second.base}/mcp", mode="auto", cache=None) as client:
                with pytest.raises(MCPError) as refused:
                    await client.call_tool("replica.echo", {"text": "x"})
    assert refused.value.error.code == RATE_LIMITED
