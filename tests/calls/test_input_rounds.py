"""2026-07-28 input-required rounds driven by hand: the sealed ``requestState`` and what it refuses.

The SDK client normally answers the rounds itself; here ``allow_input_required=True`` hands
each round back so a test can tamper with it. Also: handshake-era stateless HTTP, where the
server cannot ask, fails approval closed.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client, ClientSession
from mcp.client import ClientRequestContext
from mcp.shared.exceptions import MCPError

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings

from tests._support.modules import make_executor
from tests._support.results import text_of
from tests._support.sessions import running_http

ELICIT = types.ClientCapabilities(elicitation=types.ElicitationCapability())
YES = types.ElicitResult(action="accept", content={"approve": True})


@contextlib.asynccontextmanager
async def modern(transport: str, **settings: Any) -> AsyncIterator[ClientSession]:
    """A raw 2026-07-28 session (it declares elicitation, so the server asks) on memory or HTTP."""

    async def never(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        raise AssertionError("rounds are answered by the test")

    bridge = Bridge.build(make_executor(), Settings(**settings))
    if transport == "memory":
        async with Client(bridge.server, mode="auto", elicitation_callback=never, cache=None) as client:
            yield client.session
    else:
        async with (
            running_http(bridge) as url,
            Client(f"{url}/mcp", mode="auto", elicitation_callback=never, cache=None) as client,
        ):
            yield client.session


@dataclass(frozen=True)
class Round:
    """A first round's one question (under ``key``) and the sealed state an answer must carry back."""

    key: str
    request: types.InputRequest
    state: str


async def first_round(session: ClientSession, arguments: dict[str, Any]) -> Round:
    result = await session.call_tool("demo.purge", arguments, allow_input_required=True)
    assert isinstance(result, types.InputRequiredResult), result
    assert result.input_requests is not None and result.request_state, result
    [(key, request)] = result.input_requests.items()
    return Round(key, request, result.request_state)


def tamper(state: str) -> str:
    """Flip one bit inside the sealed token (past its ``v1.`` prefix)."""
    prefix, body = state.split(".", 1)
    raw = bytearray(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    raw[-1] ^= 1
    return f"{prefix}.{base64.urlsafe_b64encode(bytes(raw)).decode().rstrip('=')}"


@pytest.fixture(params=["memory", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_a_round_asks_then_runs_with_the_answer(transport: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    arguments = {"marker": str(marker)}
    async with modern(transport) as session:
        question = await first_round(session, arguments)
        assert question.request.method == "elicitation/create"
        assert not marker.exists()
        result = await session.call_tool(
            "demo.purge", arguments, input_responses={question.key: YES}, request_state=question.state
        )
    assert isinstance(result, types.CallToolResult) and result.is_error is False
    assert marker.read_text() == "ran"


async def test_a_tampered_state_is_refused(transport: str, tmp_path: Path) -> None:
    arguments = {"marker": str(tmp_path / "ran")}
    async with modern(transport) as session:
        question = await first_round(session, arguments)
        with pytest.raises(MCPError) as refused:
            await session.call_tool(
                "demo.purge", arguments, input_responses={question.key: YES}, request_state=tamper(question.state)
            )
    assert refused.value.error.code == types.INVALID_PARAMS
    assert not (tmp_path / "ran").exists()


async def test_a_state_replayed_with_other_arguments_is_refused(transport: str, tmp_path: Path) -> None:
    async with modern(transport) as session:
        question = await first_round(session, {"marker": str(tmp_path / "one")})
        with pytest.raises(MCPError) as refused:
            await session.call_tool(
                "demo.purge",
                {"marker": str(tmp_path / "other")},
                input_responses={question.key: YES},
                request_state=question.state,
            )
    assert refused.value.error.code == types.INVALID_PARAMS
    assert not (tmp_path / "one").exists() and not (tmp_path / "other").exists()


async def test_an_expired_state_is_refused(tmp_path: Path) -> None:
    arguments = {"marker": str(tmp_path / "ran")}
    async with modern("memory", request_state_ttl=0.05) as session:
        question = await first_round(session, arguments)
        await anyio.sleep(0.1)  # past the state's lifetime: expiry is the behaviour under test
        with pytest.raises(MCPError) as refused:
            await session.call_tool(
                "demo.purge", arguments, input_responses={question.key: YES}, request_state=question.state
            )
    assert refused.value.error.code == types.INVALID_PARAMS
    assert not (tmp_path / "ran").exists()


async def test_answers_nobody_asked_for_are_ignored(transport: str, tmp_path: Path) -> None:
    """An approval sent up front, without the state of a round that asked it, approves nothing."""
    arguments = {"marker": str(tmp_path / "ran")}
    async with modern(transport) as session:
        question = await first_round(session, arguments)
        again = await session.call_tool(
            "demo.purge", arguments, input_responses={question.key: YES}, allow_input_required=True
        )
    assert isinstance(again, types.InputRequiredResult)
    assert not (tmp_path / "ran").exists()


async def test_stateless_handshake_http_fails_approval_closed(tmp_path: Path) -> None:
    async def approve(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        return YES

    bridge = Bridge.build(make_executor(), Settings(stateless=True))
    async with (
        running_http(bridge) as url,
        Client(f"{url}/mcp", mode="legacy", elicitation_callback=approve) as client,
    ):
        result = await client.call_tool("demo.purge", {"marker": str(tmp_path / "ran")})
    assert result.is_error is True
    text = text_of(result)
    # the reason names stateless mode and the way out (a 2026-07-28 client), not a client fault
    assert text.startswith("Not run: demo.purge requires approval: this server runs stateless")
    assert "2026-07-28" in text
    assert not (tmp_path / "ran").exists()


async def test_approval_auto_runs_gated_modules_unasked_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from tests._support.modules import make_registry

    caplog.set_level("WARNING", logger="apcore_mcp")
    bridge = Bridge.build(make_registry(), Settings(approval="auto"))
    async with Client(bridge.server, mode="legacy") as client:  # a client that cannot be asked
        result = await client.call_tool("demo.purge", {"marker": str(tmp_path / "ran")})
    assert result.is_error is False and (tmp_path / "ran").read_text() == "ran"
    warning = next(r for r in caplog.records if "Approval is off" in r.getMessage())
    assert warning.levelname == "WARNING" and "demo.purge" in warning.getMessage()
