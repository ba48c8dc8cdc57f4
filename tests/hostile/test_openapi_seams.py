"""Hostile seams of OpenAPI services as tools: where an HTTP API meets secrets, caller credentials, path
building, byte bounds, the ACL, toolsets and approval. The API is the real test service on a loopback port."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from urllib.parse import unquote

import httpx2
import mcp.types as types
import pytest
from apcore import Executor, Registry
from apcore.acl import ACL, ACLRule
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

from tests._support.openapi import SECRET, client, service_in_loop, shop_bridge, shop_entry, trickling_document
from tests._support.results import text_of
from tests._support.sessions import running_http

YES = types.ElicitResult(action="accept", content={"approve": True})


async def test_the_secret_reaches_no_log_no_error_and_no_result(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The token goes to the API and nowhere else, even when the API echoes it back (in a 2xx or a 401)."""
    caplog.set_level(logging.DEBUG)
    wrong = {"shop": shop_entry("")}
    async with service_in_loop() as (good, _app), service_in_loop("another-token") as (other, _other):
        wrong["shop"]["openapi"] = f"{other}/openapi.json"
        servers = {"shop": shop_entry(good), "wrong": {**wrong["shop"]}}
        async with shop_bridge(tmp_path, servers) as bridge, client(bridge) as mcp:
            echoed = await mcp.call_tool("shop.who_am_i", {})
            refused = await mcp.call_tool("wrong.who_am_i", {})
            headers = await mcp.call_tool("shop.headers", {})
            fire = await mcp.call_tool("shop.explode", {})
    assert echoed.is_error is False and echoed.structured_content == {"user": "alice", "credential": "***"}
    assert refused.is_error is True and text_of(refused) == "whoAmI failed: HTTP 401 Unauthorized: bad credentials: ***"
    assert headers.structured_content is not None and headers.structured_content["authorization"] == "***"
    everything = caplog.text + "".join(
        str(part) for result in (echoed, refused, headers, fire) for part in (result.content, result.structured_content)
    )
    assert SECRET not in everything
    assert any(record.levelno == logging.DEBUG for record in caplog.records)  # DEBUG records were captured


async def test_a_caller_s_credentials_never_reach_the_api(tmp_path: Path) -> None:
    async with service_in_loop() as (base, app), shop_bridge(tmp_path, {"shop": shop_entry(base)}) as bridge:
        inbound = httpx2.AsyncClient(headers={"Authorization": "Bearer caller-token", "Cookie": "session=caller"})
        async with running_http(bridge) as url, inbound:
            async with Client(streamable_http_client(f"{url}/mcp", http_client=inbound), mode="legacy") as mcp:
                result = await mcp.call_tool("shop.headers", {})
    assert result.structured_content is not None
    assert app.state.seen[-1]["authorization"] == f"Bearer {SECRET}"  # the entry's, as the API got it
    assert "caller-token" not in str(app.state.seen) and "session=caller" not in str(app.state.seen)


@pytest.mark.parametrize("value", ["../secure", "..", ".", "a/b", "x?limit=1", "y#frag", "%2e%2e%2fsecure", "a b/../c"])
async def test_a_path_parameter_stays_inside_its_segment(tmp_path: Path, value: str) -> None:
    async with service_in_loop() as (base, app), shop_bridge(tmp_path, {"shop": shop_entry(base)}) as bridge:
        async with client(bridge) as mcp:
            await mcp.call_tool("shop.get_item", {"itemId": value})
    [path] = [path for path in app.state.paths if path.startswith("/api/")]
    segment = path.removeprefix("/api/items/")
    assert path.startswith("/api/items/") and segment and not set("/?#") & set(segment), path
    assert segment not in (".", "..") and "." not in segment  # no dot segment for anyone to resolve
    assert unquote(segment) == value  # the whole value, in that one segment


async def test_a_huge_response_is_refused_at_the_byte_bound(tmp_path: Path) -> None:
    async with (
        service_in_loop() as (base, _app),
        shop_bridge(tmp_path, {"shop": shop_entry(base)}, upstream_max_message_bytes=4096) as bridge,
        client(bridge) as mcp,
    ):
        small = await mcp.call_tool("shop.huge", {"size": 1000})
        huge = await mcp.call_tool("shop.huge", {"size": 50_000})
    assert small.is_error is False
    assert huge.is_error is True and "UPSTREAM_MESSAGE_TOO_LARGE" in text_of(huge)
    assert "x" * 100 not in text_of(huge)


