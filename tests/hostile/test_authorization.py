"""One authorization point: every route to a module runs the same check on the module that will run.

The routes: a ``tools/call`` in the handshake era and in 2026-07-28 over Streamable HTTP, over
legacy SSE, the explorer's MCP door, ``invoke_tool`` in search mode (both eras, and from the
explorer), and a toolset endpoint ``/toolsets/<name>/mcp`` of an ``mcp.json``. On each, a tool
needing the ``vault`` scope is refused to a caller whose token lacks it and runs for one that
holds it; and the concurrency cap is shared fairly: a caller past its share is refused on
every route (counted once through ``invoke_tool``) while another caller still gets in.
Real clients (the SDK's, httpx) against uvicorn on a loopback port; API keys as tokens.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from apcore import Identity, Registry
from mcp.shared.exceptions import MCPError

from apcore_mcp.bridge import Bridge
from apcore_mcp.bridge.metatools import DESCRIBE_TOOL, INVOKE_TOOL, SEARCH_TOOLS
from apcore_mcp.calls.context import CallContext
from apcore_mcp.calls.limits import OVERLOADED, CallLimits
from apcore_mcp.calls.principal import Principal
from apcore_mcp.settings import Settings

from tests._support.auth import api_key_entry, endpoint_client, sse_session
from tests._support.hostile import serving, wait_until
from tests._support.hostile_modules import Sleeper
from tests._support.modules import Echo
from tests._support.results import text_of
from tests._support.upstreams import UPSTREAM

ALICE = "alice-key-" + "a" * 30  # no scopes
CAROL = "carol-key-" + "c" * 30  # holds "vault"
SECRET, OPEN, SLEEP = "vault.read", "demo.echo", "demo.sleep"
ARGS = {"text": "hi"}
HOLD = {"seconds": 30}
DENIED = "refused: Access denied: needs scope vault"
HIDDEN = "refused: Module not found: vault.read"


def registry() -> tuple[Registry, Sleeper]:
    found = Registry()
    found.register(OPEN, Echo())
    found.register(SECRET, Echo())
    sleeper = Sleeper()
    found.register(SLEEP, sleeper)
    return found, sleeper


def settings(tmp_path: Path, *, search: bool = False, **changes: Any) -> dict[str, Any]:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}, "toolsets": {"team": {"modules": True}}}))
    return {
        "auth": "api-key",
        "auth_api_keys": (api_key_entry(ALICE, "alice"), api_key_entry(CAROL, "carol", scopes="vault")),
        "auth_tool_scopes": ("vault.*=vault",),
        "explorer": True,
        "allow_execute": True,
        "mcp_config": str(config),
        "tool_mode": "search" if search else "list",
        **changes,
    }


# -- the routes: each answers "ok:<echo>", "refused: <text>", "error <JSON-RPC code>" or "<HTTP status> <text>"


def answer(result: Any) -> str:
    text = text_of(result)
    return f"refused: {text}" if result.is_error else f"ok:{json.loads(text)['echo']}"


def request(tool: str, arguments: dict[str, Any], search: bool) -> tuple[str, dict[str, Any]]:
    """The tools/call naming ``tool``: itself, or ``invoke_tool`` running it in search mode."""
    return (INVOKE_TOOL, {"name": tool, "arguments": arguments}) if search else (tool, arguments)


async def over_mcp(endpoint: str, key: str, tool: str, arguments: dict[str, Any], *, mode: str, search: bool) -> str:
    async with endpoint_client(endpoint, key, mode) as client:
        try:
            return answer(await client.call_tool(*request(tool, arguments, search)))
        except MCPError as error:
            return f"error {error.code}"


async def over_sse(url: str, key: str, tool: str, arguments: dict[str, Any]) -> str:
    async with sse_session(url, key) as session:
        try:
            return answer(await session.call_tool(tool, arguments))
        except MCPError as error:
            return f"error {error.code}"


Call = Callable[[str, str, str, dict[str, Any]], Awaitable[str]]


@dataclass(frozen=True)
class Route:
    name: str
    call: Call
    """``(base url, key, tool, arguments)`` -> the normalized answer."""
    search: bool = False
    refused: str = DENIED
    """How a caller without the scope is answered there."""
    busy: str = f"error {OVERLOADED}"
    """How a caller past its concurrency share is answered there."""


# A call naming a tool the token lacks scopes for is refused at HTTP level, 403 ``insufficient_scope``
# (the body's name on 2025-11-25, ``http/challenge.py``; ``Mcp-Name`` on 2026-07-28, ``http/auth.py``),
# which these clients report as a failed request. Legacy SSE answers on its stream: the router's tool error.
STEP_UP = "error -32603"

ROUTES = [
    Route(
        "handshake",
        lambda url, key, tool, args: over_mcp(f"{url}/mcp", key, tool, args, mode="legacy", search=False),
        refused=STEP_UP,
    ),
    Route(
        "modern",
        lambda url, key, tool, args: over_mcp(f"{url}/mcp", key, tool, args, mode="auto", search=False),
        refused=STEP_UP,
    ),
    Route("sse", over_sse),
    Route(
        "explorer",
        lambda url, key, tool, args: over_mcp(f"{url}/explorer/mcp", key, tool, args, mode="auto", search=False),
        refused=STEP_UP,
    ),
    Route(
        "invoke-handshake",
        lambda url, key, tool, args: over_mcp(f"{url}/mcp", key, tool, args, mode="legacy", search=True),
        search=True,
        refused=HIDDEN,
    ),
    Route(
        "invoke-modern",
        lambda url, key, tool, args: over_mcp(f"{url}/mcp", key, tool, args, mode="auto", search=True),
        search=True,
        refused=HIDDEN,
    ),
    Route(
        "invoke-explorer",
        lambda url, key, tool, args: over_mcp(f"{url}/explorer/mcp", key, tool, args, mode="auto", search=True),
        search=True,
        refused=HIDDEN,
    ),
    Route(
        "toolset-endpoint",
        lambda url, key, tool, args: over_mcp(f"{url}/toolsets/team/mcp", key, tool, args, mode="legacy", search=False),
        refused=STEP_UP,
    ),
]


@pytest.mark.parametrize("route", ROUTES, ids=[route.name for route in ROUTES])
async def test_a_scoped_tool_needs_its_scope_on_every_route(route: Route, tmp_path: Path) -> None:
    async with serving(registry()[0], **settings(tmp_path, search=route.search)) as (url, _bridge):
        refused = await route.call(url, ALICE, SECRET, ARGS)
        allowed = await route.call(url, CAROL, SECRET, ARGS)
    assert (refused, allowed) == (route.refused, "ok:hi")


@pytest.mark.parametrize("route", ROUTES, ids=[route.name for route in ROUTES])
async def test_one_caller_holds_at_most_its_share_of_the_concurrency_cap(route: Route, tmp_path: Path) -> None:
    found, sleeper = registry()
    limits = settings(tmp_path, search=route.search, max_concurrent_calls=2, max_caller_share=0.5)
    async with (
        serving(found, **limits) as (url, _bridge),
        endpoint_client(f"{url}/mcp", CAROL, "legacy") as holder,
        anyio.create_task_group() as tasks,
    ):
        tasks.start_soon(holder.call_tool, *request(SLEEP, HOLD, route.search))
        await wait_until(lambda: sleeper.counts.started == 1, "carol's first call running")
        with anyio.fail_after(10):  # a refusal, not a wait
            busy = await route.call(url, CAROL, OPEN, ARGS)
        other = await route.call(url, ALICE, OPEN, ARGS)  # through invoke_tool too: admitted once, not twice
        tasks.cancel_scope.cancel()
    assert (busy, other) == (route.busy, "ok:hi")


# -- search and describe show what may be called; the router checks whatever route calls it ----------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_search_and_describe_show_only_what_the_caller_may_call(mode: str, tmp_path: Path) -> None:
    async with serving(registry()[0], **settings(tmp_path, search=True, auth_filter_tools=True)) as (url, _):
        seen: dict[str, tuple[list[str], list[str]]] = {}
        for who, key in (("alice", ALICE), ("carol", CAROL)):
            async with endpoint_client(f"{url}/mcp", key, mode) as client:
                found = await client.call_tool(SEARCH_TOOLS, {"query": "echo text", "limit": 10})
                described = await client.call_tool(DESCRIBE_TOOL, {"names": [SECRET, OPEN]})
            assert found.structured_content is not None and described.structured_content is not None
            names = sorted(tool["name"] for tool in found.structured_content["tools"])
            seen[who] = (names, described.structured_content["not_found"])
    assert seen["alice"] == ([OPEN], [SECRET])  # hidden exactly as a missing tool is
    assert seen["carol"] == ([OPEN, SECRET], [])


@pytest.mark.parametrize("search", [False, True], ids=["list", "search"])
async def test_a_new_edge_gets_the_check_by_going_through_the_router(search: bool) -> None:
    """An edge only builds a CallContext: the router checks the module it will run, scopes included."""
    keys = (api_key_entry(ALICE, "alice"),)
    mode = "search" if search else "list"
    settings = Settings(auth="api-key", auth_api_keys=keys, auth_tool_scopes=("vault.*=vault",), tool_mode=mode)
    bridge = Bridge.build(registry()[0], settings)
    name, arguments = request(SECRET, ARGS, search)

    def caller(*scopes: str) -> CallContext:
        principal = Principal(Identity(id="dave"), scopes=frozenset(scopes))
        return CallContext(identity=principal.identity, principal=principal, caller="dave", origin="new-edge")

    without = await bridge.router.call(name, arguments, caller())
    with_scope = await bridge.router.call(name, arguments, caller("vault"))
    no_token = await bridge.router.call(name, arguments, CallContext(origin="stdio"))  # no token: no scopes
    expected = HIDDEN if search else DENIED  # invoke_tool hides what search hides, as a missing tool
    assert without.error is not None and f"refused: {without.error.message}" == expected
    assert with_scope.ok and no_token.ok


async def test_the_share_is_bounded_per_caller_and_forgotten_at_zero() -> None:
    limits = CallLimits(max_concurrent=4, max_caller_share=0.5)
    assert [await limits.acquire("alice") for _ in range(2)] == [None, None]
    refused = await limits.acquire("alice")
    assert refused is not None and (refused.reason, refused.code) == ("overloaded", OVERLOADED)
    assert [await limits.acquire("bob") for _ in range(2)] == [None, None]
    full = await limits.acquire("carol")  # the cap itself, whoever asks
    assert full is not None and "4 calls are running" in full.message
    assert (limits.running_for("alice"), limits.running_for("bob"), limits.running) == (2, 2, 4)
    for who in ("alice", "alice", "bob", "bob"):
        limits.release(who)
    assert (limits.running, limits._by_caller) == (0, {})  # nobody left behind
    tiny = CallLimits(max_concurrent=1, max_caller_share=0.1)
    assert await tiny.acquire("alice") is None  # a share is at least one call


@pytest.mark.parametrize("search", [False, True], ids=["call", "invoke_tool"])
async def test_an_upstream_tool_needs_its_scope_too(search: bool, tmp_path: Path) -> None:
    """A tool of a real stdio upstream server passes the same point as a local module."""
    config = tmp_path / "upstream.json"
    server = {"command": sys.executable, "args": [str(UPSTREAM)]}
    config.write_text(json.dumps({"mcpServers": {"up": server}}))
    # The tool-result form: the router's own answer, not the HTTP layer's 403 before it, is the subject.
    scoped = {
        **settings(tmp_path, search=search, auth_challenge="tool-result"),
        "mcp_config": str(config),
        "auth_tool_scopes": ("up.*=vault",),
    }
    async with serving(registry()[0], **scoped) as (url, bridge):
        catalog = bridge.search.catalog if bridge.search is not None else bridge.catalog
        await wait_until(lambda: catalog.get("up.echo") is not None, "the upstream's tools mounted")
        answers = []
        for key in (ALICE, CAROL):
            async with endpoint_client(f"{url}/mcp", key, "legacy") as client:
                result = await client.call_tool(*request("up.echo", ARGS, search))
            answers.append((result.is_error, text_of(result)))
    refused = "Module not found: up.echo" if search else "Access denied: needs scope vault"
    assert answers == [(True, refused), (False, "hi")]
