"""The direct path and the SDK answer alike: the SSE commit after the ping interval, clients that
leave, concurrency (``tests/_support/direct_pair.py``).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from apcore_mcp.calls.limits import RATE_LIMITED
from apcore_mcp.http.direct import DIRECT_METHODS

from tests._support.direct_pair import (
    ECHO,
    INTERNAL_ERROR,
    LIST,
    SDK_ONLY,
    SLOW_SECONDS,
    Pair,
    Post,
    answer_of,
    bridge_of,
    compare,
    counters,
    direct_counts,
    frames,
    module_pair,
    moved,
    patch_ping_interval,
    post,
    result_of,
    send,
    serving_pair,
    tool,
)

# -- the SSE commit after the ping interval ------------------------------------------------------

pytestmark = pytest.mark.asyncio(loop_scope="module")
pair = pytest_asyncio.fixture(scope="module", loop_scope="module")(module_pair)
"""One pair of servers for the whole module: the cases here do not change them."""


@dataclass(frozen=True)
class Stream:
    """A committed event stream: its status and headers, how many pings, and the final event's message."""

    status: int
    headers: tuple[tuple[str, str], ...]
    pings: int
    final: Any


def stream_of(response: httpx.Response) -> Stream:
    *pings, final = frames(response.content)
    assert pings and set(pings) == {b": ping"}, response.content
    assert final.startswith(b"event: message\r\ndata: "), final
    message = json.loads(final.removeprefix(b"event: message\r\ndata: "))
    headers = tuple((key, value) for key, value in response.headers.multi_items() if key != "date")
    return Stream(response.status_code, headers, len(pings), message)


@pytest.mark.parametrize(
    ("request_", "took"),
    [
        pytest.param(tool("demo.wait", {"seconds": SLOW_SECONDS}), "tools/call", id="result"),
        pytest.param(post("resources/read", {"uri": "test://direct/late-broken"}), "resources/read", id="late-error"),
    ],
)
async def test_a_silent_call_commits_to_sse_with_pings_alike(
    pair: Pair, monkeypatch: pytest.MonkeyPatch, request_: Post, took: str
) -> None:
    patch_ping_interval(monkeypatch)
    before = await counters(pair, pair.direct)
    on, off = [stream_of(await send(pair, served, request_)) for served in pair.both]
    assert direct_counts(moved(before, await counters(pair, pair.direct))) == {took: 1.0}
    assert (on.status, on.headers, on.final) == (off.status, off.headers, off.final)  # ping counts are the clock's
    assert on.status == 200
    assert [(key, value) for key, value in on.headers if key != "server"][:4] == [
        ("content-type", "text/event-stream"),
        ("cache-control", "no-cache, no-transform"),
        ("connection", "keep-alive"),
        ("x-accel-buffering", "no"),
    ]
    if took == "tools/call":
        assert on.final["result"]["structuredContent"] == {"echo": "done"}
    else:  # after the commit an error travels in the stream, with HTTP 200
        assert on.final["error"]["code"] == INTERNAL_ERROR


# -- disconnects and concurrency --------------------------------------------------------------


async def wait_until(check: Any, what: str, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.01)
    assert check(), what


LEAVERS = 5


@pytest.mark.parametrize("which", ["direct", "sdk"])
async def test_a_client_leaving_cancels_the_module_and_loses_nothing(pair: Pair, tmp_path: Path, which: str) -> None:
    """Closing the connection mid-call (the 2026-07-28 way to cancel): the module unwinds with its token
    set, never finishes, is counted once as cancelled, and leaves no task behind; the server carries on."""
    served = pair.direct if which == "direct" else pair.sdk
    router = served.bridge.router
    outcomes: list[str] = []

    def observe(name: str, kind: str, _seconds: float) -> None:
        if name == "demo.sleep":
            outcomes.append(kind)

    router.observers.append(observe)
    before = await counters(pair, served)
    baseline = len(asyncio.all_tasks())
    try:
        for index in range(LEAVERS):
            marker = tmp_path / f"sleep{index}"
            async with httpx.AsyncClient(timeout=60) as leaving:
                request_ = tool("demo.sleep", {"marker": str(marker), "seconds": 30})
                call = asyncio.create_task(
                    leaving.post(f"{served.url}/mcp", content=request_.body, headers=dict(request_.headers))
                )
                await wait_until(lambda: router.in_flight == 1, "the call is running")
                call.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await call
            cancelled = marker.with_name(f"{marker.name}.cancelled")
            await wait_until(cancelled.exists, "the module was cancelled")
            assert cancelled.read_text() == "True"  # its CancelToken was set when it unwound
            await wait_until(lambda: router.in_flight == 0, "the call ended")
        await wait_until(lambda: len(asyncio.all_tasks()) <= baseline, "no task outlives its call")
    finally:
        router.observers.remove(observe)
    assert outcomes == ["cancelled"] * LEAVERS
    assert not [path for path in tmp_path.iterdir() if not path.name.endswith(".cancelled")]  # none finished
    delta = moved(before, await counters(pair, served))
    assert direct_counts(delta) == ({"tools/call": LEAVERS} if which == "direct" else {})
    assert delta[("apcore_mcp_tool_calls_total", (("outcome", "cancelled"), ("tool", "demo.sleep")))] == LEAVERS
    after = answer_of(await send(pair, served, ECHO))
    assert result_of(after)["structuredContent"] == {"echo": "hi"}


