"""The anonymous caller of public tools reaches the public tools only, on every route, and learns
nothing of a protected one: its name, schema, view or task.

One server with ``auth_public_tools``: an anonymous caller lists, searches, reads and calls through
``/mcp`` in both eras, legacy SSE, the explorer's door, a toolset endpoint, tasks, module views,
``/openai/tools`` in every format, the server card and the catalog; everything it is answered is
searched for the protected tools' names. Calls of a protected tool never run it; a session or task of
a signed-in caller is not the anonymous caller's; the ACL and the limits see it as its own principal.
Real clients (the SDK's, httpx) against uvicorn on a loopback port; API keys as tokens.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from apcore import Executor, Registry
from apcore.acl import ACL, ACLRule
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.shared.exceptions import MCPError
from mcp.types import ResourceTemplateReference

from apcore_mcp import View
from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings

from tests._support.auth import api_key_entry, bearer, endpoint_client
from tests._support.pins import call_answer
from tests._support.tasks import HANDSHAKE, MODERN, Wire

pytestmark = pytest.mark.asyncio(loop_scope="module")

CAROL = "carol-key-" + "c" * 30  # holds "admin"
ARGS = {"text": "hi"}
SECRET = "vault"  # every protected tool's id starts with it; no public answer may hold it
RAN: list[str] = []


class Echo:
    description = "Echo the text back"
    input_schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    output_schema = {"type": "object", "properties": {"echo": {"type": "string"}}}

    def __init__(self, name: str, **attributes: Any) -> None:
        self.name = name
        for key, value in attributes.items():
            setattr(self, key, value)

    def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        RAN.append(self.name)
        return {"echo": inputs["text"]}


def executor() -> Executor:
    from apcore import ModuleAnnotations

    made = Registry()
    view = View(html="<p>a view</p>")
    made.register("open.echo", Echo("open.echo", view=view))
    made.register("open.members", Echo("open.members"))  # public, but the ACL keeps the anonymous caller out
    made.register(f"{SECRET}.echo", Echo(f"{SECRET}.echo", view=view))
    task_only = ModuleAnnotations(extra={"mcp.task_support": "required"})
    made.register(f"{SECRET}.job", Echo(f"{SECRET}.job", annotations=task_only))
    rules = [
        ACLRule(
            callers=["@external"], targets=["open.members"], effect="deny", conditions={"identity_types": ["anonymous"]}
        ),
        ACLRule(callers=["@external"], targets=["*"], effect="allow"),
    ]
    return Executor(made, acl=ACL(rules, default_effect="deny"))


def settings(tmp: Path, **extra: Any) -> Settings:
    config = tmp / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}, "toolsets": {"team": {"modules": True}}}))
    made: dict[str, Any] = {
        "auth": "api-key",
        "auth_api_keys": (api_key_entry(CAROL, "carol", scopes="admin"),),
        "auth_tool_scopes": (f"{SECRET}.*=admin",),
        "auth_public_tools": ("open.*",),
        "explorer": True,
        "allow_execute": True,
        "mcp_config": str(config),
        "rate_limit": 1000.0,
        "rate_burst": 1000,
    }
    return Settings(**{**made, **extra})


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def url(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    from tests._support.sessions import running_http

    async with running_http(Bridge.build(executor(), settings(tmp_path_factory.mktemp("public")))) as base:
        yield base


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def search_url(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    from tests._support.sessions import running_http

    made = settings(tmp_path_factory.mktemp("search"), tool_mode="search")
    async with running_http(Bridge.build(executor(), made)) as base:
        yield base


def dumped(value: Any) -> str:
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json", by_alias=True)
    return json.dumps(value, sort_keys=True)


async def everything_listed(client: Client) -> str:
    """Every list an MCP client can ask for, and the documentation template's completion."""
    answers: list[Any] = [
        await client.list_tools(),
        await client.list_resources(),
        await client.list_resource_templates(),
    ]
    ref = ResourceTemplateReference(type="ref/resource", uri="docs://{module_id}")
    answers.append(await client.complete(ref, {"name": "module_id", "value": ""}))
    return " ".join(dumped(answer) for answer in answers)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("path", ["/mcp", "/explorer/mcp", "/toolsets/team/mcp"])
