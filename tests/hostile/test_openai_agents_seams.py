"""The Agents export as a caller with fewer scopes sees it, and a registry too big for the Agents API.

With ``auth_filter_tools`` a tool a caller may not call is hidden from it everywhere, so
``GET /openai/tools`` must not name it in any format: not as a function, and not in the ``mcp``
form's ``allowed_tools`` (which the Agents API would pass to this server as the caller's list).
The rendered-body cache must not hand one caller's list to another. A list over the Agents API's
3 MiB is refused whole, its size named: never cut to fit. In-process app, real auth middleware,
API keys as tokens.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from apcore import Registry

from apcore_mcp import Settings, create_app, to_openai_tools
from apcore_mcp.openai.agents import MAX_AGENTS_TOOLS_BYTES

from tests._support.auth import api_key_entry, bearer
from tests._support.modules import Echo, module_of
from tests.openai.test_openai import CropIn, Out, ok
from tests.openai.test_openai_agents_format import check_agents
from tests.openai.test_openai_formats import nested

pytestmark = pytest.mark.asyncio(loop_scope="module")

ALICE = "alice-key-" + "a" * 30  # no scopes: every admin.* tool is hidden from her
CAROL = "carol-key-" + "c" * 30  # holds "admin"
PUBLIC_URL = "https://mcp.example.test/sub"


def registry() -> Registry:
    made = Registry()
    for module_id in ("demo.echo", "admin.echo", "admin.purge"):
        made.register(module_id, Echo())
    made.register("admin.deep", module_of(ok, input=nested(11), output=Out, description="Too deep for strict"))
    return made


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def http() -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(
        auth="api-key",
        auth_api_keys=(api_key_entry(ALICE, "alice"), api_key_entry(CAROL, "carol", scopes="admin")),
        auth_tool_scopes=("admin.*=admin",),
        auth_filter_tools=True,
        public_url=PUBLIC_URL,
    )
    transport = httpx.ASGITransport(app=create_app(registry(), settings))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client


async def tools_for(http: httpx.AsyncClient, key: str, query: str) -> list[dict[str, Any]]:
    response = await http.get(f"/openai/tools?{query}", headers=bearer(key))
    assert response.status_code == 200, response.text
    tools: list[dict[str, Any]] = response.json()
    return tools


async def test_a_caller_with_fewer_scopes_is_allowed_only_what_it_may_call(http: httpx.AsyncClient) -> None:
    # Carol first: her rendering must not be the body Alice gets from the cache.
    carol = await tools_for(http, CAROL, "format=agents&form=mcp")
    assert carol[0]["allowed_tools"] == ["admin.deep", "admin.echo", "admin.purge", "demo.echo"]
    alice = await tools_for(http, ALICE, "format=agents&form=mcp")
    check_agents(alice)
    assert alice == [
        {
            "type": "mcp",
            "server_label": "apcore-mcp",
            "transport": {"type": "http", "server_url": f"{PUBLIC_URL}/mcp"},
            "allowed_tools": ["demo.echo"],
        }
    ]
    # Nothing she may call under the prefix: allowed, explicitly, nothing (left out: every tool).
    assert (await tools_for(http, ALICE, "format=agents&form=mcp&prefix=admin"))[0]["allowed_tools"] == []


@pytest.mark.parametrize(
    "query", ["format=agents", "format=agents&strict=true", "format=responses&defer_loading=true", "strict=true"]
)
async def test_no_format_names_a_hidden_tool(http: httpx.AsyncClient, query: str) -> None:
    assert "admin" in json.dumps(await tools_for(http, CAROL, query))
    alice = await tools_for(http, ALICE, query)
    assert alice and "admin" not in json.dumps(alice)
    if query.startswith("format=agents"):
        check_agents(alice)
        assert [tool.get("name") for tool in alice] == ["demo-echo", None]  # then tool_search


async def test_the_non_strict_header_names_only_the_callers_tools(http: httpx.AsyncClient) -> None:
    query = "/openai/tools?format=agents&strict=true"
    carol = await http.get(query, headers=bearer(CAROL))
    assert carol.headers["X-OpenAI-Non-Strict"] == "admin-deep: 11 object levels (limit 10)"
    alice = await http.get(query, headers=bearer(ALICE))
    assert alice.status_code == 200 and "X-OpenAI-Non-Strict" not in alice.headers


async def test_a_hidden_tool_named_by_prefix_is_an_empty_list(http: httpx.AsyncClient) -> None:
    assert await tools_for(http, ALICE, "format=agents&prefix=admin.purge") == []
    assert len(await tools_for(http, CAROL, "format=agents&prefix=admin.purge")) == 2


# -- over 3 MiB: refused with its size, never cut -----------------------------------------------------------


def big_registry() -> Registry:
    """40 modules of 80,000-character descriptions: about 3.2 MB as an Agents list."""
    made = Registry()
    for index in range(40):
        made.register(f"big.m{index:02d}", module_of(ok, input=CropIn, output=Out, description="d" * 80_000))
    return made


async def test_an_oversized_registry_is_refused_with_its_size_named() -> None:
    registry = big_registry()
    with pytest.raises(ValueError, match=r"^The Agents tool list is (\d+) bytes of JSON") as raised:
        to_openai_tools(registry, format="agents")
    size = int(str(raised.value).split()[5])
    assert size > MAX_AGENTS_TOOLS_BYTES
    transport = httpx.ASGITransport(app=create_app(registry))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        response = await client.get("/openai/tools?format=agents")
        assert response.status_code == 422
        assert response.json() == {"error": str(raised.value)}
        assert response.headers["content-type"] == "application/json"
        # The same modules fit as one mcp tool, or narrowed: the refusal is about the size alone.
        mcp = await client.get("/openai/tools?format=agents&form=mcp")
        assert mcp.status_code == 200 and len(mcp.json()[0]["allowed_tools"]) == 40
        narrowed = await client.get("/openai/tools?format=agents&prefix=big.m0")
        assert narrowed.status_code == 200 and len(narrowed.json()) == 11  # ten functions and tool_search
