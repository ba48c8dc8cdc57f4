"""Tasks shared by replicas through a real ``redis-server``: any replica answers ``tasks/get`` and
``tasks/cancel``, also once the replica that ran the task has stopped; a task whose replica was
killed reads ``failed`` everywhere once its lease passed.

Two processes of our CLI (``tests/task_extensions``), each stopped by PID; the wire by hand, so
each request goes to the replica the test names.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from apcore_mcp.bridge import Bridge
from apcore_mcp.mcp import tasks as mcp_tasks
from apcore_mcp.settings import Settings
from apcore_mcp.tasks.runner import REPLICA_GONE, STORE_AWAY
from apcore_mcp.testing import apcore_server, start_server

from tests._support.replicas import RedisServer, Replica, redis_running
from tests._support.sessions import running_http
from tests._support.tasks import HANDSHAKE, CountingStore, Seen, Wire, gate_executor, task_executor

pytestmark = pytest.mark.redis

EXTENSIONS = Path(__file__).resolve().parents[1] / "task_extensions"
LEASE = 1.5
WAITERS = 20


def start(name: str, workdir: Path, redis: RedisServer) -> Replica:
    args = ("--redis-url", redis.url, "--task-lease", str(LEASE), "--shutdown-timeout", "0.2")
    command = apcore_server(EXTENSIONS, *args, env={"REPLICA_NAME": name})
    return Replica(name, start_server(command, "streamable-http", workdir / name))


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Replica, Replica]]:
    with redis_running(tmp_path / "redis") as redis:
        a = start("a", tmp_path, redis)
        try:
            b = start("b", tmp_path, redis)
            try:
                yield a, b
            finally:
                b.stop()
        finally:
            a.stop()


async def wait_status(wire: Wire, task_id: str, status: str, timeout: float) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = dict((await wire.rpc("tasks/get", {"taskId": task_id}))["result"])
        if state["status"] == status:
            return state
        await asyncio.sleep(0.05)
    pytest.fail(f"task not {status} within {timeout}s: {state}")


async def test_any_replica_answers_and_cancels(pair: tuple[Replica, Replica], tmp_path: Path) -> None:
    a, b = pair
    on_a, on_b = Wire(a.base), Wire(b.base)
    created = (await on_a.call("jobs.long", {"steps": 3, "delay": 0.1}))["result"]
    assert (await on_b.rpc("tasks/get", {"taskId": created["taskId"]}))["result"]["status"] == "working"
    done = await wait_status(on_b, created["taskId"], "completed", 10)
    assert done["result"]["structuredContent"] == {"done": 3, "replica": "a"}  # type: ignore[index]
    # Another caller (another address) is told it does not exist, on either replica.
    stranger = Wire(b.base, source="127.0.0.2")
    assert (await stranger.rpc("tasks/get", {"taskId": created["taskId"]}))["error"]["code"] == -32602
    # Cancelled on b, stopped on a (a reads the mark when it renews its lease).
    marker = tmp_path / "long"
    running = (await on_a.call("jobs.long", {"steps": 1000, "delay": 0.05, "marker": str(marker)}))["result"]
    assert (await on_b.rpc("tasks/cancel", {"taskId": running["taskId"]}))["result"]["resultType"] == "complete"
    assert (await on_a.rpc("tasks/get", {"taskId": running["taskId"]}))["result"]["status"] == "cancelled"
    deadline = time.monotonic() + LEASE + 5
    while not marker.with_suffix(".cancelled").exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert marker.with_suffix(".cancelled").read_text() == "True"
    assert (await on_b.rpc("tasks/get", {"taskId": running["taskId"]}))["result"]["status"] == "cancelled"


async def test_a_killed_replicas_task_reads_failed_on_the_others(pair: tuple[Replica, Replica]) -> None:
    a, b = pair
    on_a, on_b = Wire(a.base), Wire(b.base)
    created = (await on_a.call("jobs.long", {"steps": 1000, "delay": 0.05}))["result"]
    await wait_status(on_b, created["taskId"], "working", 5)
    a.process.kill()  # no goodbye: its lease is simply not renewed
    a.process.wait(10)
    killed = time.monotonic()
    failed = await wait_status(on_b, created["taskId"], "failed", LEASE + 5)
    assert time.monotonic() - killed <= LEASE + 1
    assert failed["statusMessage"] == REPLICA_GONE
    assert failed["error"] == {"code": -32603, "message": REPLICA_GONE}
    assert "result" not in failed


async def test_a_replica_stopped_gracefully_fails_its_tasks_at_once(pair: tuple[Replica, Replica]) -> None:
    a, b = pair
    on_a, on_b = Wire(a.base), Wire(b.base)
    finished = (await on_a.call("jobs.long", {"steps": 2, "delay": 0.01}))["result"]
    await wait_status(on_a, finished["taskId"], "completed", 10)
    created = (await on_a.call("jobs.long", {"steps": 1000, "delay": 0.05}))["result"]
    await wait_status(on_b, created["taskId"], "working", 5)
    a.stop()  # SIGTERM: the drain waits shutdown_timeout, then cancels the work and settles its tasks
    failed = await wait_status(on_b, created["taskId"], "failed", 2)
    assert "shutting down" in str(failed["statusMessage"])
    assert "result" not in failed
    # The task a finished before it stopped is still answered, result and all, by b.
    kept = dict((await on_b.rpc("tasks/get", {"taskId": finished["taskId"]}))["result"])
    assert kept["status"] == "completed"
    assert kept["result"]["structuredContent"] == {"done": 2, "replica": "a"}


async def test_redis_records_expire_are_bounded_and_fail_closed_without_redis(tmp_path: Path) -> None:
    seen = Seen()
    with redis_running(tmp_path / "redis") as redis:
        settings = Settings(redis_url=redis.url, task_ttl=0.6, task_max_bytes=4096)
        bridge = Bridge.build(task_executor(seen), settings)
        async with running_http(bridge) as url:
            wire = Wire(url)
            kept = (await wire.call("jobs.quick", {"text": "kept"}))["result"]
            assert (await wire.until_done(kept["taskId"]))["result"]["status"] == "completed"
            big = (await wire.call("jobs.big", {"size": 10_000}))["result"]  # past task_max_bytes
            failed = (await wire.until_done(big["taskId"]))["result"]
            assert failed["status"] == "failed" and "too large" in failed["statusMessage"]
            await asyncio.sleep(0.7)  # Redis expires the records with the task's retention
            assert (await wire.rpc("tasks/get", {"taskId": kept["taskId"]}))["error"]["code"] == -32602
            redis.stop()
            refused = await wire.call("jobs.quick", {"text": "x"})
            assert refused["error"]["code"] == -32603 and "unreachable" in refused["error"]["message"]
            assert (await wire.rpc("tasks/get", {"taskId": kept["taskId"]}))["error"]["code"] == -32603
            async with httpx.AsyncClient(timeout=5) as http:  # the server runs in this event loop
                ready = (await http.get(f"{url}/ready")).json()
            assert "tasks" in ready["degraded"]["redis"]


async def test_concurrent_starts_cannot_pass_a_callers_bound_on_redis(tmp_path: Path) -> None:
    """Creating a record in Redis awaits the network: starts racing past that await are still counted."""
    with redis_running(tmp_path / "redis") as redis:
        bridge = Bridge.build(task_executor(Seen()), Settings(redis_url=redis.url, task_max_count=4))
        async with running_http(bridge) as url:
            wire = Wire(url)
            started = await asyncio.gather(*(wire.call("jobs.steps", {"steps": 100, "delay": 0.05}) for _ in range(6)))
            created = [reply["result"]["taskId"] for reply in started if "result" in reply]
            refused = [reply["error"] for reply in started if "error" in reply]
            assert len(created) == 2  # half of task_max_count, for one caller
            assert len(refused) == 4 and all("its limit of 2 running tasks" in e["message"] for e in refused)
            for task_id in created:
                await wire.rpc("tasks/cancel", {"taskId": task_id})


async def test_a_task_ending_while_redis_is_away_reads_failed_once_it_is_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis restarts empty (no persistence) while the task ends: the record is written again, ``failed``."""
    gate = asyncio.Event()
    with redis_running(tmp_path / "redis") as redis:
        bridge = Bridge.build(gate_executor(gate), Settings(redis_url=redis.url, task_lease=LEASE))
        async with running_http(bridge) as url:
            wire = Wire(url)
            task_id = (await wire.call("jobs.gate", {}))["result"]["taskId"]
            redis.stop()
            gate.set()
            await _logged(caplog, "Task store unreachable: task")  # the work ended, Redis away
            await asyncio.sleep(LEASE)  # past the lease: the other replicas would answer failed by now
            redis.start()  # the same port, empty
            answer: dict[str, Any] = {}
            deadline = time.monotonic() + 10  # the record comes back within lease / 3 of Redis
            while answer.get("result", {}).get("status") != "failed" and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                answer = await wire.rpc("tasks/get", {"taskId": task_id})
    assert "result" in answer, answer  # not "Task not found"
    assert answer["result"]["statusMessage"] == STORE_AWAY
    assert answer["result"]["error"] == {"code": -32603, "message": STORE_AWAY}


