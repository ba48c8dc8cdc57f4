"""A sealed 2026-07-28 approval is single-use: replaying the approved round runs nothing.

The attack: a client that got an approval-gated tool approved sends the same retry again (the
sealed ``requestState`` and its "yes") while the state is still valid. The seal is intact, so
only a record of used states can refuse it. Driven with raw JSON-RPC over httpx against uvicorn
on 127.0.0.1; a destructive module leaves one line in a marker file per run, so "ran once" is
read from the disk. Replicas: two servers sharing one real ``redis-server`` and one key ring.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from apcore import Executor, ModuleAnnotations, Registry
from pydantic import BaseModel

from apcore_mcp.bridge import Bridge
from apcore_mcp.calls.approval import MCPApprovalHandler
from apcore_mcp.calls.context import elicit
from apcore_mcp.pipeline import install_pipeline
from apcore_mcp.settings import Settings
from apcore_mcp.testing import free_port

from tests._support.hostile import MODERN_META, modern_headers, serving, sse_payload, wait_until
from tests._support.replicas import RedisServer, new_key, redis_running

YES = {"action": "accept", "content": {"approve": True}}
NO = {"action": "decline"}
APPROVE = {"approve-replay-wipe": YES}  # the answer approving replay.wipe
ELICITING_META = {**MODERN_META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}
INVALID_PARAMS = -32602


class WipeIn(BaseModel):
    marker: str
    fail: bool = False


class Gated:
    """What the three modules share: destructive, approval-gated, one line in ``marker`` per run."""

    input_schema = WipeIn
    annotations = ModuleAnnotations(destructive=True, requires_approval=True)

    @staticmethod
    def mark_run(marker: str) -> None:
        with open(marker, "a") as file:
            file.write("ran\n")


class Wipe(Gated):
    """Runs (then fails if told to)."""

    description = "Wipe a target"

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        self.mark_run(inputs["marker"])
        if inputs.get("fail"):
            raise RuntimeError("wiped, then failed")
        return {"wiped": True}


class WipeWithReason(Gated):
    """Asks why (a second round) after the approval, before its side effect."""

    description = "Wipe a target, giving a reason"

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        schema = {"type": "object", "properties": {"why": {"type": "string"}}, "required": ["why"]}
        if await elicit(context, "Why?", schema, key="reason") is None:
            return {"wiped": False}
        self.mark_run(inputs["marker"])
        return {"wiped": True}


class WipeThroughOther(Gated):
    """Calls the approval-gated ``replay.wipe``: two approvals in one call."""

    description = "Wipe a target through replay.wipe"

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return dict(await context.executor.call_async("replay.wipe", {"marker": inputs["marker"]}, context))


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """The file the wipe modules write one line to per run."""
    return tmp_path / "wiped"


def replay_registry() -> Registry:
    registry = Registry()
    registry.register("replay.wipe", Wipe())
    registry.register("replay.wipe_with_reason", WipeWithReason())
    registry.register("replay.wipe_through_other", WipeThroughOther())
    return registry


def runs(marker: Path) -> int:
    return len(marker.read_text().splitlines()) if marker.exists() else 0


def server(
    source: Registry | Executor | None = None, **settings: Any
) -> contextlib.AbstractAsyncContextManager[tuple[str, Bridge]]:
    """The replay registry (or ``source``) served by uvicorn in this event loop."""
    return serving(source or replay_registry(), **settings)


async def call(
    url: str, name: str, arguments: dict[str, Any], *, state: str | None = None, answers: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One raw 2026-07-28 ``tools/call`` (from a client that can elicit); the JSON-RPC response."""
    params: dict[str, Any] = {"name": name, "arguments": arguments, "_meta": ELICITING_META}
    if state is not None:
        params["requestState"] = state
    if answers is not None:
        params["inputResponses"] = answers
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    async with httpx.AsyncClient(timeout=20) as http:
        response = await http.post(f"{url}/mcp", json=body, headers=modern_headers("tools/call", name))
    return sse_payload(response.text)


async def ask(url: str, name: str, arguments: dict[str, Any], state: str | None = None, answers: Any = None) -> str:
    """A call that must end in an input-required round; its sealed state."""
    response = await call(url, name, arguments, state=state, answers=answers)
    result = response["result"]
    assert result["resultType"] == "input_required", response
    return str(result["requestState"])


