"""SIGTERM with streams open and calls in flight: every client gets an answer, the log has no ERROR."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, ClientSession
from mcp.client.sse import sse_client

from tests._support.hostile import error_lines, metric, metrics_text, server_process, wait_until
from tests._support.results import text_of

SHUTDOWN_TIMEOUT = 1.0


@pytest.mark.slow
async def test_sigterm_ends_streams_cleanly_and_answers_every_call(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    answers: list[str] = []

    async def mcp_call(url: str, mode: str, seconds: float) -> None:
        try:  # closing the client after the server is gone may fail
            async with Client(f"{url}/mcp", mode=mode) as client:  # legacy: with its GET stream open
                # The client checks a structured result against the tool's output schema, listing the
                # tools first if it has not yet: a new request, which a stopping server no longer accepts.
                await client.list_tools()
                result = await client.call_tool("hostile.sleep", {"seconds": seconds})
                answers.append(f"{mode} {seconds}: " + text_of(result))
        except Exception as exc:
            answers.append(f"{mode} {seconds} raised {exc!r}")

    async def sse_call(url: str, seconds: float) -> None:
        try:
            async with sse_client(f"{url}/sse") as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                await session.list_tools()  # as above: no request of its own after the stop signal
                result = await session.call_tool("hostile.sleep", {"seconds": seconds})
                answers.append(f"sse {seconds}: " + text_of(result))
        except Exception as exc:
            answers.append(f"sse {seconds} raised {exc!r}")

    async def listen(url: str) -> None:
        try:
            async with Client(f"{url}/mcp", mode="auto") as client:
                async with client.listen(tools_list_changed=True) as subscription:
                    listening.set()
                    async for _event in subscription:
                        pass
                answers.append("listen ended gracefully")
        except Exception as exc:  # SubscriptionLost, or cut before its final result
            answers.append(f"listen failed: {exc!r}")

    listening = anyio.Event()
    with server_process(f"shutdown_timeout={SHUTDOWN_TIMEOUT}", "dynamic=true", log=log) as (proc, url):
        async with anyio.create_task_group() as clients:
            clients.start_soon(listen, url)  # a 2026-07-28 subscriptions/listen stream, open at the stop
            with anyio.fail_after(10):
                await listening.wait()
            for seconds in (0.5, 30.0):  # one finishes within the grace period, one is cancelled after it
                clients.start_soon(mcp_call, url, "legacy", seconds)
                clients.start_soon(mcp_call, url, "auto", seconds)
                clients.start_soon(sse_call, url, seconds)

            async def all_running() -> bool:
                return metric(await metrics_text(url), "apcore_mcp_tool_calls_in_flight") == 6

            await wait_until(all_running, "six calls in flight")
            stopped_at = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            returncode = await asyncio.to_thread(proc.wait, SHUTDOWN_TIMEOUT + 10)
            took = time.monotonic() - stopped_at
    assert returncode == 0
    assert took < SHUTDOWN_TIMEOUT + 2  # uvicorn's own graceful timeout never had to cut anything
    finished = sorted(answer for answer in answers if answer.endswith('{"slept":0.5}'))
    cancelled = sorted(answer for answer in answers if "the server is shutting down" in answer)
    assert (len(finished), len(cancelled)) == (3, 3), answers
    assert "listen ended gracefully" in answers, answers
    text = log.read_text()
    assert error_lines(text) == []  # 7 ERROR lines before, streams ended broken
    assert "returned without completing response" not in text