async def test_no_list_tells_the_anonymous_caller_of_a_protected_tool(url: str, path: str, mode: str) -> None:
    async with endpoint_client(f"{url}{path}", None, mode) as client:
        seen = await everything_listed(client)
        tools = [tool.name for tool in (await client.list_tools()).tools]
    assert tools == ["open.echo"]  # open.members: public, but the ACL refuses the anonymous identity
    assert SECRET not in seen and "open.members" not in seen
    async with endpoint_client(f"{url}{path}", CAROL, mode) as client:  # the protected tools are there
        assert SECRET in await everything_listed(client)


async def test_no_document_served_without_credentials_names_a_protected_tool(url: str) -> None:
    paths = [
        "/openai/tools",
        "/openai/tools?format=responses",
        "/openai/tools?format=agents",
        "/openai/tools?format=agents&form=mcp",
        "/mcp/server-card",
        "/toolsets/team/mcp/server-card",
        "/.well-known/mcp/catalog.json",
        "/explorer/config",
    ]
    async with httpx.AsyncClient(timeout=10) as http:
        answers = {path: await http.get(f"{url}{path}") for path in paths}
        signed_in = await http.get(f"{url}/openai/tools?format=agents&form=mcp", headers=bearer(CAROL))
    assert {path: response.status_code for path, response in answers.items()} == dict.fromkeys(paths, 200)
    for path, response in answers.items():
        assert SECRET not in response.text + json.dumps(dict(response.headers)), path
    assert json.loads(answers["/openai/tools?format=agents&form=mcp"].text)[0]["allowed_tools"] == ["open.echo"]
    assert f"{SECRET}.echo" in signed_in.json()[0]["allowed_tools"]


async def over_sse(base: str, name: str) -> str:
    async with sse_client(f"{base}/sse") as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = dumped(await session.list_tools())
        try:
            called = dumped(await session.call_tool(name, ARGS))
        except MCPError as error:
            called = f"error {error.code}"
    return listed + called


async def over_tasks(base: str, era: str, name: str) -> str:
    client = Wire(base, era=era)
    if era == HANDSHAKE:
        await client.open()
        return dumped(await client.call(name, ARGS, task={"ttl": 60_000}))
    return dumped(await client.call(name, ARGS))


