"""Where the direct path meets the rest of the server: each check it must not skip, attacked on both paths.

The harness of ``tests/http/test_direct_path*.py`` (``tests/_support/direct_pair.py``): the same registry served with ``direct_path`` on and
off, the same raw POST to both, one answer expected, and the direct path's counter (a toolset
endpoint's included) saying which path answered. Each test would go red if the direct path
skipped the check it is named for: the caller's identity, its own limits (as a trusted proxy
names it), the per-caller tool list, search mode's scopes, the approval's single use, a
toolset's own catalog.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from apcore import ModuleAnnotations, Registry
from mcp_types import INVALID_PARAMS
from mcp_types.jsonrpc import HEADER_MISMATCH
from pydantic import BaseModel

from apcore_mcp.bridge import Bridge
from apcore_mcp.bridge.metatools import INVOKE_TOOL, SEARCH_TOOLS
from apcore_mcp.calls.limits import RATE_LIMITED
from apcore_mcp.settings import Settings

from tests._support.auth import ISSUER, JWKS_URL, Issuer, api_key_entry, bearer, role_executor
from tests._support.direct_pair import (
    ECHO,
    ELICITING_META,
    Post,
    compare,
    post,
    result_of,
    send,
    serving_pair,
    state_of,
    tool,
)
from tests._support.hostile import MODERN_META
from tests._support.modules import Routed, make_executor, make_registry

PUBLIC = "https://mcp.example.test"
ALICE, BOB = "alice-key-" + "a" * 30, "bob-key-" + "b" * 30


class Empty(BaseModel):
    pass


class WhoOut(BaseModel):
    id: str | None
    roles: list[str]


class WhoAmI:
    description = "The identity the call runs as"
    input_schema = Empty
    output_schema = WhoOut

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        identity = context.identity
        return {"id": identity.id if identity else None, "roles": list(identity.roles) if identity else []}


class WipeIn(BaseModel):
    marker: str


class WipeOut(BaseModel):
    wiped: bool


class Wipe:
    """Approval-gated; one line in ``marker`` per run, so "ran once" is read from the disk."""

    description = "Wipe a target"
    input_schema = WipeIn
    output_schema = WipeOut
    annotations = ModuleAnnotations(destructive=True, requires_approval=True)

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        with open(inputs["marker"], "a") as file:
            file.write("ran\n")
        return {"wiped": True}


def seam_registry() -> Registry:
    registry = make_registry()
    registry.register("who.ami", WhoAmI())
    registry.register("seam.wipe", Wipe())
    return registry


def seam_bridge(**settings: Any) -> Bridge:
    return Bridge.build(make_executor(seam_registry()), Settings(**settings))


def as_caller(request: Post, key: str) -> Post:
    return request.with_headers(**{key.lower(): value for key, value in bearer(key).items()})


# -- authentication ---------------------------------------------------------------------------


def jwt_bridge(**settings: Any) -> Bridge:
    jwt = {"auth": "jwt", "public_url": PUBLIC, "auth_issuer": ISSUER, "auth_jwks_url": JWKS_URL}
    return seam_bridge(auth_metrics=False, **jwt, **settings)


async def test_no_token_is_refused_before_the_direct_path_and_a_token_reaches_the_module(issuer: Issuer) -> None:
    who = tool("who.ami")
    async with serving_pair(jwt_bridge) as pair:
        for refused_request in (who, who.with_headers(authorization="Bearer not-a-token")):
            refused = await compare(pair, refused_request, took=None)
            assert refused.status == 401
            assert f'resource_metadata="{PUBLIC}/.well-known/oauth-protected-resource/mcp"' in str(
                refused.header("www-authenticate")
            )
        token = issuer.token(f"{PUBLIC}/mcp", sub="alice", roles=["writer"])
        answer = await compare(pair, who.with_headers(authorization=f"Bearer {token}"), took="tools/call")
        assert result_of(answer)["structuredContent"] == {"id": "alice", "roles": ["writer"]}


async def test_a_state_sealed_for_one_caller_is_refused_for_another(issuer: Issuer, tmp_path: Path) -> None:
    marker = tmp_path / "wiped"
    arguments = {"marker": str(marker)}
    alice = f"Bearer {issuer.token(f'{PUBLIC}/mcp', sub='alice')}"
    bob = f"Bearer {issuer.token(f'{PUBLIC}/mcp', sub='bob')}"
    first = tool("seam.wipe", arguments, meta=ELICITING_META).with_headers(authorization=alice)
    async with serving_pair(jwt_bridge) as pair:
        states = [state_of(await send(pair, served, first)) for served in pair.both]

        def round_two(state: str, key: str, caller: str) -> Post:
            answers = {key: {"action": "accept", "content": {"approve": True}}}
            params = {"name": "seam.wipe", "arguments": arguments, "inputResponses": answers, "requestState": state}
            return post("tools/call", params, meta=ELICITING_META).with_headers(authorization=caller)

        stolen = await compare(pair, round_two(*states[0], bob), round_two(*states[1], bob), took="tools/call")
        assert stolen.status == 400 and stolen.json()["error"]["code"] == INVALID_PARAMS
        assert not marker.exists()
        owned = await compare(pair, round_two(*states[0], alice), round_two(*states[1], alice), took="tools/call")
        assert result_of(owned)["structuredContent"] == {"wiped": True}
    assert marker.read_text() == "ran\n" * 2  # once per server


async def test_host_and_origin_are_judged_before_the_direct_path() -> None:
    async with serving_pair(seam_bridge) as pair:
        for hostile in (ECHO.with_headers(origin="https://evil.example"), ECHO.with_headers(host="evil.example")):
            answer = await compare(pair, hostile, took=None)
            assert answer.status in (403, 421), answer


# -- per-caller limits ------------------------------------------------------------------------

KEYS: dict[str, Any] = {"auth": "api-key", "auth_metrics": False}


async def test_rate_limits_count_each_caller_alike_on_both_paths() -> None:
    keys = (api_key_entry(ALICE, "alice"), api_key_entry(BOB, "bob"))
    async with serving_pair(seam_bridge, rate_limit=0.01, rate_burst=1, auth_api_keys=keys, **KEYS) as pair:
        first = await compare(pair, as_caller(ECHO, ALICE), took="tools/call")
        assert result_of(first)["isError"] is False
        limited = await compare(pair, as_caller(ECHO, ALICE), took="tools/call")
        assert limited.json()["error"]["code"] == RATE_LIMITED
        bob = await compare(pair, as_caller(ECHO, BOB), took="tools/call")  # alice's bucket is not bob's
        assert result_of(bob)["isError"] is False


async def test_a_trusted_proxy_names_the_caller_whose_bucket_a_direct_call_takes() -> None:
    """Behind a listed proxy each forwarded client has its own bucket; unlisted, a header changes nothing."""
    behind = {"rate_limit": 0.01, "rate_burst": 1, "forwarded_allow_ips": ("127.0.0.1",)}
    async with serving_pair(seam_bridge, **behind) as pair:
        alice, bob = ECHO.with_headers(x_forwarded_for="203.0.113.7"), ECHO.with_headers(x_forwarded_for="198.51.100.9")
        assert result_of(await compare(pair, alice, took="tools/call"))["isError"] is False
        limited = await compare(pair, alice, took="tools/call")
        assert limited.json()["error"]["code"] == RATE_LIMITED
        assert result_of(await compare(pair, bob, took="tools/call"))["isError"] is False
    async with serving_pair(seam_bridge, rate_limit=0.01, rate_burst=1) as pair:  # no proxy listed
        assert result_of(await compare(pair, ECHO, took="tools/call"))["isError"] is False
        posing = ECHO.with_headers(x_forwarded_for="198.51.100.10")  # not a new caller for writing a header
        assert (await compare(pair, posing, took="tools/call")).json()["error"]["code"] == RATE_LIMITED


# -- search mode and scopes -------------------------------------------------------------------

CAROL = "carol-key-" + "c" * 30  # holds "demo"


def search_bridge(**settings: Any) -> Bridge:
    keys = (api_key_entry(ALICE, "alice"), api_key_entry(CAROL, "carol", scopes="demo"))
    scoped = {"auth_api_keys": keys, "auth_tool_scopes": ("demo.*=demo",), "tool_mode": "search"}
    return seam_bridge(**KEYS, **scoped, **settings)


async def test_search_mode_hides_a_scoped_tool_from_a_caller_without_the_scope_on_both_paths() -> None:
    """search_tools and invoke_tool answer through the direct path with the same hiding as the SDK's."""
    search = tool(SEARCH_TOOLS, {"query": "echo text", "limit": 50})
    invoke = tool(INVOKE_TOOL, {"name": "demo.echo", "arguments": {"text": "hi"}})
    async with serving_pair(search_bridge) as pair:
        found = {}
        for who, key in (("alice", ALICE), ("carol", CAROL)):
            result = result_of(await compare(pair, as_caller(search, key), took="tools/call"))
            found[who] = {entry["name"] for entry in result["structuredContent"]["tools"]}
        assert "demo.echo" in found["carol"] and "demo.echo" not in found["alice"]
        hidden = result_of(await compare(pair, as_caller(invoke, ALICE), took="tools/call"))
        assert hidden["isError"] is True and "not found" in json.dumps(hidden["content"])
        ran = result_of(await compare(pair, as_caller(invoke, CAROL), took="tools/call"))
        assert ran["isError"] is False


