"""Interactive calls through real clients on every transport and both eras: progress, streaming,
asking the user (elicitation; input-required rounds in 2026-07-28), approval, sampling and logs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Literal

import mcp.types as types
import pytest
from mcp.client import ClientRequestContext

from tests._support.results import text_of
from tests._support.sessions import Connected, OpenClient

ElicitAction = Literal["accept", "decline", "cancel"]


class Progress:
    """A progress callback that records what arrived."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, float | None, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, total, message))


class Answering:
    """An elicitation callback that gives one answer and records what it was asked."""

    def __init__(self, action: ElicitAction, content: dict[str, Any] | None = None) -> None:
        self.action, self.content = action, content
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        return types.ElicitResult(action=self.action, content=self.content)


def structured(result: types.CallToolResult) -> dict[str, Any]:
    assert result.is_error is False, result.content
    content = result.structured_content
    assert isinstance(content, dict), content
    return content


# -- progress and streaming ---------------------------------------------------------------------


async def test_progress_arrives_in_order_and_only_increases(connect: OpenClient) -> None:
    progress = Progress()
    async with connect() as conn:
        result = await conn.client.call_tool(
            "demo.progress", {"values": [1, 3, 2, 3, 5], "total": 5}, progress_callback=progress
        )
    assert structured(result) == {"reported": 5}
    # 2 and the second 3 would go backwards or stand still: dropped, not sent.
    assert progress.seen == [(1, 5, "at 1"), (3, 5, "at 3"), (5, 5, "at 5")]


async def test_a_streaming_module_sends_each_chunk_as_progress(connect: OpenClient) -> None:
    progress = Progress()
    async with connect() as conn:
        result = await conn.client.call_tool("demo.stream", {"parts": 3}, progress_callback=progress)
    if conn.transport == "memory-modern":
        # The SDK's in-process 2026 dispatcher hands progress to the callback without a
        # progressToken on the request, so FR-STREAM's condition is not met: a normal call.
        assert progress.seen == []
        assert structured(result) == {"parts": {"p1": 1, "p2": 2, "p3": 3}}
        return
    assert [(p, t) for p, t, _ in progress.seen] == [(1, None), (2, None), (3, None)]
    assert [json.loads(m or "") for _, _, m in progress.seen] == [{"parts": {f"p{i}": i}} for i in (1, 2, 3)]
    assert structured(result) == {"parts": {"p1": 1, "p2": 2, "p3": 3}}


async def test_a_stream_that_breaks_is_a_safe_error(connect: OpenClient) -> None:
    progress = Progress()
    async with connect() as conn:
        result = await conn.client.call_tool("demo.stream", {"parts": 3, "fail_at": 2}, progress_callback=progress)
    if conn.transport == "memory-modern":  # no progressToken in process (see above): execute() runs, and succeeds
        assert structured(result) == {"parts": {"p1": 1, "p2": 2, "p3": 3}}
        return
    assert result.is_error is True
    assert text_of(result) == "Internal error occurred"  # the module's own text stays in the server log
    assert [p for p, _, _ in progress.seen] == [1]


async def test_without_a_progress_token_a_streaming_module_is_called_normally(connect: OpenClient) -> None:
    async with connect() as conn:
        result = await conn.client.call_tool("demo.stream", {"parts": 2})
    assert structured(result) == {"parts": {"p1": 1, "p2": 2}}


async def test_progress_of_concurrent_clients_never_crosses(connect: OpenClient) -> None:
    async def one(index: int) -> tuple[int, list[float], dict[str, Any]]:
        progress = Progress()
        values = [index * 100 + step for step in range(1, 6)]
        async with connect() as conn:
            result = await conn.client.call_tool(
                "demo.progress", {"values": values, "pause": 0.01}, progress_callback=progress
            )
        return index, [p for p, _, _ in progress.seen], structured(result)

    runs = await asyncio.gather(*(one(index) for index in range(10)))
    for index, seen, result in runs:
        assert seen == [index * 100 + step for step in range(1, 6)]
        assert result == {"reported": 5}


# -- asking the user ------------------------------------------------------------------------------


