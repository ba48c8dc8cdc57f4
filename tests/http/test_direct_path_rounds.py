"""The direct path and the SDK answer alike: input-required rounds, what the SDK answers on both,
JSON responses and a handler that does more than answer (``tests/_support/direct_pair.py``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
import pytest_asyncio
from mcp.server.context import ServerRequestContext
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR

from apcore_mcp.bridge import Bridge

from tests._support.direct_pair import (
    ECHO,
    ELICITING_META,
    INTERNAL_ERROR,
    LIST,
    SLOW_SECONDS,
    Pair,
    Post,
    bridge_of,
    compare,
    frames,
    module_pair,
    patch_ping_interval,
    post,
    result_of,
    send,
    serving_pair,
    state_of,
    tampered,
    tool,
)
from tests._support.hostile import MODERN_META

# -- input-required rounds --------------------------------------------------------------------

pytestmark = pytest.mark.asyncio(loop_scope="module")
pair = pytest_asyncio.fixture(scope="module", loop_scope="module")(module_pair)
"""One pair of servers for the whole module: the cases here do not change them."""


async def test_input_required_rounds_are_answered_alike(pair: Pair, tmp_path: Path) -> None:
    marker = tmp_path / "purged"
    arguments = {"marker": str(marker)}
    first = tool("demo.purge", arguments, meta=ELICITING_META)
    asked = result_of(await compare(pair, first, took="tools/call"))
    assert asked["resultType"] == "input_required" and asked["requestState"] == "<sealed>"
    assert not marker.exists()

    states = [state_of(await send(pair, served, first)) for served in pair.both]

    def round_two(state: str, key: str) -> Post:
        answers = {key: {"action": "accept", "content": {"approve": True}}}
        params = {"name": "demo.purge", "arguments": arguments, "inputResponses": answers, "requestState": state}
        return post("tools/call", params, meta=ELICITING_META)

    refused = await compare(
        pair,
        round_two(tampered(states[0][0]), states[0][1]),
        round_two(tampered(states[1][0]), states[1][1]),
        took="tools/call",
    )
    assert refused.status == 400 and refused.json()["error"]["code"] == INVALID_PARAMS
    assert not marker.exists()

    done = result_of(await compare(pair, round_two(*states[0]), round_two(*states[1]), took="tools/call"))
    assert done["isError"] is False and done["structuredContent"] == {"done": True}
    assert marker.read_text() == "ran"


async def test_prompt_input_rounds_are_answered_alike(pair: Pair) -> None:
    first = post("prompts/get", {"name": "test_input_required_result_prompt"}, meta=ELICITING_META)
    asked = result_of(await compare(pair, first, took="prompts/get"))
    assert asked["resultType"] == "input_required"
    states = [state_of(await send(pair, served, first)) for served in pair.both]

    def round_two(state: str, key: str) -> Post:
        answers = {key: {"action": "accept", "content": {"context": "release notes"}}}
        params = {"name": "test_input_required_result_prompt", "inputResponses": answers, "requestState": state}
        return post("prompts/get", params, meta=ELICITING_META)

    rendered = result_of(await compare(pair, round_two(*states[0]), round_two(*states[1]), took="prompts/get"))
    assert rendered["messages"][0]["content"]["text"] == "Use this context: release notes"


# -- requests the SDK answers on both servers -----------------------------------------------------

PROGRESS = {**MODERN_META, "progressToken": "p-1"}
LOGGING = {**MODERN_META, "io.modelcontextprotocol/logLevel": "debug"}


def raw(body: Any, headers: Mapping[str, str] = ECHO.headers) -> Post:
    return Post(body if isinstance(body, bytes) else json.dumps(body).encode(), headers)


FALLBACKS = [
    pytest.param(tool("demo.progress", {"values": [1, 2, 3], "total": 3}, meta=PROGRESS), 200, id="progress-token"),
    pytest.param(tool("demo.log", meta=LOGGING), 200, id="log-level"),
    pytest.param(
        tool("demo.echo", {"text": "x"}, meta={**MODERN_META, "io.modelcontextprotocol/logLevel": "loud"}),
        400,
        id="log-level-invalid",
    ),
    pytest.param(post("tools/frobnicate"), 404, id="unknown-method"),
    pytest.param(post("ping"), 404, id="ping"),
    pytest.param(post("initialize"), 404, id="initialize"),
    pytest.param(post("logging/setLevel", {"level": "info"}), 404, id="logging/setLevel"),
    pytest.param(post("resources/subscribe", {"uri": "docs://demo.echo"}), 404, id="resources/subscribe"),
    pytest.param(
        raw({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}), 202, id="note"
    ),
    pytest.param(raw([json.loads(ECHO.body), json.loads(ECHO.body)]), 400, id="batch"),
    pytest.param(raw(b'{"jsonrpc": "2.0", "id": 1, "method": '), 400, id="parse-error"),
    pytest.param(
        raw({"jsonrpc": "1.0", "id": 1, "method": "tools/list", "params": {"_meta": MODERN_META}}), 400, id="v1"
    ),
    pytest.param(raw({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1]}), 400, id="params-a-list"),
    pytest.param(ECHO.with_headers(mcp_protocol_version="2025-11-25"), 400, id="handshake-era-version"),
]


@pytest.mark.parametrize(("request_", "status"), FALLBACKS)
async def test_what_the_sdk_answers_is_the_same_on_both(pair: Pair, request_: Post, status: int) -> None:
    answer = await compare(pair, request_, took=None)
    assert answer.status == status, answer


async def test_fallbacks_carry_what_they_are_for(pair: Pair) -> None:
    """Progress and log notifications stream before the result; bad envelopes get the SDK's codes."""
    progress = await compare(pair, tool("demo.progress", {"values": [1, 2], "total": 2}, meta=PROGRESS), took=None)
    assert progress.header("content-type") == "text/event-stream"
    events = [json.loads(frame.removeprefix(b"event: message\r\ndata: ")) for frame in frames(progress.body)]
    assert [event.get("method") for event in events] == ["notifications/progress"] * 2 + [None]
    assert events[-1]["result"]["structuredContent"] == {"reported": 2}
    logs = await compare(pair, tool("demo.log", meta=LOGGING), took=None)
    assert logs.body.count(b'"method":"notifications/message"') == 4
    for request_, status, code in [
        (post("ping"), 404, METHOD_NOT_FOUND),
        (raw([json.loads(ECHO.body)]), 400, INVALID_REQUEST),
        (raw(b"{"), 400, PARSE_ERROR),
    ]:
        answer = await compare(pair, request_, took=None)
        assert (answer.status, answer.json()["error"]["code"]) == (status, code)


