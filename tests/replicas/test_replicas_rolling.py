"""A rolling restart through nginx round-robin: replica ``a`` gets SIGTERM while clients call.

Clients of both eras keep calling through nginx (2026-07-28, and the handshake era on
``--stateless`` replicas) while slow calls are in flight on ``a``. Expected: ``a`` stops taking
connections at once, so nginx sends every new request to ``b`` (a refused connection is retried
on the next replica, POST included); the calls in flight on ``a`` finish there and their replies
arrive; ``a`` exits cleanly within its shutdown timeout; not one call fails. A listen stream
open on ``a`` ends (the client re-listens elsewhere) rather than hanging.
"""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.subscriptions import SubscriptionLost

from tests._support.replicas import (
    ROUND_ROBIN,
    Replica,
    eventually,
    new_key,
    proxy_running,
    replicas_running,
    structured,
)

pytestmark = [pytest.mark.redis, pytest.mark.nginx]

SLOW_MS = 2500  # still running when the signal comes, well within the shutdown timeout
SHUTDOWN_TIMEOUT = 5
EXIT_SECONDS = SHUTDOWN_TIMEOUT + 5
MAX_CALLS_PER_WORKER = 3000  # a bound, not a budget: the workers call until `stop`, ~1 s after a exits
AFTER_STOP_CALLS = 20


async def in_flight(replica: Replica) -> float:
    async with httpx.AsyncClient(timeout=5) as http:
        text = (await http.get(f"{replica.base}/metrics")).text
    match = re.search(r"^apcore_mcp_tool_calls_in_flight (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


async def _in_flight_at_least(replica: Replica, count: int) -> bool:
    return await in_flight(replica) >= count


async def _answered(answers: list[Any], count: int) -> bool:
    return len(answers) >= count


async def test_sigterm_on_one_replica_under_load_loses_no_call(tmp_path: Path) -> None:
    args = ("--stateless", "--dynamic", "--request-state-keys", new_key(), "--shutdown-timeout", str(SHUTDOWN_TIMEOUT))
    with (
        replicas_running(["a", "b"], tmp_path, *args) as (a, b),
        proxy_running(ROUND_ROBIN, [a, b], tmp_path / "px") as proxy,
    ):
        slow: list[tuple[dict[str, Any], float]] = []  # (answer, when it arrived)
        answers: list[tuple[str, float]] = []  # (replica, when the call started)
        failures: list[str] = []
        stop = anyio.Event()
        listen_ended = anyio.Event()

        async def slow_call(url: str, mode: str, i: int) -> None:
            async with Client(url, mode=mode, cache=None) as client:
                # listed first: the client checks the result against the tool's output schema,
                # which it would otherwise fetch after the call, from a replica that has gone
                await client.list_tools()
                result = await client.call_tool("replica.slow", {"text": f"slow{i}", "ms": SLOW_MS})
                slow.append((structured(result), time.monotonic()))

        async def worker(mode: str, n: int) -> None:
            async with Client(proxy.mcp, mode=mode, cache=None) as client:
                for i in range(MAX_CALLS_PER_WORKER):
                    if stop.is_set():
                        return
                    started = time.monotonic()
                    try:
                        result = await client.call_tool("replica.echo", {"text": f"{mode}{n}-{i}"})
                        answers.append((structured(result)["replica"], started))
                    except Exception as exc:  # counted, not raised: every failure is reported at the end
                        failures.append(f"{mode} worker {n} call {i}: {type(exc).__name__}: {exc}")

        async def listen_on_a() -> None:
            async with Client(f"{a.base}/mcp", mode="auto", cache=None) as client:
                try:
                    async with client.listen(tools_list_changed=True) as subscription:
                        async for _event in subscription:
                            pass
                except SubscriptionLost:
                    pass
            listen_ended.set()

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(listen_on_a)
                # Two slow calls surely in flight on a (sent to it), two more through nginx.
                for i, mode in enumerate(["auto", "legacy"]):
                    tasks.start_soon(slow_call, f"{a.base}/mcp", mode, i)
                await eventually(lambda: _in_flight_at_least(a, 2), 10, "the slow calls in flight on a")
                for i, mode in enumerate(["auto", "legacy"], start=2):
                    tasks.start_soon(slow_call, proxy.mcp, mode, i)
                for n, mode in enumerate(["auto", "auto", "legacy", "legacy"]):
                    tasks.start_soon(worker, mode, n)
                await eventually(lambda: _answered(answers, 8), 10, "calls through nginx")
                stopped_at = time.monotonic()
                a.process.send_signal(signal.SIGTERM)
                while a.process.poll() is None and time.monotonic() - stopped_at < EXIT_SECONDS:
                    await anyio.sleep(0.05)
                exited_at = time.monotonic()
                counted = len(answers)
                while len(answers) < counted + AFTER_STOP_CALLS and not failures:
                    await anyio.sleep(0.01)
                stop.set()
                with anyio.fail_after(5):
                    await listen_ended.wait()

        assert failures == [], "\n".join(failures[:10])
        assert a.process.returncode == 0, a.output()
        assert " ERROR " not in a.output(), a.output()  # nothing cut off: the listen stream ended gracefully
        assert exited_at - stopped_at < EXIT_SECONDS
        # the calls in flight on a finished there, after the signal
        assert len(slow) == 4
        finished_on_a = [arrived for answer, arrived in slow if answer["replica"] == "a"]
        assert len(finished_on_a) >= 2 and all(arrived > stopped_at for arrived in finished_on_a)
        # calls started once a was gone were all answered by b
        late = {replica for replica, started in answers if started > exited_at}
        assert late == {"b"}
        assert {replica for replica, started in answers if started < stopped_at} == {"a", "b"}
