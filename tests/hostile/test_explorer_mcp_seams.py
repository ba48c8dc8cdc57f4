"""The explorer's MCP endpoint against each feature it meets: origin, token, auth, execution
opt-in, destructive calls, search mode, batches, rate limits and approval.

Every module here records its runs, so a refusal is shown to run nothing.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from apcore import ModuleAnnotations, Registry
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST, TextContent
from pydantic import BaseModel

from apcore_mcp.bridge import Bridge
from apcore_mcp.calls.limits import RATE_LIMITED
from apcore_mcp.http.app import create_app
from apcore_mcp.settings import Settings

from tests._support.auth import api_key_entry, bearer
from tests._support.hostile import (
    ACCEPT,
    MODERN_META,
    modern_headers,
    session_headers,
    sse_payload,
    tool_call,
    uvicorn_told,
)
from tests._support.sessions import running_http

MCP = "/explorer/mcp"
ERAS = ["legacy", "auto"]  # the SDK client's modes: 2025-11-25, 2026-07-28
ALICE_KEY = "alice-key-" + "a" * 32  # scopes mcp:use
BOB_KEY = "bob-key-" + "b" * 32  # scopes mcp:use admin
CAROL_KEY = "carol-key-" + "c" * 32  # no scopes


class Empty(BaseModel):
    pass


class Said(BaseModel):
    said: str


class Recorded:
    """A module that appends its id to ``runs`` when it runs, and says who called it."""

    description = "Records that it ran"
    input_schema = Empty
    output_schema: type[BaseModel] = Said

    def __init__(self, runs: list[str], module_id: str, **declared: Any) -> None:
        self.runs = runs
        self.module_id = module_id
        for name, value in declared.items():
            setattr(self, name, value)

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        self.runs.append(self.module_id)
        identity = getattr(context, "identity", None)
        return {"said": identity.id if identity is not None else "nobody"}


class CountText(BaseModel):
    text: str


class CountResource(Recorded):
    output_schema = CountText
    metadata = {"mcp_resource": {"uri": "count://now", "mime_type": "text/plain", "name": "count"}}

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        self.runs.append(self.module_id)
        return {"text": str(len(self.runs))}


def registry(runs: list[str]) -> Registry:
    modules = {
        "safe.echo": Recorded(
            runs, "safe.echo", annotations=ModuleAnnotations(readonly=True), documentation="Static text."
        ),
        "danger.purge": Recorded(runs, "danger.purge", annotations=ModuleAnnotations(destructive=True)),
        "danger.gated": Recorded(
            runs, "danger.gated", annotations=ModuleAnnotations(destructive=True, requires_approval=True)
        ),
        "admin.echo": Recorded(runs, "admin.echo", annotations=ModuleAnnotations(readonly=True)),
        "res.count": CountResource(runs, "res.count"),
    }
    made = Registry()
    for module_id, module in modules.items():
        made.register(module_id, module)
    return made


@contextlib.asynccontextmanager
async def serving(runs: list[str], **settings: Any) -> AsyncIterator[tuple[str, httpx.AsyncClient]]:
    values: dict[str, Any] = {"explorer": True, "allow_execute": True, **settings}
    async with (
        running_http(Bridge.build(registry(runs), Settings(**values))) as url,
        httpx.AsyncClient(base_url=url, timeout=10) as http,
    ):
        yield url, http


async def call(
    http: httpx.AsyncClient, name: str, arguments: dict[str, Any] | None = None, /, *, path: str = MCP, **headers: str
) -> httpx.Response:
    """A 2026-07-28 ``tools/call`` (one POST, no session) of ``name``."""
    message = tool_call(1, name, arguments or {}, modern=True)
    return await http.post(path, json=message, headers={**modern_headers("tools/call", name), **headers})


async def request(http: httpx.AsyncClient, method: str, params: dict[str, Any], name: str | None = None) -> Any:
    message = {"jsonrpc": "2.0", "id": 2, "method": method, "params": {**params, "_meta": MODERN_META}}
    return await http.post(MCP, json=message, headers=modern_headers(method, name))


@contextlib.asynccontextmanager
async def client(url: str, mode: str, headers: dict[str, str] | None = None) -> AsyncIterator[Client]:
    """The SDK's client on the explorer's endpoint, every request carrying ``headers``."""
    async with create_mcp_http_client(headers=headers) as http:
        async with Client(streamable_http_client(f"{url}{MCP}", http_client=http), mode=mode, cache=None) as made:
            yield made


# -- origin and token ------------------------------------------------------------------------------


async def test_only_the_pages_own_origin_drives_the_endpoint() -> None:
    runs: list[str] = []
    async with serving(runs) as (url, http):
        port = int(url.rsplit(":", 1)[1])
        own = f"http://127.0.0.1:{port}"
        # Origins the Host/Origin guard lets through (loopback), which are still other pages.
        for headers in (
            {"Origin": "http://localhost:3000"},
            {"Origin": f"http://127.0.0.1:{port + 1}"},
            {"Origin": own, "Sec-Fetch-Site": "cross-site"},
            {"Origin": own, "Sec-Fetch-Site": "same-site"},
        ):
            refused = await call(http, "safe.echo", **headers)
            assert refused.status_code == 403, headers
            assert refused.json()["error"]["code"] == INVALID_REQUEST
            assert (await http.get(MCP, headers={**headers, "Accept": "text/event-stream"})).status_code == 403
            assert (await http.delete(MCP, headers=headers)).status_code == 403
        assert runs == []
        assert (await call(http, "safe.echo", Origin=own, **{"Sec-Fetch-Site": "same-origin"})).status_code == 200
        assert (await call(http, "safe.echo")).status_code == 200  # a script: no Origin, loopback, no token
    assert runs == ["safe.echo", "safe.echo"]


async def test_a_configured_explorer_token_is_required() -> None:
    runs: list[str] = []
    token = "t" * 24
    async with serving(runs, execute_token=token) as (url, http):
        refused = await call(http, "safe.echo")
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
        assert (await call(http, "safe.echo", Authorization="Bearer " + "u" * 24)).status_code == 401
        assert runs == []
        for mode in ERAS:
            async with client(url, mode, bearer(token)) as session:
                result = await session.call_tool("safe.echo", {})
                assert result.structured_content == {"said": "nobody"}
    assert runs == ["safe.echo", "safe.echo"]


async def test_off_loopback_the_endpoint_needs_the_token_made_for_the_run(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="apcore_mcp")
    runs: list[str] = []
    settings = Settings(explorer=True, allow_execute=True)
    async with (
        uvicorn_told("0.0.0.0", create_app(registry(runs), settings)) as url,
        httpx.AsyncClient(base_url=url) as http,
    ):
        assert (await call(http, "safe.echo")).status_code == 401
        assert runs == []
        path = Path(next(m for m in caplog.messages if "token for this run in" in m).rsplit(" ", 1)[1])
        token = path.read_text()
        path.unlink()
        allowed = await call(http, "safe.echo", Authorization=f"Bearer {token}")
        assert allowed.status_code == 200
    assert runs == ["safe.echo"]


# -- authentication on -----------------------------------------------------------------------------


def api_key_settings() -> dict[str, Any]:
    return {
        "auth": "api-key",
        "auth_api_keys": (
            api_key_entry(ALICE_KEY, "alice", scopes="mcp:use"),
            api_key_entry(BOB_KEY, "bob", scopes="mcp:use admin"),
            api_key_entry(CAROL_KEY, "carol"),
        ),
        "auth_tool_scopes": ("admin.*=admin",),
        "auth_route_scopes": ("/mcp=mcp:use",),
    }


async def test_with_auth_the_endpoint_is_protected_like_mcp() -> None:
    runs: list[str] = []
    async with serving(runs, **api_key_settings()) as (url, http):
        # No token: 401 with /mcp's challenge, naming the explorer's resource (the URL is under it).
        refused, on_mcp = await call(http, "safe.echo"), await call(http, "safe.echo", path="/mcp")
        assert (refused.status_code, on_mcp.status_code) == (401, 401)
        challenge = on_mcp.headers["www-authenticate"]
        assert refused.headers["www-authenticate"] == challenge.replace('/mcp"', '/explorer"')
        assert 'scope="mcp:use"' in challenge  # /mcp's route rule, asked for on both
        # /mcp's route rule applies here too: it is the /mcp app (the explorer's REST list is not).
        for path in ("/mcp", MCP):
            assert (await call(http, "safe.echo", path=path, **bearer(CAROL_KEY))).status_code == 403, path
        assert (await http.get("/explorer/tools", headers=bearer(CAROL_KEY))).status_code == 200
        # A token without the tool's scope: refused before the app, with the same challenge as /mcp.
        on_mcp = await call(http, "admin.echo", path="/mcp", **bearer(ALICE_KEY))
        refused = await call(http, "admin.echo", **bearer(ALICE_KEY))
        assert (on_mcp.status_code, refused.status_code) == (403, 403)
        assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
        assert 'scope="admin mcp:use"' in refused.headers["www-authenticate"]
        # The handshake era names the tool in the body only: refused there too (http/challenge.py), as on /mcp.
        async with client(url, "legacy", bearer(ALICE_KEY)) as session:
            with pytest.raises(MCPError):
                await session.call_tool("admin.echo", {})
        assert runs == []
        # The caller's own identity reaches the module, in either era.
        for mode in ERAS:
            async with client(url, mode, bearer(BOB_KEY)) as session:
                assert (await session.call_tool("admin.echo", {})).structured_content == {"said": "bob"}
    assert runs == ["admin.echo", "admin.echo"]


# -- execution opt-in ------------------------------------------------------------------------------


async def test_execution_off_refuses_whatever_runs_a_module() -> None:
    runs: list[str] = []
    async with serving(runs, allow_execute=False) as (_url, http):
        refused = await call(http, "safe.echo")
        assert refused.status_code == 403
        error = refused.json()["error"]
        assert error["data"] == {
            "setting": "allow_execute",
            "flag": "--allow-execute",
            "env": "APCORE_MCP_ALLOW_EXECUTE",
        }
        read = await request(http, "resources/read", {"uri": "count://now"}, "count://now")
        assert read.status_code == 403
        assert read.json()["error"]["data"]["setting"] == "allow_execute"
        assert read.json()["id"] == 2
        assert runs == []
        # Listing, and the static documentation resources, stay open.
        tools = sse_payload((await request(http, "tools/list", {})).text)["result"]["tools"]
        assert "danger.purge" in {tool["name"] for tool in tools}
        resources = sse_payload((await request(http, "resources/list", {})).text)["result"]["resources"]
        assert {"docs://safe.echo", "count://now"} <= {resource["uri"] for resource in resources}
        docs = await request(http, "resources/read", {"uri": "docs://safe.echo"}, "docs://safe.echo")
        assert sse_payload(docs.text)["result"]["contents"][0]["text"] == "Static text."
        assert (await request(http, "server/discover", {})).status_code == 200
    assert runs == []


async def test_execution_on_reads_module_resources() -> None:
    runs: list[str] = []
    async with serving(runs) as (_url, http):
        read = await request(http, "resources/read", {"uri": "count://now"}, "count://now")
        assert sse_payload(read.text)["result"]["contents"][0]["text"] == "1"
    assert runs == ["res.count"]


# -- destructive tools -----------------------------------------------------------------------------


async def test_a_destructive_tool_runs_only_with_its_own_confirmation() -> None:
    runs: list[str] = []
    async with serving(runs) as (url, http):
        refused = await call(http, "danger.purge")
        assert refused.status_code == 428
        body = refused.json()
        assert body["id"] == 1
        assert body["error"]["code"] == INVALID_REQUEST
        assert body["error"]["message"] == "danger.purge is destructive: confirm the call to run it"
        assert body["error"]["data"] == {
            "confirm": {"tool": "danger.purge", "description": "Records that it ran", "header": "x-apcore-confirm"}
        }
        for other in (
            "safe.echo",
            "DANGER.PURGE",
            "danger.purge,danger.purge",
            "",
        ):  # another tool's confirmation is none
            assert (await call(http, "danger.purge", **{"X-Apcore-Confirm": other})).status_code == 428, other
        assert runs == []
        assert (await call(http, "danger.purge", **{"X-Apcore-Confirm": "danger.purge"})).status_code == 200
        assert (await call(http, "safe.echo")).status_code == 200  # not destructive: one click
        # The handshake era (a session) is judged the same way.
        async with client(url, "legacy") as session:
            with pytest.raises(MCPError) as unconfirmed:
                await session.call_tool("danger.purge", {})
            assert unconfirmed.value.error.data["confirm"]["tool"] == "danger.purge"
        async with client(url, "legacy", {"X-Apcore-Confirm": "danger.purge"}) as session:
            assert not (await session.call_tool("danger.purge", {})).is_error
    assert runs == ["danger.purge", "safe.echo", "danger.purge"]


async def test_with_approval_off_a_destructive_approval_tool_needs_the_confirmation() -> None:
    runs: list[str] = []
    async with serving(runs, approval="auto") as (_url, http):  # the server asks nobody: the page must
        assert (await call(http, "danger.gated")).status_code == 428
        assert runs == []
        assert (await call(http, "danger.gated", **{"X-Apcore-Confirm": "danger.gated"})).status_code == 200
    assert runs == ["danger.gated"]


async def test_search_mode_judges_invoke_tool_by_the_tool_it_invokes() -> None:
    runs: list[str] = []
    async with serving(runs, tool_mode="search") as (_url, http):
        purge = {"name": "danger.purge", "arguments": {}}
        refused = await call(http, "invoke_tool", purge)
        assert refused.status_code == 428
        assert refused.json()["error"]["data"]["confirm"]["tool"] == "danger.purge"
        for other in ("invoke_tool", "safe.echo"):
            assert (await call(http, "invoke_tool", purge, **{"X-Apcore-Confirm": other})).status_code == 428
        assert runs == []
        assert (await call(http, "invoke_tool", purge, **{"X-Apcore-Confirm": "danger.purge"})).status_code == 200
        assert (await call(http, "invoke_tool", {"name": "safe.echo", "arguments": {}})).status_code == 200
        found = await call(http, "search_tools", {"query": "records"})
        assert found.status_code == 200
    assert runs == ["danger.purge", "safe.echo"]


async def open_session(http: httpx.AsyncClient, base: str, *, version: str) -> str:
    """A handshake-era session id on ``{base}/mcp`` at protocol ``version``."""
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "hostile", "version": "1"}},
    }
    response = await http.post(f"{base}/mcp", json=init, headers=ACCEPT)
    assert response.status_code == 200, response.text
    session: str = response.headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers = {**session_headers(session), "mcp-protocol-version": version}
    assert (await http.post(f"{base}/mcp", json=note, headers=headers)).status_code == 202
    return session


async def test_search_mode_tells_nothing_of_a_destructive_tool_the_caller_may_not_see() -> None:
    runs: list[str] = []
    keys = (api_key_entry(ALICE_KEY, "alice"),)
    settings = {"auth": "api-key", "auth_api_keys": keys, "auth_tool_scopes": ("danger.*=admin",)}
    async with serving(runs, tool_mode="search", **settings) as (_url, http):
        answers = []
        for name in ("danger.purge", "danger.nothing"):  # hidden by scopes, and absent
            answer = await call(http, "invoke_tool", {"name": name, "arguments": {}}, **bearer(ALICE_KEY))
            assert answer.status_code == 200, answer.text
            answers.append(json.dumps(sse_payload(answer.text)["result"]).replace(name, "NAME"))
        assert answers[0] == answers[1]
    assert runs == []


# -- batches, bodies -------------------------------------------------------------------------------


async def test_a_batch_cannot_carry_a_call_past_the_gate() -> None:
    runs: list[str] = []
    async with serving(runs, allow_execute=False) as (url, http):
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        for batch in (
            [ping, tool_call(2, "danger.purge", {}, modern=True)],
            [tool_call(2, "safe.echo", {}, modern=True)],
        ):
            refused = await http.post(MCP, json=batch, headers=modern_headers("tools/call", "safe.echo"))
            assert refused.status_code == 400
            assert "Batches are refused" in refused.json()["error"]["message"]
        # In a session of an era whose JSON-RPC allowed batches (2025-03-26), too.
        session = await open_session(http, f"{url}/explorer", version="2025-03-26")
        batch = [tool_call(2, "safe.echo", {})]
        headers = {**session_headers(session), "mcp-protocol-version": "2025-03-26"}
        refused = await http.post(MCP, json=batch, headers=headers)
        assert refused.status_code == 400
        assert "Batches are refused" in refused.json()["error"]["message"]
        # A body naming two methods is read as the server reads it (the last one counts).
        twice = (
            b'{"jsonrpc": "2.0", "id": 4, "method": "tools/list", "method": "tools/call", '
            b'"params": {"name": "safe.echo", "arguments": {}, "_meta": ' + json.dumps(MODERN_META).encode() + b"}}"
        )
        refused = await http.post(MCP, content=twice, headers=modern_headers("tools/call", "safe.echo"))
        assert refused.status_code == 403
        # What the gate cannot parse is not passed on for something else to read.
        garbled = b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", '
        assert (await http.post(MCP, content=garbled, headers=modern_headers("tools/call"))).status_code == 400
    assert runs == []


async def test_a_body_over_the_limit_is_refused_before_the_gate_reads_it() -> None:
    runs: list[str] = []
    async with serving(runs, max_body_bytes=4096) as (_url, http):
        huge = tool_call(1, "safe.echo", {"pad": "x" * 10_000}, modern=True)
        assert (await http.post(MCP, json=huge, headers=modern_headers("tools/call", "safe.echo"))).status_code == 413
    assert runs == []


# -- limits and approval ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ERAS)
async def test_the_rate_limit_counts_explorer_calls_against_the_same_caller(mode: str) -> None:
    runs: list[str] = []
    async with serving(runs, rate_limit=0.01, rate_burst=2) as (url, _http):
        async with Client(f"{url}/mcp", mode=mode, cache=None) as on_mcp:
            for _ in range(2):
                assert not (await on_mcp.call_tool("safe.echo", {})).is_error
        async with client(url, mode) as explorer:
            with pytest.raises(MCPError) as refused:
                await explorer.call_tool("safe.echo", {})
        assert refused.value.code == RATE_LIMITED
    assert runs == ["safe.echo", "safe.echo"]


@pytest.mark.parametrize("mode", ERAS)
async def test_approval_still_fails_closed_through_the_endpoint(mode: str) -> None:
    runs: list[str] = []
    async with serving(runs) as (url, _http):
        # A destructive approval tool is the server's to ask about (no 428)... and this client cannot answer.
        # The page's confirmation header approves nothing: only the person's answer to the server does.
        for headers in (None, {"X-Apcore-Confirm": "danger.gated"}):
            async with client(url, mode, headers) as session:
                result = await session.call_tool("danger.gated", {})
                assert result.is_error
                assert isinstance(result.content[0], TextContent)
                assert "Not run: danger.gated requires approval" in result.content[0].text
    assert runs == []