@pytest.mark.parametrize(
    "route",
    ["mcp-legacy", "mcp-auto", "sse", "explorer-auto", "explorer-legacy", "toolset", "task-handshake", "task-modern"],
)
@pytest.mark.parametrize("name", [f"{SECRET}.echo", f"{SECRET}.job", "open.members"])
async def test_the_anonymous_caller_never_runs_a_tool_it_may_not(url: str, route: str, name: str) -> None:
    calls = {
        "mcp-legacy": lambda: call_answer(f"{url}/mcp", None, "legacy", name),
        "mcp-auto": lambda: call_answer(f"{url}/mcp", None, "auto", name),
        "sse": lambda: over_sse(url, name),
        "explorer-auto": lambda: call_answer(f"{url}/explorer/mcp", None, "auto", name),
        "explorer-legacy": lambda: call_answer(f"{url}/explorer/mcp", None, "legacy", name),
        "toolset": lambda: call_answer(f"{url}/toolsets/team/mcp", None, "legacy", name),
        "task-handshake": lambda: over_tasks(url, HANDSHAKE, name),
        "task-modern": lambda: over_tasks(url, MODERN, name),
    }
    RAN.clear()
    answer = await calls[route]()
    assert RAN == [], answer
    assert '"isError": false' not in answer and '"resultType": "task"' not in answer
    public = await call_answer(
        f"{url}/mcp", None, "auto" if "modern" in route or "auto" in route else "legacy", "open.echo"
    )
    assert '"isError": false' in public and RAN == ["open.echo"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_invoke_tool_in_search_mode_runs_the_public_tools_only(search_url: str, mode: str) -> None:
    RAN.clear()
    async with endpoint_client(f"{search_url}/mcp", None, mode) as client:
        found = await client.call_tool("search_tools", {"query": "echo text", "limit": 10})
        described = await client.call_tool("describe_tool", {"names": [f"{SECRET}.echo", "open.echo"]})
        refused = await client.call_tool("invoke_tool", {"name": f"{SECRET}.echo", "arguments": ARGS})
        ran = await client.call_tool("invoke_tool", {"name": "open.echo", "arguments": ARGS})
    assert SECRET not in dumped(found) and "open.echo" in dumped(found)
    assert described.structured_content is not None and described.structured_content["not_found"] == [f"{SECRET}.echo"]
    assert refused.is_error and (ran.is_error, RAN) == (False, ["open.echo"])


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_protected_tools_view_reads_as_absent(url: str, mode: str) -> None:
    async with endpoint_client(f"{url}/mcp", None, mode) as client:
        public = await client.read_resource("ui://open.echo/view")
        with pytest.raises(MCPError) as hidden:
            await client.read_resource(f"ui://{SECRET}.echo/view")
        with pytest.raises(MCPError) as absent:
            await client.read_resource("ui://nothing.here/view")
    assert "a view" in dumped(public)
    assert hidden.value.error.message.replace(f"{SECRET}.echo", "X") == absent.value.error.message.replace(
        "nothing.here", "X"
    )


async def test_a_signed_in_callers_session_and_task_are_not_the_anonymous_callers(url: str) -> None:
    carol = Wire(url, era=HANDSHAKE, headers=bearer(CAROL))
    await carol.open()
    created = await carol.call(f"{SECRET}.job", ARGS, task={"ttl": 60_000})
    task_id = created["result"]["task"]["taskId"]
    async with httpx.AsyncClient(timeout=10) as http:  # carol's session id without carol's token
        stolen = await http.post(
            f"{url}/mcp",
            json={"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream", "Mcp-Session-Id": str(carol.session)},
        )
    stranger = Wire(url, era=MODERN)
    peeked = await stranger.rpc("tasks/get", {"taskId": task_id})
    assert stolen.status_code == 404
    assert "error" in peeked and SECRET not in json.dumps(peeked)
    assert (await carol.until_done(task_id))["result"]["status"] == "completed"


async def test_the_anonymous_caller_is_one_principal_for_the_rate_limit(tmp_path: Path) -> None:
    from tests._support.sessions import running_http

    limited = settings(tmp_path, rate_limit=0.001, rate_burst=2)
    async with running_http(Bridge.build(executor(), limited)) as base:
        first, second = Wire(base, era=MODERN, source="127.0.0.2"), Wire(base, era=MODERN, source="127.0.0.3")
        answers = [await first.call("open.echo", ARGS), await second.call("open.echo", ARGS)]
        third = await first.call("open.echo", ARGS)  # two addresses, one anonymous principal: its burst is spent
        carol = await Wire(base, era=MODERN, headers=bearer(CAROL)).call("open.echo", ARGS)
    assert all("result" in answer for answer in answers)
    assert "error" in third
    assert "result" in carol  # a signed-in caller has buckets of its own


async def test_the_handshake_and_discovery_name_no_protected_tool(url: str) -> None:
    handshake = Wire(url, era=HANDSHAKE)
    opened = await handshake.rpc(
        "initialize", {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    )
    discovered = await Wire(url, era=MODERN).rpc("server/discover")
    assert "result" in opened and "result" in discovered
    assert SECRET not in json.dumps(opened) + json.dumps(discovered)


async def test_an_upstream_servers_tools_follow_the_same_globs(tmp_path: Path) -> None:
    """Tools of a real stdio upstream are modules like any other: public by glob, else protected."""
    from tests._support.hostile import wait_until
    from tests._support.sessions import running_http
    from tests._support.upstreams import UPSTREAM

    config = tmp_path / "upstream.json"
    servers = {"up": {"command": sys.executable, "args": [str(UPSTREAM)]}}
    config.write_text(json.dumps({"mcpServers": servers, "toolsets": {"team": {"modules": True}}}))
    made = settings(tmp_path, mcp_config=str(config), auth_public_tools=("open.*", "up.echo"))
    bridge = Bridge.build(executor(), made)
    async with running_http(bridge) as base:
        await wait_until(lambda: bridge.catalog.get("up.echo") is not None, "the upstream's tools mounted")
        async with endpoint_client(f"{base}/mcp", None, "legacy") as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            echoed = await client.call_tool("up.echo", ARGS)
        others = sorted(r.name for r in bridge.catalog.records() if r.name.startswith("up.") and r.name != "up.echo")
        refused = [await call_answer(f"{base}/mcp", None, "legacy", name) for name in others]
    assert sorted(names) == ["open.echo", "up.echo"] and echoed.is_error is False
    assert others and all(answer.startswith("error ") for answer in refused)  # 401: the client's request failed