@pytest.mark.parametrize("which", ["direct", "sdk"])
async def test_a_client_leaving_a_committed_stream_cancels_the_call(
    pair: Pair, tmp_path: Path, which: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Past the ping interval the answer is an event stream: leaving it mid-ping cancels the call just the same,
    and the pinging stops without an error (nothing logged, no task left)."""
    patch_ping_interval(monkeypatch, 0.05)
    served = pair.direct if which == "direct" else pair.sdk
    router = served.bridge.router
    marker = tmp_path / "sleep"
    request_ = tool("demo.sleep", {"marker": str(marker), "seconds": 30})
    baseline = len(asyncio.all_tasks())
    async with (
        httpx.AsyncClient(timeout=60) as leaving,
        leaving.stream("POST", f"{served.url}/mcp", content=request_.body, headers=dict(request_.headers)) as stream,
    ):
        assert stream.headers["content-type"] == "text/event-stream"
        pings = 0
        async for chunk in stream.aiter_bytes():
            pings += chunk.count(b": ping")
            if pings >= 3:
                break
    cancelled = marker.with_name("sleep.cancelled")
    await wait_until(cancelled.exists, "the module was cancelled")
    assert cancelled.read_text() == "True" and not marker.exists()
    await wait_until(lambda: router.in_flight == 0, "the call ended")
    await wait_until(lambda: len(asyncio.all_tasks()) <= baseline, "no pinger outlives its stream")
    assert [record.getMessage() for record in caplog.records if record.levelname in ("ERROR", "CRITICAL")] == []


async def test_fifty_concurrent_calls_each_get_their_own_reply(pair: Pair) -> None:
    ids: list[int | str] = [*range(100, 125), *(f"call-{index}" for index in range(25))]
    requests = [tool("demo.echo", {"text": f"text of {request_id}"}, request_id=request_id) for request_id in ids]
    before = await counters(pair, pair.direct)
    on, off = [await asyncio.gather(*(send(pair, served, request_) for request_ in requests)) for served in pair.both]
    assert direct_counts(moved(before, await counters(pair, pair.direct))) == {"tools/call": 50.0}
    for request_id, direct_reply, sdk_reply in zip(ids, on, off, strict=True):
        assert answer_of(direct_reply) == answer_of(sdk_reply)
        message = direct_reply.json()
        assert message["id"] == request_id
        assert message["result"]["structuredContent"] == {"echo": f"text of {request_id}"}


# -- what the direct path is built on ------------------------------------------------------------


async def test_every_registered_request_method_is_direct_or_the_sdks() -> None:
    """A new handler forces a decision: answer it directly, or name it here as the SDK's."""
    bridge = bridge_of(dynamic=True)  # every handler: prompts, subscriptions/listen
    registered = set(bridge.server._request_handlers)
    assert registered == DIRECT_METHODS | SDK_ONLY, registered ^ (DIRECT_METHODS | SDK_ONLY)
    assert not DIRECT_METHODS & SDK_ONLY


# -- per-caller limits ----------------------------------------------------------------------------


async def test_a_rate_limited_call_is_answered_alike() -> None:
    async with serving_pair(rate_limit=0.01, rate_burst=1) as pair:
        first = await compare(pair, ECHO, took="tools/call")
        assert result_of(first)["isError"] is False
        limited = await compare(pair, ECHO, took="tools/call")
        error = limited.json()["error"]
        assert (limited.status, error["code"], error["data"]["retryAfter"]) == (200, RATE_LIMITED, "<seconds>")
        assert error["message"] == "Rate limit exceeded; retry in <seconds>s"
        assert result_of(await compare(pair, LIST, took="tools/list"))["tools"]  # only calls are limited
