"""Shared upstream handles, checked by PID: one start per key, stop with the last release, restarts, timeouts."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from apcore_mcp.testing import free_port
from apcore_mcp.upstream.config.parse import ServerSpec, parse_config
from apcore_mcp.upstream.errors import UpstreamTimeout, UpstreamUnavailable
from apcore_mcp.upstream.handles import Lease, UpstreamPool, backoff_delay

from tests._support.upstreams import eventually, gone, http_upstream, kill, stdio_entry, upstream_children, url_entry


@pytest.fixture(autouse=True)
def no_child_left() -> Iterator[None]:
    yield
    assert upstream_children() == {}, "an upstream process outlived its test"


def spec(name: str = "up", entry: dict[str, Any] | None = None, **fields: Any) -> ServerSpec:
    return parse_config({"mcpServers": {name: entry or stdio_entry(**fields)}}, {}).servers[name]


async def pid(lease: Lease) -> int:
    result = await lease.call_tool("pid", {}, repeatable=True)  # read-only, as the test upstream says
    assert isinstance(result.structured_content, dict)
    return int(result.structured_content["pid"])


async def test_concurrent_acquires_start_one_process_and_the_last_release_stops_it() -> None:
    async with UpstreamPool() as pool:
        leases: list[Lease] = []

        async def take() -> None:
            leases.append(await pool.acquire(spec()))

        async with anyio.create_task_group() as group:
            for _ in range(8):
                group.start_soon(take)
        pids = {await pid(lease) for lease in leases}
        assert len(pids) == 1 and set(upstream_children()) == pids
        (only,) = pids
        for lease in leases[:-1]:
            await pool.release(lease)
        assert await pid(leases[-1]) == only  # still running for the last holder
        await pool.release(leases[-1])
        await pool.release(leases[-1])  # idempotent
        assert gone(only), "stopped and reaped: no process, no zombie"


async def test_equal_specs_share_and_different_specs_do_not() -> None:
    async with UpstreamPool() as pool:
        one = await pool.acquire(spec(env={"A": "1"}))
        again = await pool.acquire(spec(env={"A": "1"}))
        other = await pool.acquire(spec(env={"A": "2"}))
        assert await pid(one) == await pid(again) != await pid(other)
        assert len(upstream_children()) == 2
        alice, alice_again, bob = (
            await pool.acquire(spec(), "alice"),
            await pool.acquire(spec(), "alice"),
            await pool.acquire(spec(), "bob"),
        )
        assert await pid(alice) == await pid(alice_again) != await pid(bob)
        assert set(pool.status()) == {"up", "up@alice", "up@bob"}
    # Leaving the pool stops whatever is still held.


async def test_a_killed_upstream_is_started_again_on_next_use() -> None:
    async with UpstreamPool() as pool:
        lease = await pool.acquire(spec())
        first = await pid(lease)
        kill(first)
        # Called at once: whether or not the death was noticed yet, a read-only call gets through.
        second = await pid(lease)
        await eventually(lambda: gone(first), what="the killed upstream reaped")
        assert second != first and set(upstream_children()) == {second}
        await pool.release(lease)
        assert gone(second)


async def test_a_hung_start_times_out_without_holding_up_other_servers() -> None:
    finished: list[str] = []
    async with UpstreamPool() as pool:

        async def hung() -> None:
            with pytest.raises(UpstreamUnavailable, match="no answer to the handshake within 1s"):
                await pool.acquire(spec("stuck", stdio_entry("--hang-start", timeout=1)))
            finished.append("stuck")

        async def healthy() -> None:
            lease = await pool.acquire(spec("fine"))
            assert await pid(lease) > 0
            finished.append("fine")

        async with anyio.create_task_group() as group:
            group.start_soon(hung)
            group.start_soon(healthy)
        assert finished == ["fine", "stuck"]
        assert len(upstream_children()) == 1  # the stuck one was killed and reaped; "fine" runs on


async def test_a_hung_call_times_out_while_other_calls_on_the_same_server_go_through() -> None:
    async with UpstreamPool() as pool:
        lease = await pool.acquire(spec(timeout=3))
        order: list[str] = []

        async def hang() -> None:
            with pytest.raises(UpstreamTimeout, match="did not answer within 3s"):
                await lease.call_tool("hang", {"seconds": 30})
            order.append("hang")

        async def echo() -> None:
            result = await lease.call_tool("echo", {"text": "still here"})
            assert result.structured_content == {"echo": "still here"}
            order.append("echo")

        async with anyio.create_task_group() as group:
            group.start_soon(hang)
            group.start_soon(echo)
        assert order == ["echo", "hang"]
        await pool.release(lease)


async def test_failing_starts_back_off() -> None:
    failing = {"command": sys.executable, "args": ["-c", "import sys; sys.exit(2)"], "timeout": 5}
    async with UpstreamPool(backoff_base=60) as pool:
        for _attempt in range(2):  # the first failure is retried at once, the second is not
            with pytest.raises(UpstreamUnavailable, match="did not start"):
                await pool.acquire(spec("bad", failing))
        with pytest.raises(UpstreamUnavailable, match=r"failed 2 time\(s\) in a row; next try in"):
            await pool.acquire(spec("bad", failing))
    assert [backoff_delay(n, 1.0, 30.0) for n in range(1, 8)] == [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0]


async def test_each_server_logs_its_stderr_to_its_own_file(tmp_path: Path) -> None:
    async with UpstreamPool(log_dir=tmp_path / "logs") as pool:
        first = await pool.acquire(spec("one"))
        second = await pool.acquire(spec("two/odd name"))
        pids = (await pid(first), await pid(second))
    texts = {path.name: path.read_text() for path in (tmp_path / "logs").iterdir()}
    assert set(texts) == {"one.log", "two_odd_name.log"}
    assert f"pid={pids[0]}" in texts["one.log"] and f"pid={pids[1]}" in texts["two_odd_name.log"]


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_remote_upstreams_are_shared_the_same_way(transport: str) -> None:
    with http_upstream(transport) as (url, server_pid):
        async with UpstreamPool() as pool:
            leases = [await pool.acquire(spec("remote", url_entry(url, transport=transport))) for _ in range(3)]
            assert {await pid(lease) for lease in leases} == {server_pid}
            for lease in leases:
                await pool.release(lease)
            assert pool.status() == {}


async def test_a_restarted_http_upstream_gets_a_new_session_and_the_call_is_retried_once() -> None:
    port = free_port()
    async with UpstreamPool() as pool:
        with http_upstream("http", port=port) as (url, first):
            lease = await pool.acquire(spec("remote", url_entry(url, protocol="legacy")))
            assert await pid(lease) == first
            before = await lease.connection()
            kill(first)
        # The same address now answers with a server that never saw our session: 404, then a new session.
        with http_upstream("http", port=port) as (_url, second):
            assert await pid(lease) == second
            assert await lease.connection() is not before
            await pool.release(lease)