async def test_a_header_argument_cannot_smuggle_headers(tmp_path: Path) -> None:
    async with service_in_loop() as (base, app), shop_bridge(tmp_path, {"shop": shop_entry(base)}) as bridge:
        async with client(bridge) as mcp:
            result = await mcp.call_tool("shop.tagged", {"X-Tag": "blue\r\nX-Admin: yes"})
    assert (result.is_error, text_of(result)) == (True, "argument 'X-Tag' (a header) must not contain line breaks")
    assert not [path for path in app.state.paths if path.startswith("/api/")]


async def test_the_acl_and_the_toolset_apply_to_operations(tmp_path: Path) -> None:
    acl = ACL([ACLRule(callers=["*"], targets=["shop.delete_item"], effect="deny"), ACLRule(["*"], ["*"], "allow")])
    executor = Executor(Registry(), acl=acl)
    toolsets = {"default": {"servers": ["shop"], "modules": False}, "reader": {"servers": ["shop"]}}
    async with service_in_loop() as (base, app):
        servers = {"shop": shop_entry(base), "hidden": shop_entry(base)}
        async with (
            shop_bridge(tmp_path, servers, toolsets=toolsets, registry=executor) as bridge,
            client(bridge) as mcp,
        ):
            denied = await mcp.call_tool("shop.delete_item", {"itemId": "1"})
            elsewhere = await mcp.call_tool("hidden.get_item", {"itemId": "1"})
            names = {tool.name for tool in (await mcp.list_tools()).tools}
    assert (denied.is_error, text_of(denied)) == (True, "Access denied")
    assert elsewhere.is_error is True and not any(name.startswith("hidden.") for name in names)
    assert app.state.deleted == [] and not [path for path in app.state.paths if "/items/1" in path]


async def test_approval_cannot_be_skipped(tmp_path: Path) -> None:
    """A client that cannot be asked, and a 2026-07-28 answer sent without the round's state, delete nothing."""

    async def never(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        raise AssertionError("the test answers the rounds")

    async with service_in_loop() as (base, app), shop_bridge(tmp_path, {"shop": shop_entry(base)}) as bridge:
        async with client(bridge) as mcp:  # declares no elicitation: it cannot be asked
            unasked = await mcp.call_tool("shop.delete_item", {"itemId": "1"})
        async with Client(bridge.server, mode="auto", elicitation_callback=never, cache=None) as mcp:
            first = await mcp.session.call_tool("shop.delete_item", {"itemId": "2"}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult) and first.input_requests
            [key] = list(first.input_requests)
            again = await mcp.session.call_tool(
                "shop.delete_item", {"itemId": "2"}, input_responses={key: YES}, allow_input_required=True
            )
    assert unasked.is_error is True and "confirmation" in text_of(unasked)
    assert isinstance(again, types.InputRequiredResult)  # asked again: an answer with no state approves nothing
    assert app.state.deleted == []


async def test_a_header_argument_outside_ascii_is_a_clear_tool_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """HTTP header values are ASCII: ``café`` or ``😀`` is refused naming the parameter, with no traceback."""
    caplog.set_level(logging.DEBUG)
    async with service_in_loop() as (base, app), shop_bridge(tmp_path, {"shop": shop_entry(base)}) as bridge:
        async with client(bridge) as mcp:
            accented = await mcp.call_tool("shop.tagged", {"X-Tag": "café"})
            emoji = await mcp.call_tool("shop.tagged", {"X-Tag": "😀"})
            plain = await mcp.call_tool("shop.tagged", {"X-Tag": "cafe au lait"})
    said = "argument 'X-Tag' (a header) must be printable ASCII (HTTP header values are), not {!r}"
    assert (accented.is_error, text_of(accented)) == (True, said.format("é"))
    assert (emoji.is_error, text_of(emoji)) == (True, said.format("😀"))
    assert plain.structured_content == {"tag": "cafe au lait"}
    assert not [record for record in caplog.records if record.exc_info or record.levelno >= logging.ERROR]
    assert [path for path in app.state.paths if path.startswith("/api/")] == ["/api/tagged"]  # only the plain one


async def test_a_slow_document_leaves_its_entry_out_and_the_rest_starts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The entry's ``timeout`` bounds the whole document read: a document trickling in for 30 s with a 1 s
    timeout is left out with a WARNING, and the other entry is served; the test gives the start 10 s."""
    caplog.set_level(logging.WARNING)
    async with service_in_loop() as (base, _app), trickling_document(seconds=30) as slow:
        servers = {"shop": shop_entry(base), "slow": {"openapi": slow, "timeout": 1}}
        async with asyncio.timeout(10), shop_bridge(tmp_path, servers) as bridge, client(bridge) as mcp:
            names = {tool.name for tool in (await mcp.list_tools()).tools}
    assert "shop.get_item" in names and not any(name.startswith("slow.") for name in names)
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert any("Upstream server 'slow' not mounted" in line and "within 1s" in line for line in warnings), warnings