async def test_elicit_returns_the_answer_on_accept(connect: OpenClient) -> None:
    callback = Answering("accept", {"name": "Ada"})
    async with connect(elicitation_callback=callback) as conn:
        result = await conn.client.call_tool("demo.ask", {"question": "Who are you?"})
    assert structured(result) == {"answer": "Ada"}
    assert [params.message for params in callback.asked] == ["Who are you?"]


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_elicit_returns_none_on_decline_or_cancel(connect: OpenClient, action: ElicitAction) -> None:
    async with connect(elicitation_callback=Answering(action)) as conn:
        result = await conn.client.call_tool("demo.ask", {})
    assert structured(result) == {"answer": None}


async def test_elicit_returns_none_for_a_client_that_cannot_be_asked(connect: OpenClient) -> None:
    async with connect() as conn:  # no elicitation callback: the capability is not declared
        result = await conn.client.call_tool("demo.ask", {})
    assert structured(result) == {"answer": None}


async def test_sampling_reaches_the_clients_model(connect: OpenClient) -> None:
    async def model(_ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        question = params.messages[0].content
        assert isinstance(question, types.TextContent) and question.text == "Capital of France?"
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Paris"), model="test-model"
        )

    async with connect(sampling_callback=model) as conn:
        result = await conn.client.call_tool("demo.sample", {})
    assert structured(result) == {"text": "Paris"}


# -- approval ----------------------------------------------------------------------------------


async def purge(conn: Connected, tmp_path: Path) -> tuple[types.CallToolResult, bool]:
    marker = tmp_path / "purged"
    result = await conn.client.call_tool("demo.purge", {"marker": str(marker)})
    return result, marker.exists()


async def test_approval_confirmed_runs_the_module(connect: OpenClient, tmp_path: Path) -> None:
    callback = Answering("accept", {"approve": True})
    async with connect(elicitation_callback=callback) as conn:
        result, ran = await purge(conn, tmp_path)
    assert ran and structured(result) == {"done": True}
    [asked] = callback.asked
    assert isinstance(asked, types.ElicitRequestFormParams)
    assert "demo.purge requires your approval" in asked.message and str(tmp_path / "purged") in asked.message
    assert "It is marked destructive." in asked.message
    assert asked.requested_schema["required"] == ["approve"]


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (("decline", None), "the user declined"),
        (("cancel", None), "the user cancelled the confirmation"),
        (("accept", {"approve": False}), "the user did not confirm"),
    ],
)
async def test_approval_refused_does_not_run(
    connect: OpenClient, tmp_path: Path, answer: tuple[ElicitAction, dict[str, Any] | None], reason: str
) -> None:
    async with connect(elicitation_callback=Answering(*answer)) as conn:
        result, ran = await purge(conn, tmp_path)
    assert not ran
    assert result.is_error is True
    assert text_of(result) == f"Not run: demo.purge requires approval: {reason}."


async def test_approval_fails_closed_without_a_client_that_can_ask(connect: OpenClient, tmp_path: Path) -> None:
    async with connect() as conn:
        result, ran = await purge(conn, tmp_path)
    assert not ran and result.is_error is True
    assert text_of(result).startswith("Not run: demo.purge requires approval: the client cannot ask its user")
    assert "--approval auto" in text_of(result)  # says what would allow it


# -- logs --------------------------------------------------------------------------------------


class Logs:
    def __init__(self) -> None:
        self.levels: list[str] = []

    async def __call__(self, params: types.LoggingMessageNotificationParams) -> None:
        self.levels.append(params.level)


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # the client's setLevel
async def test_logs_are_sent_only_when_asked_for(connect: OpenClient) -> None:
    unasked, asked = Logs(), Logs()
    async with connect(logging_callback=unasked) as conn:
        assert structured(await conn.client.call_tool("demo.log", {})) == {"sent": 4}
    assert unasked.levels == []
    async with connect(logging_callback=asked, log_level="warning") as conn:
        if not conn.modern:  # the handshake era asks once per connection
            await conn.client.set_logging_level("warning")
        assert structured(await conn.client.call_tool("demo.log", {})) == {"sent": 4}
    assert asked.levels == ["warning", "error"]