# -- JSON responses (json_response=True) ------------------------------------------------------


async def test_json_response_mode_is_answered_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    patch_ping_interval(monkeypatch)
    async with serving_pair(json_response=True) as pair:
        for request_, took in [
            (post("tools/list"), "tools/list"),
            (ECHO, "tools/call"),
            (ECHO.with_headers(accept="application/json"), "tools/call"),  # no SSE needed in JSON mode
            (post("resources/read", {"uri": "docs://demo.echo"}), "resources/read"),
            (tool("demo.wait", {"seconds": SLOW_SECONDS}), "tools/call"),  # past the ping interval: still JSON
        ]:
            answer = await compare(pair, request_, took=took)
            assert answer.header("content-type") == "application/json"
            assert answer.json()["result"]["resultType"] == "complete"
        refused = await compare(pair, ECHO.with_headers(accept="text/event-stream"), took="tools/call")
        assert refused.status == 406
        dropped = await compare(pair, tool("demo.log", meta=LOGGING), took=None)  # the SDK's: notifications dropped
        assert dropped.header("content-type") == "application/json"


# -- what a handler does besides answering -------------------------------------------------------

NOTIFY_FIRST = "notify first"
RAISE = "middleware raises"
ANSWERS_ITSELF: dict[str, Any] = {
    "answer nan": {"ratio": math.nan, "limit": math.inf},
    "answer a date": {"when": datetime(2026, 1, 2, 3, 4, 5)},
}
"""Structured results a middleware answers with itself, values JSON has no literal for (the SDK's
pydantic dump writes ``null`` and an ISO 8601 string)."""