# -- lists filtered per caller ----------------------------------------------------------------


def filtered_bridge(**settings: Any) -> Bridge:
    executor = role_executor()  # demo.* needs the writer role
    executor.registry.register("demo.routed", Routed())
    keys = (api_key_entry(ALICE, "alice", roles="writer"), api_key_entry(BOB, "bob"))
    return Bridge.build(executor, Settings(auth_filter_tools=True, auth_api_keys=keys, **KEYS, **settings))


ROUTED = {"region": "eu", "text": "hi"}


async def test_filtered_lists_differ_per_caller_and_param_headers_still_bind() -> None:
    async with serving_pair(filtered_bridge) as pair:
        lists = {}
        for name, key in (("alice", ALICE), ("bob", BOB)):
            listed = result_of(await compare(pair, as_caller(post("tools/list"), key), took="tools/list"))
            assert listed["cacheScope"] == "private"
            lists[name] = {entry["name"] for entry in listed["tools"]}
        assert "demo.routed" in lists["alice"] and "demo.routed" not in lists["bob"]

        # With arguments, the SDK's per-caller listing finds the schema: the call falls back.
        routed = tool("demo.routed", ROUTED)
        ok = await compare(pair, as_caller(routed.with_headers(mcp_param_region="eu"), ALICE), took=None)
        assert result_of(ok)["structuredContent"] == ROUTED
        for header in ("us", None):
            refused = await compare(pair, as_caller(routed.with_headers(mcp_param_region=header), ALICE), took=None)
            assert (refused.status, refused.json()["error"]["code"]) == (400, HEADER_MISMATCH)
        # No arguments but a claimed Mcp-Param header: still the SDK's (the direct path has no caller's schema).
        claimed = as_caller(tool("demo.routed").with_headers(mcp_param_region="eu"), ALICE)
        refused = await compare(pair, claimed, took=None)
        assert (refused.status, refused.json()["error"]["code"]) == (400, HEADER_MISMATCH)
        # Nothing to check against: the direct path takes it, and the module refuses the empty arguments.
        bare = await compare(pair, as_caller(tool("demo.routed"), ALICE), took="tools/call")
        assert result_of(bare)["isError"] is True
        # A tool the caller is not shown is not called by naming it.
        hidden = await compare(pair, as_caller(routed.with_headers(mcp_param_region="eu"), BOB), took=None)
        assert result_of(hidden)["isError"] is True
        hidden_bare = await compare(pair, as_caller(tool("demo.echo", {"text": "x"}), BOB), took=None)
        assert result_of(hidden_bare)["isError"] is True


