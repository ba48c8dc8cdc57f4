"""Clients that go away cancel their calls, on every transport and era, with no ERROR in the log."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, ClientSession
from mcp.client.sse import sse_client

from tests._support.hostile import (
    REPO,
    explorer_call,
    metric,
    metrics_text,
    open_session,
    serving,
    session_headers,
    sse_payload,
    tool_call,
    wait_until,
)
from tests._support.hostile_modules import hostile_registry, sleeper
from tests._support.results import text_of

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
    # Handshake-era SSE streams are resumable: a call outlives its broken stream by five reconnection
    # delays (here 5 x 0.1 s) unless its client comes back for it; a killed client never does.
    settings: dict[str, Any] = {"json_response": json_response, "max_concurrent_calls": None}
    if not json_response:  # JSON responses are not resumable: a reconnection delay would mean nothing
        settings["sse_retry_ms"] = 100
    async with serving(registry, **settings) as (url, _):
        async with httpx.AsyncClient() as http:
            session = [await open_session(http, url)] if era == "handshake" else []
        client = subprocess.Popen(
            [sys.executable, "-m", "tests.hostile.caller", url, era, str(KILLED), *session],
            stdout=subprocess.DEVNULL,
            cwd=REPO,
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
        assert json.loads(text_of(await client.call_tool("hostile.echo", {}))) == {"ok": True}
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
            call = asyncio.create_task(explorer_call(http, url, "hostile.sleep", {"seconds": 60}))
            await wait_until(lambda: counts.started == 1, "the call running")
            call.cancel()
            await asyncio.gather(call, return_exceptions=True)
        await wait_until(lambda: counts.cancelled == 1, "the module cancelled")
    assert counts.finished == 0


async def post_until_primed(http: httpx.AsyncClient, url: str, session_id: str, seconds: float) -> str:
    """POST a sleeping call, read up to the stream's priming event, then drop the connection; its event id."""
    body = tool_call(7, "hostile.sleep", {"seconds": seconds})
    async with http.stream("POST", f"{url}/mcp", json=body, headers=session_headers(session_id)) as response:
        async for line in response.aiter_lines():
            if line.startswith("id:"):
                return line[3:].strip()
    raise AssertionError("no priming event")


async def test_a_broken_stream_resumed_in_time_keeps_its_call() -> None:
    registry = hostile_registry()
    counts = sleeper(registry).counts
    async with serving(registry, sse_retry_ms=1000) as (url, _), httpx.AsyncClient(timeout=20) as http:
        session_id = await open_session(http, url)
        event_id = await post_until_primed(http, url, session_id, seconds=1.0)  # a proxy cut it, say
        await wait_until(lambda: counts.started == 1, "the call running")
        headers = {**session_headers(session_id), "Last-Event-ID": event_id}
        answer: dict[str, Any] = {}
        with anyio.fail_after(10):
            async with http.stream("GET", f"{url}/mcp", headers=headers) as resumed:
                async for line in resumed.aiter_lines():
                    if line.startswith("data:") and '"id":7' in line:
                        answer = sse_payload(line)
                        break  # the SDK keeps a resumed stream open after its response
    assert answer["result"] == {"content": [{"type": "text", "text": '{"slept":1.0}'}], "isError": False}
    assert (counts.finished, counts.cancelled) == (1, 0)


async def test_a_broken_stream_nobody_resumes_cancels_its_call() -> None:
    registry = hostile_registry()
    counts = sleeper(registry).counts
    async with serving(registry, sse_retry_ms=100) as (url, _), httpx.AsyncClient(timeout=20) as http:
        session_id = await open_session(http, url)
        await post_until_primed(http, url, session_id, seconds=60)
        await wait_until(lambda: counts.cancelled == 1, "the call cancelled after the grace period")
    assert counts.finished == 0
