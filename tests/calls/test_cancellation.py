"""A cancelled call stops its module: ``notifications/cancelled`` (stdio, SSE, handshake HTTP, in
memory) and a closed response stream (2026-07-28 HTTP) cancel the module's coroutine and set its
``CancelToken``; nothing leaks after many cancelled calls."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any

import pytest

from tests._support.sessions import OpenClient


async def wait_for_file(path: Path, timeout: float = 10.0) -> str:
    async with asyncio.timeout(timeout):
        while not path.exists():
            await asyncio.sleep(0.01)
    return path.read_text()


async def start_sleeper(client: Any, marker: Path) -> asyncio.Task[Any]:
    """A ``demo.sleep`` call for 30 s, returned once the module reports it is running."""
    running = asyncio.Event()

    async def on_progress(_progress: float, _total: float | None, _message: str | None) -> None:
        running.set()

    call = asyncio.create_task(
        client.call_tool("demo.sleep", {"marker": str(marker), "seconds": 30}, progress_callback=on_progress)
    )
    async with asyncio.timeout(10):
        await running.wait()
    return call


async def test_a_cancelled_call_cancels_the_module(connect: OpenClient, tmp_path: Path) -> None:
    marker = tmp_path / "sleep"
    async with connect() as conn:
        outcomes: list[str] = []
        if conn.bridge is not None:
            conn.bridge.router.observers.append(lambda _tool, kind, _seconds: outcomes.append(kind))
        call = await start_sleeper(conn.client, marker)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        # The module unwinds with CancelledError and its token already set; it never finishes.
        assert await wait_for_file(marker.with_name("sleep.cancelled")) == "True"
        assert not marker.exists()
        # The connection carries on.
        echo = await conn.client.call_tool("demo.echo", {"text": "still here"})
        assert echo.is_error is False
        if conn.bridge is not None:
            async with asyncio.timeout(10):
                while "cancelled" not in outcomes or conn.bridge.router.in_flight:
                    await asyncio.sleep(0.01)
            assert outcomes.count("cancelled") == 1


@pytest.mark.parametrize(
    "connect", ["memory", "memory-modern", "http", "http-modern", "http-modern-sdk"], indirect=True
)
async def test_a_hundred_cancelled_calls_leave_nothing_behind(connect: OpenClient, tmp_path: Path) -> None:
    async with connect() as conn:
        assert conn.bridge is not None
        await conn.client.call_tool("demo.echo", {"text": "warm up"})
        baseline = len(asyncio.all_tasks())
        for index in range(100):
            call = await start_sleeper(conn.client, tmp_path / f"sleep{index}")
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
        async with asyncio.timeout(20):
            while len(list(tmp_path.glob("*.cancelled"))) < 100 or conn.bridge.router.in_flight:
                await asyncio.sleep(0.01)
            while len(asyncio.all_tasks()) > baseline:
                await asyncio.sleep(0.01)
        assert not list(tmp_path.glob("sleep*[0-9]"))  # no module finished
        gc.collect()
        assert conn.bridge.router.in_flight == 0
        assert (await conn.client.call_tool("demo.echo", {"text": "after"})).is_error is False