# -- approval ---------------------------------------------------------------------------------


def runs(marker: Path) -> int:
    return len(marker.read_text().splitlines()) if marker.exists() else 0


async def test_approval_fails_closed_and_an_approval_is_spent_once_on_both_paths(tmp_path: Path) -> None:
    marker = tmp_path / "wiped"
    arguments = {"marker": str(marker)}
    async with serving_pair(seam_bridge) as pair:
        unasked = result_of(await compare(pair, tool("seam.wipe", arguments), took="tools/call"))
        assert unasked["isError"] is True and "Not run" in unasked["content"][0]["text"]  # no way to ask: no run
        assert runs(marker) == 0

        first = tool("seam.wipe", arguments, meta=ELICITING_META)
        states = [state_of(await send(pair, served, first)) for served in pair.both]

        def round_two(state: str, key: str, answer: dict[str, Any]) -> Post:
            params = {
                "name": "seam.wipe",
                "arguments": arguments,
                "inputResponses": {key: answer},
                "requestState": state,
            }
            return post("tools/call", params, meta=ELICITING_META)

        yes = {"action": "accept", "content": {"approve": True}}
        declined = result_of(
            await compare(
                pair,
                round_two(*states[0], {"action": "decline"}),
                round_two(*states[1], {"action": "decline"}),
                took="tools/call",
            )
        )
        assert declined["isError"] is True and runs(marker) == 0
        approved = await compare(pair, round_two(*states[0], yes), round_two(*states[1], yes), took="tools/call")
        assert result_of(approved)["structuredContent"] == {"wiped": True}
        assert runs(marker) == 2  # once per server
        replayed = result_of(
            await compare(pair, round_two(*states[0], yes), round_two(*states[1], yes), took="tools/call")
        )
        assert replayed["isError"] is True and "already used" in replayed["content"][0]["text"]
        assert runs(marker) == 2
        other = {"marker": str(tmp_path / "other")}  # the states were sealed for other arguments

        def elsewhere(state: str, key: str) -> Post:
            params = {"name": "seam.wipe", "arguments": other, "inputResponses": {key: yes}, "requestState": state}
            return post("tools/call", params, meta=ELICITING_META)

        refused = await compare(pair, elsewhere(*states[0]), elsewhere(*states[1]), took="tools/call")
        assert refused.status == 400 and refused.json()["error"]["code"] == INVALID_PARAMS
    assert not (tmp_path / "other").exists()