def ran(response: dict[str, Any]) -> None:
    result = response["result"]
    assert result["resultType"] == "complete" and result["isError"] is False, response


def refused(response: dict[str, Any], why: str) -> None:
    """A complete error result naming ``why`` (the module was not run)."""
    result = response["result"]
    assert result["resultType"] == "complete" and result["isError"] is True, response
    text = result["content"][0]["text"]
    assert "Not run" in text and why in text, text


# -- one server ------------------------------------------------------------------------------


async def test_a_replayed_approval_runs_nothing_and_says_why(marker: Path) -> None:
    arguments = {"marker": str(marker)}
    async with server() as (url, _bridge):
        state = await ask(url, "replay.wipe", arguments)
        ran(await call(url, "replay.wipe", arguments, state=state, answers=APPROVE))
        assert runs(marker) == 1
        for _ in range(2):
            replay = await call(url, "replay.wipe", arguments, state=state, answers=APPROVE)
            refused(replay, "already used")
    assert runs(marker) == 1


async def test_a_replayed_approval_through_invoke_tool_runs_nothing(marker: Path) -> None:
    """Search mode meets single use: the target's approval, asked through ``invoke_tool``, is spent once."""
    arguments = {"name": "replay.wipe", "arguments": {"marker": str(marker)}}
    async with server(tool_mode="search") as (url, _bridge):
        state = await ask(url, "invoke_tool", arguments)
        first = await call(url, "invoke_tool", arguments, state=state, answers=APPROVE)
        assert first["result"]["isError"] is False, first
        assert runs(marker) == 1
        replay = await call(url, "invoke_tool", arguments, state=state, answers=APPROVE)
        assert replay["result"]["isError"] is True and "already used" in replay["result"]["content"][0]["text"]
    assert runs(marker) == 1


async def test_concurrent_replays_run_the_module_once(marker: Path) -> None:
    arguments = {"marker": str(marker)}
    async with server() as (url, _bridge):
        state = await ask(url, "replay.wipe", arguments)
        responses = await asyncio.gather(
            *(call(url, "replay.wipe", arguments, state=state, answers=APPROVE) for _ in range(6))
        )
    outcomes = sorted(response["result"]["isError"] for response in responses)
    assert outcomes == [False] + [True] * 5, responses
    assert runs(marker) == 1


async def test_a_declined_answer_spends_nothing(marker: Path) -> None:
    """A "no" leaves the state unused: the same round can still be answered "yes", once."""
    arguments = {"marker": str(marker)}
    async with server() as (url, _bridge):
        state = await ask(url, "replay.wipe", arguments)
        refused(await call(url, "replay.wipe", arguments, state=state, answers={"approve-replay-wipe": NO}), "declined")
        assert runs(marker) == 0
        ran(await call(url, "replay.wipe", arguments, state=state, answers=APPROVE))
        replay = await call(url, "replay.wipe", arguments, state=state, answers=APPROVE)
        refused(replay, "already used")
    assert runs(marker) == 1


async def test_an_approval_whose_module_failed_is_still_used(marker: Path) -> None:
    arguments = {"marker": str(marker), "fail": True}
    async with server() as (url, _bridge):
        state = await ask(url, "replay.wipe", arguments)
        failed = await call(url, "replay.wipe", arguments, state=state, answers=APPROVE)
        assert failed["result"]["isError"] is True and "Not run" not in failed["result"]["content"][0]["text"]
        replay = await call(url, "replay.wipe", arguments, state=state, answers=APPROVE)
        refused(replay, "already used")
    assert runs(marker) == 1


async def test_calls_with_the_same_arguments_are_each_approved_once(marker: Path) -> None:
    """Two rounds asking the same thing are two states: using one leaves the other usable."""
    arguments = {"marker": str(marker)}
    async with server() as (url, _bridge):
        first, second = await ask(url, "replay.wipe", arguments), await ask(url, "replay.wipe", arguments)
        ran(await call(url, "replay.wipe", arguments, state=first, answers=APPROVE))
        ran(await call(url, "replay.wipe", arguments, state=second, answers=APPROVE))
        for state in (first, second):
            refused(await call(url, "replay.wipe", arguments, state=state, answers=APPROVE), "already used")
    assert runs(marker) == 2


