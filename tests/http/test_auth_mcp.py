"""The caller's identity through real MCP clients: apcore ACL by caller, sessions bound to their owner,
filtered tool lists, tool scopes, and the token never reaching a module.

Every transport and era: Streamable HTTP in the handshake era (``mode="legacy"``) and the
2026-07-28 era (``mode="auto"``), legacy SSE, in memory and stdio (operator-configured identity).
The ACL lets external callers reach ``demo.*`` only with the ``writer`` role: alice has it, bob not.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings

from tests._support.auth import ISSUER, JWKS_URL, Issuer, bearer, mcp_client, role_executor, sse_session
from tests._support.hostile import ACCEPT, INIT, session_headers
from tests._support.sessions import TESTS_DIR, running_http, stdio_params

PUBLIC = "https://mcp.example.test"
MCP, SSE = f"{PUBLIC}/mcp", f"{PUBLIC}/sse"
MODES = ["legacy", "auto"]


@contextlib.asynccontextmanager
async def serving(*, seen_headers: list[dict[str, str]] | None = None, **changes: Any) -> AsyncIterator[str]:
    """The role-ACL registry served with JWT auth; ``seen_headers`` gets the HTTP headers every MCP handler sees."""
    settings = Settings(auth="jwt", public_url=PUBLIC, auth_issuer=ISSUER, auth_jwks_url=JWKS_URL, **changes)
    bridge = Bridge.build(role_executor(), settings)
    if seen_headers is not None:

        async def record(ctx: Any, call_next: Any) -> Any:
            seen_headers.append({key.lower(): value for key, value in ctx.request.headers.items()})
            return await call_next(ctx)

        bridge.server.middleware.insert(0, record)
    async with running_http(bridge) as url:
        yield url


def tokens(issuer: Issuer, audience: str, **claims: Any) -> tuple[str, str]:
    return (
        issuer.token(audience, sub="alice", roles=["writer"], **claims),
        issuer.token(audience, sub="bob", roles=["reader"], **claims),
    )


def text(result: Any) -> tuple[str, bool]:
    return result.content[0].text, bool(result.is_error)


@pytest.mark.parametrize("mode", MODES)
async def test_acl_by_caller_over_streamable_http(issuer: Issuer, mode: str) -> None:
    alice, bob = tokens(issuer, MCP)
    async with serving() as url:
        async with mcp_client(url, alice, mode=mode) as client:
            assert text(await client.call_tool("demo.echo", {"text": "hi"})) == ('{"echo":"hi"}', False)
        async with mcp_client(url, bob, mode=mode) as client:
            assert text(await client.call_tool("demo.echo", {"text": "hi"})) == ("Access denied", True)


async def test_acl_by_caller_over_sse(issuer: Issuer) -> None:
    alice, bob = tokens(issuer, SSE)
    async with serving() as url:
        async with sse_session(url, alice) as session:
            assert text(await session.call_tool("demo.echo", {"text": "hi"})) == ('{"echo":"hi"}', False)
        async with sse_session(url, bob) as session:
            assert text(await session.call_tool("demo.echo", {"text": "hi"})) == ("Access denied", True)


async def test_a_streamable_http_session_is_not_found_for_another_principal(issuer: Issuer) -> None:
    alice, bob = tokens(issuer, MCP)
    async with serving(json_response=True) as url, httpx.AsyncClient(base_url=url, timeout=10) as http:
        opened = await http.post("/mcp", json=INIT, headers={**ACCEPT, **bearer(alice)})
        assert opened.status_code == 200
        session = session_headers(opened.headers["mcp-session-id"])
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        stolen = await http.post("/mcp", json=ping, headers={**session, **bearer(bob)})
        assert stolen.status_code == 404
        # Alice's own token: an alice token minted for another client is another principal too.
        other_app = issuer.token(MCP, sub="alice", roles=["writer"], client_id="another-app")
        assert (await http.post("/mcp", json=ping, headers={**session, **bearer(other_app)})).status_code == 404
        owned = await http.post("/mcp", json=ping, headers={**session, **bearer(alice)})
        assert owned.status_code == 200 and owned.json()["id"] == 2


async def test_an_sse_session_is_not_found_for_another_principal(issuer: Issuer) -> None:
    alice, bob = tokens(issuer, SSE)
    created: list[str] = []
    async with serving() as url, sse_session(url, alice, created.append) as session:
        assert len(created) == 1
        ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            path = f"/messages/?session_id={created[0]}"
            assert (await http.post(path, json=ping, headers=bearer(bob))).status_code == 404
            assert (await http.post(path, json=ping, headers=bearer(alice))).status_code == 202
        assert text(await session.call_tool("demo.echo", {"text": "still mine"}))[1] is False


@pytest.mark.parametrize("mode", MODES)
async def test_tools_list_is_filtered_to_what_the_caller_may_call(issuer: Issuer, mode: str) -> None:
    alice, bob = tokens(issuer, MCP)
    async with serving(auth_filter_tools=True, auth_tool_scopes=["demo.snoop=snoop"]) as url:
        async with mcp_client(url, alice, mode=mode) as client:
            listed = await client.list_tools()
            names = {tool.name for tool in listed.tools}
            assert "demo.echo" in names and "admin.secret" not in names  # the ACL
            assert "gated.echo" in names  # allowed with an approval: callable, so listed
            assert "demo.snoop" not in names  # alice's token lacks its scope
            if mode == "auto":
                assert listed.cache_scope == "private"  # the list varies by caller
        async with mcp_client(url, issuer.token(MCP, roles=["writer"], scope="snoop"), mode=mode) as client:
            assert "demo.snoop" in {tool.name for tool in (await client.list_tools()).tools}
        async with mcp_client(url, bob, mode=mode) as client:
            assert (await client.list_tools()).tools == []


async def test_unfiltered_lists_are_the_same_for_everyone(issuer: Issuer) -> None:
    alice, bob = tokens(issuer, MCP)
    async with serving() as url:
        async with mcp_client(url, alice) as client:
            seen_by_alice = {tool.name for tool in (await client.list_tools()).tools}
        async with mcp_client(url, bob) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == seen_by_alice
    assert "admin.secret" in seen_by_alice


async def test_tool_scopes_inside_message_bodies(issuer: Issuer) -> None:
    # The handshake era names the tool only in the body: http/challenge.py reads it and answers the
    # 403 step-up challenge (test_public_tools checks the header), as Mcp-Name does on 2026-07-28.
    # These clients report it as a failed request. SSE answers on its stream: the router's tool error,
    # as the tool-result form does everywhere.
    async with serving(auth_tool_scopes=["demo.snoop=snoop"]) as url:
        for mode in ("legacy", "auto"):
            async with mcp_client(url, issuer.token(MCP, roles=["writer"]), mode=mode) as client:
                with pytest.raises(MCPError):
                    await client.call_tool("demo.snoop", {"text": "x"})
                assert text(await client.call_tool("demo.echo", {"text": "x"}))[1] is False
        async with sse_session(url, issuer.token(SSE, roles=["writer"])) as session:
            over_sse = await session.call_tool("demo.snoop", {"text": "x"})
        assert text(over_sse) == ("Access denied: needs scope snoop", True)
    async with serving(auth_tool_scopes=["demo.snoop=snoop"], auth_challenge="tool-result") as url:
        async with mcp_client(url, issuer.token(MCP, roles=["writer"])) as client:
            refused = await client.call_tool("demo.snoop", {"text": "x"})
    assert text(refused) == ("Access denied: needs scope snoop", True)
    assert refused.meta is not None and "insufficient_scope" in refused.meta["mcp/www_authenticate"][0]


@pytest.mark.parametrize("transport", ["legacy", "auto", "sse"])
async def test_the_token_never_reaches_a_module(issuer: Issuer, transport: str) -> None:
    token = issuer.token(SSE if transport == "sse" else MCP, roles=["writer"], scope="tools:call")
    handlers_saw: list[dict[str, str]] = []
    async with serving(seen_headers=handlers_saw) as url:
        if transport == "sse":
            async with sse_session(url, token) as session:
                result = await session.call_tool("demo.snoop", {"text": "x"})
        else:
            async with mcp_client(url, token, mode=transport) as client:
                result = await client.call_tool("demo.snoop", {"text": "x"})
    assert result.is_error is False
    seen = json.loads(result.content[0].text)["seen"]
    assert "alice" in seen and "writer" in seen  # the walk does reach the caller's identity...
    signature = token.rsplit(".", 1)[1]
    assert token not in seen and signature not in seen  # ...and nothing of the token
    assert "Bearer" not in seen
    # Nor the SDK's handlers (where an edge would build a call context): the header was taken out.
    assert handlers_saw and all("host" in headers for headers in handlers_saw)
    assert not any("authorization" in headers for headers in handlers_saw)


# -- no bearer: the operator-configured identity -------------------------------------------------


@pytest.mark.parametrize(("identity", "roles", "allowed"), [("alice", ("writer",), True), ("bob", ("reader",), False)])
async def test_in_memory_calls_run_as_the_configured_identity(
    identity: str, roles: tuple[str, ...], allowed: bool
) -> None:
    bridge = Bridge.build(role_executor(), Settings(stdio_identity=identity, stdio_roles=roles))
    async with Client(bridge.server, mode="legacy", cache=None) as client:
        result = await client.call_tool("demo.echo", {"text": "hi"})
    assert text(result) == (('{"echo":"hi"}', False) if allowed else ("Access denied", True))


@pytest.mark.parametrize(
    ("args", "allowed"), [(["--stdio-identity", "alice", "--stdio-roles", "writer"], True), ([], False)]
)
async def test_stdio_calls_run_as_the_configured_identity(args: list[str], allowed: bool) -> None:
    assert (TESTS_DIR / "stdio_server.py").exists() and sys.executable
    async with Client(stdio_params("--role-acl", *args), mode="legacy", cache=None) as client:
        result = await client.call_tool("demo.echo", {"text": "hi"})
    assert text(result) == (('{"echo":"hi"}', False) if allowed else ("Access denied", True))
