"""Hostile seams of per-caller upstream credentials (token exchange): where one caller's token could reach
another's call, the inbound token could go further than the exchange, a token could be logged, and the
per-caller state (exchanged tokens, connections) could grow without bound. Real servers on loopback ports
(tests/_support/exchange.py)."""

from __future__ import annotations

import contextlib
import logging
import random
from pathlib import Path
from typing import Any

import anyio
import pytest

from apcore_mcp.upstream import source as source_module

from tests._support.auth import mcp_client
from tests._support.exchange import LISTER_TOKEN, SERVER, scene
from tests._support.results import text_of
from tests._support.token_server import CLIENT_SECRET

WHOAMI = f"{SERVER}.whoami"
CALLERS = ("alice", "bob", "carol", "dave")


async def test_one_caller_s_token_never_serves_another_caller_s_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four callers, five calls each, all at once with random delays: every answer names its own caller."""
    answers: list[tuple[str, Any]] = []
    async with scene(tmp_path, monkeypatch) as s, contextlib.AsyncExitStack() as stack:
        clients = {name: await stack.enter_async_context(mcp_client(s.url, s.token(name))) for name in CALLERS}

        async def calls(name: str) -> None:
            for _ in range(5):
                delay = random.choice((0, 0.01, 0.05))
                answers.append((name, await clients[name].call_tool(WHOAMI, {"delay": delay})))

        async with anyio.create_task_group() as tasks:
            for name in CALLERS:
                tasks.start_soon(calls, name)
    assert len(answers) == 20
    assert all((result.is_error, result.structured_content) == (False, {"sub": name}) for name, result in answers)
    assert len(s.authorization.requests) == len(CALLERS)  # one exchange each, however the calls interleaved


async def test_the_inbound_token_goes_only_into_subject_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with scene(tmp_path, monkeypatch) as s:
        tokens = {name: s.token(name) for name in ("alice", "bob")}
        for name, token in tokens.items():
            async with mcp_client(s.url, token) as client:
                assert (await client.call_tool(WHOAMI, {})).structured_content == {"sub": name}
    for request, token in zip(s.authorization.requests, tokens.values(), strict=True):
        assert request["form"]["subject_token"] == token
        elsewhere = {key: value for key, value in request["form"].items() if key != "subject_token"}
        assert token not in str(elsewhere) and token not in str(request["headers"])
    seen = "\n".join(s.upstream.seen)
    for token in tokens.values():
        assert token not in seen and token.rsplit(".", 1)[1] not in seen
    assert s.upstream.refused == 0 and set(s.upstream.seen) <= {
        f"Bearer {LISTER_TOKEN}",
        *(f"Bearer {issued}" for issued in s.authorization.issued),
    }


async def test_no_token_reaches_a_log_or_a_tool_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    results: list[Any] = []
    async with scene(tmp_path, monkeypatch) as s:
        alice, mallory, bob = s.token("alice"), s.token("mallory"), s.token("bob")
        s.authorization.refuse_subjects.add("mallory")
        for token in (alice, mallory, alice):
            async with mcp_client(s.url, token) as client:
                results.append(await client.call_tool(WHOAMI, {}))
        s.authorization.mode = "error"
        async with mcp_client(s.url, bob) as client:
            results.append(await client.call_tool(WHOAMI, {}))
    assert [result.is_error for result in results] == [False, True, False, True]
    shown = caplog.text + "".join(text_of(result) for result in results)
    secrets = [alice, mallory, bob, *s.authorization.issued, CLIENT_SECRET, LISTER_TOKEN]
    assert s.authorization.issued and all(secret not in shown for secret in secrets)
    assert all(secret.rsplit(".", 1)[-1] not in shown for secret in secrets)  # not even a JWT's signature
    assert any(record.levelno == logging.DEBUG and record.name.startswith("apcore_mcp") for record in caplog.records)
    assert "token exchanged" in caplog.text  # the exchange was logged, by fingerprint


async def test_the_exchanged_token_cache_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with scene(tmp_path, monkeypatch) as s:
        exchanger = s.source.exchanger
        assert exchanger is not None
        exchanger.max_cached = 2
        tokens = {name: s.token(name) for name in CALLERS}
        for name in CALLERS:
            async with mcp_client(s.url, tokens[name]) as client:
                await client.call_tool(WHOAMI, {})
            assert exchanger.cached <= 2
        async with mcp_client(s.url, tokens["alice"]) as client:  # evicted: exchanged again
            assert (await client.call_tool(WHOAMI, {})).structured_content == {"sub": "alice"}
    assert len(s.authorization.requests) == len(CALLERS) + 1


async def test_per_caller_connections_are_bounded_and_reaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with scene(tmp_path, monkeypatch) as s:
        source, runtime = s.source, s.app.state.upstreams
        source.max_private = 2
        for name in CALLERS:
            async with mcp_client(s.url, s.token(name)) as client:
                assert (await client.call_tool(WHOAMI, {})).structured_content == {"sub": name}
            assert source.private_count <= 2
            callers = runtime.pool.status(name_callers=False)[SERVER].get("per_caller", {}).get("callers", 0)
            assert callers == source.private_count  # released leases stopped their connections
        # Unused past the idle time: released on the next call, whoever makes it.
        monkeypatch.setattr(source_module, "PRIVATE_IDLE_SECONDS", 0.0)
        async with mcp_client(s.url, s.token("alice")) as client:
            await client.call_tool(WHOAMI, {})
        assert source.private_count == 1


async def test_a_connection_with_a_call_running_is_not_released(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with scene(tmp_path, monkeypatch) as s:
        s.source.max_private = 1
        monkeypatch.setattr(source_module, "PRIVATE_IDLE_SECONDS", 0.0)
        results: dict[str, Any] = {}
        async with mcp_client(s.url, s.token("alice")) as alice, mcp_client(s.url, s.token("bob")) as bob:

            async def slow() -> None:
                results["alice"] = await alice.call_tool(WHOAMI, {"delay": 0.5})

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(slow)
                await anyio.sleep(0.2)  # alice's call is at the upstream
                results["bob"] = await bob.call_tool(WHOAMI, {})
    assert (results["bob"].is_error, results["bob"].structured_content) == (False, {"sub": "bob"})
    assert (results["alice"].is_error, results["alice"].structured_content) == (False, {"sub": "alice"})
