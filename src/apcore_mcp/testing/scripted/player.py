"""Playing one scripted turn for one ``tools/call``, in either protocol era.

Handshake era (2025-11-25 and earlier): input rounds are server-to-client requests sent on the
call's own stream. 2026-07-28: each round is an ``InputRequiredResult``; the client retries
with ``inputResponses`` and the ``requestState`` we minted (an id of the turn in progress,
sealed and verified by the SDK's ``RequestStateBoundary`` around this handler).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp.types as types
import pydantic
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata

from apcore_mcp.mcp.peer import ANSWER_TYPES, is_modern
from apcore_mcp.testing.fields import DocumentError
from apcore_mcp.testing.scripted.queues import NoTurnLeft, TurnQueues, case_of, read_directives
from apcore_mcp.testing.scripted.script import DEFAULT_CASE, InputRound, Script, Turn

Context = ServerRequestContext[Any, Any]
Announce = Callable[[Context, tuple[str, ...]], Awaitable[None]]
ToolResult = types.CallToolResult | types.InputRequiredResult


@dataclass
class _InProgress:
    turn: Turn
    round: int
    answers: dict[str, Any] = field(default_factory=dict)


def error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=f"scripted server: {text}")], is_error=True)


class Player:
    """Answers ``tools/call`` from a script's turn queues."""

    def __init__(self, script: Script, announce: Announce) -> None:
        self.script = script
        self.queues = TurnQueues(script)
        self._announce = announce
        self._in_progress: dict[str, _InProgress] = {}

    def tools(self) -> list[types.Tool]:
        tools = [scripted.tool for scripted in self.script.tools.values()]
        if self.script.directive is not None:
            tools.append(self.script.directive.to_tool())
        return tools

    async def call(self, ctx: Context, params: types.CallToolRequestParams) -> ToolResult:
        if params.request_state is not None:
            return self._resume(params)
        try:
            turn = self._next_turn(params)
        except (NoTurnLeft, DocumentError) as exc:
            return error_result(str(exc))
        await self._prelude(ctx, turn)
        if not turn.rounds:
            return _answer(turn, {})
        if is_modern(ctx):
            return self._ask(_InProgress(turn, 0))
        answers: dict[str, Any] = {}
        try:
            for requests in turn.rounds:
                answers.update(await _ask_now(ctx, requests))
        except MCPError as exc:
            return error_result(f"the client refused an input request: {exc.error.message} ({exc.error.code})")
        return _answer(turn, answers)

    def _next_turn(self, params: types.CallToolRequestParams) -> Turn:
        name, arguments = params.name, params.arguments or {}
        directive = self.script.directive
        if directive is not None and name == directive.name:
            text = arguments.get(directive.argument)
            if not isinstance(text, str):
                raise NoTurnLeft(f"argument {directive.argument!r} (a string with directives) is missing")
            case_id, turns = read_directives(text)
            case_id = case_id or DEFAULT_CASE
            if turns is not None:
                self.queues.load(case_id, name, turns)
            return self.queues.pop(case_id, name)
        if name not in self.script.tools:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name}")
        meta = dict(params.meta) if params.meta is not None else None
        return self.queues.pop(case_of(arguments, meta), name)

    async def _prelude(self, ctx: Context, turn: Turn) -> None:
        if turn.delay:
            await anyio.sleep(turn.delay)
        for step in turn.progress:
            await ctx.session.report_progress(step.progress, step.total, step.message)
        if turn.list_changed:
            await self._announce(ctx, turn.list_changed)
        if turn.error is not None:
            raise MCPError(turn.error.code, turn.error.message, turn.error.data)

    def _ask(self, state: _InProgress) -> types.InputRequiredResult:
        token = secrets.token_hex(12)
        self._in_progress[token] = state
        return types.InputRequiredResult(input_requests=state.turn.rounds[state.round], request_state=token)

    def _resume(self, params: types.CallToolRequestParams) -> ToolResult:
        state = self._in_progress.pop(params.request_state or "", None)
        if state is None:
            raise MCPError(types.INVALID_PARAMS, "requestState names no call in progress on this server")
        asked = state.turn.rounds[state.round]
        responses = params.input_responses or {}
        if any(key not in responses for key in asked):
            return self._ask(state)  # ask the same round again, as the spec lets a server do
        state.answers.update({key: _dump(responses[key]) for key in asked})
        if state.round + 1 < len(state.turn.rounds):
            return self._ask(_InProgress(state.turn, state.round + 1, state.answers))
        return _answer(state.turn, state.answers)


async def _ask_now(ctx: Context, requests: InputRound) -> dict[str, Any]:
    """Send one round's requests to the client on the call's own stream; their answers by key."""
    answers: dict[str, Any] = {}
    related = ServerMessageMetadata(related_request_id=ctx.request_id)
    for key, request in requests.items():
        result = await ctx.session.send_request(request, ANSWER_TYPES[request.method], metadata=related)
        answers[key] = _dump(result)
    return answers


def _dump(value: object) -> object:
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(by_alias=True, mode="json", exclude_none=True)
    return value


def _answer(turn: Turn, answers: dict[str, Any]) -> types.CallToolResult:
    actions = {answer.get("action") for answer in answers.values() if isinstance(answer, dict)}
    if "decline" in actions and turn.on_decline is not None:
        return turn.on_decline
    if "cancel" in actions and turn.on_cancel is not None:
        return turn.on_cancel
    if turn.result is not None:
        return turn.result
    text = json.dumps({"answers": answers}, sort_keys=True)
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content={"answers": answers})