async def test_every_round_after_the_approval_is_single_use_too(marker: Path) -> None:
    """The "yes" travels on in the next round's state: that state approves once, as the first did."""
    arguments = {"marker": str(marker)}
    name, approve = "replay.wipe_with_reason", {"approve-replay-wipe_with_reason": YES}
    reason = {"reason": {"action": "accept", "content": {"why": "disk full"}}}
    async with server() as (url, _bridge):
        first = await ask(url, name, arguments)
        second = await ask(url, name, arguments, state=first, answers=approve)
        ran(await call(url, name, arguments, state=second, answers=reason))
        assert runs(marker) == 1
        refused(await call(url, name, arguments, state=second, answers=reason), "already used")
        refused(await call(url, name, arguments, state=first, answers=approve), "already used")
    assert runs(marker) == 1


async def test_two_approvals_in_one_call_spend_its_state_once(marker: Path) -> None:
    """A gated module calling another: both approvals rest on one retry, which may run once."""
    arguments = {"marker": str(marker)}
    name = "replay.wipe_through_other"
    async with server() as (url, _bridge):
        first = await ask(url, name, arguments)
        second = await ask(url, name, arguments, state=first, answers={"approve-replay-wipe_through_other": YES})
        ran(await call(url, name, arguments, state=second, answers=APPROVE))
        assert runs(marker) == 1
        refused(await call(url, name, arguments, state=second, answers=APPROVE), "already used")
    assert runs(marker) == 1


async def test_the_record_expires_with_the_state(marker: Path) -> None:
    """Entries live as long as a state may be sent; after that the seal itself refuses the replay."""
    from apcore_mcp.calls.used_approvals import MemoryUsedApprovals

    arguments = {"marker": str(marker)}
    record = MemoryUsedApprovals()
    executor = install_pipeline(Executor(replay_registry(), approval_handler=MCPApprovalHandler(used=record)))
    async with server(executor, request_state_ttl=2.0) as (url, _bridge):
        state = await ask(url, "replay.wipe", arguments)
        ran(await call(url, "replay.wipe", arguments, state=state, answers=APPROVE))
        refused(await call(url, "replay.wipe", arguments, state=state, answers=APPROVE), "already used")
        assert len(record) == 1
        await wait_until(lambda: len(record) == 0, "the used-approval entry expired", timeout=10)
        expired = await call(url, "replay.wipe", arguments, state=state, answers=APPROVE)
    assert expired["error"]["code"] == INVALID_PARAMS, expired
    assert runs(marker) == 1


async def test_a_full_record_refuses_approvals(marker: Path) -> None:
    """Forgetting a used state early would reopen its replay: a full record fails closed instead."""
    from apcore_mcp.calls.used_approvals import MemoryUsedApprovals

    arguments = {"marker": str(marker)}
    handler = MCPApprovalHandler(used=MemoryUsedApprovals(max_entries=1))
    async with server(install_pipeline(Executor(replay_registry(), approval_handler=handler))) as (url, _bridge):
        first, second = await ask(url, "replay.wipe", arguments), await ask(url, "replay.wipe", arguments)
        ran(await call(url, "replay.wipe", arguments, state=first, answers=APPROVE))
        refused(await call(url, "replay.wipe", arguments, state=second, answers=APPROVE), "cannot record")
    assert runs(marker) == 1


# -- replicas sharing Redis ------------------------------------------------------------------


@contextlib.asynccontextmanager
async def replicas(redis_url: str, **settings: Any) -> AsyncIterator[tuple[str, str]]:
    """Two servers, one key ring, one Redis: what a round-robin balancer would reach."""
    shared = {"redis_url": redis_url, "request_state_keys": (new_key(),), **settings}
    async with server(**shared) as (a, _), server(**shared) as (b, _):
        yield a, b


