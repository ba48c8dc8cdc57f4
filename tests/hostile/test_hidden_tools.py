"""With ``auth_filter_tools``, a tool hidden from a caller is answered exactly as an absent one.

A caller whose token lacks a tool's scope is not listed, searched or described that tool; here
it calls the tool on every route (``/mcp`` in both eras, over the SDK's client and by hand,
legacy SSE, the explorer's MCP door, a toolset endpoint, task-augmented
calls in both eras). Each answer, with the tool's name replaced, must be the byte-for-byte
answer the same route gives a tool that does not exist: no 403, no scope name, no confirmation
dialog, no "runs only as a task" telling the tool is there. Three hidden tools: a plain one, a
destructive one (the explorer's confirmation gates) and one that runs only as a task.
Real clients (the SDK's, httpx) against uvicorn on a loopback port; API keys as tokens.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
import pytest_asyncio
from apcore import ModuleAnnotations, Registry
from mcp.shared.exceptions import MCPError
from mcp.types import ResourceTemplateReference

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings

from tests._support.auth import api_key_entry, bearer, endpoint_client, sse_session
from tests._support.hostile import modern_headers, tool_call
from tests._support.modules import Echo, module_of
from tests._support.sessions import running_http
from tests._support.tasks import HANDSHAKE, MODERN, Wire

pytestmark = pytest.mark.asyncio(loop_scope="module")

ALICE = "alice-key-" + "a" * 30  # no scopes: every admin.* tool is hidden from her
CAROL = "carol-key-" + "c" * 30  # holds "admin"
ABSENT = "admin.gone"
HIDDEN = ["admin.echo", "admin.purge", "admin.job"]
ARGS = {"text": "hi"}
NAME = "<tool>"

Answer = dict[str, Any]


def registry() -> Registry:
    def purge(text: str) -> dict[str, Any]:
        return {"purged": text}

    def job(text: str) -> dict[str, Any]:
        return {"done": text}

    made = Registry()
    made.register("demo.echo", Echo())
    made.register("admin.echo", Echo())
    made.register("admin.purge", module_of(purge, annotations=ModuleAnnotations(destructive=True)))
    task_only = ModuleAnnotations(extra={"mcp.task_support": "required"})
    made.register("admin.job", module_of(job, annotations=task_only))
    return made


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def url(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    config = tmp_path_factory.mktemp("hidden") / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}, "toolsets": {"team": {"modules": True}}}))
    settings = Settings(
        auth="api-key",
        auth_api_keys=(api_key_entry(ALICE, "alice"), api_key_entry(CAROL, "carol", scopes="admin")),
        auth_tool_scopes=("admin.*=admin",),
        auth_filter_tools=True,
        explorer=True,
        allow_execute=True,
        mcp_config=str(config),
    )
    async with running_http(Bridge.build(registry(), settings)) as base:
        yield base


# -- the routes: each gives the whole answer a caller sees (status, error or result) ----------------


def sdk(path: str, mode: str) -> Callable[[str, str], Awaitable[Answer]]:
    """``tools/call`` through the SDK's client on ``path`` (``legacy``: 2025-11-25, ``auto``: 2026-07-28)."""

    async def call(base: str, name: str) -> Answer:
        async with endpoint_client(f"{base}{path}", ALICE, mode) as client:
            try:
                result = await client.call_tool(name, ARGS)
            except MCPError as error:
                return {"code": error.code, "message": error.message, "data": error.error.data}
        return dict(result.model_dump(mode="json", by_alias=True, exclude_none=True))

    return call


def wire(path: str) -> Callable[[str, str], Awaitable[Answer]]:
    """A 2026-07-28 ``tools/call`` by hand (one POST naming the tool in ``Mcp-Name``): status and body."""

    async def call(base: str, name: str) -> Answer:
        headers = {**modern_headers("tools/call", name), **bearer(ALICE)}
        async with httpx.AsyncClient(timeout=10) as http:
            response = await http.post(f"{base}{path}", json=tool_call(1, name, ARGS, modern=True), headers=headers)
        return http_answer(response)

    return call


def http_answer(response: httpx.Response) -> Answer:
    kept = ("content-type", "www-authenticate")
    return {
        "status": response.status_code,
        "headers": {key: response.headers[key] for key in kept if key in response.headers},
        "body": response.text,
    }