async def test_result_waiters_on_another_replica_wake_when_the_task_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp_tasks, "RESULT_LOOK_SECONDS", 3600.0)  # only the end's message from Redis wakes them
    gate = asyncio.Event()
    with redis_running(tmp_path / "redis") as redis:
        settings = Settings(redis_url=redis.url)
        a, b = Bridge.build(gate_executor(gate), settings), Bridge.build(gate_executor(gate), settings)
        async with running_http(a) as url_a, running_http(b) as url_b:
            on_a, on_b = Wire(url_a, era=HANDSHAKE), Wire(url_b, era=HANDSHAKE)
            await on_a.open()
            await on_b.open()
            task_id = (await on_a.call("jobs.gate", {}, task={}))["result"]["task"]["taskId"]
            runner = b.tasks
            counting = CountingStore(runner.store)
            with runner.using(counting):
                waiting = [asyncio.create_task(on_b.rpc("tasks/result", {"taskId": task_id})) for _ in range(WAITERS)]
                async with asyncio.timeout(20):
                    while counting.reads < WAITERS:
                        await asyncio.sleep(0.02)
                    await asyncio.sleep(1.0)
                    assert counting.reads < 2 * WAITERS, f"{counting.reads} Redis reads by {WAITERS} waiters"
                    gate.set()  # the task ends on a; b's waiters hear it from Redis
                    answers = await asyncio.gather(*waiting)
    assert [answer["result"]["structuredContent"] for answer in answers] == [{"opened": True}] * WAITERS


async def _logged(caplog: pytest.LogCaptureFixture, text: str) -> None:
    async with asyncio.timeout(10):
        while text not in caplog.text:
            await asyncio.sleep(0.02)