@pytest.mark.redis
async def test_a_replay_on_another_replica_is_refused(tmp_path: Path, marker: Path) -> None:
    arguments = {"marker": str(marker)}
    with redis_running(tmp_path / "redis") as redis_server:
        async with replicas(redis_server.url) as (a, b):
            state = await ask(a, "replay.wipe", arguments)
            ran(await call(b, "replay.wipe", arguments, state=state, answers=APPROVE))
            refused(await call(a, "replay.wipe", arguments, state=state, answers=APPROVE), "already used")
            refused(await call(b, "replay.wipe", arguments, state=state, answers=APPROVE), "already used")
            # The same retry reaching both replicas at once: one of them runs it.
            state = await ask(b, "replay.wipe", arguments)
            both = await asyncio.gather(
                *(call(url, "replay.wipe", arguments, state=state, answers=APPROVE) for url in (a, b, a, b))
            )
    assert sorted(response["result"]["isError"] for response in both) == [False, True, True, True], both
    assert runs(marker) == 2


@pytest.mark.redis
async def test_the_shared_record_expires_with_the_state(tmp_path: Path, marker: Path) -> None:
    arguments = {"marker": str(marker)}
    with redis_running(tmp_path / "redis") as redis_server:
        store = redis.Redis.from_url(redis_server.url)
        async with replicas(redis_server.url, request_state_ttl=2.0, redis_prefix="replay:") as (a, b):
            state = await ask(a, "replay.wipe", arguments)
            ran(await call(b, "replay.wipe", arguments, state=state, answers=APPROVE))
            [key] = store.keys("replay:approval:*")
            assert 0 < store.pttl(key) <= 2000
            refused(await call(a, "replay.wipe", arguments, state=state, answers=APPROVE), "already used")
            await wait_until(lambda: not store.exists(key), "the shared entry expired", timeout=10)
            expired = await call(a, "replay.wipe", arguments, state=state, answers=APPROVE)
        store.close()
    assert expired["error"]["code"] == INVALID_PARAMS, expired
    assert runs(marker) == 1


@pytest.mark.redis
async def test_approvals_fail_closed_while_redis_is_away(tmp_path: Path, marker: Path) -> None:
    """Without the shared record a replay could not be seen: approvals are refused, with a reason.

    A "no" consumes nothing, so it needs no record: it is answered as ever, Redis untouched.
    Redis back: approvals are granted again and the degradation clears.
    """
    arguments = {"marker": str(marker)}
    (tmp_path / "redis").mkdir()
    redis_server = RedisServer(free_port(), tmp_path / "redis")  # not started yet: nothing listens there

    async def not_degraded() -> bool:
        return "degraded" not in (await http.get(f"{b}/ready")).json()

    async def approved_once_more() -> bool:
        state = await ask(a, "replay.wipe", arguments)
        response = await call(b, "replay.wipe", arguments, state=state, answers=APPROVE)
        return response["result"]["isError"] is False

    async with replicas(redis_server.url) as (a, b), httpx.AsyncClient() as http:
        state = await ask(a, "replay.wipe", arguments)
        refused(await call(b, "replay.wipe", arguments, state=state, answers={"approve-replay-wipe": NO}), "declined")
        # /ready probes Redis itself and says it is away; the "no" consumed nothing, so approvals are not named
        assert "approvals" not in (await http.get(f"{b}/ready")).json()["degraded"]["redis"]
        refused(await call(b, "replay.wipe", arguments, state=state, answers=APPROVE), "cannot record")
        assert "unreachable" in (await http.get(f"{b}/ready")).json()["degraded"]["redis"]
        assert runs(marker) == 0
        try:
            redis_server.start()
            await wait_until(approved_once_more, "an approval granted once Redis is back", timeout=15)
            # the readiness probe runs at most once a second: the next one after Redis came back clears it
            await wait_until(not_degraded, "/ready no longer degraded once Redis is back", timeout=10)
        finally:
            redis_server.stop()
    assert runs(marker) == 1


def test_shared_sealing_keys_without_redis_are_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    """Replicas sharing keys but not a record could each accept an approved state once: say so at start."""
    caplog.set_level(logging.WARNING, logger="apcore_mcp")
    Bridge.build(Registry(), Settings(request_state_keys=(new_key(),)))
    assert any("request_state_keys are set without redis_url" in message for message in caplog.messages)
    caplog.clear()
    Bridge.build(Registry(), Settings())  # a per-process key: one process, one record
    assert not any("request_state_keys" in message for message in caplog.messages)
