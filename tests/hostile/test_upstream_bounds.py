"""Upstream I/O is bounded (issue 15, holes 6 and 7), against a real misbehaving upstream process.

A stdio upstream's line over ``upstream_max_message_bytes`` fails the call at once, shows the
server failed in ``/ready`` and restarts it on next use, while ``/health`` keeps answering;
20 MB of junk lines cost a few log records, not one traceback each, and the upstream's stderr
still reaches its log file; a reply under a wrong id or of the wrong shape fails its call at
once and is counted; an HTTP upstream's body over the bound fails its call at once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from apcore_mcp.testing import free_port
from apcore_mcp.upstream.config.parse import parse_config
from apcore_mcp.upstream.handles import Lease, UpstreamPool

from tests._support.hostile import serving
from tests._support.processes import stop_process, wait_ok
from tests.upstreams.hostile_server import STDERR_MARKER

HOSTILE = Path(__file__).resolve().parents[1] / "upstreams" / "hostile_server.py"
CALL_TIMEOUT = 20.0
"""The upstream's ``timeout``: every refusal below must come well before it."""


def stdio_server(**fields: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(HOSTILE)], "protocol": "legacy", "timeout": CALL_TIMEOUT, **fields}


def hostile_children() -> list[int]:
    """Our child processes running the hostile upstream (zombies included: they were not reaped)."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            parent = int(stat[stat.rindex(")") + 2 :].split()[1])
            if parent == os.getpid() and HOSTILE.name in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(entry.name))
    return found


@pytest.fixture(autouse=True)
def no_child_left() -> Iterator[None]:
    yield
    assert hostile_children() == []


@contextlib.asynccontextmanager
async def bridged(tmp_path: Path, servers: dict[str, Any], **settings: Any) -> AsyncIterator[tuple[str, Client]]:
    """Our server (in this loop) mounting ``servers``, and a client of it; yields (base URL, client)."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    options = {"mcp_config": str(config), "upstream_log_dir": str(tmp_path / "logs"), **settings}
    async with serving(**options) as (url, _bridge), Client(f"{url}/mcp", mode="legacy") as client:
        yield url, client


async def ready(url: str) -> dict[str, Any]:
    async with httpx.AsyncClient() as http:
        upstreams: dict[str, Any] = (await http.get(f"{url}/ready")).json()["upstreams"]
        return upstreams