# -- a toolset endpoint -----------------------------------------------------------------------


async def test_a_toolset_endpoint_is_served_direct_with_its_own_catalog(tmp_path: Path) -> None:
    """Counted by the app's direct-path metric like /mcp (each ``compare`` checks the counter)."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}, "toolsets": {"local": {"modules": {"prefix": "demo."}}}}))

    def toolset_bridge(**settings: Any) -> Bridge:
        registry = make_registry()
        registry.register("demo.routed", Routed())
        return Bridge.build(make_executor(registry), Settings(mcp_config=str(config), **settings))

    path = "/toolsets/local/mcp"
    async with serving_pair(toolset_bridge) as pair:
        listed = result_of(await compare(pair, post("tools/list", path=path), took="tools/list"))
        names = {entry["name"] for entry in listed["tools"]}
        assert "demo.echo" in names and "admin.secret" not in names
        echoed = await compare(pair, tool("demo.echo", {"text": "hi"}, path=path), took="tools/call")
        assert result_of(echoed)["structuredContent"] == {"echo": "hi"}
        outside = await compare(pair, tool("admin.secret", path=path), took="tools/call")
        assert result_of(outside)["isError"] is True  # not in this toolset, whatever /mcp serves
        routed = tool("demo.routed", ROUTED, path=path)
        matching = await compare(pair, routed.with_headers(mcp_param_region="eu"), took="tools/call")
        assert result_of(matching)["structuredContent"] == ROUTED
        refused = await compare(pair, routed.with_headers(mcp_param_region="us"), took="tools/call")
        assert (refused.status, refused.json()["error"]["code"]) == (400, HEADER_MISMATCH)
        unsealed = await compare(pair, tool("demo.echo", {"text": "hi"}, path=path, meta=None), took="tools/call")
        assert unsealed.status == 400


async def test_meta_is_required_on_every_direct_method() -> None:
    """The envelope check is the direct path's, not a handler's: every method refuses a request without it."""
    async with serving_pair(seam_bridge) as pair:
        for method in ("server/discover", "tools/list", "resources/list", "resources/templates/list"):
            refused = await compare(pair, post(method, meta=None), took=method)
            assert (refused.status, refused.json()["error"]["code"]) == (400, INVALID_PARAMS)
            stale = {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2025-06-18"}
            mismatched = await compare(pair, post(method, meta=stale), took=method)
            assert (mismatched.status, mismatched.json()["error"]["code"]) == (400, HEADER_MISMATCH)