async def surprising(ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
    """Server middleware: a request-scoped notification no rule foresaw, or a crash outside any handler."""
    arguments = (ctx.params or {}).get("arguments") or {}
    text = arguments.get("text") if isinstance(arguments, Mapping) else None
    if text == NOTIFY_FIRST:
        await ctx.session.send_notification(types.ToolListChangedNotification(), related_request_id=ctx.request_id)
    if text == RAISE:
        raise RuntimeError("middleware broke: secret detail")
    if text in ANSWERS_ITSELF:  # short-circuits: the SDK's kernel leaves such a result as it is
        return {"content": [], "isError": False, "structuredContent": ANSWERS_ITSELF[text], "resultType": "complete"}
    return await call_next(ctx)


def surprising_bridge(**settings: Any) -> Bridge:
    bridge = bridge_of(**settings)
    bridge.server.middleware.insert(0, surprising)
    return bridge


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
async def test_a_surprise_notification_and_a_crash_are_answered_alike(json_response: bool) -> None:
    async with serving_pair(surprising_bridge, json_response=json_response) as pair:
        notified = await compare(pair, tool("demo.echo", {"text": NOTIFY_FIRST}), took="tools/call")
        if json_response:  # nowhere to send it: dropped, as the SDK's JSON branch drops it
            assert notified.header("content-type") == "application/json"
            assert result_of(notified)["structuredContent"] == {"echo": NOTIFY_FIRST}
        else:  # it commits the stream: the notification, then the result
            assert notified.header("content-type") == "text/event-stream"
            first, last = (
                json.loads(frame.removeprefix(b"event: message\r\ndata: ")) for frame in frames(notified.body)
            )
            assert first["method"] == "notifications/tools/list_changed"
            assert last["result"]["structuredContent"] == {"echo": NOTIFY_FIRST}
        crashed = await compare(pair, tool("demo.echo", {"text": RAISE}), took="tools/call")
        assert (crashed.status, crashed.json()["error"]) == (
            200,
            {"code": INTERNAL_ERROR, "message": "Internal server error"},
        )


@pytest.mark.parametrize("text", list(ANSWERS_ITSELF), ids=["nan-and-infinity", "datetime"])
async def test_a_result_a_middleware_answers_itself_is_written_as_the_sdk_writes_it(text: str) -> None:
    """``serve_one`` leaves a short-circuiting middleware's result unsieved; the SDK writes the reply
    through pydantic's JSON mode (NaN and infinities as ``null``, a datetime as ISO 8601)."""
    async with serving_pair(surprising_bridge) as pair:
        answer = await compare(pair, tool("demo.echo", {"text": text}), took="tools/call")
    assert answer.status == 200, answer

    def no_constants(name: str) -> None:
        raise AssertionError(f"{name} is not JSON (RFC 8259)")

    structured = json.loads(answer.body, parse_constant=no_constants)["result"]["structuredContent"]
    assert structured in ({"ratio": None, "limit": None}, {"when": "2026-01-02T03:04:05"})


async def test_a_registry_changing_under_calls_is_answered_alike() -> None:
    """Live lists: a call adds a tool, the next list shows it (no stale cache on either path), it is removed."""
    async with serving_pair(dynamic=True) as pair:
        listed = result_of(await compare(pair, LIST, took="tools/list"))
        assert (listed["ttlMs"], "demo.added" in {entry["name"] for entry in listed["tools"]}) == (0, False)
        await compare(pair, tool("demo.register", {"text": "add"}), took="tools/call")
        listed = result_of(await compare(pair, LIST, took="tools/list"))
        assert "demo.added" in {entry["name"] for entry in listed["tools"]}
        added = result_of(await compare(pair, tool("demo.added", {"text": "new"}), took="tools/call"))
        assert added["structuredContent"] == {"echo": "new"}
        await compare(pair, tool("demo.register", {"text": "remove"}), took="tools/call")
        gone = result_of(await compare(pair, tool("demo.added", {"text": "new"}), took="tools/call"))
        assert gone["isError"] is True
