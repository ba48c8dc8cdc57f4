"""Clients that go away cancel their calls, on every transport and era, with no ERROR in the log."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys

import anyio
import httpx
import pytest
from mcp import Client, ClientSession
from mcp.client.sse import sse_client

from hostile.kit import HERE, metric, metrics_text, open_session, serving, wait_until
from hostile.modules import hostile_registry, sleeper

KILLED = 300


@pytest.mark.slow
@pytest.mark.parametrize("era", ["handshake", "modern"])
@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
async def test_300_killed_calls_are_all_cancelled(
    era: str, json_response: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO")
    registry = hostile_registry()
    counts = sleeper(registry).counts
    async with serving(registry, json_response=json_response, max_concurrent_calls=None) as (url, _):
        async with httpx.AsyncClient() as http:
            session = [await open_session(http, url)] if era == "handshake" else []
        client = subprocess.Popen(
            [sys.executable, str(HERE / "caller.py"), url, era, str(KILLED), *session], stdout=subprocess.DEVNULL
        )
        try:
            await wait_until(lambda: counts.started == KILLED, f"{KILLED} calls running", timeout=60)
        finally:
            client.send_signal(signal.SIGKILL)
            client.wait(10)
        await wait_until(lambda: counts.cancelled == KILLED, f"all {KILLED} calls cancelled", timeout=30)
        assert counts.finished == 0  # the modules did not run to the end (50 of 50 did on 2026-07-28)
        text = await metrics_text(url)
    assert metric(text, "apcore_mcp_tool_calls_total", tool="hostile.sleep", outcome="cancelled") == KILLED
    assert metric(text, "apcore_mcp_tool_calls_in_flight") == 0
    errors = [record.getMessage() for record in caplog.records if record.levelname in ("ERROR", "CRITICAL")]
    assert errors == []  # "ASGI callable returned without completing response" among them, before


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_cancelled_client_call_cancels_the_module(mode: str) -> None:
    """The SDK client's own cancellation: notifications/cancelled (handshake) or a closed stream (2026-07-28)."""
    registry = hostile_registry()
    counts = sleeper(registry).counts
    async with serving(registry) as (url, _), Client(f"{url}/mcp", mode=mode) as client:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(client.call_tool, "hostile.sleep", {"seconds": 60})
            await wait_until(lambda: counts.started == 1, "the call running")
            tasks.cancel_scope.cancel()
        await wait_until(lambda: counts.cancelled == 1, "the module cancelled")
        assert json.loads((await client.call_tool("hostile.echo", {})).content[0].text) == {"ok": True}
    assert counts.finished == 0


async def test_closing_the_sse_connection_cancels_its_call() -> None:
    registry = hostile_registry()
    counts = sleeper(registry).counts
    async with serving(registry) as (url, _):
        with anyio.CancelScope() as gone:  # leaving it closes the connection, with no cancel notification
            async with sse_client(f"{url}/sse") as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(session.call_tool, "hostile.sleep", {"seconds": 60})
                    await wait_until(lambda: counts.started == 1, "the call running")
                    gone.cancel()
        await wait_until(lambda: counts.cancelled == 1, "the module cancelled")
    assert counts.finished == 0


async def test_a_browser_leaving_the_explorer_cancels_its_call() -> None:
    registry = hostile_registry()
    counts = sleeper(registry).counts
    async with serving(registry, explorer=True, allow_execute=True) as (url, _):
        async with httpx.AsyncClient() as http:
            call = asyncio.create_task(http.post(f"{url}/explorer/tools/hostile.sleep/call", json={"seconds": 60}))
            await wait_until(lambda: counts.started == 1, "the call running")
            call.cancel()
            await asyncio.gather(call, return_exceptions=True)
        await wait_until(lambda: counts.cancelled == 1, "the module cancelled")
    assert counts.finished == 0