async def over_sse(base: str, name: str) -> Answer:
    async with sse_session(base, ALICE) as session:
        try:
            result = await session.call_tool(name, ARGS)
        except MCPError as error:
            return {"code": error.code, "message": error.message, "data": error.error.data}
    return dict(result.model_dump(mode="json", by_alias=True, exclude_none=True))


def task(era: str) -> Callable[[str, str], Awaitable[Answer]]:
    """A task-augmented ``tools/call``: ``params.task`` (2025-11-25) or the tasks extension declared (2026)."""

    async def call(base: str, name: str) -> Answer:
        client = Wire(base, era=era, headers=bearer(ALICE))
        if era == HANDSHAKE:
            await client.open()
            return await client.call(name, ARGS, task={"ttl": 60_000})
        return await client.call(name, ARGS)

    return call


ROUTES: dict[str, Callable[[str, str], Awaitable[Answer]]] = {
    "mcp-handshake": sdk("/mcp", "legacy"),
    "mcp-modern": sdk("/mcp", "auto"),
    "mcp-modern-wire": wire("/mcp"),
    "sse": over_sse,
    "explorer-door-handshake": sdk("/explorer/mcp", "legacy"),
    "explorer-door-modern": sdk("/explorer/mcp", "auto"),
    "explorer-door-wire": wire("/explorer/mcp"),
    "toolset-handshake": sdk("/toolsets/team/mcp", "legacy"),
    "toolset-modern": sdk("/toolsets/team/mcp", "auto"),
    "task-handshake": task(HANDSHAKE),
    "task-modern": task(MODERN),
}


def without_name(answer: Answer, name: str) -> str:
    return json.dumps(answer, sort_keys=True).replace(name, NAME)


@pytest.mark.parametrize("hidden", HIDDEN)
@pytest.mark.parametrize("route", list(ROUTES))
async def test_a_hidden_tool_is_answered_as_an_absent_one(url: str, route: str, hidden: str) -> None:
    call = ROUTES[route]
    absent = without_name(await call(url, ABSENT), ABSENT)
    seen = without_name(await call(url, hidden), hidden)
    assert NAME in absent  # the absent answer is about the tool, not a refusal of the caller
    assert seen == absent
    assert "admin" not in seen.replace(NAME, "")  # nor the scope's name


async def test_the_hidden_tools_are_there_for_a_caller_with_the_scope(url: str) -> None:
    """The answers above are about tools that exist: a caller holding the scope runs them."""
    async with endpoint_client(f"{url}/mcp", CAROL, "legacy") as client:
        echoed = await client.call_tool("admin.echo", ARGS)
        purged = await client.call_tool("admin.purge", ARGS)
    carol = Wire(url, headers=bearer(CAROL))
    created = await carol.call("admin.job", ARGS)
    assert (echoed.is_error, purged.is_error) == (False, False)
    assert created["result"]["resultType"] == "task"


# -- a hidden tool's documentation resource and its completion -------------------------------------


async def read_docs(base: str, key: str, mode: str, module_id: str) -> Answer:
    async with endpoint_client(f"{base}/mcp", key, mode) as client:
        try:
            result = await client.read_resource(f"docs://{module_id}")
        except MCPError as error:
            return {"code": error.code, "message": error.message.replace(module_id, NAME)}
    return dict(result.model_dump(mode="json", by_alias=True, exclude_none=True))


async def docs_completions(base: str, key: str, mode: str) -> list[str]:
    async with endpoint_client(f"{base}/mcp", key, mode) as client:
        ref = ResourceTemplateReference(type="ref/resource", uri="docs://{module_id}")
        result = await client.complete(ref, {"name": "module_id", "value": "admin."})
    return list(result.completion.values)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_hidden_tools_documentation_is_absent_and_never_completed(url: str, mode: str) -> None:
    hidden, absent = await read_docs(url, ALICE, mode, "admin.echo"), await read_docs(url, ALICE, mode, ABSENT)
    assert "code" in absent, absent
    assert hidden == absent
    assert await docs_completions(url, ALICE, mode) == []
    # the one who may see the tool reads its documentation and is offered its id
    assert "Echo repeats" in json.dumps(await read_docs(url, CAROL, mode, "admin.echo"))
    assert "admin.echo" in await docs_completions(url, CAROL, mode)
