"""``apcore-mcp --workers 2``: two worker processes of our CLI on one port, every feature across them.

Each request here opens a connection of its own, so the kernel hands it to either worker; the
modules name the process that ran them (``os.getpid()``), so a test sees both workers answer.
What one worker remembers alone would break here: a round sealed by one and retried on the
other, an approval replayed on the other, a task read or cancelled on the other, a rate limit
counted per worker. Processes are stopped by their process group.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from apcore_mcp.testing import RunningServer

from tests._support.replicas import modern_call, structured, wait_until
from tests._support.tasks import HANDSHAKE, Wire
from tests._support.workers import approved_retry, base_of, children_of, pids_answering, ran, workers

TASKS = Path(__file__).resolve().parents[1] / "task_extensions"
RATE_LIMITED = -32010


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with workers(tmp_path_factory.mktemp("workers"), "--shutdown-timeout", "2") as server:
        yield server


def test_both_workers_answer_2026_calls(pair: RunningServer) -> None:
    seen = pids_answering(lambda: structured_call(base_of(pair), "replica.echo", {"text": "x"})["replica"])
    assert len(seen) == 2
    assert children_of(pair) == seen  # the supervisor's two children, no one else


async def test_handshake_clients_are_served_stateless_whatever_worker_they_reach(pair: RunningServer) -> None:
    async def one(index: int) -> str:
        async with Client(f"{base_of(pair)}/mcp", mode="legacy", cache=None) as client:
            assert client.session.protocol_version == HANDSHAKE
            assert "replica.echo" in {tool.name for tool in (await client.list_tools()).tools}
            answer = structured(await client.call_tool("replica.echo", {"text": f"h{index}"}))
            assert answer["text"] == f"h{index}"
            return str(answer["replica"])

    with anyio.fail_after(60):
        answered = await asyncio.gather(*(one(index) for index in range(10)))
    assert set(answered) <= children_of(pair)


def test_an_approval_asked_on_one_worker_is_answered_once_on_any(pair: RunningServer) -> None:
    retry = approved_retry(base_of(pair), "t")
    answers = [retry() for _ in range(8)]
    assert len(ran(answers)) == 1, answers  # the round's state opens on both workers; it approves once
    refused = [answer["result"] for answer in answers if answer["result"].get("isError")]
    assert all("already used" in block["text"] for result in refused for block in result["content"]), refused


async def test_a_task_is_read_and_cancelled_on_either_worker(tmp_path: Path) -> None:
    with workers(tmp_path, "--task-lease", "1.5", extensions=TASKS) as server:
        wire = Wire(base_of(server))
        marker = tmp_path / "long"
        created = (await wire.call("jobs.long", {"steps": 1000, "delay": 0.05, "marker": str(marker)}))["result"]
        task_id = created["taskId"]
        states = [(await wire.rpc("tasks/get", {"taskId": task_id}))["result"]["status"] for _ in range(8)]
        assert set(states) == {"working"}, states
        assert (await wire.rpc("tasks/cancel", {"taskId": task_id}))["result"]["resultType"] == "complete"
        cancelled = marker.with_suffix(".cancelled")
        wait_until(cancelled.exists, 10, "the running worker cancelled the work")
        assert cancelled.read_text() == "True"
        states = [(await wire.rpc("tasks/get", {"taskId": task_id}))["result"]["status"] for _ in range(6)]
        assert set(states) == {"cancelled"}, states
        done = (await wire.call("jobs.long", {"steps": 2, "delay": 0.05}))["result"]
        finals = set()
        for _ in range(40):
            result = (await wire.rpc("tasks/get", {"taskId": done["taskId"]}))["result"]
            finals.add(result["status"])
            if result["status"] == "completed":
                assert result["result"]["structuredContent"]["done"] == 2
                break
            await asyncio.sleep(0.1)
        assert "completed" in finals


def test_one_rate_limit_for_the_machine(tmp_path: Path) -> None:
    with workers(tmp_path, "--rate-limit", "0.01", "--rate-burst", "4") as server:
        answers = [modern_call(base_of(server), "replica.echo", {"text": str(i)}) for i in range(12)]
    admitted = [answer for answer in answers if "result" in answer]
    limited = [answer for answer in answers if answer.get("error", {}).get("code") == RATE_LIMITED]
    assert (len(admitted), len(limited)) == (4, 8), answers


def test_a_killed_worker_is_replaced_and_the_other_keeps_serving(tmp_path: Path) -> None:
    with workers(tmp_path) as server:
        base = base_of(server)
        before = pids_answering(lambda: structured_call(base, "replica.echo", {"text": "x"})["replica"])
        victim = sorted(before)[0]
        os.kill(int(victim), signal.SIGKILL)
        answers = [structured_call(base, "replica.echo", {"text": str(i)}) for i in range(10)]
        assert all(answer["text"] == str(i) for i, answer in enumerate(answers))
        wait_until(lambda: len(children_of(server)) == 2 and victim not in children_of(server), 20, "a new worker")
        after = pids_answering(lambda: structured_call(base, "replica.echo", {"text": "y"})["replica"])
    assert victim not in after and len(after) == 2


def test_sigterm_lets_calls_in_flight_finish_then_stops_every_worker(tmp_path: Path) -> None:
    with workers(tmp_path, "--shutdown-timeout", "5") as server:
        base = base_of(server)
        assert server.process is not None
        children = children_of(server)
        with httpx.Client(timeout=30) as client:
            pending = concurrent_slow_call(base, 1500)
            time.sleep(0.5)  # the call is running in a worker
            server.process.send_signal(signal.SIGTERM)
            answer = pending()
            assert server.process.wait(timeout=15) == 0
            with pytest.raises(httpx.ConnectError):
                client.get(f"{base}/health")
    assert answer["result"]["structuredContent"]["text"] == "slow"
    assert all(not Path(f"/proc/{pid}").exists() for pid in children)


def test_the_legacy_sse_transport_is_refused_clearly(pair: RunningServer) -> None:
    response = httpx.get(f"{base_of(pair)}/sse", timeout=10)
    assert response.status_code == 501
    assert "worker processes" in response.text and "/mcp" in response.text


def test_the_start_says_once_what_workers_change(pair: RunningServer) -> None:
    lines = [line for line in pair.output().splitlines() if "workers serve this port" in line]
    assert len(lines) == 1, pair.output()
    assert "stateless" in lines[0] and "2025-11-25" in lines[0]


def structured_call(base: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = modern_call(base, name, arguments)
    assert "result" in answer and not answer["result"].get("isError"), answer
    return dict(answer["result"]["structuredContent"])


def concurrent_slow_call(base: str, ms: int) -> Callable[[], dict[str, Any]]:
    """Start one slow call in a thread; the returned function waits for its answer."""
    pool = concurrent.futures.ThreadPoolExecutor(1)
    future = pool.submit(modern_call, base, "replica.slow", {"text": "slow", "ms": ms})
    pool.shutdown(wait=False)
    return future.result


def test_metrics_on_any_worker_count_the_machine(tmp_path: Path) -> None:
    with workers(tmp_path) as server:
        base = base_of(server)
        calls = 12
        ran_on = {structured_call(base, "replica.echo", {"text": str(i)})["replica"] for i in range(calls)}
        time.sleep(1.5)  # each worker publishes its part every second
        totals = [echo_calls(httpx.get(f"{base}/metrics", timeout=10).text) for _ in range(6)]
    assert len(ran_on) == 2  # both workers ran some of them
    assert totals == [calls] * 6  # whichever worker answered the scrape


def echo_calls(exposition: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    return sum(
        sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
        if sample.name == "apcore_mcp_tool_calls_total" and sample.labels.get("tool") == "replica.echo"
    )


def test_connections_opened_at_once_spread_over_the_workers(pair: RunningServer) -> None:
    """Each worker listens on its own socket (SO_REUSEPORT): a pool opening its keep-alive
    connections together is not all accepted by whichever worker woke first."""
    assert pair.base_url is not None
    port = int(pair.base_url.rsplit(":", 1)[1])
    connections = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(16)]
    try:
        answered = {pid_over(connection, port) for connection in connections}
    finally:
        for connection in connections:
            connection.close()
    assert answered == children_of(pair)


def test_the_port_stays_held_while_workers_serve(pair: RunningServer) -> None:
    assert pair.base_url is not None
    port = int(pair.base_url.rsplit(":", 1)[1])
    with socket.socket() as other, pytest.raises(OSError, match="Address already in use"):
        other.bind(("127.0.0.1", port))


def pid_over(connection: socket.socket, port: int) -> str:
    """One 2026-07-28 ``replica.echo`` call on ``connection``; the pid of the worker that ran it."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "replica.echo",
                "arguments": {"text": "x"},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
    ).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
        f"Mcp-Method: tools/call\r\nMcp-Name: replica.echo\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    connection.sendall(head.encode() + body)
    reply = connection.makefile("rb")
    length = 0
    while (line := reply.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    answer = json.loads(reply.read(length))  # a JSON reply: the direct path answers a plain call so
    return str(answer["result"]["structuredContent"]["replica"])


async def test_a_listen_stream_hears_the_changes_of_its_own_worker(tmp_path: Path) -> None:
    """As docs/workers.md says: a stream stays on the worker it reached and hears that worker's
    registry; a module added on either worker (``replica.add``) is heard once one lands on it."""
    with workers(tmp_path, "--dynamic") as server, anyio.fail_after(60):
        heard = anyio.Event()
        async with (
            Client(f"{base_of(server)}/mcp", mode="auto", cache=None) as client,
            client.listen(tools_list_changed=True) as subscription,
            anyio.create_task_group() as background,
        ):
            assert subscription.honored.tools_list_changed

            async def first_event() -> None:
                async for _event in subscription:
                    heard.set()
                    return

            background.start_soon(first_event)
            added_on = set()
            for index in range(20):  # fresh connections: each add lands on either worker
                added_on.add(structured_call(base_of(server), "replica.add", {"name": f"added.w{index}"})["replica"])
                with anyio.move_on_after(0.5):
                    await heard.wait()
                if heard.is_set():
                    break
            background.cancel_scope.cancel()
        assert heard.is_set() and added_on <= children_of(server)