def text_of(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


async def timed_call(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    return result, time.perf_counter() - started


async def poll_health(url: str, latencies: list[float], stop: anyio.Event) -> None:
    async with httpx.AsyncClient() as http:
        while not stop.is_set():
            started = time.perf_counter()
            assert (await http.get(f"{url}/health")).status_code == 200
            latencies.append(time.perf_counter() - started)
            await anyio.sleep(0.005)


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def test_a_huge_line_fails_the_call_at_once_marks_the_server_failed_and_restarts_it(tmp_path: Path) -> None:
    async with bridged(tmp_path, {"bad": stdio_server()}) as (url, client):
        idle: list[float] = []
        with anyio.move_on_after(0.5):
            await poll_health(url, idle, anyio.Event())
        latencies: list[float] = []
        stop = anyio.Event()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(poll_health, url, latencies, stop)
            result, elapsed = await timed_call(client, "bad.big", {"mib": 70})
            stop.set()
        failed = await ready(url)
        again = await client.call_tool("bad.echo", {"text": "restarted"})
        healed = await ready(url)
    print(
        f"\n70 MiB line refused in {elapsed:.2f} s; /health p99 meanwhile {p99(latencies) * 1000:.1f} ms"
        f" ({len(latencies)} polls), idle before {p99(idle) * 1000:.1f} ms ({len(idle)} polls)"
    )
    assert result.is_error and "UPSTREAM_MESSAGE_TOO_LARGE" in text_of(result), text_of(result)
    assert elapsed < CALL_TIMEOUT / 2
    assert latencies, "/health answered during the huge line"
    assert "larger than" in failed["failed"]["bad"]
    assert failed["pool"]["bad"]["connected"] is False
    assert failed["pool"]["bad"]["wire"]["oversized"] == 1
    assert again.is_error is False and text_of(again) == "restarted"
    assert "bad" not in healed["failed"] and healed["pool"]["bad"]["connected"] is True


async def test_junk_lines_are_counted_and_logged_once_and_stderr_reaches_the_log_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    async with bridged(tmp_path, {"bad": stdio_server()}) as (url, client):
        result = await client.call_tool("bad.junk", {"mb": 20})
        status = await ready(url)
    noisy = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert result.is_error is False and text_of(result) == "after the junk"
    assert status["pool"]["bad"]["wire"]["malformed"] > 10_000
    assert len([record for record in noisy if record.levelno >= logging.ERROR]) < 10, noisy[:20]
    assert len(noisy) < 10, [record.getMessage()[:200] for record in noisy[:20]]
    assert not any(record.exc_info for record in noisy)
    assert any("more in the last" in record.getMessage() for record in noisy)  # counted, then told once
    assert STDERR_MARKER in (tmp_path / "logs" / "bad.log").read_text()


@pytest.mark.parametrize(
    ("tool", "counter"), [("wrong_id", "unknown_ids"), ("malformed", "malformed"), ("bad_result", "malformed")]
)
async def test_a_bad_reply_fails_its_call_at_once_and_is_counted(tmp_path: Path, tool: str, counter: str) -> None:
    async with bridged(tmp_path, {"bad": stdio_server()}) as (url, client):
        result, elapsed = await timed_call(client, f"bad.{tool}", {})
        status = await ready(url)
        after = await client.call_tool("bad.echo", {"text": "still here"})
    assert result.is_error and "UPSTREAM_BAD_REPLY" in text_of(result), text_of(result)
    assert elapsed < CALL_TIMEOUT / 2
    assert status["pool"]["bad"]["wire"][counter] == 1
    assert text_of(after) == "still here"  # the connection keeps serving


@contextlib.contextmanager
def http_hostile() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(HOSTILE), "--transport", "http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_ok(f"http://127.0.0.1:{port}/health", proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc)


@pytest.mark.parametrize("tool", ["big", "big_sse"])
async def test_an_http_message_over_the_bound_fails_its_call_at_once(tmp_path: Path, tool: str) -> None:
    with http_hostile() as endpoint:
        servers = {"web": {"url": endpoint, "protocol": "legacy", "timeout": CALL_TIMEOUT}}
        async with bridged(tmp_path, servers, upstream_max_message_bytes=2 * 1024 * 1024) as (url, client):
            result, elapsed = await timed_call(client, f"web.{tool}", {"mib": 6})
            fine = await client.call_tool(f"web.{tool}", {"mib": 0.5})
            status = await ready(url)
    assert result.is_error and "UPSTREAM_MESSAGE_TOO_LARGE" in text_of(result), text_of(result)
    assert elapsed < CALL_TIMEOUT / 2
    assert fine.is_error is False and len(text_of(fine)) == 512 * 1024
    assert status["pool"]["web"]["wire"]["oversized"] == 1


async def test_a_large_message_under_the_bound_passes_and_is_parsed_off_the_loop() -> None:
    spec = parse_config({"mcpServers": {"bad": stdio_server()}}, {}).servers["bad"]
    gaps: list[float] = []
    stop = anyio.Event()

    async def tick() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await anyio.sleep(0.002)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    async with UpstreamPool() as pool, anyio.create_task_group() as tasks:
        lease = await pool.acquire(spec)
        tasks.start_soon(tick)
        result, elapsed = await timed_call_lease(lease, "big", {"mib": 10})
        stop.set()
        status = pool.status()["bad"]
        await pool.release(lease)
    print(f"\n10 MiB answer in {elapsed:.2f} s; longest event-loop stall {max(gaps) * 1000:.1f} ms")
    assert result.is_error is not True and len(text_of(result)) == 10 * 1024 * 1024
    assert status["wire"] == {"oversized": 0, "malformed": 0, "unknown_ids": 0}


async def timed_call_lease(lease: Lease, tool: str, arguments: dict[str, Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = await lease.call_tool(tool, arguments)
    return result, time.perf_counter() - started
