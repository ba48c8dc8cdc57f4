"""Attacks on the seams between workers and the features they share (``apcore-mcp --workers 2``).

Each request opens a connection of its own, so the kernel may hand it to either worker; where a
guarantee would hold on one worker only, the attack sends enough requests at once to reach both:
a replayed approval, a burst past the rate limit, calls past the concurrency cap, another
caller's task, an approval asked of a handshake-era client, and the sealing key the supervisor
made (it must not reach a log). Each server is our CLI in a process group, stopped by its PID.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp.types as types
import pytest
from mcp import Client

from apcore_mcp.testing import RunningServer

from tests._support.replicas import modern_call
from tests._support.tasks import Wire
from tests._support.workers import approved_retry, base_of, ran, workers

TASKS = Path(__file__).resolve().parents[1] / "task_extensions"
RATE_LIMITED = -32010
OVERLOADED = -32011
AT_ONCE = 8


async def at_once(base: str, count: int, name: str, arguments: dict[str, Any], **more: Any) -> list[dict[str, Any]]:
    """``count`` calls sent together, each on a connection of its own."""
    return list(
        await asyncio.gather(*(asyncio.to_thread(modern_call, base, name, arguments, **more) for _ in range(count)))
    )


async def test_a_replay_sent_to_both_workers_at_once_runs_once(tmp_path: Path) -> None:
    with workers(tmp_path) as server:
        retry = approved_retry(base_of(server), "t")
        answers = await asyncio.gather(*(asyncio.to_thread(retry) for _ in range(AT_ONCE)))
    assert len(ran(answers)) == 1, answers


async def test_a_burst_on_both_workers_gets_one_machines_limit(tmp_path: Path) -> None:
    with workers(tmp_path, "--rate-limit", "0.01", "--rate-burst", "3") as server:
        answers = await at_once(base_of(server), 10, "replica.echo", {"text": "x"})
    admitted = [answer for answer in answers if "result" in answer]
    assert len(admitted) == 3, answers
    assert all(answer["error"]["code"] == RATE_LIMITED for answer in answers if "error" in answer)


async def test_the_concurrency_cap_holds_for_the_machine(tmp_path: Path) -> None:
    with workers(tmp_path, "--max-concurrent-calls", "2", "--max-caller-share", "1") as server:
        answers = await at_once(base_of(server), 6, "replica.slow", {"text": "x", "ms": 1500})
    admitted = [answer for answer in answers if "result" in answer]
    refused = [answer for answer in answers if answer.get("error", {}).get("code") == OVERLOADED]
    assert len(admitted) <= 2 and len(admitted) + len(refused) == 6, answers  # one worker alone would admit 2


async def test_another_callers_task_is_unknown_on_every_worker(tmp_path: Path) -> None:
    with workers(tmp_path, extensions=TASKS) as server:
        owner, stranger = Wire(base_of(server)), Wire(base_of(server), source="127.0.0.2")
        created = (await owner.call("jobs.long", {"steps": 200, "delay": 0.05}))["result"]
        task = {"taskId": created["taskId"]}
        looks = [await stranger.rpc("tasks/get", task) for _ in range(6)]
        cancels = [await stranger.rpc("tasks/cancel", task) for _ in range(4)]
        still = (await owner.rpc("tasks/get", task))["result"]["status"]
    assert all(answer["error"]["code"] == -32602 for answer in [*looks, *cancels]), [*looks, *cancels]
    assert still == "working"


async def test_an_approval_is_never_granted_to_a_handshake_client(tmp_path: Path) -> None:
    asked: list[types.ElicitRequestParams] = []

    async def yes(context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"approve": True})

    with workers(tmp_path) as server, anyio.fail_after(30):
        async with Client(f"{base_of(server)}/mcp", mode="legacy", cache=None, elicitation_callback=yes) as client:
            result = await client.call_tool("replica.purge", {"target": "t"})
    assert result.is_error, result
    assert "stateless" in str(result.content[0]), result.content
    assert asked == []  # no channel back: nobody was asked, so nothing could be approved


def test_the_sealing_key_is_private_and_never_logged(tmp_path: Path) -> None:
    with workers(tmp_path, "--log-level", "DEBUG") as server:
        modern_call(base_of(server), "replica.echo", {"text": "x"})  # both eras' code paths ran
        httpx.get(f"{base_of(server)}/health", timeout=10)
        databases = list(store_files(server))
        assert len(databases) == 1, databases
        database = databases[0]
        assert stat.S_IMODE(database.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(database.stat().st_mode) & 0o077 == 0
        with contextlib.closing(sqlite3.connect(database)) as db:
            secrets_kept = [str(value) for (value,) in db.execute("SELECT value FROM secrets")]
        output = server.output()
    assert secrets_kept and all(len(key) >= 32 for key in secrets_kept)
    assert not any(key in output for key in secrets_kept)


def store_files(server: RunningServer) -> Iterator[Path]:
    """The workers' store: in the directory named after their supervisor (this server's process)."""
    from apcore_mcp.replicas.machine.store import runtime_root

    assert server.process is not None
    for directory in runtime_root().glob(f"{server.process.pid}-*"):
        yield from directory.glob("*.sqlite3")


def test_every_2026_input_round_crosses_workers(tmp_path: Path) -> None:
    """A 2026-07-28 client keeps every feature: each input round, asked on one worker and retried
    on a fresh connection (either worker), runs (one key ring for the machine)."""
    with workers(tmp_path) as server:
        rounds = [approved_retry(base_of(server), f"r{index}")() for index in range(4)]
    assert len(ran(rounds)) == 4, rounds


def test_workers_behind_redis_without_a_key_ring_are_warned_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Workers and replicas meet: the machine's own sealing key serves this machine's workers only,
    so replicas on Redis without the operator's key ring must still hear that they need one."""
    from apcore import Registry

    from apcore_mcp.bridge import Bridge
    from apcore_mcp.settings import Settings
    from apcore_mcp.settings.replicas import UNSHARED_KEYS

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    with caplog.at_level(logging.WARNING):
        bridge = Bridge.build(Registry(), Settings(workers=2, redis_url="redis://127.0.0.1:1"))
        keyed = Bridge.build(
            Registry(), Settings(workers=2, redis_url="redis://127.0.0.1:1", request_state_keys=("k" * 32,))
        )
    assert bridge.settings.request_state_keys and keyed.settings.request_state_keys == ("k" * 32,)
    assert [record.getMessage() for record in caplog.records].count(UNSHARED_KEYS) == 1
