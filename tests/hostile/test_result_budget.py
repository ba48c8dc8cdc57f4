"""Result budgets under attack (issue 32, item 4): every route's result obeys the budget, kept links stay private.

A kept whole result (``result_overflow_links``) is readable by the caller that made the call
and by no one else: another session, another principal, in either era, gets "Resource not
found" as for a link that never existed. The store of kept results is bounded in count and
bytes and forgets a result when it expires. Multi-byte UTF-8 text is never cut inside a
character. An upstream server's carried result, a task's result and a streamed result are cut
like any other.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from apcore import Identity
from mcp import Client, types
from mcp.shared.exceptions import MCPError

from apcore_mcp.bridge import Bridge, BridgeService
from apcore_mcp.calls.budget import owner_of
from apcore_mcp.calls.context import CallContext, Peer
from apcore_mcp.calls.kept_results import KeptResults
from apcore_mcp.calls.principal import Principal
from apcore_mcp.settings import Settings

from tests._support.auth import api_key_entry, mcp_client
from tests._support.budget_modules import PROSE, announcement, budget_registry, sent_bytes
from tests._support.hostile import serving
from tests._support.sessions import Inbox, open_session
from tests._support.tasks import TasksClient
from tests._support.upstreams import stdio_entry

ALICE, CAROL = "alice-key-0123456789", "carol-key-0123456789"
ERAS = ["memory", "memory-modern"]


def link_of(result: types.CallToolResult) -> str:
    links = [block for block in result.content if isinstance(block, types.ResourceLink)]
    assert len(links) == 1, result.content
    assert str(links[0].uri) in announcement(result).text
    return str(links[0].uri)


async def read_whole(client: Any, uri: str) -> dict[str, Any]:
    read = await client.read_resource(uri)
    contents = read.contents[0]
    assert isinstance(contents, types.TextResourceContents) and contents.mime_type == "application/json"
    whole: dict[str, Any] = json.loads(contents.text)
    return whole


async def assert_not_found(client: Any, uri: str) -> None:
    with pytest.raises(MCPError, match="Resource not found"):
        await client.read_resource(uri)


async def test_another_session_cannot_read_a_kept_result() -> None:
    bridge = Bridge.build(budget_registry(), Settings(max_result_bytes=1024, result_overflow_links=True))
    async with (
        BridgeService(bridge),
        open_session("memory", bridge, Inbox()) as owner,
        open_session("memory", bridge, Inbox()) as other,
    ):
        uri = link_of(await owner.call_tool("data.list", {"count": 500}))
        await assert_not_found(other, uri)
        whole = await read_whole(owner, uri)
        assert whole["structuredContent"]["items"] == [f"item-{i:05d}" for i in range(500)]
        await assert_not_found(owner, uri.replace("result://", "result://x"))  # a guessed id is nothing


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_another_principal_cannot_read_a_kept_result(mode: str) -> None:
    keys = (api_key_entry(ALICE, "alice"), api_key_entry(CAROL, "carol"))
    settings = {"auth": "api-key", "auth_api_keys": keys, "max_result_bytes": 1024, "result_overflow_links": True}
    async with (
        serving(budget_registry(), **settings) as (url, _bridge),
        mcp_client(url, ALICE, mode=mode) as alice,
        mcp_client(url, CAROL, mode=mode) as carol,
    ):
        uri = link_of(await alice.call_tool("data.list", {"count": 500}))
        await assert_not_found(carol, uri)
        assert len((await read_whole(alice, uri))["structuredContent"]["items"]) == 500
        async with mcp_client(url, ALICE, mode=mode) as alice_again:  # the same principal, a new session
            assert len((await read_whole(alice_again, uri))["structuredContent"]["items"]) == 500


def test_the_store_is_bounded_in_count_and_bytes_and_expires() -> None:
    now = [0.0]
    store = KeptResults(ttl=10.0, max_count=3, max_bytes=100, clock=lambda: now[0])
    first = store.keep("a", "x" * 10)
    assert first is not None and store.read("a", first) == "x" * 10 and store.read("b", first) is None
    uris = [store.keep("a", str(i) * 10) for i in range(3)]
    assert len(store) == 3 and store.read("a", first) is None  # the oldest went for the count
    big = store.keep("a", "é" * 40)  # 80 bytes: the oldest go until it fits (count and bytes)
    assert big is not None and store.bytes == 100 and store.read("a", big) == "é" * 40
    assert [store.read("a", uri or "") for uri in uris] == [None, "1" * 10, "2" * 10]
    assert store.keep("a", "y" * 101) is None  # larger than the whole store: not kept, no link
    now[0] = 10.5
    assert store.read("a", big) is None and len(store) == 0 and store.bytes == 0


async def test_an_expired_link_reads_as_not_found() -> None:
    now = [0.0]
    bridge = Bridge.build(budget_registry(), Settings(max_result_bytes=1024, result_overflow_links=True))
    assert bridge.router.budget is not None
    bridge.router.budget.links = KeptResults(ttl=5.0, clock=lambda: now[0])
    async with BridgeService(bridge), open_session("memory", bridge, Inbox()) as client:
        uri = link_of(await client.call_tool("data.list", {"count": 500}))
        now[0] = 6.0
        await assert_not_found(client, uri)


@pytest.mark.parametrize("era", ERAS)
async def test_multibyte_text_is_never_cut_inside_a_character(era: str) -> None:
    whole = PROSE * 2000
    for budget in range(1024, 1034):  # ten budgets: the cut lands on every offset within a character
        bridge = Bridge.build(budget_registry(), Settings(max_result_bytes=budget))
        async with BridgeService(bridge), open_session(era, bridge, Inbox()) as client:
            result = await client.call_tool("data.prose", {"count": 2000})
        text = result.content[0].text
        assert 0 < len(text) < len(whole) and whole.startswith(text), budget
        assert "\ufffd" not in text and sent_bytes(result) <= budget
        assert announcement(result).meta["apcore_mcp/truncated"]["originalBytes"] > len(whole.encode())  # type: ignore[index]


@pytest.mark.parametrize("era", ["memory", "http-modern"])
async def test_a_streamed_result_obeys_the_budget(era: str) -> None:
    # The SDK's in-memory 2026-07-28 client sends no progress token, so nothing streams there: HTTP instead.
    progress: list[float] = []

    async def on_progress(value: float, _total: float | None, _message: str | None) -> None:
        progress.append(value)

    async with contextlib.AsyncExitStack() as stack:
        if era == "memory":
            target: Any = Bridge.build(budget_registry(), Settings(max_result_bytes=1024))
            await stack.enter_async_context(BridgeService(target))
        else:
            target, _bridge = await stack.enter_async_context(serving(budget_registry(), max_result_bytes=1024))
        client = await stack.enter_async_context(open_session(era, target, Inbox()))
        result = await client.call_tool("data.stream", {"count": 3000}, progress_callback=on_progress)
    assert progress == [1, 2, 3]  # it streamed
    assert sent_bytes(result) <= 1024 and "structuredContent was shortened" in announcement(result).text
    assert isinstance(result.structured_content, dict)
    assert (PROSE * 3000).startswith(result.structured_content["text"])


async def test_a_task_result_obeys_the_budget() -> None:
    tasks = TasksClient()
    bridge = Bridge.build(budget_registry(), Settings(max_result_bytes=1024))
    async with BridgeService(bridge), Client(bridge.server, extensions=[tasks], cache=None) as client:
        result = await client.call_tool("data.task", {"count": 500})
    assert tasks.created, "the call did not run as a task"
    assert tasks.polled[-1]["status"] == "completed"
    assert sent_bytes(result) <= 1024 and announcement(result)


@contextlib.asynccontextmanager
async def upstream_client(tmp_path: Path, **settings: Any) -> AsyncIterator[Any]:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"up": stdio_entry()}}))
    options = {"mcp_config": str(config), "upstream_log_dir": str(tmp_path / "logs"), **settings}
    async with serving(budget_registry(), **options) as (url, _bridge), Client(f"{url}/mcp", mode="legacy") as client:
        yield client


async def test_an_upstream_carried_result_is_cut_too(tmp_path: Path) -> None:
    async with upstream_client(tmp_path, max_result_bytes=1024) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        echo = next(name for name in names if name.endswith("echo"))
        text = "upstream " + PROSE * 1000
        result = await client.call_tool(echo, {"text": text})
    assert result.is_error is False
    assert sent_bytes(result) <= 1024 and announcement(result)
    assert text.startswith(result.content[0].text) and len(result.content[0].text) < len(text)
    assert isinstance(result.structured_content, dict) and text.startswith(result.structured_content["echo"])


def test_callers_without_credentials_never_share_a_kept_result() -> None:
    # With auth_public_tools every caller without credentials is one "anonymous" principal: its
    # kept results must not be one pool. Handshake era: each session its own; 2026-07-28: no link.
    def anonymous(connection: str, era: str) -> CallContext:
        identity = Identity(id="anonymous", type="anonymous", roles=(), attrs={"scopes": ()})
        principal = Principal(identity=identity, client_id="anonymous")
        peer = cast(Peer, SimpleNamespace(era=era))
        return CallContext(principal=principal, caller="principal::anonymous", connection=connection, peer=peer)

    first, second = anonymous("one", "handshake"), anonymous("two", "handshake")
    assert owner_of(first) is not None and owner_of(first) != owner_of(second)
    assert owner_of(anonymous("one", "modern")) is None
    alice = CallContext(principal=Principal(identity=Identity(id="alice")), caller="principal::alice")
    assert owner_of(alice) == "principal:principal::alice"
